package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stridekit/stridekit/layout"
)

// TestRunFlagLimits checks that the counts and sizes of "stridebench run"
// have upper bounds: past them, a usage error that names the flag and
// value, before anything is allocated.
func TestRunFlagLimits(t *testing.T) {
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"-reps", "9000000000000000000"}, "-reps 9000000000000000000: must be in 20..10000"},
		{[]string{"-reps", "10001"}, "-reps 10001"},
		{[]string{"-warmup", "9000000000000000000"}, "-warmup 9000000000000000000: must be in 1..10000"},
		{[]string{"-latency-iters", "1000001"}, "-latency-iters 1000001: must be in 0..1000000"},
		{[]string{"-random", "4000000000000"}, "-random 4000000000000: must be in 0..10000"},
		{[]string{"-random", "1", "-random-bytes", "1024GiB"}, "-random-bytes 1024 GiB: must be at most 16 GiB"},
		{[]string{"-slowest", "9000000000000000000"}, "-slowest 9000000000000000000: must be in 0..10000"},
	} {
		_, err := parseRunFlags(append([]string{"-device", "cpu"}, tc.args...), io.Discard)
		if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%v: %v, want a usage error naming %q", tc.args, err, tc.msg)
		}
	}
	// The same through the command: exit 2 with the message, nothing run.
	var stdout, stderr bytes.Buffer
	if code := runMain([]string{"-device", "cpu", "-quiet", "-reps", "9000000000000000000"}, &stdout, &stderr); code != 2 ||
		!strings.Contains(stderr.String(), "-reps 9000000000000000000: must be in 20..10000") {
		t.Errorf("exit %d, stderr %q", code, stderr.String())
	}
	// The limits themselves are accepted.
	if _, err := parseRunFlags([]string{"-reps", "10000", "-warmup", "10000", "-latency-iters", "1000000", "-random", "10000",
		"-random-bytes", "16GiB", "-slowest", "10000"}, io.Discard); err != nil {
		t.Errorf("the limits: %v", err)
	}
	// -h states them.
	stderr.Reset()
	runMain([]string{"-h"}, &stdout, &stderr)
	if !strings.Contains(stderr.String(), "Limits: -reps 20..10000, -warmup 1..10000, -latency-iters 0..1000000") {
		t.Errorf("-h does not state the limits:\n%s", stderr.String())
	}
}

// TestDefaultSuiteEmbedded checks that stridebench runs its named suite
// from any directory: the default suite is built into the binary.
func TestDefaultSuiteEmbedded(t *testing.T) {
	t.Chdir(t.TempDir())
	var stdout, stderr bytes.Buffer
	if code := runMain([]string{"-list", "-case", "^transpose_f32$"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if !strings.HasPrefix(stdout.String(), "transpose_f32 float32 16384x16384 src=perm(1,0)\t# moves 1 GiB") {
		t.Errorf("-list printed %q", stdout.String())
	}
	// -suite FILE still reads a file, relative to the working directory.
	if err := os.WriteFile("mine.txt", []byte("mine u8 8x8 src=perm(1,0)\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	stdout.Reset()
	if code := runMain([]string{"-list", "-suite", "mine.txt"}, &stdout, &stderr); code != 0 || !strings.HasPrefix(stdout.String(), "mine uint8 8x8") {
		t.Errorf("-suite mine.txt: exit %d, stdout %q, stderr %q", code, stdout.String(), stderr.String())
	}
}

// TestDefaultSuiteCopy checks that the built-in suite is the same as the
// repository's testdata/bench/named.txt, which scripts and tests read.
func TestDefaultSuiteCopy(t *testing.T) {
	repo, err := os.ReadFile(filepath.Join("..", "..", "testdata", "bench", "named.txt"))
	if errors.Is(err, os.ErrNotExist) {
		t.Skip("no testdata/bench/named.txt (a test binary run outside the repository)")
	}
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(repo, defaultSuiteText) {
		t.Error("cmd/stridebench/named.txt (the built-in suite) and testdata/bench/named.txt differ: keep them the same")
	}
}

// TestHostMemoryLimit checks that a case whose host buffers would take
// more than half of the physical memory fails before anything is
// allocated for it, and that the others still run.
func TestHostMemoryLimit(t *testing.T) {
	cs, err := parseSuite(strings.NewReader("big u8 4096x4096 src=perm(1,0)\nsmall u8 64x64 src=perm(1,0)\n"), "s")
	if err != nil {
		t.Fatal(err)
	}
	ps := prepare(cs, nil)
	limitHostMemory(ps, "cpu", 64<<20) // big: 16 MiB arrays, 80 MiB in all on the host
	be := newCPUBackend()
	ran := map[int]bool{}
	be.copy = func(dst []byte, dl layout.Layout, src []byte, sl layout.Layout) error {
		ran[len(dst)] = true
		if len(dst) > 1<<20 {
			t.Fatal("a case past the host memory limit was run")
		}
		return nil
	}
	rs := runCases(context.Background(), ps, be, runConfig{Reps: 20, Warmup: 1}, nil)
	if rs[0].Status != statusError || !strings.Contains(rs[0].Error, "its host buffers take 80 MiB with -device cpu, more than half of this machine's 64 MiB") {
		t.Errorf("big: %s: %q", rs[0].Status, rs[0].Error)
	}
	if rs[1].Status == statusError {
		t.Errorf("small: %q", rs[1].Error)
	}
	// On a GPU the host keeps only the check's copies: 48 MiB fits in 128 MiB.
	ps = prepare(cs, nil)
	limitHostMemory(ps, "gpu", 128<<20)
	if ps[0].Err != nil {
		t.Errorf("gpu: %v", ps[0].Err)
	}
	// Unknown memory: no limit.
	ps = prepare(cs, nil)
	limitHostMemory(ps, "cpu", 0)
	if ps[0].Err != nil {
		t.Errorf("unknown memory: %v", ps[0].Err)
	}
	if m := hostMemory(); m < 0 {
		t.Errorf("hostMemory() = %d", m)
	}
}

// FuzzFlags feeds argument lists (NUL-separated) to the flag parsers of
// run, tune and report: each returns flag.ErrHelp, a usage error, or flags
// within the documented limits, and never panics. The parsers read no file
// and touch no device.
func FuzzFlags(f *testing.F) {
	for _, s := range []string{
		"", "-h", "-device\x00cpu\x00-reps\x009000000000000000000", "-random\x004000000000000", "-random\x002\x00-random-bytes\x0016GiB",
		"-suite\x00x.txt\x00-case\x00^t_\x00-list", "-device\x00gpu:3\x00-compare\x00-frameworks\x00torch,jax", "-chart\x00c.svg\x00-slowest\x00-1",
		"-bytes\x001MiB\x00-family\x00btile/3\x00-rounds\x00100", "-device\x00gpu:-1\x00-budget\x001ns", "-json\x00r.json\x00-short-of\x0090\x00-o\x00b.md",
		"-json\x00r.json\x00-chart\x00c.jpg", "-shrink\x0012XB", "-latency-iters=1000001",
	} {
		f.Add(s)
	}
	isUsage := func(err error) bool { return errors.Is(err, flag.ErrHelp) || errors.Is(err, errUsage) }
	f.Fuzz(func(t *testing.T, s string) {
		args := strings.Split(s, "\x00")
		if r, err := parseRunFlags(args, io.Discard); err != nil {
			if !isUsage(err) {
				t.Fatalf("run %q: %v is not a usage error", args, err)
			}
		} else {
			switch {
			case r.reps < minReps || r.reps > maxReps, r.warmup < 1 || r.warmup > maxWarmup, r.latency < 0 || r.latency > maxLatency:
				t.Fatalf("run %q: reps %d warmup %d latency %d", args, r.reps, r.warmup, r.latency)
			case r.random < 0 || r.random > maxRandom, r.randomBytes > maxRandomBytes, r.random > 0 && r.randomBytes < 1, r.slowest < 0 || r.slowest > maxRandom:
				t.Fatalf("run %q: random %d of %d bytes, slowest %d", args, r.random, r.randomBytes, r.slowest)
			case r.device != "gpu" && r.device != "cpu", r.ordinal < 0, r.caseRE == nil, r.chartPath != "" && !chartExt(r.chartPath):
				t.Fatalf("run %q: %+v", args, r)
			case r.compare && len(r.frameworks) == 0:
				t.Fatalf("run %q: -compare without frameworks", args)
			}
			for _, fw := range r.frameworks {
				if !slices.Contains(peerNames, fw) {
					t.Fatalf("run %q: framework %q", args, fw)
				}
			}
		}
		if tf, err := parseTuneFlags(args, io.Discard); err != nil {
			if !isUsage(err) {
				t.Fatalf("tune %q: %v is not a usage error", args, err)
			}
		} else if tf.ordinal < 0 || tf.out == "" || tf.budget <= 0 || tf.bytes < minTuneBytes || tf.bytes > maxTuneBytes ||
			tf.reps < minTuneReps || tf.reps > maxTuneReps || tf.warmup < 1 || tf.warmup > maxTuneWarmup ||
			tf.rounds < 1 || tf.rounds > maxTuneRounds || len(tf.families) == 0 {
			t.Fatalf("tune %q: %+v", args, tf)
		}
		if rf, err := parseReportFlags(args, io.Discard); err != nil {
			if !isUsage(err) {
				t.Fatalf("report %q: %v is not a usage error", args, err)
			}
		} else if rf.json1 == "" || rf.out == "" || rf.shortOf <= 0 || !rf.noChart && !chartExt(rf.chart) {
			// -short-of NaN is let through (record.go checks shortOf <= 0
			// only); the record then lists no case as short of it.
			t.Fatalf("report %q: %+v", args, rf)
		}
	})
}
