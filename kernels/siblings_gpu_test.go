package kernels

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stridekit/stridekit/internal/testenv"
	"github.com/stridekit/stridekit/layout"
)

// siblingCases are 1-byte permutations whose box tiles, at the tile size of
// the default tuning, take the sibling store (gen.SiblingRuns): partial
// last groups (13, 45 and 7 siblings), tiles ragged along src's fastest
// dim (250 of 999, 126 of 1001), dst runs cut (200 of 400), 4-d reversals
// and a permutation that folds to two dims.
var siblingCases = []permCase{
	{[]int64{13, 300, 72}, []int{2, 1, 0}},
	{[]int64{5, 199, 128}, []int{0, 2, 1}},
	{[]int64{45, 90, 146, 116}, []int{3, 2, 1, 0}},
	{[]int64{5, 999, 128}, []int{0, 2, 1}},
	{[]int64{3, 1001, 400}, []int{0, 2, 1}},
	{[]int64{7, 9, 12, 44}, []int{3, 2, 1, 0}},
	{[]int64{21, 37, 60, 8}, []int{2, 3, 0, 1}},
}

// TestGPUSiblings copies siblingCases on the GPU, in both tiers and with
// the dst view at an aligned address and one byte past it (where the
// kernel stores element by element), against runtime/hostcopy. A case
// whose plan no longer takes the sibling store fails the test, so the path
// cannot go untested (compute-sanitizer runs this test too).
func TestGPUSiblings(t *testing.T) {
	dev := testenv.NeedGPU(t)
	st := testenv.NewStream(t, dev)
	r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 13))
	runPermCases(t, dev, st, r, siblingCases, permPath{name: "siblings", item: 1, pads: []int{0, 1}, want: "the sibling store", takes: func(p layout.Plan) bool {
		return siblingStore(t, p)
	}})
}
