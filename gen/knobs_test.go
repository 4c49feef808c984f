package gen

import (
	"slices"
	"strings"
	"testing"

	"github.com/stridekit/stridekit/internal/tilegeom"
	"github.com/stridekit/stridekit/layout"
)

// TestSpecialiseDims checks the table's specialisation of box tiles: every
// item size (12-byte items by plan: TestSpecialiseSrcRun), 3-byte items
// only from 3 canonical dims, on the
// H100/H200 entries and the portable heuristic alike; of vector tiles, the
// 1x16 and 2x8 ones; and that specialisedims clears Specialise below its
// count whatever sets it.
func TestSpecialiseDims(t *testing.T) {
	for _, arch := range []int{0, 90} {
		for _, c := range []struct {
			item, nd int
			want     bool
		}{
			{3, 2, false}, {3, 3, true}, {3, 8, true},
			{1, 2, true}, {4, 2, true}, {12, 3, true}, {12, 7, true},
		} {
			sig := layout.Signature{Class: layout.ClassBoxTile, NDim: uint8(c.nd), Itemsize: uint8(c.item), Vec: 1}
			if got := KnobsFor(sig, arch).Specialise; got != c.want {
				t.Errorf("sm_%d: %v: Specialise %v, want %v", arch, sig, got, c.want)
			}
		}
	}
	// Vector tiles: 1-byte items in sixteens and 2-byte ones in eights.
	for _, c := range []struct {
		item, vec int
		want      bool
	}{{1, 16, true}, {2, 8, true}, {4, 4, false}, {3, 4, false}, {16, 1, false}} {
		sig := layout.Signature{Class: layout.ClassTile, NDim: 2, Itemsize: uint8(c.item), Vec: uint8(c.vec)}
		if got := KnobsFor(sig, 90).Specialise; got != c.want {
			t.Errorf("sm_90: %v: Specialise %v, want %v", sig, got, c.want)
		}
	}
	entries := []TuningEntry{{Class: layout.ClassElementwise, Set: map[string]int{"specialise": 1, "specialisedims": 4}}}
	for nd, want := range map[int]bool{1: false, 3: false, 4: true, 6: true} {
		sig := layout.Signature{Class: layout.ClassElementwise, NDim: uint8(nd), Itemsize: 4, Vec: 1}
		if got := LookupKnobs(entries, sig, 90).Specialise; got != want {
			t.Errorf("specialisedims=4, %d dims: Specialise %v, want %v", nd, got, want)
		}
	}
}

// TestTripleStoreRendered checks that the triple store is compiled, from
// dst runs of 512 bytes (the table's entry), into both tiers of a plan of
// 3-byte items, and that the word store it took over from is off there;
// kernels of other items never have it.
func TestTripleStoreRendered(t *testing.T) {
	// Under 1 MiB, so that the planner keeps the 3-byte items (larger box
	// tiles of short dst runs are planned in bytes).
	shape := []int64{2, 2, 28, 15, 15, 12}
	dst, err := layout.New(shape, []int64{151200, 75600, 2700, 180, 12, 1}, 3)
	if err != nil {
		t.Fatal(err)
	}
	src, err := layout.New(shape, []int64{1, 151200, 2, 840, 56, 12600}, 3)
	if err != nil {
		t.Fatal(err)
	}
	p, err := layout.PlanCopy(dst, src, layout.PlanOptions{DstAlign: 16, SrcAlign: 16})
	if err != nil || p.Sig.Class != layout.ClassBoxTile {
		t.Fatalf("plan %v (%v), want a box tile", p.Sig, err)
	}
	k := KnobsFor(p.Sig, 90)
	if k.TripleStore != 512 || k.WordStore != 0 {
		t.Fatalf("%v: triplestore=%d wordstore=%d, want 512 and 0", p.Sig, k.TripleStore, k.WordStore)
	}
	// Its dst runs hold 288 bytes: the store takes them from triplestore=288.
	for _, c := range []struct {
		knob int
		want bool
	}{{512, false}, {289, false}, {288, true}, {3, true}, {0, false}} {
		kc := k
		kc.TripleStore = c.knob
		if got := TripleStore(kc, &p); got != c.want {
			t.Errorf("%v, dst runs of %d bytes, triplestore=%d: TripleStore %v, want %v", p.Sig, p.Box.Dst.RunLen*3, c.knob, got, c.want)
		}
		// With wordstore=16 the specialised kernel writes words where the
		// triple store, which comes first, does not take the runs.
		kc.WordStore = 16
		if got := WordStore(kc, &p); got == c.want {
			t.Errorf("%v, triplestore=%d wordstore=16: WordStore %v, want %v", p.Sig, c.knob, got, !c.want)
		}
	}
	buf := make([]byte, ArgsSize(p.Sig))
	if _, err := Pack(p.Sig, k, &p, 132, buf); err != nil {
		t.Fatal(err)
	}
	generic, err := Source(p.Sig, k)
	if err != nil {
		t.Fatal(err)
	}
	_, spec, err := SpecialisedSource(p.Sig, k, buf)
	if err != nil {
		t.Fatal(err)
	}
	bytes := layout.Signature{Class: layout.ClassBoxTile, NDim: 4, Itemsize: 1, Vec: 1}
	kb := KnobsFor(bytes, 90)
	kb.TripleStore = 512
	other, err := Source(bytes, kb)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, src, want string
	}{{"generic", generic, "enum { TS = 512 };"}, {"specialised", spec, "enum { TS = 512 };"}, {"1-byte", other, "enum { TS = 0 };"}} {
		if !strings.Contains(c.src, c.want) {
			t.Errorf("%s kernel lacks %q", c.name, c.want)
		}
	}
}

// TestBoxGrid checks the box tile's grid: a block for every
// ⌈blockBytes/tileBytes⌉ tiles, never so many tiles a block that a
// multiprocessor gets none, and at most MaxGridX blocks.
func TestBoxGrid(t *testing.T) {
	for _, c := range []struct {
		ntiles, tileBytes, blockBytes, sm, want int64
		why                                     string
	}{
		{2655, 28000, 16384, 132, 2655, "tiles over blockbytes: one a block"},
		{6160, 9360, 16384, 132, 3080, "9 KiB tiles: two a block"},
		{6160, 1024, 16384, 132, 385, "1 KiB tiles: sixteen a block"},
		{128, 8192, 16384, 132, 128, "two a block would leave multiprocessors idle"},
		{300, 4096, 16384, 132, 150, "as many a block as leave one a multiprocessor"},
		{300, 4096, 16384, 0, 75, "multiprocessors unknown"},
		{1, 64, 16384, 132, 1, "one tile"},
		{5 << 30, 32768, 1, 132, MaxGridX, "more tiles than a grid has blocks"},
		{100, 0, 16384, 132, 100, "empty tiles count as one byte"},
	} {
		if got := boxGrid(c.ntiles, c.tileBytes, c.blockBytes, c.sm); got != c.want {
			t.Errorf("boxGrid(%d, %d, %d, %d) = %d, want %d (%s)", c.ntiles, c.tileBytes, c.blockBytes, c.sm, got, c.want, c.why)
		}
	}
}

// TestBoxLanesTriples checks the store phase's lanes of a 3-byte box tile:
// with dst runs the triple store takes, at most StoreLanes a run (more
// where the tile has too few runs for the block, never more than the run
// has groups of four items), else the element store's warp a run.
func TestBoxLanesTriples(t *testing.T) {
	k := Knobs{Threads: 256, LoadLanes: 8, StoreLanes: 2, ElemStore: true, TripleStore: 512}
	src := tilegeom.BoxSide{RunLen: 64, Runs: 10, Step: 1}
	for _, c := range []struct {
		runLen, runs, step int64
		want               int
		why                string
	}{
		{300, 200, 1, 1, "900-byte runs, many: StoreLanes"},
		{300, 10, 1, 5, "900-byte runs, ten: a block's threads over them"},
		{200, 2, -1, 6, "reversed 600-byte runs, two: 52 groups each"},
		{100, 200, 1, 5, "300-byte runs: element store, a warp"},
		{300, 200, 2, 5, "strided runs: element store"},
	} {
		dst := tilegeom.BoxSide{RunLen: c.runLen, Runs: c.runs, Step: c.step}
		if _, _, lgd := boxLanes(k, &src, &dst, 3); lgd != c.want {
			t.Errorf("%s: lgd %d, want %d", c.why, lgd, c.want)
		}
	}
}

// TestTileOrder checks the order the box-tile kernel numbers tiles in:
// without CutFirst the canonical dims; with it at 32 MiB, the cut dims
// last (fastest), the one with fewer tiles along it last of all, but only
// where the src runs are short and their cut's two sides lie that far
// apart.
func TestTileOrder(t *testing.T) {
	for _, c := range []struct {
		shape, ss []int64 // dst is dense in shape's order
		item      int
		want      []int64 // with CutFirst
		why       string
	}{
		{[]int64{166, 144, 89, 126}, []int64{1, 20916, 3011904, 166}, 1, []int64{1, 3, 2, 0},
			"src runs of 83 bytes (166 in two tiles, dim 0) 6,480 tiles apart; dst's cut (dim 2) in 45"},
		{[]int64{166, 4, 9, 126}, []int64{1, 20916, 83664, 166}, 1, []int64{0, 1, 2, 3},
			"the same runs 20 tiles apart: the L2 holds the cut's sectors"},
		{[]int64{520, 14, 16, 28, 21}, []int64{1, 520, 152880, 2446080, 7280}, 4, []int64{0, 1, 2, 3, 4},
			"src runs of 348 bytes: a re-read sector is under a quarter of a run"},
	} {
		src, err := layout.New(c.shape, c.ss, c.item)
		if err != nil {
			t.Fatal(err)
		}
		dst, err := layout.Dense(c.shape, c.item, layout.C)
		if err != nil {
			t.Fatal(err)
		}
		p, err := layout.PlanCopy(dst, src, layout.PlanOptions{TileBytes: 32 << 10})
		if err != nil || p.Box == nil {
			t.Fatalf("%v: plan %v, %v", c.shape, p.Sig, err)
		}
		canon := []int64{0, 1, 2, 3, 4}[:len(p.Shape)]
		if got := TileOrder(Knobs{}, &p); !slices.Equal(got, canon) {
			t.Errorf("%v tile %v: order %v without CutFirst, want the canonical dims", p.Shape, p.Tile, got)
		}
		if got := TileOrder(Knobs{CutFirst: 32 << 20}, &p); !slices.Equal(got, c.want) {
			t.Errorf("%s: %v tile %v: order %v, want %v", c.why, p.Shape, p.Tile, got, c.want)
		}
	}
	p := layout.Plan{Sig: layout.Signature{Class: layout.ClassTile}}
	if got := TileOrder(Knobs{CutFirst: 32 << 20}, &p); got != nil {
		t.Errorf("a vector tile's plan: order %v, want nil", got)
	}
}

// TestSpecialiseSrcRun checks the plan-dependent bound of the table's
// 12-byte box tiles: a plan whose src runs hold 480 bytes (40 items) or
// fewer is specialised, one of longer runs is not, on the H200 entries and
// the portable heuristic alike; other item sizes and plans without a box
// do not look at the runs; and a knob of 0 bounds nothing.
func TestSpecialiseSrcRun(t *testing.T) {
	box := func(item int, run int64) *layout.Plan {
		g := &tilegeom.BoxGeometry{}
		g.Src.RunLen = run
		return &layout.Plan{Sig: layout.Signature{Class: layout.ClassBoxTile, NDim: 4, Itemsize: uint8(item), Vec: 1}, Box: g}
	}
	for _, c := range []struct {
		p    *layout.Plan
		want bool
	}{
		{box(12, 1), true}, {box(12, 40), true}, {box(12, 41), false}, {box(12, 2491), false},
		{box(8, 2491), true}, {box(16, 2491), true},
	} {
		for _, arch := range []int{0, 90} {
			k := KnobsFor(c.p.Sig, arch)
			if got := k.SpecialisesPlan(c.p); got != c.want {
				t.Errorf("sm_%d: %v, src runs of %d: SpecialisesPlan %v, want %v", arch, c.p.Sig, c.p.Box.Src.RunLen, got, c.want)
			}
			k.SpecialiseSrcRun = 0
			if !k.SpecialisesPlan(c.p) {
				t.Errorf("sm_%d: %v: specialisesrcrun=0 bounds the plan", arch, c.p.Sig)
			}
		}
	}
	// A plan without a box (a vector tile) is not bounded by the knob.
	k := Knobs{Specialise: true, SpecialiseSrcRun: 1}
	if !k.SpecialisesPlan(&layout.Plan{Sig: layout.Signature{Class: layout.ClassTile, NDim: 2, Itemsize: 1, Vec: 16}}) {
		t.Error("specialisesrcrun bounds a plan without a box")
	}
	if k.Specialise = false; k.SpecialisesPlan(box(12, 1)) {
		t.Error("SpecialisesPlan without Specialise")
	}
}
