package kernels

import (
	"testing"

	"github.com/stridekit/stridekit/internal/layouttest"
	"github.com/stridekit/stridekit/internal/pairgen"
	"github.com/stridekit/stridekit/internal/tilegeom"
	"github.com/stridekit/stridekit/layout"
)

// TestEmulatedCutDstRuns copies, on the CPU and in both tiers, box tiles
// whose dst runs the planner cuts after fewer of their dims
// (tilegeom.CutDstRuns: the element table of the uncut runs would not fit
// the shared memory): batched transposes of 1 MiB or more (smaller copies
// keep their first tile) whose dst rows continue each other, for items of
// 1 and 2 bytes, one with a ragged last tile, and 6 random pairs whose
// plans cut them. Each must be cut (fewer dst run dims than the tile's dst
// side has), so the path is known to run; a float32 transpose (items of 4
// bytes or more are not regrown) and a batched float32 30x30 transpose,
// whose tiles are one run each way, must not be.
func TestEmulatedCutDstRuns(t *testing.T) {
	r := emuRand(t, 43)
	cutOf := func(p layout.Plan) bool {
		if p.Box == nil {
			return false
		}
		_, dst := tilegeom.BoxSides(p.Shape, p.DstStrides, p.SrcStrides, p.Tile)
		return p.Box.Dst.NRun < dst.NRun
	}
	for _, c := range []struct {
		name       string
		shape, src []int64
		item       int
		cut        bool
	}{
		{"u8 45x195x122 batched transpose", []int64{45, 195, 122}, []int64{23790, 1, 195}, 1, true},
		{"u8 45x197x121 ragged", []int64{45, 197, 121}, []int64{23837, 1, 197}, 1, true},
		{"f16 35x91x169", []int64{35, 91, 169}, []int64{15379, 1, 91}, 2, true},
		{"f32 35x113x67", []int64{35, 113, 67}, []int64{7571, 1, 113}, 4, false},
		{"f32 batched 30x30", []int64{300, 30, 30}, []int64{900, 1, 30}, 4, false},
	} {
		dst := layouttest.MustNew(t, c.shape, nil, c.item)
		src := layouttest.MustNew(t, c.shape, c.src, c.item)
		pair := pairgen.Pair{Kind: c.name, Dst: dst, Src: src, DstBuf: dst.RequiredSizeInBytes(), SrcBuf: src.RequiredSizeInBytes()}
		set := func(o *layout.PlanOptions) { o.TileBytes = 32 << 10 }
		for _, spec := range []bool{false, true} {
			if p := emuCopyWith(t, r, pair, spec, set); cutOf(p) != c.cut {
				t.Fatalf("%s: tile %v, dst runs %d×%d of %d dims: cut %v, want %v", c.name, p.Tile, p.Box.Dst.RunLen, p.Box.Dst.Runs, p.Box.Dst.NRun, !c.cut, c.cut)
			}
		}
	}
	n := 0
	for tries := 0; n < 6 && tries < emuRandomTries; tries++ {
		c := pairgen.Random(r, 8<<20)
		set := func(o *layout.PlanOptions) { o.TileBytes = 32 << 10 }
		if !cutOf(planWith(t, c, set)) {
			continue
		}
		emuCopyWith(t, r, c, n%2 == 1, set)
		n++
	}
	if n < 6 {
		t.Errorf("%d random pairs with cut dst runs in %d tries, want 6", n, emuRandomTries)
	}
}
