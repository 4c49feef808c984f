package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"strings"
	"testing"

	"github.com/stridekit/stridekit/layout"
	"github.com/stridekit/stridekit/runtime/cuda"
)

func TestRun(t *testing.T) {
	for _, c := range []struct {
		name   string
		args   []string
		status int
		want   string // substring of stdout (status 0) or stderr
	}{
		{"transpose of big matrices is a tile copy", []string{"plan", "-dst", "(128,64):(64,1)x4", "-src", "(128,64):(1,128)x4"}, 0, "signature  tile:nd=2,fast=0,item=4"},
		{"dtype names stand for item sizes", []string{"plan", "-dst", "(128,64)xfloat32", "-src", "(128,64):(1,128)xf32"}, 0, "signature  tile:nd=2,fast=0,item=4"},
		{"odd transposes are box tiles, runs shown", []string{"plan", "-dst", "(61,67)x2", "-src", "(61,67):(1,61)x2"}, 0, "tile       [61 67]"},
		{"src runs a flip and a step cut load as spans", []string{"plan", "-dst", "(9,17,7):(119,7,1)x1", "-src", "(9,17,7):(1,72,-9)x1"}, 0, "(step 1, each loaded as a span of 1215)"},
		{"same-order dense is a memcpy", []string{"plan", "-dst", "(8,8)x2", "-src", "(8,8)xbf16"}, 0, "class      memcpy"},
		{"dtypes must match", []string{"plan", "-dst", "(8,8)xf16", "-src", "(8,8)xbf16"}, 1, "dtypes differ"},
		{"shape mismatch is refused", []string{"plan", "-dst", "(8,8)x4", "-src", "(8,9)x4"}, 1, "shape"},
		{"overlapping dst is refused", []string{"plan", "-dst", "(8,8):(1,1)x4", "-src", "(8,8)x4"}, 1, "overlap"},
		{"bad layout text names the flag", []string{"plan", "-dst", "(8,8)", "-src", "(8,8)x4"}, 2, "-dst"},
		{"unknown dtype names the flag", []string{"plan", "-dst", "(8,8)xfloat7", "-src", "(8,8)x4"}, 2, "-dst"},
		{"missing -src names it", []string{"plan", "-dst", "(8,8)x4"}, 2, "-src is required"},
		{"bad alignment names the flag", []string{"plan", "-dst", "(8)x4", "-src", "(8)x4", "-src-align", "3"}, 2, "-src-align"},
		{"unknown flag names it", []string{"plan", "-bogus"}, 2, "-bogus"},
		{"plan -h exits 0 and explains LAYOUT", []string{"plan", "-h"}, 0, "(shape):(strides)xITEM"},
		{"copy -h exits 0", []string{"copy", "-h"}, 0, "-dtype"},
		{"copy with a bad dtype names the flag", []string{"copy", "-dtype", "nope"}, 2, "-dtype"},
		{"copy with a bad size names the flag", []string{"copy", "-n", "0"}, 2, "-n"},
		{"copy -reps has an upper bound", []string{"copy", "-n", "1", "-reps", "1000000000000"}, 2, "-reps 1000000000000: must be in 1..10000"},
		{"copy -device must not be negative", []string{"copy", "-n", "1", "-device", "-1"}, 2, "-device -1"},
		{"a matrix past the limit is refused before allocating", []string{"copy", "-n", "131072", "-dtype", "complex128"}, 2, "-n 131072 -dtype complex128: an N×N matrix of 16-byte items takes 256 GiB, more than the 16 GiB limit"},
		{"lanes count in the matrix size", []string{"copy", "-n", "131072", "-dtype", "float32x65535"}, 2, "-n 131072 -dtype float32x65535"},
		{"a usage error shows the synopsis", []string{"copy", "-reps", "0"}, 2, "usage: stridekit copy [-n N]"},
		{"copy -h states the limits", []string{"copy", "-h"}, 0, "at most 16 GiB"},
		{"copy refuses sub-byte dtypes and says why", []string{"copy", "-dtype", "fp4"}, 2, `-dtype "fp4": float4_e2m1fn is a sub-byte type (4 bits an element)`},
		{"plan refuses sub-byte dtypes and says why", []string{"plan", "-dst", "(8,8)xfp4", "-src", "(8,8)x1"}, 2, "sub-byte"},
		{"plan takes dtypes with lanes", []string{"plan", "-dst", "(8,8)xfloat32x4", "-src", "(8,8):(1,8)x16"}, 0, "item=16"},
		{"plan takes xN for opaque items", []string{"plan", "-dst", "(8,8)xx3", "-src", "(8,8):(1,8)xopaque3"}, 0, "item=3"},
		{"plan -dst-align has an upper bound", []string{"plan", "-dst", "(8)x4", "-src", "(8)x4", "-dst-align", "4611686018427387904"}, 2, "-dst-align 4611686018427387904"},
		{"help exits 0", []string{"-h"}, 0, "usage"},
		{"no command is a usage error", nil, 2, "usage"},
		{"unknown command", []string{"frobnicate"}, 2, "unknown command"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			got := run(c.args, &out, &errb)
			if got != c.status {
				t.Fatalf("status %d, want %d; stdout %q stderr %q", got, c.status, out.String(), errb.String())
			}
			text := out.String()
			if c.status != 0 {
				text = errb.String()
			}
			if !strings.Contains(text, c.want) {
				t.Errorf("output %q does not contain %q", text, c.want)
			}
		})
	}
}

// TestCopyRuns runs the quick start's copy: on a GPU if there is one, else
// on the host; either way the result is checked by the command itself.
func TestCopyRuns(t *testing.T) {
	var out, errb bytes.Buffer
	if st := run([]string{"copy", "-n", "300", "-dtype", "f16", "-reps", "3"}, &out, &errb); st != 0 {
		t.Fatalf("status %d: %s", st, errb.String())
	}
	if !strings.Contains(out.String(), "transposed [300 300] float16") || !strings.Contains(out.String(), "checked") {
		t.Errorf("output %q", out.String())
	}
}

// TestNoErrorEndsInNil checks that no dtype error quotes a nil error: a
// sub-byte type parses without error but is still refused, with a reason.
func TestNoErrorEndsInNil(t *testing.T) {
	for _, args := range [][]string{
		{"copy", "-dtype", "fp4"}, {"copy", "-dtype", "float6_e2m3fn"}, {"copy", "-dtype", "nope"},
		{"plan", "-dst", "(8,8)xfp4", "-src", "(8,8)x1"}, {"plan", "-dst", "(8,8)x1", "-src", "(8,8)xnope"},
	} {
		var out, errb bytes.Buffer
		if st := run(args, &out, &errb); st != 2 || strings.Contains(errb.String(), "<nil>") {
			t.Errorf("%v: status %d, stderr %q", args, st, errb.String())
		}
	}
}

// TestDTypeSpellings checks that stridekit copy takes the spellings of
// layout.ParseDType that stridebench's suites use (x3 for 3-byte items).
func TestDTypeSpellings(t *testing.T) {
	for _, name := range []string{"x3", "X12", "opaque3", "float32x4", "bf16", "c128"} {
		c, err := parseCopy([]string{"-n", "4", "-dtype", name})
		if err != nil {
			t.Errorf("-dtype %s: %v", name, err)
			continue
		}
		want, _ := layout.ParseDType(name)
		if c.dtype != want || c.layout.Itemsize() != want.Itemsize() {
			t.Errorf("-dtype %s: %v, layout %v", name, c.dtype, c.layout)
		}
	}
}

// TestCopyHostMemory checks that a copy whose two host matrices do not fit
// in half of the physical memory is refused before anything is allocated.
func TestCopyHostMemory(t *testing.T) {
	defer func(f func() int64) { hostMemory = f }(hostMemory)
	hostMemory = func() int64 { return 64 << 20 }
	var out, errb bytes.Buffer
	st := run([]string{"copy", "-n", "4096", "-dtype", "f32", "-reps", "1"}, &out, &errb)
	if st != 2 || !strings.Contains(errb.String(), "-n 4096 -dtype float32: the copy needs 128 MiB of host memory (two 64 MiB matrices), more than half of this machine's 64 MiB") {
		t.Errorf("status %d, stdout %q, stderr %q", st, out.String(), errb.String())
	}
	if m := hostMemory(); m < 0 {
		t.Errorf("hostMemory() = %d", m)
	}
}

// TestFitsDevice checks the device-memory check that runs before the
// device buffers are allocated.
func TestFitsDevice(t *testing.T) {
	c, err := parseCopy([]string{"-n", "65536", "-dtype", "f32"})
	if err != nil {
		t.Fatal(err)
	}
	if err := fitsDevice(c, 80<<30, "H100"); err != nil {
		t.Errorf("32 GiB on an 80 GiB device: %v", err)
	}
	err = fitsDevice(c, 24<<30, "L4")
	var ue *usageError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "needs 32 GiB on the device (two 16 GiB matrices), more than the 24 GiB of L4") {
		t.Errorf("32 GiB on a 24 GiB device: %v", err)
	}
}

func TestMatrixBytes(t *testing.T) {
	for _, c := range []struct {
		n    int64
		item int
		want int64
		ok   bool
	}{
		{8192, 4, 256 << 20, true},
		{131072, 16, 256 << 30, true},
		{1 << 32, 1, 0, false},
		{1 << 31, 4, 0, false},
		{3037000500, 1, 0, false}, // n·n just past 2^63
		{-1, 4, 0, false},
	} {
		got, ok := matrixBytes(c.n, c.item)
		if got != c.want || ok != c.ok {
			t.Errorf("matrixBytes(%d, %d) = %d, %v; want %d, %v", c.n, c.item, got, ok, c.want, c.ok)
		}
	}
}

// TestNoGPUNotice checks that the notice of a missing GPU gives the whole
// reason, on one line.
func TestNoGPUNotice(t *testing.T) {
	defer func(f func(int) (*cuda.Device, error)) { getDevice = f }(getDevice)
	reason := "cuda: no CUDA driver: tried " + strings.Repeat("libcuda.so.1 (cannot open shared object file); ", 4) + "the end"
	getDevice = func(int) (*cuda.Device, error) { return nil, errors.New(strings.Replace(reason, "; ", ";\n", 1)) }
	var out, errb bytes.Buffer
	if st := run([]string{"copy", "-n", "4", "-reps", "1"}, &out, &errb); st != 0 {
		t.Fatalf("status %d: %s", st, errb.String())
	}
	first, _, _ := strings.Cut(out.String(), "\n")
	if want := "no GPU (" + reason + "): running the same copy on the host"; first != want {
		t.Errorf("first line\n%q\nwant\n%q", first, want)
	}
}

// FuzzFlags feeds argument lists (NUL-separated) to the flag parsers of
// stridekit copy and plan: each returns flag.ErrHelp, a usage error with a
// message, or a config within the documented limits; none panics.
func FuzzFlags(f *testing.F) {
	for _, s := range []string{
		"", "-h", "-n\x008192", "-n\x00131072\x00-dtype\x00complex128", "-reps\x001000000000000",
		"-dtype\x00x3\x00-n\x0017", "-dtype\x00fp4", "-device\x00-1", "-n=9223372036854775807",
		"-dst\x00(4096,4096)xf32\x00-src\x00(4096,4096):(1,4096)xf32", "-dst\x00(8,8)xx3\x00-src\x00(8,8)x3\x00-src-align\x004",
		"-dst\x00(9223372036854775807,2)x8\x00-src\x00(2)x1", "-dst\x00(8,8):(1,1)xfloat32x4\x00-src\x00()x16", "--\x00extra",
	} {
		f.Add(s)
	}
	check := func(t *testing.T, what string, err error) {
		var ue *usageError
		switch {
		case errors.Is(err, flag.ErrHelp):
		case errors.As(err, &ue):
			if msg := err.Error(); msg == "" || strings.Contains(msg, "<nil>") {
				t.Fatalf("%s: bad usage message %q", what, msg)
			}
		default:
			t.Fatalf("%s: error %v (%T) is not a usage error", what, err, err)
		}
	}
	f.Fuzz(func(t *testing.T, s string) {
		args := strings.Split(s, "\x00")
		if c, err := parseCopy(args); err != nil {
			check(t, "copy", err)
		} else {
			size, ok := matrixBytes(c.n, c.dtype.Itemsize())
			switch {
			case c.n < 1 || c.n > maxCopyN, c.reps < 1 || c.reps > maxCopyReps, c.ordinal < 0 || c.ordinal > maxOrdinal:
				t.Fatalf("copy %q: out of range: %+v", args, c)
			case c.dtype.Itemsize() < 1 || !ok || size != c.bytes || size > maxMatrixBytes:
				t.Fatalf("copy %q: dtype %v, %d bytes", args, c.dtype, c.bytes)
			case c.layout.RequiredSizeInBytes() != c.bytes || fmt.Sprint(c.layout.Shape()) != fmt.Sprint([]int64{c.n, c.n}):
				t.Fatalf("copy %q: layout %v for %d bytes", args, c.layout, c.bytes)
			}
		}
		if c, err := parsePlan(args); err != nil {
			check(t, "plan", err)
		} else {
			for _, a := range []int{c.dstAlign, c.srcAlign} {
				if a < 0 || a > maxAlign || a&(a-1) != 0 {
					t.Fatalf("plan %q: alignment %d", args, a)
				}
			}
			for _, p := range []struct {
				l  layout.Layout
				dt layout.DType
			}{{c.dst, c.dstDType}, {c.src, c.srcDType}} {
				if p.l.Itemsize() < 1 || p.dt.IsValid() && p.dt.Itemsize() != p.l.Itemsize() {
					t.Fatalf("plan %q: layout %v, dtype %v", args, p.l, p.dt)
				}
			}
		}
	})
}
