package kernels

import (
	"testing"

	"github.com/stridekit/stridekit/gen"
	"github.com/stridekit/stridekit/internal/pairgen"
	"github.com/stridekit/stridekit/kernels/jit"
	"github.com/stridekit/stridekit/layout"
)

// TestEmulatedSiblings copies, on the CPU and in both tiers, 1-byte
// permutations whose box tiles take the sibling store (gen.SiblingRuns):
// extents along src's fastest dim that 4 divides and that it does not (the
// last group partial, or the only group), that dim not canonical dim 0,
// tiles ragged along it, dst runs over two dims and cut ones, a strided
// source, a 4-d reversal, a dst view one byte into its buffer (the kernel
// then stores element by element) and random pairs; and three that must
// not take it: a reversed destination, dst runs of 30 bytes (starting at
// every address modulo 4) and a dst stride of 130 bytes along that dim.
// Each fixed case must take the path it is listed for, so the test fails
// if the path goes unused.
func TestEmulatedSiblings(t *testing.T) {
	r := emuRand(t, 7)
	type fixed struct {
		shape []int64
		perm  []int
		step  int64 // src stride multiplier (a strided src run)
		flipD bool  // dst's fastest dim reversed
		base  int64 // the dst view's first byte in its buffer
		not   bool  // the case must not take the sibling store
	}
	cases := []fixed{
		{[]int64{13, 300, 72}, []int{2, 1, 0}, 1, false, 0, false},     // 13 siblings: a last group of 1
		{[]int64{13, 300, 72}, []int{0, 2, 1}, 1, false, 0, false},     // a is not canonical dim 0
		{[]int64{5, 199, 128}, []int{0, 2, 1}, 1, false, 0, false},     // ragged along a (100 of 199)
		{[]int64{5, 199, 128}, []int{2, 0, 1}, 1, false, 0, false},     // ragged along a (125 of 995)
		{[]int64{3, 301, 200}, []int{2, 1, 0}, 1, false, 0, false},     // one group of 3, dst runs cut at 100
		{[]int64{8, 40, 40}, []int{2, 1, 0}, 2, false, 0, false},       // a strided source
		{[]int64{7, 9, 12, 44}, []int{3, 2, 1, 0}, 1, false, 0, false}, // a 4-d reversal
		{[]int64{16, 12, 60}, []int{2, 1, 0}, 1, false, 1, false},      // dst one byte into its buffer
		{[]int64{9, 70, 300}, []int{2, 0, 1}, 1, true, 0, true},        // a reversed dst
		{[]int64{9, 70, 300}, []int{2, 0, 1}, 1, false, 0, true},       // dst runs of 30 bytes
		{[]int64{7, 9, 11, 130}, []int{0, 3, 1, 2}, 1, false, 0, true}, // a's dst stride 130
	}
	used := 0
	for _, c := range cases {
		dst, src := stepViews(t, c.shape, c.perm, 1, c.step, c.flipD)
		pair := pairgen.Pair{Kind: "siblings", Dst: dst, Src: src, DstBase: c.base, DstBuf: dst.RequiredSizeInBytes() + c.base, SrcBuf: src.RequiredSizeInBytes()}
		for _, spec := range []bool{false, true} {
			p := emuCopyTiles(t, r, pair, spec, 4<<10)
			if want := !c.not; siblingStore(t, p) != want {
				t.Errorf("%v: plan %v tile %v takes the sibling store: %v, want %v", pair, p.Sig, p.Tile, !want, want)
			} else {
				used++
			}
		}
	}
	// Random pairs of 1-byte items: those whose plans take the path.
	n := emuRandomOn(t, r, 12, "the sibling store", func(c pairgen.Pair, p layout.Plan) bool {
		return c.Dst.Itemsize() == 1 && siblingStore(t, p)
	}, func(i int) bool { return i%4 == 0 })
	t.Logf("%d fixed copies on the path listed and %d random pairs through the sibling store", used, n)
}

// siblingStore reports whether the kernel of plan p writes its dst runs
// four siblings at a time (gen.SiblingRuns, under the knobs jit renders).
func siblingStore(t *testing.T, p layout.Plan) bool {
	return takesPath(t, p, func(k gen.Knobs, p *layout.Plan) bool { return gen.SiblingRuns(k, p) > 0 })
}

// takesPath reports whether plan p takes the path that rule reports (a
// rule of gen's, which checks the plan's class), under the knobs its
// kernel is rendered with (jit.For, as the emulated copies load it).
func takesPath(t *testing.T, p layout.Plan, rule func(gen.Knobs, *layout.Plan) bool) bool {
	t.Helper()
	if p.Sig.Class == layout.ClassNone || p.Sig.Class == layout.ClassMemcpy {
		return false // no kernel
	}
	k, err := jit.For(p.Sig, 90)
	if err != nil {
		t.Fatal(err)
	}
	return rule(k.Knobs, &p)
}
