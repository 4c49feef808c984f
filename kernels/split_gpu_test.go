package kernels

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stridekit/stridekit/internal/testenv"
	"github.com/stridekit/stridekit/layout"
)

// splitCases are permutations of 3-byte items, 1 to 5 MB each, whose box
// tiles the planner re-plans in bytes (short dst runs, forward in both
// views): 2- to 4-d, one tile ragged along dst's fastest dim (3001 items).
var splitCases = []permCase{
	{[]int64{101, 5000}, []int{1, 0}},
	{[]int64{29, 251, 300}, []int{2, 0, 1}},
	{[]int64{17, 23, 19, 300}, []int{3, 1, 0, 2}},
	{[]int64{7, 77, 3001}, []int{2, 0, 1}},
	{[]int64{45, 31, 17, 203}, []int{2, 3, 1, 0}},
}

// TestGPUSplitTriples copies splitCases on the GPU, in both tiers and with
// the dst view at an aligned address and one byte past it, against
// runtime/hostcopy. A case whose plan is no longer a box tile of bytes
// fails the test, so the path cannot go untested.
func TestGPUSplitTriples(t *testing.T) {
	dev := testenv.NeedGPU(t)
	st := testenv.NewStream(t, dev)
	r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 17))
	runPermCases(t, dev, st, r, splitCases, permPath{name: "split", item: 3, pads: []int{0, 1}, want: "a box tile of bytes", takes: func(p layout.Plan) bool {
		return p.Sig.Class == layout.ClassBoxTile && p.Sig.Itemsize == 1
	}})
}
