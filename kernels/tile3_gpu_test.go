package kernels

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stridekit/stridekit/internal/testenv"
	"github.com/stridekit/stridekit/kernels/jit"
	"github.com/stridekit/stridekit/layout"
)

// tile3Cases are transposes of 3-byte items that the planner gives the
// vector tile in vectors of four items: ragged tiles (100 and 132 of 64),
// a 4-d permutation, and a 2-d transpose large enough for many tiles.
var tile3Cases = []permCase{
	{[]int64{100, 132}, []int{1, 0}},
	{[]int64{3, 44, 5, 56}, []int{0, 3, 2, 1}},
	{[]int64{512, 768}, []int{1, 0}},
	{[]int64{5, 100, 132}, []int{0, 2, 1}},
}

// TestGPUTile3 copies tile3Cases on the GPU, in both tiers and with both
// views at 16-byte and 4-byte aligned addresses, against runtime/hostcopy.
// A case whose plan is not the 3-byte vector tile fails the test
// (compute-sanitizer runs this test too). Each copy runs with the tile
// rows moved as words through the dst-ordered stage (the default) and as
// whole vectors (Knobs.StageStores off).
func TestGPUTile3(t *testing.T) {
	dev := testenv.NeedGPU(t)
	st := testenv.NewStream(t, dev)
	r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 17))
	for _, stage := range []int{1, 0} {
		t.Setenv("STRIDEKIT_KNOBS", fmt.Sprintf("tile/3 stagestores=%d", stage))
		cache := jit.NewCache() // kernels rendered with this setting
		runPermCases(t, dev, st, r, tile3Cases, permPath{name: "tile3", item: 3, pads: []int{0, 4}, padSrc: true, cache: cache, want: "the 3-byte vector tile", takes: func(p layout.Plan) bool {
			return p.Sig.Class == layout.ClassTile && p.Sig.Vec == 4
		}})
		if err := cache.Close(); err != nil {
			t.Error(err)
		}
	}
}
