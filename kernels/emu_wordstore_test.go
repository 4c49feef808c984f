package kernels

import (
	"testing"

	"github.com/stridekit/stridekit/gen"
	"github.com/stridekit/stridekit/internal/pairgen"
	"github.com/stridekit/stridekit/layout"
)

// TestEmulatedWordStore copies, on the CPU, box tiles whose specialised
// kernels write dst runs in aligned words (the template's storeWords, on
// with the knob wordstore=16): items of 3, 5, 6 and 7 bytes, dst views 0
// to 3 bytes into their buffers (6-byte items: 0 and 2), reversed dst
// runs, a strided source and random pairs of such items. Each fixed case
// must take the word store, so the test fails if the path goes unused.
func TestEmulatedWordStore(t *testing.T) {
	t.Setenv("STRIDEKIT_KNOBS", "btile wordstore=16")
	r := emuRand(t, 9)
	cases := []storeCase{
		{3, []int64{6, 40, 130}, []int{2, 1, 0}, 1, false},
		{3, []int64{5, 7, 9, 61}, []int{0, 3, 1, 2}, 1, false},
		{3, []int64{9, 70, 30}, []int{2, 0, 1}, 1, true},
		{3, []int64{8, 40, 41}, []int{2, 1, 0}, 2, false},
		{5, []int64{6, 40, 30}, []int{2, 1, 0}, 1, false},
		{6, []int64{3, 33, 7, 45}, []int{3, 1, 2, 0}, 1, true},
		{7, []int64{5, 31, 67}, []int{2, 1, 0}, 1, false},
	}
	used := emuStoreCases(t, r, "word store", cases, []bool{true}, func() int { return 4 << 10 }, func(p layout.Plan) bool { return wordStore(t, p) })
	n := emuRandomOn(t, r, 12, "the word store", func(_ pairgen.Pair, p layout.Plan) bool {
		return wordStore(t, p)
	}, func(int) bool { return true })
	t.Logf("%d fixed copies and %d random pairs through the word store", used, n)
}

// wordStore reports whether the specialised kernel of plan p writes its
// dst runs in words (gen.WordStore, under the knobs jit renders).
func wordStore(t *testing.T, p layout.Plan) bool {
	return takesPath(t, p, gen.WordStore)
}
