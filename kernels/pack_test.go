package kernels

import (
	"bytes"
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/stridekit/stridekit/gen"
	"github.com/stridekit/stridekit/layout"
	"github.com/stridekit/stridekit/runtime/cuda"
)

// typedPack runs the generated typed packer of sig and returns its argument
// block as bytes.
func typedPack(t *testing.T, f any, p *layout.Plan, sm int) ([]byte, cuda.Dim3, cuda.Dim3) {
	t.Helper()
	asBytes := func(ptr unsafe.Pointer, n uintptr) []byte { return bytes.Clone(unsafe.Slice((*byte)(ptr), n)) }
	switch f := f.(type) {
	case func(*layout.Plan, int, *skArgs1) (cuda.Dim3, cuda.Dim3):
		var a skArgs1
		g, b := f(p, sm, &a)
		return asBytes(unsafe.Pointer(&a), unsafe.Sizeof(a)), g, b
	case func(*layout.Plan, int, *skArgs2) (cuda.Dim3, cuda.Dim3):
		var a skArgs2
		g, b := f(p, sm, &a)
		return asBytes(unsafe.Pointer(&a), unsafe.Sizeof(a)), g, b
	case func(*layout.Plan, int, *skArgs3) (cuda.Dim3, cuda.Dim3):
		var a skArgs3
		g, b := f(p, sm, &a)
		return asBytes(unsafe.Pointer(&a), unsafe.Sizeof(a)), g, b
	case func(*layout.Plan, int, *skArgs4) (cuda.Dim3, cuda.Dim3):
		var a skArgs4
		g, b := f(p, sm, &a)
		return asBytes(unsafe.Pointer(&a), unsafe.Sizeof(a)), g, b
	case func(*layout.Plan, int, *skArgs5) (cuda.Dim3, cuda.Dim3):
		var a skArgs5
		g, b := f(p, sm, &a)
		return asBytes(unsafe.Pointer(&a), unsafe.Sizeof(a)), g, b
	case func(*layout.Plan, int, *skArgs6) (cuda.Dim3, cuda.Dim3):
		var a skArgs6
		g, b := f(p, sm, &a)
		return asBytes(unsafe.Pointer(&a), unsafe.Sizeof(a)), g, b
	}
	t.Fatalf("packer of unexpected type %T", f)
	return nil, cuda.Dim3{}, cuda.Dim3{}
}

// TestStubsMatchGenericPack checks, for every generated kernel and random
// plans of its signature, that the typed stub and gen.Pack (the generic
// launcher) produce the same argument bytes, grid and block.
func TestStubsMatchGenericPack(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	if len(stridegenPackers) != len(gen.DefaultSet()) {
		t.Fatalf("%d packers for %d default signatures", len(stridegenPackers), len(gen.DefaultSet()))
	}
	for sig, f := range stridegenPackers {
		nd := int(sig.NDim)
		for trial := 0; trial < 8; trial++ {
			p := &layout.Plan{Sig: sig, Shape: make([]int64, nd), DstStrides: make([]int64, nd), SrcStrides: make([]int64, nd), Volume: 1}
			for k := range nd {
				e := int64(1 + r.IntN(300))
				if k == nd-1 || (sig.Class == layout.ClassTile && k == int(sig.Fast)) {
					e *= int64(sig.Vec)
				}
				if trial == 7 && k == 0 {
					e = 1 << 20 // large grids
				}
				p.Shape[k] = e
				p.DstStrides[k] = r.Int64N(1<<20) - 1<<19
				p.SrcStrides[k] = r.Int64N(1<<20) - 1<<19
				p.Volume *= e
			}
			p.Bytes = p.Volume * int64(sig.Itemsize)
			sm := 1 + r.IntN(200)
			got, g1, b1 := typedPack(t, f, p, sm)
			want := make([]byte, gen.ArgsSize(nd))
			g2, b2, err := gen.Pack(sig, p, sm, want)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("%v: stub and gen.Pack bytes differ for %+v:\n%x\n%x", sig, p, got, want)
			}
			if (g1 != cuda.Dim3{X: g2[0], Y: g2[1], Z: g2[2]}) || (b1 != cuda.Dim3{X: b2[0], Y: b2[1], Z: b2[2]}) {
				t.Fatalf("%v: grid/block %v %v vs %v %v", sig, g1, b1, g2, b2)
			}
		}
	}
}

// TestFor checks For serves the registry first and generates the rest.
func TestFor(t *testing.T) {
	def := gen.DefaultSet()[7]
	k, err := For(def)
	if err != nil || k.Sig != def || Generated(def) {
		t.Fatalf("For(%v) = %v, %v; generated %v", def, k.Name, err, Generated(def))
	}
	odd := layout.Signature{Class: layout.ClassTile, NDim: 8, Fast: 3, Itemsize: 12, Vec: 1, Index64: true}
	k, err = For(odd)
	if err != nil || k.Name != gen.Name(odd) || k.Source == "" || k.Launch == nil || !Generated(odd) {
		t.Fatalf("For(%v) = %+v, %v", odd, k.Name, err)
	}
	if _, err := For(layout.Signature{Class: layout.ClassMemcpy, NDim: 1, Itemsize: 1, Vec: 1}); err == nil {
		t.Fatal("For(memcpy) = nil error")
	}
}
