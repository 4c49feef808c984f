package layout_test

import (
	"slices"
	"testing"

	"github.com/stridekit/stridekit/internal/layouttest"
	"github.com/stridekit/stridekit/layout"
)

// TestPlanSplitTriples checks which box tiles of 3-byte items the planner
// re-plans in bytes: a 101x5000 transpose (1.5 MB) whose dst runs are short is
// planned as bytes under an innermost dim of 3, unit-strided in both views,
// with the same bytes; the same transpose under 1 MiB, one with dst runs of
// 3,700 items, one whose src runs are reversed and one of 12-byte items
// keep their items.
func TestPlanSplitTriples(t *testing.T) {
	n := func(shape, strides []int64, item int) layout.Layout {
		return layouttest.MustNew(t, shape, strides, item)
	}
	plan := func(d, s layout.Layout) layout.Plan {
		t.Helper()
		p, err := layout.PlanCopy(d, s, layout.PlanOptions{DstAlign: 16, SrcAlign: 16})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	p := plan(n(layouttest.S64(101, 5000), nil, 3), n(layouttest.S64(101, 5000), layouttest.S64(1, 101), 3))
	if p.Sig.Class != layout.ClassBoxTile || p.Sig.Itemsize != 1 || p.Sig.NDim != 3 {
		t.Fatalf("101x5000 transpose of 3-byte items: %v, want a 3-d box tile of bytes", p.Sig)
	}
	want := [][]int64{{101, 5000, 3}, {15000, 3, 1}, {3, 303, 1}}
	for i, got := range [][]int64{p.Shape, p.DstStrides, p.SrcStrides} {
		if !slices.Equal(got, want[i]) {
			t.Errorf("split plan: shape, dst and src strides %v %v %v, want %v", p.Shape, p.DstStrides, p.SrcStrides, want)
			break
		}
	}
	if p.Bytes != 101*5000*3 || p.Volume != p.Bytes || p.Tile[2] != 3 {
		t.Errorf("split plan: %d bytes, volume %d, tile %v; want %d bytes, as many elements, all 3 bytes of each item", p.Bytes, p.Volume, p.Tile, 101*5000*3)
	}
	if b := p.Box.Dst.RunLen; b > 512 {
		t.Errorf("split plan's dst runs hold %d bytes, want at most 512", b)
	}
	keep := []struct {
		name     string
		dst, src layout.Layout
	}{
		{"under 1 MiB", n(layouttest.S64(101, 2000), nil, 3), n(layouttest.S64(101, 2000), layouttest.S64(1, 101), 3)},
		{"dst runs of 3700 items", n(layouttest.S64(71, 85, 100, 37), nil, 3), n(layouttest.S64(71, 85, 100, 37), layouttest.S64(100, 7100, 1, 603500), 3)},
		{"reversed src runs", n(layouttest.S64(101, 5000), nil, 3), n(layouttest.S64(101, 5000), layouttest.S64(-1, 101), 3)},
		{"12-byte items", n(layouttest.S64(101, 5000), nil, 12), n(layouttest.S64(101, 5000), layouttest.S64(1, 101), 12)},
	}
	for _, c := range keep {
		p := plan(c.dst, c.src)
		if p.Sig.Class != layout.ClassBoxTile || int(p.Sig.Itemsize) != c.dst.Itemsize() {
			t.Errorf("%s: %v, want a box tile of %d-byte items", c.name, p.Sig, c.dst.Itemsize())
		}
	}
}
