package main

import (
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/stridekit/stridekit/internal/testenv"
	"github.com/stridekit/stridekit/layout"
	"github.com/stridekit/stridekit/runtime/cuda"
	"github.com/stridekit/stridekit/runtime/dlpack"
)

// tensor is a strided view of a Go int32 array handed over as a DLPack
// tensor (dlpack.Export, versioned or legacy); release counts deleter
// calls.
type tensor struct {
	data     []int32
	p        unsafe.Pointer
	legacy   bool
	released int
}

func newTensor(t *testing.T, data []int32, off int64, shape, strides []int64, flags dlpack.Flags, legacy bool) *tensor {
	t.Helper()
	x := &tensor{data: data, legacy: legacy}
	r := dlpack.ExportRequest{Data: uintptr(unsafe.Pointer(&data[0])) + uintptr(4*off), Device: dlpack.DLDevice{DeviceType: dlpack.KDLCPU},
		DType: layout.Int32, Shape: shape, Strides: strides, Flags: flags, Release: func() { x.released++ }}
	if legacy {
		m, err := dlpack.ExportLegacy(r)
		if err != nil {
			t.Fatal(err)
		}
		x.p = unsafe.Pointer(m)
	} else {
		m, err := dlpack.Export(r)
		if err != nil {
			t.Fatal(err)
		}
		x.p = unsafe.Pointer(m)
	}
	t.Cleanup(x.delete)
	return x
}

// delete gives the tensor back, as the caller of sk_copy does.
func (x *tensor) delete() {
	if x.legacy {
		dlpack.CallLegacyDeleter((*dlpack.DLManagedTensor)(x.p))
	} else {
		dlpack.CallDeleter((*dlpack.DLManagedTensorVersioned)(x.p))
	}
}

func iota32(n int) []int32 {
	d := make([]int32, n)
	for i := range d {
		d[i] = int32(100 + i)
	}
	return d
}

// TestCopyHost copies a transposed, a flipped and a sliced source into
// dense and transposed destinations, versioned and legacy, and checks every
// element; sk_copy calls no deleter.
func TestCopyHost(t *testing.T) {
	cases := []struct {
		name                string
		srcBase             int
		srcOff              int64
		srcShape, srcStride []int64
		want                []int32 // dst in C order of its shape
	}{
		// src: the 3×4 array a = 100..111; dst: 4×3 dense.
		{"transposed", 12, 0, []int64{4, 3}, []int64{1, 4}, []int32{100, 104, 108, 101, 105, 109, 102, 106, 110, 103, 107, 111}},
		// a[::-1] viewed 4×3 of a 4×3 array 100..111.
		{"flipped", 12, 9, []int64{4, 3}, []int64{-3, 1}, []int32{109, 110, 111, 106, 107, 108, 103, 104, 105, 100, 101, 102}},
		// a[1::2, ::2] of an 8×6 array: 4×3.
		{"sliced", 48, 6, []int64{4, 3}, []int64{12, 2}, []int32{106, 108, 110, 118, 120, 122, 130, 132, 134, 142, 144, 146}},
	}
	for _, c := range cases {
		for _, legacy := range []bool{false, true} {
			for _, dstT := range []bool{false, true} {
				name := c.name
				if legacy {
					name += "/legacy"
				}
				if dstT {
					name += "/into-transposed"
				}
				t.Run(name, func(t *testing.T) {
					var ro dlpack.Flags
					if !legacy {
						ro = dlpack.FlagReadOnly // a read-only source is fine
					}
					src := newTensor(t, iota32(c.srcBase), c.srcOff, c.srcShape, c.srcStride, ro, legacy)
					out := make([]int32, 12)
					dstStrides := []int64{3, 1}
					if dstT {
						dstStrides = []int64{1, 4}
					}
					dst := newTensor(t, out, 0, []int64{4, 3}, dstStrides, 0, legacy)
					var flags uint64
					if legacy {
						flags = FlagSrcLegacy | FlagDstLegacy
					}
					if code, err := copyTensors(dst.p, src.p, dlpack.StreamNoSync, flags|FlagSync); code != CodeOK || err != nil {
						t.Fatalf("code %d: %v", code, err)
					}
					got := out
					if dstT {
						got = make([]int32, 12)
						for i := range 4 {
							for j := range 3 {
								got[i*3+j] = out[i+4*j]
							}
						}
					}
					if !slices.Equal(got, c.want) {
						t.Errorf("dst %v, want %v", got, c.want)
					}
					if src.released != 0 || dst.released != 0 {
						t.Errorf("sk_copy ran deleters: src %d, dst %d", src.released, dst.released)
					}
				})
			}
		}
	}
}

// TestCopyMixed copies a legacy source into a versioned destination and
// broadcasts a row.
func TestCopyMixed(t *testing.T) {
	src := newTensor(t, iota32(3), 0, []int64{3}, []int64{1}, 0, true)
	out := make([]int32, 6)
	dst := newTensor(t, out, 0, []int64{2, 3}, nil, 0, false)
	if code, err := copyTensors(dst.p, src.p, dlpack.StreamNoSync, FlagSrcLegacy); code != CodeOK {
		t.Fatalf("code %d: %v", code, err)
	}
	if want := []int32{100, 101, 102, 100, 101, 102}; !slices.Equal(out, want) {
		t.Errorf("broadcast row: %v, want %v", out, want)
	}
}

// TestCopyErrors checks the code and message of every refusal.
func TestCopyErrors(t *testing.T) {
	good := func(flags dlpack.Flags) *tensor {
		return newTensor(t, iota32(12), 0, []int64{3, 4}, nil, flags, false)
	}
	badVersion := good(0)
	(*dlpack.DLManagedTensorVersioned)(badVersion.p).Version.Major = 7
	lanes := good(0)
	(*dlpack.DLManagedTensorVersioned)(lanes.p).DLTensor.DType.Lanes = 2
	nullStrides := good(0)
	(*dlpack.DLManagedTensorVersioned)(nullStrides.p).DLTensor.Strides = nil
	opencl := good(0)
	(*dlpack.DLManagedTensorVersioned)(opencl.p).DLTensor.Device.DeviceType = dlpack.KDLOpenCL
	cudaDev := good(0)
	(*dlpack.DLManagedTensorVersioned)(cudaDev.p).DLTensor.Device = dlpack.DLDevice{DeviceType: dlpack.KDLCUDA, DeviceID: 1 << 20}
	wrongShape := newTensor(t, iota32(12), 0, []int64{4, 3}, nil, 0, false)
	f64 := good(0)
	(*dlpack.DLManagedTensorVersioned)(f64.p).DLTensor.DType = dlpack.DLDataType{Code: layout.KDLFloat, Bits: 32, Lanes: 1}
	bcast := newTensor(t, iota32(4), 0, []int64{3, 4}, []int64{0, 1}, 0, false)

	cases := []struct {
		name     string
		dst, src unsafe.Pointer
		stream   int64
		flags    uint64
		code     int
		phrase   string
	}{
		{"NULL src", good(0).p, nil, -1, 0, CodeInvalid, "src is NULL"},
		{"NULL dst", nil, good(0).p, -1, 0, CodeInvalid, "dst is NULL"},
		{"unknown flags", good(0).p, good(0).p, -1, 1 << 9, CodeInvalid, "flags"},
		{"stream 0", good(0).p, good(0).p, 0, 0, CodeInvalid, "ambiguous"},
		{"stream -5", good(0).p, good(0).p, -5, 0, CodeInvalid, "-5"},
		{"version 7", good(0).p, badVersion.p, -1, 0, CodeTensor, "version"},
		{"two lanes", good(0).p, lanes.p, -1, 0, CodeTensor, "lanes"},
		{"NULL strides from 1.3", good(0).p, nullStrides.p, -1, 0, CodeTensor, "strides"},
		{"OpenCL", good(0).p, opencl.p, -1, 0, CodeTensor, "kDLOpenCL"},
		{"read-only dst", good(dlpack.FlagReadOnly).p, good(0).p, -1, 0, CodeReadOnly, "read-only"},
		{"shapes", good(0).p, wrongShape.p, -1, 0, CodeCopy, "shape"},
		{"dtypes", good(0).p, f64.p, -1, 0, CodeCopy, "float32"},
		{"overlapping dst", bcast.p, good(0).p, -1, 0, CodeCopy, "dst"},
		{"no driver or no such device", good(0).p, cudaDev.p, 1, 0, CodeCUDA, "kDLCUDA"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, err := copyTensors(c.dst, c.src, c.stream, c.flags)
			if code != c.code || err == nil {
				t.Fatalf("code %d, error %v; want code %d", code, err, c.code)
			}
			if !strings.Contains(err.Error(), c.phrase) {
				t.Errorf("error %q does not say %q", err, c.phrase)
			}
		})
	}
	if code := codeOf(nil); code != CodeOK {
		t.Errorf("codeOf(nil) = %d", code)
	}
}

// TestGPUCopy copies between device tensors and between a device and a
// host tensor on a stream given by handle, as a Python caller does.
func TestGPUCopy(t *testing.T) {
	dev := testenv.NeedGPU(t)
	testenv.NeedNVRTC(t)
	s := testenv.NewStream(t, dev)
	host := iota32(12)
	raw := unsafe.Slice((*byte)(unsafe.Pointer(&host[0])), 48)
	a, err := dev.Alloc(48, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := dev.Alloc(48, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := a.CopyFromHost(raw); err != nil {
		t.Fatal(err)
	}
	on := dlpack.DLDevice{DeviceType: dlpack.KDLCUDA, DeviceID: int32(dev.Ordinal())}
	export := func(buf *cuda.Buffer, shape, strides []int64) unsafe.Pointer {
		m, err := dlpack.Export(dlpack.ExportRequest{Data: uintptr(buf.Ptr()), Device: on, DType: layout.Int32, Shape: shape, Strides: strides})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { dlpack.CallDeleter(m) })
		return unsafe.Pointer(m)
	}
	srcT := export(a, []int64{4, 3}, []int64{1, 4}) // a viewed as the transpose of a 3×4 array
	dst := export(b, []int64{4, 3}, nil)
	if code, err := copyTensors(dst, srcT, int64(s.Handle()), FlagSync); code != CodeOK {
		t.Fatalf("device copy: code %d: %v", code, err)
	}
	out := make([]int32, 12)
	hostDst := newTensor(t, out, 0, []int64{4, 3}, nil, 0, false)
	if code, err := copyTensors(hostDst.p, dst, int64(s.Handle()), 0); code != CodeOK {
		t.Fatalf("device to host: code %d: %v", code, err)
	}
	want := []int32{100, 104, 108, 101, 105, 109, 102, 106, 110, 103, 107, 111}
	if !slices.Equal(out, want) {
		t.Errorf("copied %v, want %v", out, want)
	}
	if code, err := copyTensors(dst, srcT, dlpack.StreamNoSync, 0); code != CodeInvalid {
		t.Errorf("device copy with stream -1: code %d: %v", code, err)
	}
}
