package jit

import (
	"encoding/binary"
	"errors"
	"math"
	"strconv"
	"sync"
	"testing"
	"unsafe"

	"github.com/stridekit/stridekit/gen"
	"github.com/stridekit/stridekit/internal/testenv"
	"github.com/stridekit/stridekit/layout"
	"github.com/stridekit/stridekit/runtime/cuda"
)

var testSig = layout.Signature{Class: layout.ClassTile, NDim: 2, Itemsize: 4, Vec: 1}

// copy2dParams is the parameter layout of copyKernel.
var copy2dParams = cuda.ParamsOf(8, 8, 4, 4, 8, 8)

// copyKernelArgs is copyKernel with the parameters of every registered
// kernel: (dst, src, argument block of gen.ArgsSize(testSig) bytes), whose
// first 32 bytes here hold rows, cols, dst stride and src stride.
var copyKernelArgs = `struct A { long long rows, cols, ds, ss; char pad[` + argsPad + `]; };
extern "C" __global__ void copy2d(float* __restrict__ dst, const float* __restrict__ src, const A a) {
	long long c = blockIdx.x * blockDim.x + threadIdx.x, r = blockIdx.y;
	if (r < a.rows && c < a.cols) dst[r * a.ds + c] = src[r * a.ss + c];
}
`

// argsPad sizes copyKernelArgs's block as the generator's for testSig.
var argsPad = strconv.Itoa(gen.ArgsSize(testSig) - 32)

// launchCopy2d launches copyKernelArgs for a 2-d plan p.
func launchCopy2d(fn cuda.Function, stream *cuda.Stream, dst, src cuda.DevicePtr, p *layout.Plan) error {
	a := make([]byte, gen.ArgsSize(testSig))
	for i, v := range []int64{p.Shape[0], p.Shape[1], p.DstStrides[0], p.SrcStrides[0]} {
		binary.LittleEndian.PutUint64(a[8*i:], uint64(v))
	}
	return cuda.Launch(fn, cuda.Dim3{X: uint32(p.Shape[1]+127) / 128, Y: uint32(p.Shape[0]), Z: 1}, cuda.Dim3{X: 128, Y: 1, Z: 1}, 0, stream,
		unsafe.Pointer(&dst), unsafe.Pointer(&src), unsafe.Pointer(&a[0]))
}

func TestRegistry(t *testing.T) {
	k := Kernel{Sig: testSig, Name: "copy2d", Source: copyKernelArgs}
	Register(k)
	got, ok := Lookup(testSig)
	if !ok || got.Name != "copy2d" {
		t.Fatalf("Lookup: %v %v", got.Name, ok)
	}
	k.Name = "copy2d"
	Register(k) // replaces, no panic
	if _, ok := Lookup(layout.Signature{Class: layout.ClassTile, NDim: 3, Itemsize: 4, Vec: 1}); ok {
		t.Error("Lookup of an unregistered signature succeeded")
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Error("Register of a kernel without source or CUBIN did not panic")
			}
		}()
		Register(Kernel{Sig: testSig, Name: "x"})
	}()
	if len(Kernels()) == 0 {
		t.Error("Kernels is empty")
	}
}

// TestCacheOnGPU loads a registered kernel through a Cache (compile, then
// memory hits; a fresh Cache hits the disk), launches it and checks the
// copy; 32 goroutines asking at once load it once.
func TestCacheOnGPU(t *testing.T) {
	d := testenv.NeedGPU(t)
	testenv.NeedNVRTC(t)
	useCacheDir(t)
	Register(Kernel{Sig: testSig, Name: "copy2d", Source: copyKernelArgs})
	c := NewCache()
	defer c.Close()
	s0 := ReadStats()
	var wg sync.WaitGroup
	fns := make([]cuda.Function, 32)
	errs := make([]error, 32)
	for i := range fns {
		wg.Go(func() { fns[i], _, errs[i] = c.Kernel(d, testSig) })
	}
	wg.Wait()
	for i := range fns {
		if errs[i] != nil || fns[i].Handle() != fns[0].Handle() {
			t.Fatalf("goroutine %d: %v", i, errs[i])
		}
	}
	s1 := ReadStats()
	if s1.Compiles-s0.Compiles != 1 || s1.ModuleLoads-s0.ModuleLoads != 1 {
		t.Errorf("32 concurrent requests: %d compiles, %d loads", s1.Compiles-s0.Compiles, s1.ModuleLoads-s0.ModuleLoads)
	}
	c2 := NewCache()
	defer c2.Close()
	if _, _, err := c2.Kernel(d, testSig); err != nil {
		t.Fatal(err)
	}
	if s2 := ReadStats(); s2.Compiles != s1.Compiles || s2.DiskHits-s1.DiskHits != 1 {
		t.Errorf("fresh cache did not hit the disk: %+v", s2)
	}
	// AOT CUBIN: loaded without compiling.
	img, err := Compile(copyKernel, Options{Arch: d.Arch()})
	if err != nil {
		t.Fatal(err)
	}
	s3 := ReadStats()
	if _, err := NewCache().Function(d, copyKernel, "copy2d", copy2dParams, Options{}, map[string][]byte{img.targetName(): img.Data}); err != nil {
		t.Fatal(err)
	}
	if s4 := ReadStats(); !img.PTX && s4.Compiles != s3.Compiles {
		t.Errorf("AOT image compiled anyway")
	}
	if _, _, err := c.Kernel(d, layout.Signature{Class: layout.ClassMemcpy, NDim: 1, Itemsize: 4, Vec: 1}); !errors.Is(err, ErrNoKernel) {
		t.Errorf("memcpy has no kernel: %v", err)
	}

	// Launch: copy a 37×50 window of a 37×64 matrix into a dense 37×50 one.
	fn, k, _ := c.Kernel(d, testSig)
	const rows, cols, srcStride = 37, 50, 64
	src := make([]byte, 4*rows*srcStride)
	for i := range rows * srcStride {
		binary.LittleEndian.PutUint32(src[4*i:], math.Float32bits(float32(i)))
	}
	sb, _ := d.Alloc(len(src), nil)
	db, _ := d.Alloc(4*rows*cols, nil)
	defer sb.Close()
	defer db.Close()
	if err := sb.CopyFromHost(src); err != nil {
		t.Fatal(err)
	}
	p := &layout.Plan{Sig: testSig, Shape: []int64{rows, cols}, DstStrides: []int64{cols, 1}, SrcStrides: []int64{srcStride, 1}}
	if k.Name != "copy2d" {
		t.Fatalf("Kernel gave %q, want the registered copy2d", k.Name)
	}
	if err := launchCopy2d(fn, nil, db.Ptr(), sb.Ptr(), p); err != nil {
		t.Fatal(err)
	}
	out := make([]byte, 4*rows*cols)
	if err := db.CopyToHost(out); err != nil {
		t.Fatal(err)
	}
	for r := range rows {
		for c := range cols {
			got := math.Float32frombits(binary.LittleEndian.Uint32(out[4*(r*cols+c):]))
			if got != float32(r*srcStride+c) {
				t.Fatalf("dst[%d][%d] = %v, want %v", r, c, got, float32(r*srcStride+c))
			}
		}
	}
}

func (img Image) targetName() string { return targetOption(img.Arch, img.PTX) }

// BenchmarkMemoryHit is Cache.Kernel on a loaded kernel (goal < 1 µs).
func BenchmarkMemoryHit(b *testing.B) {
	d := testenv.NeedGPU(b)
	testenv.NeedNVRTC(b)
	Register(Kernel{Sig: testSig, Name: "copy2d", Source: copyKernelArgs})
	c := NewCache()
	defer c.Close()
	if _, _, err := c.Kernel(d, testSig); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := c.Kernel(d, testSig); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkMemoryHitBySource is Cache.Function on a loaded kernel, keyed by
// its whole source.
func BenchmarkMemoryHitBySource(b *testing.B) {
	d := testenv.NeedGPU(b)
	testenv.NeedNVRTC(b)
	c := NewCache()
	defer c.Close()
	if _, err := c.Function(d, copyKernel, "copy2d", copy2dParams, Options{}, nil); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Function(d, copyKernel, "copy2d", copy2dParams, Options{}, nil); err != nil {
			b.Fatal(err)
		}
	}
}
