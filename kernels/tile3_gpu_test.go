package kernels

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stridekit/stridekit/internal/layouttest"
	"github.com/stridekit/stridekit/internal/testenv"
	"github.com/stridekit/stridekit/kernels/jit"
	"github.com/stridekit/stridekit/layout"
	"github.com/stridekit/stridekit/runtime/cuda"
)

// tile3Cases are transposes of 3-byte items that the planner gives the
// vector tile in vectors of four items: ragged tiles (100 and 132 of 64),
// a 4-d permutation, and a 2-d transpose large enough for many tiles.
var tile3Cases = []struct {
	shape []int64
	perm  []int
}{
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
		gpuTile3(t, dev, st, r, cache)
		if err := cache.Close(); err != nil {
			t.Error(err)
		}
	}
}

func gpuTile3(t *testing.T, dev *cuda.Device, st *cuda.Stream, r *rand.Rand, cache *jit.Cache) {
	t.Helper()
	for _, c := range tile3Cases {
		sl := layouttest.MustDense(t, c.shape, 3, c.perm...)
		dl := layouttest.MustDense(t, c.shape, 3)
		p, err := layout.PlanCopy(dl, sl, PlanOptions(dev, 256, 256, 3))
		if err != nil {
			t.Fatal(err)
		}
		if p.Sig.Class != layout.ClassTile || p.Sig.Vec != 4 {
			t.Errorf("%v perm %v: plan %v, want the 3-byte vector tile", c.shape, c.perm, p.Sig)
			continue
		}
		for _, spec := range []bool{false, true} {
			for _, pad := range []int{0, 4} {
				if _, err := runCase(t, dev, st, r, gpuCase{name: "tile3", dl: dl, sl: sl, padD: pad, padS: pad, spec: spec, cache: cache}); err != nil {
					t.Error(err)
				}
			}
		}
	}
}
