package memview

import (
	"testing"

	"github.com/stridekit/stridekit/internal/layouttest"
	"github.com/stridekit/stridekit/layout"
	"github.com/stridekit/stridekit/runtime/cuda"
)

// BenchmarkCachedDispatch is the host work a repeated device copy does
// before its launch, without a GPU: the checks, the route, the alignments,
// the key and the cache lookup of a binding planted in the cache (views of
// a fake device), for a 2-d transpose and a 6-d permutation. It is the part
// of BenchmarkDispatchOverFloor's margin that is memview's own.
func BenchmarkCachedDispatch(b *testing.B) {
	for _, c := range []struct {
		name  string
		shape []int64
		perm  []int
	}{{"2d", []int64{64, 64}, []int{1, 0}}, {"6d", []int64{4, 5, 6, 7, 8, 9}, []int{5, 3, 1, 0, 2, 4}}} {
		b.Run(c.name, func(b *testing.B) {
			dev := new(cuda.Device)
			dl, _ := layout.Dense(c.shape, 4, layout.C)
			base, _ := layout.Dense(c.shape, 4, layout.C)
			sl, _ := base.Permute(c.perm...)
			dst := fakeView(b, cuda.MemoryDevice, dev, 0x10000, dl, layout.Float32)
			src := fakeView(b, cuda.MemoryDevice, dev, 0x100000, sl, layout.Float32)
			da, sa := aligns(dst, src, PathDevice)
			store(&binding{key: keyOf(dst, src, PathDevice, da, sa, dev), dst: dst.l, src: src.l, path: PathDevice})
			defer forget()
			s := dev.LegacyStream()
			b.ReportAllocs()
			for b.Loop() {
				if err := checkCopy(dst, src); err != nil {
					b.Fatal(err)
				}
				if err := streamFits(dst, src, s); err != nil {
					b.Fatal(err)
				}
				if _, bd, err := bindingOf(dst, src, s); err != nil || bd == nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkFirstBind is the host work a first device copy of a new pair
// does before its launch, without a GPU: BenchmarkCachedDispatch's, with
// the pair's binding dropped from the cache each time, so that it is made
// (planned, its kernel looked up, packed, allocated) and stored. One of
// each kernel class (memview's dispatch cases, views of a fake device);
// the kernel's source is rendered once, outside the loop, and found again
// in the render cache each time, where a GPU finds the loaded kernel.
func BenchmarkFirstBind(b *testing.B) {
	for _, c := range layouttest.DispatchCases() {
		b.Run(c.Name, func(b *testing.B) {
			dev := new(cuda.Device)
			dl, sl := layouttest.MustNew(b, c.Shape, nil, c.Item), layouttest.MustNew(b, c.Shape, c.SrcStrides, c.Item)
			dt, _ := layout.Opaque(c.Item)
			dst := fakeView(b, cuda.MemoryDevice, dev, 0x10000, dl, dt)
			src := fakeView(b, cuda.MemoryDevice, dev, 0x100000, sl, dt)
			da, sa := aligns(dst, src, PathDevice)
			key := keyOf(dst, src, PathDevice, da, sa, dev)
			defer forget()
			s := dev.LegacyStream()
			first := func() *binding {
				drop(key)
				if err := checkCopy(dst, src); err != nil {
					b.Fatal(err)
				}
				if err := streamFits(dst, src, s); err != nil {
					b.Fatal(err)
				}
				_, bd, err := bindingOf(dst, src, s)
				if err != nil {
					b.Fatal(err)
				}
				return bd
			}
			if bd := first(); bd.k.Plan.Sig.Class != c.Class {
				b.Fatalf("%s: planned %v, want class %v", c.Name, bd.k.Plan.Sig, c.Class)
			}
			b.ReportAllocs()
			for b.Loop() {
				first()
			}
		})
	}
}
