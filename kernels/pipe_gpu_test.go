package kernels

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stridekit/stridekit/gen"
	"github.com/stridekit/stridekit/internal/testenv"
	"github.com/stridekit/stridekit/kernels/jit"
	"github.com/stridekit/stridekit/layout"
)

// pipeGPUCases are transposes the planner gives the vector tile, by item
// size: ragged tiles and copies of hundreds of tiles, for every load path
// of the tile kernel (vectors of 4, 8 and 16 bytes, word micro-tiles of
// bytes, 3-byte items staged as words).
var pipeGPUCases = map[int][]permCase{
	1:  {{[]int64{208, 240}, []int{1, 0}}, {[]int64{1024, 1536}, []int{1, 0}}},
	3:  tile3Cases,
	4:  {{[]int64{3, 112, 120}, []int{0, 2, 1}}, {[]int64{1000, 1200}, []int{1, 0}}},
	2:  {{[]int64{130, 198}, []int{1, 0}}, {[]int64{3, 260, 196}, []int{0, 2, 1}}},
	8:  {{[]int64{40, 72}, []int{1, 0}}, {[]int64{600, 700}, []int{1, 0}}, {[]int64{41, 3, 57}, []int{2, 1, 0}}},
	16: {{[]int64{40, 3, 56}, []int{2, 1, 0}}, {[]int64{300, 500}, []int{1, 0}}},
}

// TestGPUTilePipe copies pipeGPUCases on the GPU, in both tiers, with
// blocks that take 2 and 3 tiles in turn (Knobs.Pipe: each next tile's
// loads in flight as cp.async copies while the block stores the current
// one), against runtime/hostcopy. A case whose plan is not the vector tile
// or whose kernel does not pipeline fails the test (compute-sanitizer runs
// it too).
func TestGPUTilePipe(t *testing.T) {
	dev := testenv.NeedGPU(t)
	st := testenv.NewStream(t, dev)
	r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 19))
	for _, pipe := range []int{2, 3} {
		t.Setenv("STRIDEKIT_KNOBS", fmt.Sprintf("tile pipe=%d", pipe))
		cache := jit.NewCache() // kernels rendered with this setting
		for _, item := range []int{1, 2, 3, 4, 8, 16} {
			runPermCases(t, dev, st, r, pipeGPUCases[item], permPath{name: "pipe", item: item, pads: []int{0}, cache: cache, want: "the pipelined vector tile", takes: func(p layout.Plan) bool {
				return gen.TilePipe(gen.KnobsFor(p.Sig, dev.Arch()), &p)
			}})
		}
		if err := cache.Close(); err != nil {
			t.Error(err)
		}
	}
}
