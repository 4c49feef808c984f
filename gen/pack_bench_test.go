package gen_test

import (
	"testing"

	"github.com/stridekit/stridekit/gen"
	"github.com/stridekit/stridekit/layout"
)

// benchPlanPack measures the host work of one copy before its launch: the
// plan of a square transpose of n×n float32 and the packing of its
// arguments, as a cached device copy does it. It is the part of the
// dispatch overhead that does not need a GPU.
func benchPlanPack(b *testing.B, n int64, want layout.Class) {
	dst, err := layout.Dense([]int64{n, n}, 4, layout.C)
	if err != nil {
		b.Fatal(err)
	}
	src, err := layout.Dense([]int64{n, n}, 4, layout.Perm(1, 0))
	if err != nil {
		b.Fatal(err)
	}
	opt := layout.PlanOptions{DstAlign: 256, SrcAlign: 256}
	var p layout.Plan
	if err := layout.PlanCopyInto(&p, dst, src, opt); err != nil {
		b.Fatal(err)
	}
	if p.Sig.Class != want {
		b.Fatalf("%d×%d transpose plans as %v, want %v", n, n, p.Sig, want)
	}
	k := gen.KnobsFor(p.Sig, 90)
	buf := make([]byte, 4096)
	b.ReportAllocs()
	for b.Loop() {
		if err := layout.PlanCopyInto(&p, dst, src, opt); err != nil {
			b.Fatal(err)
		}
		if _, err := gen.Pack(p.Sig, k, &p, 132, buf); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkPlanPackTile128(b *testing.B)   { benchPlanPack(b, 128, layout.ClassTile) }
func BenchmarkPlanPackBoxTile32(b *testing.B) { benchPlanPack(b, 32, layout.ClassBoxTile) }

// BenchmarkPackBoxTile32 is the packing alone of BenchmarkPlanPackBoxTile32,
// the plan made once.
func BenchmarkPackBoxTile32(b *testing.B) {
	dst, _ := layout.Dense([]int64{32, 32}, 4, layout.C)
	src, _ := layout.Dense([]int64{32, 32}, 4, layout.Perm(1, 0))
	var p layout.Plan
	if err := layout.PlanCopyInto(&p, dst, src, layout.PlanOptions{DstAlign: 256, SrcAlign: 256}); err != nil {
		b.Fatal(err)
	}
	k := gen.KnobsFor(p.Sig, 90)
	buf := make([]byte, 4096)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := gen.Pack(p.Sig, k, &p, 132, buf); err != nil {
			b.Fatal(err)
		}
	}
}
