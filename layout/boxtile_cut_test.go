package layout

import (
	"testing"

	"github.com/stridekit/stridekit/internal/tilegeom"
)

// TestCutSrcRuns checks PlanOptions.CutSrcRuns on a uint8 2-d transpose
// of 64 by 1,051,029 (a random sweep's slowest case on an H200, 24.7 % of
// memcpy): its src runs of 64 bytes continue each other, so the uncut run
// spans both dims and a dst run steps 64 bytes through shared memory, 16
// reads a bank (storeConflicts 64, where 4 is none); cut after the first
// dim, the runs' slots lie an odd number of words apart (4). The tile and
// the copy's other fields stay. Spans whose dst step is 128 bytes give way
// to plain runs; a plan without conflicts is not cut.
func TestCutSrcRuns(t *testing.T) {
	opt := PlanOptions{DstAlign: 16, SrcAlign: 16, TileBytes: 32 << 10, LoadGrain: tilegeom.ChunkGrain}
	plan := func(shape, ds, ss []int64, cut int) Plan {
		dst, err := New(shape, ds, 1)
		if err != nil {
			t.Fatal(err)
		}
		src, err := New(shape, ss, 1)
		if err != nil {
			t.Fatal(err)
		}
		o := opt
		o.CutSrcRuns = cut
		p, err := PlanCopy(dst, src, o)
		if err != nil || p.Box == nil {
			t.Fatalf("plan %v, %v: want a box tile", p.Sig, err)
		}
		return p
	}
	conflicts := func(p Plan) int { return storeConflicts(p.Box, &p.Box.W, p.Tile, int64(p.Sig.Itemsize)) }
	shape, ds, ss := []int64{64, 1051029}, []int64{1051029, 1}, []int64{1, 64}
	plain, cut := plan(shape, ds, ss, 0), plan(shape, ds, ss, 2)
	if plain.Box.Src.NRun != 2 || conflicts(plain) != 64 {
		t.Fatalf("uncut: src runs of %d dims, %d wavefronts; want 2 and 64", plain.Box.Src.NRun, conflicts(plain))
	}
	if g := cut.Box; g.Src.NRun != 1 || g.Src.RunLen != 64 || conflicts(cut) != 4 || g.Shared.Total > tilegeom.MaxBoxSharedBytes {
		t.Errorf("cut: src runs of %d dims and %d items, %d wavefronts, %d bytes of shared memory; want 1, 64, 4, at most %d",
			g.Src.NRun, g.Src.RunLen, conflicts(cut), g.Shared.Total, tilegeom.MaxBoxSharedBytes)
	}
	if cut.Sig != plain.Sig || cut.Tile[0] != plain.Tile[0] || cut.Tile[1] != plain.Tile[1] || cut.Box.Dst != plain.Box.Dst {
		t.Errorf("cut changed the plan beyond the src runs: %v %v against %v %v", cut.Sig, cut.Tile, plain.Sig, plain.Tile)
	}
	// A transpose from rows padded to 128 bytes: src runs of 100 bytes
	// taken as spans of both dims (the holes are the padding), so a dst
	// run steps 128 bytes, 32 reads a bank; plain runs have none.
	sh, d, s := []int64{100, 1001}, []int64{1001, 1}, []int64{1, 128}
	plain, cut = plan(sh, d, s, 0), plan(sh, d, s, 2)
	if !plain.Box.Src.Holes || conflicts(plain) != 128 {
		t.Fatalf("padded rows, uncut: spans %v, %d wavefronts; want spans, 128", plain.Box.Src.Holes, conflicts(plain))
	}
	if cut.Box.Src.Holes || conflicts(cut) > 8 {
		t.Errorf("padded rows, cut: spans %v, %d wavefronts; want plain runs, at most 8", cut.Box.Src.Holes, conflicts(cut))
	}
	// A 3-d permutation whose reads meet no conflicts is not cut.
	sh, d, s = []int64{40, 50, 60}, []int64{3000, 60, 1}, []int64{60, 1, 2000}
	if a, b := plan(sh, d, s, 0), plan(sh, d, s, 2); conflicts(a) > 8 || *a.Box != *b.Box {
		t.Errorf("3-d permutation: %d wavefronts; the option changed the geometry: %v", conflicts(a), *a.Box != *b.Box)
	}
}

// TestCutSrcRunsBounds checks tilegeom.BoxGeometry.CutSrcRuns's refusals:
// a cut at 0 dims or at the run's own length leaves Set's geometry.
func TestCutSrcRunsBounds(t *testing.T) {
	shape, ds, ss, tile := []int64{64, 1000}, []int64{1000, 1}, []int64{1, 64}, []int64{64, 400}
	var want, g tilegeom.BoxGeometry
	want.Set(shape, ds, ss, tile, 1, tilegeom.WordGrain, false)
	for _, n := range []int{0, 2, 3} {
		if g.CutSrcRuns(shape, ds, ss, tile, 1, tilegeom.WordGrain, false, n) || g != want {
			t.Errorf("cut at %d of %d run dims: accepted or changed the geometry", n, want.Src.NRun)
		}
	}
	if !g.CutSrcRuns(shape, ds, ss, tile, 1, tilegeom.WordGrain, false, 1) || g.Src.NRun != 1 || g.Src.Runs != 400 {
		t.Errorf("cut at 1: src runs of %d dims, %d runs; want 1 and 400", g.Src.NRun, g.Src.Runs)
	}
}
