package layout

import (
	"testing"

	"pgregory.net/rapid"
)

// TestPlanTile3: a transpose of 3-byte items plans as the vector tile in
// vectors of four where both fast extents and the strides allow it and the
// views are 4-byte aligned, and as a box tile where any of those fails;
// 6-byte items stay box tiles.
func TestPlanTile3(t *testing.T) {
	for _, c := range []struct {
		shape []int64
		item  int
		align int
		tile  bool
	}{
		{[]int64{64, 96}, 3, 16, true},
		{[]int64{64, 96}, 3, 4, true},
		{[]int64{64, 96}, 3, 2, false},
		{[]int64{64, 98}, 3, 16, false},
		{[]int64{64, 96}, 6, 16, false},
	} {
		dst, err := Dense(c.shape, c.item, C)
		if err != nil {
			t.Fatal(err)
		}
		src, err := Dense(c.shape, c.item, Perm(1, 0))
		if err != nil {
			t.Fatal(err)
		}
		p, err := PlanCopy(dst, src, PlanOptions{DstAlign: c.align, SrcAlign: c.align})
		if err != nil {
			t.Fatal(err)
		}
		got := p.Sig.Class == ClassTile && p.Sig.Vec == 4 && p.Sig.Itemsize == 3
		if got != c.tile || (!c.tile && p.Sig.Class != ClassBoxTile) {
			t.Errorf("%v items of %d bytes aligned to %d: %v, want the 3-byte vector tile: %v", c.shape, c.item, c.align, p.Sig, c.tile)
		}
	}
}

// TestVecWidthNatural: for items whose size is a power of two, a vector's
// natural alignment is its size, so the vector tile's widths are the ones
// vecWidth gave before it took natural alignment.
func TestVecWidthNatural(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		item := int64(1) << rapid.IntRange(0, 4).Draw(t, "log item")
		e1, e2 := rapid.Int64Range(1, 256).Draw(t, "e1"), rapid.Int64Range(0, 256).Draw(t, "e2")
		off := item * rapid.Int64Range(0, 64).Draw(t, "off")
		align := int64(1) << rapid.IntRange(0, 5).Draw(t, "log align")
		others := rapid.SliceOfN(rapid.Int64Range(-512, 512), 0, 4).Draw(t, "strides")
		if a, b := vecWidth(e1, e2, item, off, align, others, nil, true), vecWidth(e1, e2, item, off, align, others, nil, false); a != b {
			t.Fatalf("item %d: natural %d, sized %d", item, a, b)
		}
	})
}
