package kernels

import (
	"testing"

	"github.com/stridekit/stridekit/internal/layouttest"
	"github.com/stridekit/stridekit/internal/pairgen"
	"github.com/stridekit/stridekit/internal/tilegeom"
	"github.com/stridekit/stridekit/layout"
)

// TestEmulatedCutRuns copies, on the CPU and in both tiers, box tiles
// whose src runs the planner cuts (layout.PlanOptions.CutSrcRuns, the
// cutruns knob): a uint8 2-d transpose of 64 by 16411 (src runs of 64 bytes
// that continue each other, so the uncut run spans both dims), a float32
// 6-d permutation whose src run spans three dims, each at both grains, and
// 8 random pairs whose plans the option changes (CutSrcRuns 2 against 0,
// whatever the table sets). Each fixed case must be
// cut (fewer src run dims than without the option), so the path is known
// to run.
func TestEmulatedCutRuns(t *testing.T) {
	r := emuRand(t, 41)
	for _, c := range []struct {
		name       string
		shape, src []int64
		item       int
	}{
		{"u8 64x16411 transpose", []int64{64, 16411}, []int64{1, 64}, 1},
		{"f32 6-d permutation", []int64{7, 17, 3, 16, 8, 29}, []int64{2784, 3712, 63104, 1, 16, 128}, 4},
	} {
		dst := layouttest.MustNew(t, c.shape, nil, c.item)
		src := layouttest.MustNew(t, c.shape, c.src, c.item)
		pair := pairgen.Pair{Kind: c.name, Dst: dst, Src: src, DstBuf: dst.RequiredSizeInBytes(), SrcBuf: src.RequiredSizeInBytes()}
		for _, g := range []int{tilegeom.WordGrain, tilegeom.ChunkGrain} {
			set := func(o *layout.PlanOptions) { o.TileBytes, o.LoadGrain, o.CutSrcRuns = 32<<10, g, 0 }
			plain := planWith(t, pair, set)
			for _, spec := range []bool{false, true} {
				p := emuCopyWith(t, r, pair, spec, func(o *layout.PlanOptions) { set(o); o.CutSrcRuns = 2 })
				if p.Box == nil || plain.Box == nil || p.Box.Src.NRun >= plain.Box.Src.NRun {
					t.Fatalf("%s (grain %d): src runs of %v dims, uncut %v: not cut", c.name, g, nruns(p), nruns(plain))
				}
			}
		}
	}
	n := 0
	for tries := 0; n < 8 && tries < emuRandomTries; tries++ {
		c := pairgen.Random(r, 8<<20) // views spanning up to 8 MiB: the planner cuts only copies of 1 MiB or more
		set := func(o *layout.PlanOptions) { o.TileBytes, o.CutSrcRuns = 16<<10, 0 }
		plain := planWith(t, c, set)
		if plain.Box == nil || plain.Box.Src.NRun < 2 {
			continue
		}
		cut := func(o *layout.PlanOptions) { set(o); o.CutSrcRuns = 2 }
		if p := planWith(t, c, cut); p.Box.Src.NRun == plain.Box.Src.NRun {
			continue
		}
		emuCopyWith(t, r, c, n%2 == 1, cut)
		n++
	}
	if n < 8 {
		t.Errorf("%d random pairs with cut src runs in %d tries, want 8", n, emuRandomTries)
	}
}

// planWith plans pair c as emuCopyWith does, with set applied to the
// options.
func planWith(t *testing.T, c pairgen.Pair, set func(*layout.PlanOptions)) layout.Plan {
	t.Helper()
	opt := PlanOptions(nil, 0x10000+uintptrOf(int(c.DstBase%256)), 0x10000+uintptrOf(int(c.SrcBase%256)), c.Dst.Itemsize())
	set(&opt)
	p, err := layout.PlanCopy(c.Dst, c.Src, opt)
	if err != nil {
		t.Fatalf("%v: %v", c, err)
	}
	return p
}

// nruns returns the dims of p's src runs, or -1 for a plan without a box.
func nruns(p layout.Plan) int {
	if p.Box == nil {
		return -1
	}
	return p.Box.Src.NRun
}

// TestCutRunsKnob checks that the cutruns knob reaches the planner through
// the box tuning (STRIDEKIT_KNOBS, as an A/B sets it): the table's 192
// bytes for every item size, the knob's value where it sets one.
func TestCutRunsKnob(t *testing.T) {
	t.Cleanup(ResetTuning)
	ResetTuning()
	for _, item := range []int{1, 3, 12, 16} {
		if got := archPlanOptions(90, 16, 16, item).CutSrcRuns; got != 192 {
			t.Errorf("item %d: the table's CutSrcRuns is %d, want 192", item, got)
		}
	}
	t.Setenv("STRIDEKIT_KNOBS", "btile cutruns=3")
	ResetTuning()
	for _, item := range []int{1, 4, 12} {
		if got := archPlanOptions(90, 16, 16, item).CutSrcRuns; got != 3 {
			t.Errorf("item %d: STRIDEKIT_KNOBS='btile cutruns=3' gave CutSrcRuns %d", item, got)
		}
	}
}
