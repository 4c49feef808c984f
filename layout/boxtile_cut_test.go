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
// the copy's other fields stay; it is cut at the table's least run of 192
// bytes too, its conflicts being 16-way. Spans whose dst step is 128 bytes
// give way to plain runs; a plan without conflicts is not cut, nor a copy
// under 1 MiB. The run bound is checked by TestCutSrcRunsShort.
func TestCutSrcRuns(t *testing.T) {
	plan := func(shape, ds, ss []int64, cut int) Plan { return cutPlan(t, shape, ds, ss, 1, cut) }
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
	if at192 := plan(shape, ds, ss, 192); *at192.Box != *cut.Box {
		t.Errorf("16-way conflicts: CutSrcRuns 192 did not cut to 64-byte runs as 2 does (src runs of %d items)", at192.Box.Src.RunLen)
	}
	// A transpose from rows padded to 128 bytes: src runs of 100 bytes
	// taken as spans of both dims (the holes are the padding), so a dst
	// run steps 128 bytes, 32 reads a bank; plain runs have none.
	sh, d, s := []int64{100, 10501}, []int64{10501, 1}, []int64{1, 128}
	plain, cut = plan(sh, d, s, 0), plan(sh, d, s, 2)
	if !plain.Box.Src.Holes || conflicts(plain) != 128 {
		t.Fatalf("padded rows, uncut: spans %v, %d wavefronts; want spans, 128", plain.Box.Src.Holes, conflicts(plain))
	}
	if cut.Box.Src.Holes || conflicts(cut) > 8 {
		t.Errorf("padded rows, cut: spans %v, %d wavefronts; want plain runs, at most 8", cut.Box.Src.Holes, conflicts(cut))
	}
	// A 3-d permutation whose reads meet no conflicts is not cut.
	sh, d, s = []int64{80, 100, 150}, []int64{15000, 150, 1}, []int64{150, 1, 15000}
	if a, b := plan(sh, d, s, 0), plan(sh, d, s, 2); conflicts(a) > 8 || *a.Box != *b.Box {
		t.Errorf("3-d permutation: %d wavefronts; the option changed the geometry: %v", conflicts(a), *a.Box != *b.Box)
	}
	// A copy under 1 MiB (the 64 by 1029 transpose: 66 KB) is not cut:
	// its time is its launch's.
	sh, d, s = []int64{64, 1029}, []int64{1029, 1}, []int64{1, 64}
	if a, b := plan(sh, d, s, 0), plan(sh, d, s, 2); conflicts(a) != 64 || *a.Box != *b.Box {
		t.Errorf("small transpose: %d wavefronts (want 64); the option changed the geometry: %v", conflicts(a), *a.Box != *b.Box)
	}
}

// TestCutSrcRunsShort checks CutSrcRuns as the least bytes a cut leaves
// in a src run, on two copies of a random sweep whose fewest-wavefront
// cuts left short runs (measured on an H200: 0.52 and 0.56 times as fast
// as uncut). A uint8 6-d permutation, its reads 4-way conflicted, cut to
// runs of 20 bytes where any length will do, stays uncut at 192 (in tiles
// of 24 KiB: at 32 KiB, its dst runs cut, the tile grows to one whose
// reads no src cut relieves). A
// complex128 7-d view (a reversed dim among its strides), 3-way conflicted,
// cut to runs of 64 bytes at any length, is cut at 192 to runs of at least
// 192 bytes whose reads take at most half the wavefronts (1.39 times as
// fast as uncut).
func TestCutSrcRunsShort(t *testing.T) {
	conflicts := func(p Plan) int { return storeConflicts(p.Box, &p.Box.W, p.Tile, int64(p.Sig.Itemsize)) }
	shape, ds, ss := []int64{34, 18, 26, 20, 27, 8}, []int64{2021760, 112320, 4320, 216, 8, 1}, []int64{2021760, 20, 360, 1, 9360, 252720}
	plain, anyLen, at192 := cutPlanAt(t, 24<<10, shape, ds, ss, 1, 0), cutPlanAt(t, 24<<10, shape, ds, ss, 1, 1), cutPlanAt(t, 24<<10, shape, ds, ss, 1, 192)
	if *anyLen.Box == *plain.Box || anyLen.Box.Src.RunLen >= 192 {
		t.Fatalf("uint8: CutSrcRuns 1 kept src runs of %d bytes (uncut %d); want a cut to fewer than 192", anyLen.Box.Src.RunLen, plain.Box.Src.RunLen)
	}
	if *at192.Box != *plain.Box {
		t.Errorf("uint8: CutSrcRuns 192 cut src runs of %d bytes to %d", plain.Box.Src.RunLen, at192.Box.Src.RunLen)
	}
	shape = []int64{14, 17, 4, 5, 12, 10, 8}
	ds, ss = []int64{326400, 19200, 4800, 960, 80, 8, 1}, []int64{685440, 40320, 1, 8064, 4, -768, 48}
	plain, anyLen, at192 = cutPlan(t, shape, ds, ss, 16, 0), cutPlan(t, shape, ds, ss, 16, 1), cutPlan(t, shape, ds, ss, 16, 192)
	if 16*anyLen.Box.Src.RunLen >= 192 {
		t.Fatalf("complex128: CutSrcRuns 1 cut to src runs of %d bytes; want fewer than 192", 16*anyLen.Box.Src.RunLen)
	}
	if g := at192.Box; 16*g.Src.RunLen < 192 || 2*conflicts(at192) > conflicts(plain) || g.Src.RunLen >= plain.Box.Src.RunLen {
		t.Errorf("complex128: CutSrcRuns 192 gave src runs of %d bytes (uncut %d), %d wavefronts (uncut %d); want a cut to 192 or more, at most half",
			16*g.Src.RunLen, 16*plain.Box.Src.RunLen, conflicts(at192), conflicts(plain))
	}
}

// cutPlan plans a box tile of items of item bytes between dense views of
// shape with strides ds and ss (items), with CutSrcRuns cut, at the
// tuning's box-tile size and 16-byte grain.
func cutPlan(t *testing.T, shape, ds, ss []int64, item, cut int) Plan {
	t.Helper()
	return cutPlanAt(t, 32<<10, shape, ds, ss, item, cut)
}

// cutPlanAt is cutPlan with tiles of tileBytes.
func cutPlanAt(t *testing.T, tileBytes int, shape, ds, ss []int64, item, cut int) Plan {
	t.Helper()
	dst, err := New(shape, ds, item)
	if err != nil {
		t.Fatal(err)
	}
	src, err := New(shape, ss, item)
	if err != nil {
		t.Fatal(err)
	}
	o := PlanOptions{DstAlign: 16, SrcAlign: 16, TileBytes: tileBytes, LoadGrain: tilegeom.ChunkGrain, CutSrcRuns: cut}
	p, err := PlanCopy(dst, src, o)
	if err != nil || p.Box == nil {
		t.Fatalf("plan %v, %v: want a box tile", p.Sig, err)
	}
	return p
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
