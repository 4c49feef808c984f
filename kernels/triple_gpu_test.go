package kernels

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stridekit/stridekit/gen"
	"github.com/stridekit/stridekit/internal/testenv"
	"github.com/stridekit/stridekit/kernels/jit"
	"github.com/stridekit/stridekit/layout"
)

// tripleCases are permutations of 3-byte items whose box tiles have
// contiguous dst runs: four of 1.1 to 17 KB (ragged tiles among them),
// whose kernels write them in groups of words with the tuning table's
// knobs, then three of about 200 bytes, which do so only with a lower
// triplestore.
var tripleCases = []permCase{
	{[]int64{33, 29, 31}, []int{2, 0, 1}},
	{[]int64{7, 5, 3, 17, 19}, []int{4, 1, 3, 0, 2}},
	{[]int64{13, 12, 64}, []int{2, 1, 0}},
	{[]int64{11, 13, 2, 29}, []int{3, 2, 1, 0}},
	{[]int64{9, 11, 200}, []int{2, 0, 1}},
	{[]int64{3, 50, 7, 190}, []int{3, 1, 2, 0}},
	{[]int64{6, 40, 300}, []int{2, 1, 0}},
}

// TestGPUTripleStore copies tripleCases on the GPU in both tiers, with the
// views 0 to 3 bytes into their buffers (each start of a run's first group
// of words), against runtime/hostcopy: with the tuning table's knobs, where
// the long runs take the triple store (the template's storeTriples), and
// with triplestore=3, where every contiguous dst run does. A case whose
// plan does not take it fails the test (compute-sanitizer runs this test
// too).
func TestGPUTripleStore(t *testing.T) {
	dev := testenv.NeedGPU(t)
	st := testenv.NewStream(t, dev)
	r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 19))
	for _, env := range []string{"", "btile/3 triplestore=3"} {
		t.Setenv("STRIDEKIT_KNOBS", env)
		ResetTuning()
		cache := jit.NewCache() // kernels rendered with this setting
		cases := tripleCases
		if env == "" {
			cases = cases[:4]
		}
		runPermCases(t, dev, st, r, cases, permPath{name: "triples", item: 3, pads: []int{0, 1, 2, 3}, padSrc: true, cache: cache, want: "the triple store", takes: func(p layout.Plan) bool {
			return gen.TripleStore(gen.KnobsFor(p.Sig, dev.Arch()), &p)
		}})
		if err := cache.Close(); err != nil {
			t.Error(err)
		}
	}
	ResetTuning()
}
