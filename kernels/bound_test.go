package kernels

import (
	"testing"

	"github.com/stridekit/stridekit/gen"
	"github.com/stridekit/stridekit/layout"
)

// TestSlab checks that a Bound holds the plan of a copy of gen's default
// rank in itself (binding allocates nothing of its own) and that a larger
// rank's plan lies in a slab of its own.
func TestSlab(t *testing.T) {
	var b Bound
	if w := slabWords(gen.DefaultMaxNDim + 1); w > len(b.slab) {
		t.Fatalf("slab of %d words, a %d-dim copy needs %d", len(b.slab), gen.DefaultMaxNDim, w)
	}
	for _, c := range []struct {
		nd     int
		inside bool
	}{{gen.DefaultMaxNDim, true}, {gen.DefaultMaxNDim + 4, false}} {
		shape, perm := make([]int64, c.nd), make([]int, c.nd)
		for i := range shape {
			shape[i], perm[i] = 3, c.nd-1-i
		}
		dst, err := layout.Dense(shape, 4, layout.C)
		if err != nil {
			t.Fatal(err)
		}
		src, err := layout.Dense(shape, 4, layout.Perm(perm...))
		if err != nil {
			t.Fatal(err)
		}
		var b Bound
		// A nil device fails after planning: the plan is there to look at.
		if err := BindInto(&b, nil, dst, src, 16, 16); err == nil || len(b.Plan.Shape) == 0 {
			t.Fatalf("%d dims: BindInto on a nil device: %v, plan %v", c.nd, err, b.Plan.Sig)
		}
		if got := &b.Plan.Shape[:1][0] == &b.slab[0]; got != c.inside {
			t.Errorf("%d dims: plan in the Bound's slab = %v, want %v", c.nd, got, c.inside)
		}
	}
}
