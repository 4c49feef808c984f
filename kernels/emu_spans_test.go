package kernels

import (
	"testing"

	"github.com/stridekit/stridekit/internal/layouttest"
	"github.com/stridekit/stridekit/internal/pairgen"
	"github.com/stridekit/stridekit/internal/tilegeom"
	"github.com/stridekit/stridekit/layout"
)

// TestEmulatedSpans copies, on the CPU and in both tiers, box tiles whose
// src runs are spans (tilegeom.SpanSide: the kernel loads the bytes from a
// run's lowest element to its highest, holes included): the views of
// spanCases at words (src at its buffer's start) and at 16-byte chunks
// (some must take them; src 13 bytes in), and 16 random pairs whose plans
// take spans. Each fixed plan must take spans, so the path is known to
// run.
func TestEmulatedSpans(t *testing.T) {
	r := emuRand(t, 40)
	chunks := 0
	for _, c := range spanCases {
		dst, src := c.views(t)
		for i, g := range []int{tilegeom.WordGrain, tilegeom.ChunkGrain} {
			base := int64(13 * i)
			pair := pairgen.Pair{Kind: c.name, Dst: dst, Src: src, SrcBase: base,
				DstBuf: dst.RequiredSizeInBytes(), SrcBuf: base + src.RequiredSizeInBytes()}
			for _, spec := range []bool{false, true} {
				p := emuCopyWith(t, r, pair, spec, func(o *layout.PlanOptions) { o.LoadGrain = g })
				if p.Box == nil || !p.Box.Src.Holes {
					t.Fatalf("%s: plan %v tile %v: src runs not spans (%+v)", c.name, p.Sig, p.Tile, p.Box)
				}
				if p.Box.Grain == tilegeom.ChunkGrain {
					chunks++
				}
			}
		}
	}
	if chunks == 0 {
		t.Error("no fixed view planned at 16-byte chunks")
	}
	takes := func(_ pairgen.Pair, p layout.Plan) bool { return p.Box != nil && p.Box.Src.Holes }
	emuRandomOn(t, r, 16, "src spans", takes, func(i int) bool { return i%2 == 1 })
}

// spanCases are views of about 1 MiB whose box tiles' src runs are spans
// (TestEmulatedSpans, TestGPUSpans): 7-byte runs, flipped, 8 bytes apart
// (a hole between runs, a step further out), runs whose dims continue
// each other in memory with opposite signs, and 2-byte items of the first
// kind; their dst runs hold under 4 KiB.
var spanCases = []spanCase{
	{"holes", []int64{17, 11, 13, 6, 7, 11}, []int64{8, -1496, 16456, 427856, -1, 136}, []int{1, 2, 3, 4, 0, 5}, 1},
	{"signs", []int64{7, 7, 8, 12, 26, 9}, []int64{1, -7, 56, 896, 10752, 279552}, []int{2, 0, 5, 1, 4, 3}, 1},
	{"holes16", []int64{5, 3, 9, 11, 13, 23}, []int64{-1, 4, 12, 216, -2376, 30888}, []int{1, 0, 2, 5, 3, 4}, 2},
}

type spanCase struct {
	name  string
	shape []int64
	ss    []int64 // src strides, elements
	order []int   // dst dims, outermost first (dense)
	item  int
}

// views returns the case's dst and src views.
func (c spanCase) views(t *testing.T) (dst, src layout.Layout) {
	return layouttest.MustNew(t, c.shape, denseOrder(c.shape, c.order), c.item), layouttest.MustNew(t, c.shape, c.ss, c.item)
}

// denseOrder returns the strides of a dense array of shape whose dims are
// laid out in order, outermost first.
func denseOrder(shape []int64, order []int) []int64 {
	st := make([]int64, len(shape))
	n := int64(1)
	for i := len(order) - 1; i >= 0; i-- {
		st[order[i]] = n
		n *= shape[order[i]]
	}
	return st
}
