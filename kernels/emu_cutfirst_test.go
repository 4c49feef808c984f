package kernels

import (
	"fmt"
	"testing"

	"github.com/stridekit/stridekit/layout"
)

// TestEmulatedCutFirst copies, on the CPU and in both tiers, box tiles
// whose short src runs are cut by a dim other than dst's innermost, the
// specialised tier with the cut dims numbered fastest wherever their two
// sides lie apart at all (cutfirst=1, Knobs.CutFirst): tiles of 4 KiB, so
// that blocks take several tiles; ragged tiles along the cut dims; items
// of 1 to 16 bytes; 3 and 4 dims; forward and reversed src runs. With the
// knob all but one of the cases must number their tiles out of the
// canonical order, and without it none.
func TestEmulatedCutFirst(t *testing.T) {
	cases := []struct {
		shape []int64
		perm  []int
		item  int
		flip  bool
	}{
		{[]int64{52, 18, 26, 24}, []int{3, 2, 0, 1}, 1, false},
		{[]int64{39, 16, 14, 48}, []int{3, 0, 2, 1}, 1, true},
		{[]int64{10, 10, 7, 34}, []int{3, 0, 2, 1}, 2, false},
		{[]int64{49, 15, 25, 4}, []int{3, 2, 0, 1}, 3, false},
		{[]int64{53, 59, 29}, []int{2, 1, 0}, 4, true},
		{[]int64{43, 4, 34, 2}, []int{2, 1, 3, 0}, 8, false},
		{[]int64{48, 29, 17}, []int{2, 1, 0}, 12, false},
		{[]int64{40, 43, 8}, []int{2, 1, 0}, 16, true},
	}
	for _, cf := range []int{0, 1} {
		t.Setenv("STRIDEKIT_KNOBS", fmt.Sprintf("btile cutfirst=%d", cf))
		moved := 0
		for _, c := range cases {
			if cutOrderMoves(t, c.shape, c.perm, c.item) {
				moved++
			}
		}
		if want := cf * (len(cases) - 1); moved < want || cf == 0 && moved > 0 {
			t.Errorf("cutfirst=%d: %d of %d cases numbered out of the canonical order, want at least %d (none without the knob)", cf, moved, len(cases), want)
		}
	}
	// The copies, with the knob: every other emulated box-tile test copies
	// in the canonical order.
	r := emuRand(t, 13)
	for _, c := range cases {
		emuPermBoxTiles(t, r, "cutfirst=1", c.shape, c.perm, c.item, c.flip)
	}
}

// cutOrderMoves reports whether the box tile of 4 KiB planned for the
// permutation numbers its tiles out of the canonical order under the
// knobs in force.
func cutOrderMoves(t *testing.T, shape []int64, perm []int, item int) bool {
	t.Helper()
	src, err := layout.Dense(shape, item, layout.Perm(perm...))
	if err != nil {
		t.Fatal(err)
	}
	dst, err := layout.Dense(shape, item, layout.C)
	if err != nil {
		t.Fatal(err)
	}
	p, err := layout.PlanCopy(dst, src, layout.PlanOptions{TileBytes: 4 << 10})
	if err != nil {
		t.Fatal(err)
	}
	return cutFirstMoves(p, 90)
}
