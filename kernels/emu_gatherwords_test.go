package kernels

import (
	"fmt"
	"testing"

	"github.com/stridekit/stridekit/gen"
	"github.com/stridekit/stridekit/internal/layouttest"
	"github.com/stridekit/stridekit/internal/pairgen"
	"github.com/stridekit/stridekit/layout"
)

// TestEmulatedGatherWords copies, on the CPU and in both tiers, gathers
// that the kernel writes a dst word at a time (gen.GatherWords, words of
// 4, 8 and 16 bytes set through $STRIDEKIT_KNOBS): dense destinations whose
// last word is partial, rows of whole words inside a wider buffer, a
// fastest dim shorter than a word (the counter wraps inside every word),
// 2-, 4- and 8-byte items, a dst view one byte into its buffer (the kernel
// then stores item by item), and random pairs; and gathers that must not
// take the path: rows of 10 bytes, an outer dst stride of 18 bytes, a
// reversed dst, items as wide as the word and 3-byte items. Each fixed case
// must take the path it is listed for.
func TestEmulatedGatherWords(t *testing.T) {
	r := emuRand(t, 8)
	type fixed struct {
		shape   []int64
		item    int
		perm    []int   // src: the dense layout of this permutation
		ds      []int64 // dst strides in items (nil: dense)
		base    int64   // the dst view's first byte in its buffer
		gw      int     // the gatherword knob
		words   bool    // the case must take the word path
		comment string
	}
	cases := []fixed{
		{[]int64{5, 7, 9}, 1, []int{2, 1, 0}, nil, 0, 4, true, "dense, 315 bytes: a partial last word"},
		{[]int64{5, 7, 9}, 1, []int{2, 1, 0}, nil, 0, 16, true, "dense, 315 bytes: a partial last 16-byte word"},
		{[]int64{6, 12}, 1, []int{1, 0}, []int64{16, 1}, 0, 4, true, "rows of 12 bytes, 16 apart"},
		{[]int64{6, 12}, 1, []int{1, 0}, []int64{16, 1}, 0, 8, false, "rows of 12 bytes in words of 8"},
		{[]int64{6, 16}, 1, []int{1, 0}, []int64{48, 1}, 0, 16, true, "rows of 16 bytes, 48 apart"},
		{[]int64{50, 3}, 1, []int{1, 0}, nil, 0, 4, true, "a fastest dim of 3"},
		{[]int64{3, 2, 5, 7}, 1, []int{3, 1, 2, 0}, nil, 0, 16, true, "a 4-d permutation, a fastest dim of 7"},
		{[]int64{33, 17, 5}, 2, []int{1, 2, 0}, nil, 0, 4, true, "2-byte items, a partial last word"},
		{[]int64{33, 17, 5}, 2, []int{1, 2, 0}, nil, 0, 16, true, "2-byte items in words of 16"},
		{[]int64{13, 6, 7}, 4, []int{2, 0, 1}, nil, 0, 16, true, "4-byte items in words of 16"},
		{[]int64{13, 6, 7}, 4, []int{2, 0, 1}, nil, 0, 8, true, "4-byte items in words of 8"},
		{[]int64{9, 14}, 8, []int{1, 0}, []int64{16, 1}, 0, 16, true, "8-byte items, rows of 14"},
		{[]int64{16, 12, 60}, 1, []int{2, 1, 0}, nil, 1, 4, true, "dst one byte into its buffer"},
		{[]int64{16, 12, 60}, 4, []int{2, 1, 0}, nil, 4, 16, true, "dst 4 bytes into its buffer, words of 16"},
		{[]int64{6, 10}, 1, []int{1, 0}, []int64{16, 1}, 0, 4, false, "rows of 10 bytes"},
		{[]int64{6, 12}, 1, []int{1, 0}, []int64{18, 1}, 0, 4, false, "rows 18 bytes apart"},
		{[]int64{6, 12}, 1, []int{1, 0}, []int64{12, -1}, 0, 4, false, "a reversed dst"},
		{[]int64{9, 11}, 4, []int{1, 0}, nil, 0, 4, false, "4-byte items in words of 4"},
		{[]int64{9, 11}, 3, []int{1, 0}, nil, 0, 16, false, "3-byte items"},
	}
	gather := func(o *layout.PlanOptions) { o.Gather = true }
	for _, c := range cases {
		t.Setenv("STRIDEKIT_KNOBS", fmt.Sprintf("gather gatherword=%d", c.gw))
		src := layouttest.MustDense(t, c.shape, c.item, c.perm...)
		dst := layouttest.MustNew(t, c.shape, c.ds, c.item)
		lo := int64(0)
		if c.ds != nil {
			for k, s := range c.ds {
				if s < 0 {
					lo -= s * (c.shape[k] - 1) * int64(c.item)
				}
			}
		}
		pair := pairgen.Pair{Kind: c.comment, Dst: dst, Src: src, DstBase: c.base + lo, DstBuf: dst.RequiredSizeInBytes() + c.base + lo, SrcBuf: src.RequiredSizeInBytes()}
		for _, spec := range []bool{false, true} {
			p := emuCopyWith(t, r, pair, spec, gather)
			if p.Sig.Class != layout.ClassGather {
				t.Fatalf("%v: planned as %v", pair, p.Sig)
			}
			if got := gen.GatherWords(gen.KnobsFor(p.Sig, 90), &p) > 1; got != c.words {
				t.Errorf("%v: plan %v shape %v ds %v: word path %v, want %v", pair, p.Sig, p.Shape, p.DstStrides, got, c.words)
			}
		}
	}
	// Random pairs whose gathers take the path, in words of each width.
	n := 0
	for tries := 0; n < 15 && tries < 20000; tries++ {
		gw := []int{4, 8, 16}[n%3]
		t.Setenv("STRIDEKIT_KNOBS", fmt.Sprintf("gather gatherword=%d", gw))
		c := pairgen.Random(r, 48<<10)
		opt := PlanOptions(nil, 0x10000+uintptrOf(int(c.DstBase%256)), 0x10000+uintptrOf(int(c.SrcBase%256)), c.Dst.Itemsize())
		opt.Gather = true
		p, err := layout.PlanCopy(c.Dst, c.Src, opt)
		if err != nil || p.Sig.Class != layout.ClassGather || gen.GatherWords(gen.KnobsFor(p.Sig, 90), &p) == 1 {
			continue
		}
		emuCopyWith(t, r, c, n%4 == 0, gather)
		n++
	}
	if n < 15 {
		t.Fatalf("only %d random pairs take the word path", n)
	}
}
