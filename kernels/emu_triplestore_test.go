package kernels

import (
	"testing"

	"github.com/stridekit/stridekit/gen"
	"github.com/stridekit/stridekit/internal/pairgen"
	"github.com/stridekit/stridekit/layout"
)

// TestEmulatedTripleStore copies, on the CPU, 3-byte box tiles whose
// kernels write dst runs in groups of three words (the template's
// storeTriples, on with the knob triplestore=3 so that every contiguous
// dst run takes it), in both tiers: dst views 0 to 3 bytes into their
// buffers (each start of the first group), reversed dst runs, a strided
// source, runs shorter than a group, ragged tiles and random pairs. Each
// fixed case must take the path, so the test fails if it goes unused.
func TestEmulatedTripleStore(t *testing.T) {
	t.Setenv("STRIDEKIT_KNOBS", "btile/3 triplestore=3")
	r := emuRand(t, 11)
	cases := []storeCase{
		{3, []int64{6, 40, 130}, []int{2, 1, 0}, 1, false},
		{3, []int64{5, 7, 9, 61}, []int{0, 3, 1, 2}, 1, false},
		{3, []int64{9, 70, 30}, []int{2, 0, 1}, 1, true},
		{3, []int64{8, 40, 41}, []int{2, 1, 0}, 2, false},
		{3, []int64{37, 3, 53}, []int{2, 1, 0}, 1, false},       // dst runs of 3 items
		{3, []int64{11, 13, 2, 29}, []int{3, 2, 1, 0}, 1, true}, // dst runs of 2 items, reversed
		{3, []int64{7, 5, 3, 17, 19}, []int{4, 1, 3, 0, 2}, 1, false},
	}
	used := emuStoreCases(t, r, "triple store", cases, []bool{false, true}, func() int { return []int{1 << 10, 4 << 10}[r.IntN(2)] }, func(p layout.Plan) bool { return tripleStore(t, p) })
	n := emuRandomOn(t, r, 16, "the triple store", func(c pairgen.Pair, p layout.Plan) bool {
		return tripleStore(t, p)
	}, func(i int) bool { return i%2 == 1 })
	t.Logf("%d fixed copies and %d random pairs through the triple store", used, n)
}

// tripleStore reports whether the kernel of plan p writes its dst runs
// in groups of three words (gen.TripleStore, under the knobs jit renders).
func tripleStore(t *testing.T, p layout.Plan) bool {
	return takesPath(t, p, gen.TripleStore)
}
