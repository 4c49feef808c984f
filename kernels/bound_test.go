package kernels

import (
	"reflect"
	"testing"
	"unsafe"

	"github.com/stridekit/stridekit/gen"
	"github.com/stridekit/stridekit/layout"
)

// TestSlab checks that a Bound's plan is PlanCopy's, its slices laid one
// after another in a slab of their own sized to them (the scratch plan it
// was made in shares nothing with it), for ranks below and above gen's
// default set.
func TestSlab(t *testing.T) {
	var kept []*Bound
	var want []layout.Plan
	for _, nd := range []int{1, 2, gen.DefaultMaxNDim, gen.DefaultMaxNDim + 4, 3} {
		shape, perm := make([]int64, nd), make([]int, nd)
		for i := range shape {
			shape[i], perm[i] = int64(3+i), nd-1-i
		}
		dst, err := layout.Dense(shape, 4, layout.C)
		if err != nil {
			t.Fatal(err)
		}
		src, err := layout.Dense(shape, 4, layout.Perm(perm...))
		if err != nil {
			t.Fatal(err)
		}
		p, err := layout.PlanCopy(dst, src, planOptions(nil, 16, 16, 4))
		if err != nil {
			t.Fatal(err)
		}
		b := new(Bound)
		// A nil device fails after planning: the plan is there to look at.
		if err := BindInto(b, nil, dst, src, 16, 16); err == nil || len(b.Plan.Shape) == 0 {
			t.Fatalf("%d dims: BindInto on a nil device: %v, plan %v", nd, err, b.Plan.Sig)
		}
		p0 := &b.Plan
		// Addresses as integers: the slab's end is one past its allocation,
		// which pointer arithmetic may not reach (checkptr, under -race).
		next := uintptr(unsafe.Pointer(unsafe.SliceData(p0.Shape)))
		for i, s := range [][]int64{p0.Shape, p0.DstStrides, p0.SrcStrides, p0.Tile} {
			if len(s) > 0 && uintptr(unsafe.Pointer(unsafe.SliceData(s))) != next {
				t.Errorf("%d dims: slice %d of the plan is not where the one before it ends", nd, i)
			}
			if cap(s) != len(s) {
				t.Errorf("%d dims: slice %d has cap %d, len %d", nd, i, cap(s), len(s))
			}
			next += uintptr(8 * len(s))
		}
		kept, want = append(kept, b), append(want, p)
	}
	for i, b := range kept { // later binds reuse the scratch plan, never these
		if !reflect.DeepEqual(b.Plan, want[i]) {
			t.Errorf("bind %d: plan %+v, PlanCopy's %+v", i, b.Plan, want[i])
		}
	}
}
