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
	planLoop(b, dst, src)
}

// planLoop plans the copy src → dst into one plan (16-byte aligned views)
// for each iteration of b and returns the plan.
func planLoop(b *testing.B, dst, src layout.Layout) layout.Plan {
	opt := layout.PlanOptions{DstAlign: 16, SrcAlign: 16}
	var p layout.Plan
	b.ReportAllocs()
	for b.Loop() {
		if err := layout.PlanCopyInto(&p, dst, src, opt); err != nil {
			b.Fatal(err)
		}
	}
	return p
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

// BenchmarkPlanCopyIntoSpans plans a uint8 8-d view whose src runs of 7
// bytes, flipped, lie 8 bytes apart: a box tile grown by growSpan whose
// src runs are spans (the host time the first copy of such a pair pays).
func BenchmarkPlanCopyIntoSpans(b *testing.B) { benchPlanView(b, 8, -1, 136, true) }

// BenchmarkPlanCopyIntoRuns plans BenchmarkPlanCopyIntoSpans's view with
// its short dim not flipped and no bytes between the src runs of its three
// fastest dims, which then continue each other: plain src runs, no spans,
// to compare with.
func BenchmarkPlanCopyIntoRuns(b *testing.B) { benchPlanView(b, 7, 1, 119, false) }

// benchPlanView plans, again and again, a uint8 8-d view whose three
// fastest src dims have strides dir, pitch and s6, and checks at the end
// whether its src runs are spans.
func benchPlanView(b *testing.B, pitch, dir, s6 int64, spans bool) {
	shape := []int64{17, 11, 13, 6, 7, 11, 21, 12}
	ss := []int64{pitch, -37128, 2856, 53909856, dir, 4900896, s6, 408408}
	p := planLoop(b, layouttest.MustNew(b, shape, nil, 1), layouttest.MustNew(b, shape, ss, 1))
	if p.Box == nil || p.Box.Src.Holes != spans {
		b.Fatalf("plan %v tile %v: src spans %v, want %v", p.Sig, p.Tile, p.Box != nil && p.Box.Src.Holes, spans)
	}
}
