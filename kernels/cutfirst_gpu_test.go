package kernels

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stridekit/stridekit/gen"
	"github.com/stridekit/stridekit/internal/layouttest"
	"github.com/stridekit/stridekit/internal/testenv"
	"github.com/stridekit/stridekit/kernels/jit"
	"github.com/stridekit/stridekit/layout"
)

// cutFirstGPUCases are box tiles, by item size, whose src runs (under 256
// bytes) are cut by a dim other than dst's innermost at the device's tile
// size: with cutfirst=1 their tiles are numbered out of the canonical
// order.
var cutFirstGPUCases = map[int][]permCase{
	1: {{[]int64{122, 132, 130}, []int{2, 1, 0}}, {[]int64{185, 117, 115}, []int{2, 1, 0}}},
	2: {{[]int64{146, 63, 115}, []int{1, 2, 0}}, {[]int64{28, 178, 133}, []int{2, 1, 0}}},
	3: {{[]int64{149, 12, 63}, []int{1, 2, 0}}, {[]int64{154, 5, 109}, []int{1, 2, 0}}},
	4: {{[]int64{32, 134, 91}, []int{0, 2, 1}}, {[]int64{47, 81, 106}, []int{2, 0, 1}}},
	8: {{[]int64{10, 198, 114}, []int{2, 1, 0}}, {[]int64{61, 129, 14}, []int{2, 1, 0}}},
}

// TestGPUCutFirst copies cutFirstGPUCases on the GPU against
// runtime/hostcopy with cutfirst=1 (Knobs.CutFirst, which the table sets
// for far cuts of large copies only), in both tiers: the specialised one
// numbers its tiles with the dims that cut a run fastest wherever they
// cut, the generic one canonically. A case whose plan does not number its
// tiles out of the canonical order fails the test.
func TestGPUCutFirst(t *testing.T) {
	dev := testenv.NeedGPU(t)
	st := testenv.NewStream(t, dev)
	r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 23))
	t.Setenv("STRIDEKIT_KNOBS", "btile cutfirst=1")
	cache := jit.NewCache() // kernels rendered with this setting
	defer func() {
		if err := cache.Close(); err != nil {
			t.Error(err)
		}
	}()
	for _, item := range []int{1, 2, 3, 4, 8} {
		runPermCases(t, dev, st, r, cutFirstGPUCases[item], permPath{name: "cutfirst", item: item, pads: []int{0}, cache: cache, want: "a box tile numbered cut dims first", takes: func(p layout.Plan) bool {
			return cutFirstMoves(p, dev.Arch())
		}})
	}
}

// cutFirstMoves reports whether the box tile of plan p numbers its tiles
// out of the canonical order under the knobs in force on arch.
func cutFirstMoves(p layout.Plan, arch int) bool {
	o := gen.TileOrder(gen.KnobsFor(p.Sig, arch), &p)
	return o != nil && !slices.IsSorted(o)
}

// TestCutFirstGPUCases checks on the CPU that TestGPUCutFirst's cases
// number their tiles out of the canonical order on an sm_90 device (its
// tile sizes and grains), and in it without the knob.
func TestCutFirstGPUCases(t *testing.T) {
	for _, knobs := range []string{"btile cutfirst=1", "btile cutfirst=0"} {
		t.Setenv("STRIDEKIT_KNOBS", knobs)
		for item, cases := range cutFirstGPUCases {
			for _, c := range cases {
				sl := layouttest.MustDense(t, c.shape, item, c.perm...)
				dl := layouttest.MustDense(t, c.shape, item)
				p, err := layout.PlanCopy(dl, sl, archPlanOptions(90, 256, 256, item))
				if err != nil {
					t.Fatal(err)
				}
				if got, want := cutFirstMoves(p, 90), knobs == "btile cutfirst=1"; got != want {
					t.Errorf("%s: %v perm %v item %d: plan %v tile %v numbered out of order %v, want %v", knobs, c.shape, c.perm, item, p.Sig, p.Tile, got, want)
				}
			}
		}
	}
}
