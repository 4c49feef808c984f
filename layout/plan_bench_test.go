package layout_test

import (
	"testing"

	"github.com/stridekit/stridekit/internal/layouttest"
	"github.com/stridekit/stridekit/layout"
)

// benchPair returns a dense C dst of nd dims of extent 4 and a src holding the
// same elements with the dims in reverse order (a full permutation, no merges).
func benchPair(b *testing.B, nd int) (dst, src layout.Layout) {
	shape := make([]int64, nd)
	perm := make([]int, nd)
	for i := range shape {
		shape[i] = 4 + int64(i)
		perm[i] = nd - 1 - i
	}
	dst = layouttest.MustNew(b, shape, nil, 4)
	src, err := layout.Dense(shape, 4, layout.Perm(perm...))
	if err != nil {
		b.Fatal(err)
	}
	return dst, src
}

func benchPlanInto(b *testing.B, nd int) {
	dst, src := benchPair(b, nd)
	opt := layout.PlanOptions{DstAlign: 16, SrcAlign: 16}
	var p layout.Plan
	b.ReportAllocs()
	for b.Loop() {
		if err := layout.PlanCopyInto(&p, dst, src, opt); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkPlanCopyInto2(b *testing.B) { benchPlanInto(b, 2) }
func BenchmarkPlanCopyInto4(b *testing.B) { benchPlanInto(b, 4) }
func BenchmarkPlanCopyInto8(b *testing.B) { benchPlanInto(b, 8) }

// BenchmarkPlanCopyIntoDense8 plans a same-order dense copy of 8 dims that
// merges down to one memcpy.
func BenchmarkPlanCopyIntoDense8(b *testing.B) {
	dst, _ := benchPair(b, 8)
	var p layout.Plan
	b.ReportAllocs()
	for b.Loop() {
		if err := layout.PlanCopyInto(&p, dst, dst, layout.PlanOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPlanCopy4 is PlanCopy without reuse: it allocates the plan's slices.
func BenchmarkPlanCopy4(b *testing.B) {
	dst, src := benchPair(b, 4)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := layout.PlanCopy(dst, src, layout.PlanOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}
