package gen_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stridekit/stridekit/gen"
	"github.com/stridekit/stridekit/internal/layouttest"
	"github.com/stridekit/stridekit/internal/pairgen"
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
	planPackLoop(b, dst, src, layout.PlanOptions{DstAlign: 256, SrcAlign: 256}, want)
}

// planPackLoop checks that dst ← src plans as class want under opt, then
// times planning and packing it again, b.N times.
func planPackLoop(b *testing.B, dst, src layout.Layout, opt layout.PlanOptions, want layout.Class) {
	var p layout.Plan
	if err := layout.PlanCopyInto(&p, dst, src, opt); err != nil {
		b.Fatal(err)
	}
	if p.Sig.Class != want {
		b.Fatalf("%v ← %v plans as %v, want %v", dst, src, p.Sig, want)
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

// BenchmarkPlanPackDispatch is the plan and packing of memview's dispatch
// cases (runtime/memview's BenchmarkDispatchOverFloor), one of each kernel
// class: the part of a first copy's host time that needs no GPU, so that
// planning can be made cheaper on a machine without one.
func BenchmarkPlanPackDispatch(b *testing.B) {
	for _, c := range layouttest.DispatchCases() {
		b.Run(c.Name, func(b *testing.B) {
			dst, src := layouttest.MustNew(b, c.Shape, nil, c.Item), layouttest.MustNew(b, c.Shape, c.SrcStrides, c.Item)
			planPackLoop(b, dst, src, layout.PlanOptions{DstAlign: 16, SrcAlign: 16}, c.Class)
		})
	}
}

// BenchmarkPlanPackRandom is the plan and packing of random copies (views
// of up to 64 MiB from internal/pairgen, 16-byte aligned), a fixed set
// of 256 of each class planned in turn: what the first copy of a new pair
// costs beyond the dispatch cases' single shapes. Its ns/op is one copy's.
func BenchmarkPlanPackRandom(b *testing.B) {
	for _, class := range []layout.Class{layout.ClassBoxTile, layout.ClassTile, layout.ClassElementwise} {
		b.Run(class.String(), func(b *testing.B) {
			benchPlanPacks(b, randomPlans(b, class, 256), func(int) layout.PlanOptions {
				return layout.PlanOptions{DstAlign: 16, SrcAlign: 16}
			})
		})
	}
}

// BenchmarkPlanPackTable is BenchmarkPlanPackRandom's box tiles planned
// with the tuning table's box options on a Hopper (gen.BoxPlanOptions, as
// kernels plans them: the src-run cuts included), for pairs of views up to
// 64 MiB and up to 16 KiB (the planner weighs cuts only for copies of 1
// MiB or more).
func BenchmarkPlanPackTable(b *testing.B) {
	for _, size := range []int64{64 << 20, 16 << 10} {
		b.Run(fmt.Sprintf("btile-%dKiB", size>>10), func(b *testing.B) {
			benchPlanPacks(b, randomPlansOf(b, layout.ClassBoxTile, 256, size), func(item int) layout.PlanOptions {
				o := gen.BoxPlanOptions(item, 90)
				o.DstAlign, o.SrcAlign = 16, 16
				return o
			})
		})
	}
}

// benchPlanPacks plans and packs pairs in turn, each with the options
// optFor gives its item size (worked out before the timing), as a Hopper
// with 132 multiprocessors would: one op is one copy.
func benchPlanPacks(b *testing.B, pairs []pairgen.Pair, optFor func(item int) layout.PlanOptions) {
	opts := make([]layout.PlanOptions, len(pairs))
	for i, c := range pairs {
		opts[i] = optFor(c.Dst.Itemsize())
	}
	var p layout.Plan
	buf := make([]byte, 1<<16)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		c, o := pairs[i%len(pairs)], opts[i%len(pairs)]
		i++
		if err := layout.PlanCopyInto(&p, c.Dst, c.Src, o); err != nil {
			b.Fatal(err)
		}
		if _, err := gen.Pack(p.Sig, gen.KnobsFor(p.Sig, 90), &p, 132, buf); err != nil {
			b.Fatal(err)
		}
	}
}

// randomPlans returns n random pairs (fixed seed) of views up to 64 MiB
// that plan as class.
func randomPlans(b *testing.B, class layout.Class, n int) []pairgen.Pair {
	return randomPlansOf(b, class, n, 64<<20)
}

// randomPlansOf is randomPlans for views of up to size bytes.
func randomPlansOf(b *testing.B, class layout.Class, n int, size int64) []pairgen.Pair {
	r := rand.New(rand.NewPCG(29, uint64(class)))
	var out []pairgen.Pair
	var p layout.Plan
	for tries := 0; len(out) < n && tries < 1000*n; tries++ {
		c := pairgen.Random(r, size)
		if layout.PlanCopyInto(&p, c.Dst, c.Src, layout.PlanOptions{DstAlign: 16, SrcAlign: 16}) == nil && p.Sig.Class == class {
			out = append(out, c)
		}
	}
	if len(out) < n {
		b.Fatalf("%d random pairs of class %v, want %d", len(out), class, n)
	}
	return out
}
