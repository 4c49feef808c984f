package kernels

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stridekit/stridekit/internal/testenv"
	"github.com/stridekit/stridekit/internal/tilegeom"
	"github.com/stridekit/stridekit/layout"
)

// grainCases are permutations of 1 to 3 MiB whose box tiles the planner
// lays out at 16-byte chunks with the tuning table's knobs (loadgrain=16
// for every item size but 12), two an item size, with the dst and src
// views at addresses that are multiples of the item but not all of 16.
var grainCases = []struct {
	item  int
	pads  []int
	cases []permCase
}{
	{2, []int{0, 2, 6}, []permCase{{[]int64{70, 90, 11, 9}, []int{3, 1, 0, 2}}, {[]int64{23, 45, 530}, []int{2, 1, 0}}}},
	{4, []int{0, 4, 12}, []permCase{{[]int64{61, 190, 29}, []int{2, 0, 1}}, {[]int64{17, 23, 29, 31}, []int{2, 3, 1, 0}}}},
	{8, []int{0, 8}, []permCase{{[]int64{57, 10, 40, 8}, []int{1, 3, 0, 2}}, {[]int64{30, 38, 3, 45}, []int{1, 0, 3, 2}}}},
	{16, []int{0, 48}, []permCase{{[]int64{46, 13, 19, 13}, []int{3, 1, 0, 2}}, {[]int64{35, 57, 20, 4}, []int{3, 2, 1, 0}}}},
}

// TestGPULoadGrain copies grainCases on the GPU in both tiers against
// runtime/hostcopy: the specialised kernel stages their src runs in
// 16-byte chunks (loadChunks), the generic one loads the same layout in
// words. A case whose plan is not chunked fails the test, so the chunk
// path of each item size runs (compute-sanitizer runs this test too; with
// -short, one case an item size at one address).
func TestGPULoadGrain(t *testing.T) {
	dev := testenv.NeedGPU(t)
	st := testenv.NewStream(t, dev)
	r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 23))
	for _, g := range grainCases {
		cases, pads := g.cases, g.pads
		if testing.Short() {
			cases, pads = cases[:1], pads[:1]
		}
		runPermCases(t, dev, st, r, cases, permPath{name: "loadgrain", item: g.item, pads: pads, padSrc: true, want: "16-byte chunks", takes: func(p layout.Plan) bool {
			return p.Box != nil && p.Box.Grain == tilegeom.ChunkGrain
		}})
	}
}
