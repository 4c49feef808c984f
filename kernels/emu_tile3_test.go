package kernels

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stridekit/stridekit/internal/layouttest"
	"github.com/stridekit/stridekit/internal/pairgen"
	"github.com/stridekit/stridekit/layout"
)

// TestEmulatedTile3 copies, on the CPU and in both tiers, transposes of
// 3-byte items that the planner gives the vector tile in vectors of four
// items (12 bytes, three words): a 2-d transpose with ragged tiles, a 4-d
// permutation and views at 4-byte offsets; and three that must stay box
// tiles: an extent of 98 along dst's fastest dim (vectors of two items at
// most), views 2 bytes into their buffers, and RGB pixels (the planner does
// not widen 1-byte items over a common dim of 3). Each copy runs with the
// tile rows moved as words through the dst-ordered stage (the default) and
// as whole vectors (Knobs.StageStores off).
func TestEmulatedTile3(t *testing.T) {
	for _, stage := range []int{1, 0} {
		t.Setenv("STRIDEKIT_KNOBS", fmt.Sprintf("tile/3 stagestores=%d", stage))
		emuTile3(t, emuRand(t, 9))
	}
}

func emuTile3(t *testing.T, r *rand.Rand) {
	t.Helper()
	for _, c := range []struct {
		shape []int64
		item  int
		perm  []int
		base  int64 // the dst and src views' first byte in their buffers
		tile  bool
		what  string
	}{
		{[]int64{100, 132}, 3, []int{1, 0}, 0, true, "2-d, ragged tiles"},
		{[]int64{3, 44, 5, 56}, 3, []int{0, 3, 2, 1}, 0, true, "4-d permutation"},
		{[]int64{5, 100, 132}, 3, []int{0, 2, 1}, 4, true, "batched, ragged tiles, views 4 bytes in"},
		{[]int64{68, 76, 3}, 1, []int{1, 0, 2}, 0, false, "RGB pixels (1-byte items and a common dim of 3)"},
		{[]int64{64, 64}, 3, []int{1, 0}, 4, true, "views 4 bytes into their buffers"},
		{[]int64{64, 98}, 3, []int{1, 0}, 0, false, "dst rows of 98 items"},
		{[]int64{64, 64}, 3, []int{1, 0}, 2, false, "views 2 bytes into their buffers"},
	} {
		src := layouttest.MustDense(t, c.shape, c.item, c.perm...)
		dst := layouttest.MustNew(t, c.shape, nil, c.item)
		pair := pairgen.Pair{Kind: c.what, Dst: dst, Src: src, DstBase: c.base, SrcBase: c.base,
			DstBuf: dst.RequiredSizeInBytes() + c.base, SrcBuf: src.RequiredSizeInBytes() + c.base}
		for _, spec := range []bool{false, true} {
			p := emuCopyTiles(t, r, pair, spec, 4<<10)
			got := p.Sig.Class == layout.ClassTile && p.Sig.Itemsize == 3 && p.Sig.Vec == 4
			if got != c.tile {
				t.Errorf("%v: planned as %v, want the 3-byte vector tile: %v", pair, p.Sig, c.tile)
			}
		}
	}
}
