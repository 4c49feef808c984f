package gen_test

import (
	"testing"

	"github.com/stridekit/stridekit/gen"
	"github.com/stridekit/stridekit/internal/layouttest"
	"github.com/stridekit/stridekit/layout"
)

// TestSiblingRuns checks where the box tile's sibling store applies: 1-byte
// permutations whose src runs cross the dst runs, with dst runs of whole
// words that start at the same address modulo 4; not 2-byte items, runs of
// 30 bytes, a dst stride of 130 bytes along src's fastest dim, a reversed
// destination, nor with the knob off.
func TestSiblingRuns(t *testing.T) {
	for _, c := range []struct {
		shape []int64
		perm  []int
		item  int
		flipD bool
		off   bool // the knob off
		want  int
	}{
		{[]int64{13, 300, 72}, []int{2, 1, 0}, 1, false, false, 4},
		{[]int64{5, 199, 128}, []int{0, 2, 1}, 1, false, false, 4},
		{[]int64{13, 300, 72}, []int{2, 1, 0}, 1, false, true, 0},
		{[]int64{13, 300, 72}, []int{2, 1, 0}, 2, false, false, 0},
		{[]int64{9, 70, 300}, []int{2, 0, 1}, 1, false, false, 0},
		{[]int64{7, 9, 11, 130}, []int{0, 3, 1, 2}, 1, false, false, 0},
		{[]int64{9, 70, 300}, []int{2, 0, 1}, 1, true, false, 0},
	} {
		src := layouttest.MustDense(t, c.shape, c.item, c.perm...)
		dst := layouttest.MustDense(t, c.shape, c.item)
		if c.flipD {
			ds := dst.Strides()
			ds[len(ds)-1] = -ds[len(ds)-1]
			dst = layouttest.MustNew(t, c.shape, ds, c.item)
		}
		p, err := layout.PlanCopy(dst, src, layout.PlanOptions{DstAlign: 16, SrcAlign: 16, TileBytes: 4 << 10})
		if err != nil || p.Sig.Class != layout.ClassBoxTile {
			t.Fatalf("%v perm %v: plan %v, %v; want a box tile", c.shape, c.perm, p.Sig, err)
		}
		k := gen.KnobsFor(p.Sig, 90)
		k.Siblings = !c.off
		if got := gen.SiblingRuns(k, &p); got != c.want {
			t.Errorf("%v perm %v item %d flip %v knob %v: SiblingRuns = %d, want %d (tile %v)", c.shape, c.perm, c.item, c.flipD, !c.off, got, c.want, p.Tile)
		}
	}
}
