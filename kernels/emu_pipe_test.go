package kernels

import (
	"fmt"
	"testing"

	"github.com/stridekit/stridekit/gen"
	"github.com/stridekit/stridekit/internal/layouttest"
	"github.com/stridekit/stridekit/internal/pairgen"
	"github.com/stridekit/stridekit/layout"
)

// TestEmulatedTilePipe copies, on the CPU and in both tiers, transposes
// the planner gives the vector tile, with blocks that take 2 and 3 tiles in
// turn (Knobs.Pipe: each next tile's loads issued before the current one
// is stored): ragged tiles, grids whose last blocks take fewer tiles than
// the others, and every load path (vectors of 4, 8 and 16 bytes, 1-byte
// items stored as word micro-tiles, 3-byte items staged as words); then 8
// random pairs planned as vector tiles. Each fixed case must plan as a
// vector tile whose kernel pipelines, so the path is known to run.
func TestEmulatedTilePipe(t *testing.T) {
	r := emuRand(t, 41)
	cases := []pipeCase{
		{[]int64{100, 132}, 3, []int{1, 0}, "3-byte items, staged words, ragged"},
		{[]int64{3, 44, 5, 56}, 3, []int{0, 3, 2, 1}, "3-byte items, 4-d"},
		{[]int64{208, 240}, 1, []int{1, 0}, "bytes, word micro-tiles, ragged"},
		{[]int64{3, 112, 120}, 4, []int{0, 2, 1}, "floats, batched, ragged"},
		{[]int64{40, 72}, 8, []int{1, 0}, "8-byte items"},
		{[]int64{41, 3, 57}, 8, []int{2, 1, 0}, "8-byte items, single, ragged"},
		{[]int64{130, 198}, 2, []int{1, 0}, "halves in pairs, ragged"},
		{[]int64{40, 3, 56}, 16, []int{2, 1, 0}, "16-byte items, reversed dims"},
	}
	for _, pipe := range []int{2, 3} {
		t.Setenv("STRIDEKIT_KNOBS", fmt.Sprintf("tile pipe=%d", pipe))
		for _, c := range cases {
			src := layouttest.MustDense(t, c.shape, c.item, c.perm...)
			dst := layouttest.MustNew(t, c.shape, nil, c.item)
			pair := pairgen.Pair{Kind: c.what, Dst: dst, Src: src,
				DstBuf: dst.RequiredSizeInBytes(), SrcBuf: src.RequiredSizeInBytes()}
			for _, spec := range []bool{false, true} {
				p := emuCopyTiles(t, r, pair, spec, 4<<10)
				if !pipes(t, p) {
					t.Errorf("%s, pipe=%d: plan %v has no pipelined tile kernel", c.what, pipe, p.Sig)
				}
			}
		}
		takes := func(_ pairgen.Pair, p layout.Plan) bool { return p.Sig.Class == layout.ClassTile }
		emuRandomOn(t, r, 4, "the vector tile", takes, func(i int) bool { return i%2 == 1 })
	}
}

type pipeCase struct {
	shape []int64
	item  int
	perm  []int
	what  string
}

// pipes reports whether plan p runs the tile kernel with a block's next
// tile in flight (gen.TilePipe, under the knobs jit renders).
func pipes(t *testing.T, p layout.Plan) bool {
	return takesPath(t, p, gen.TilePipe)
}
