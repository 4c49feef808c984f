package gen

import "github.com/stridekit/stridekit/layout"

// Word gathers. The gather kernel writes dst one item per thread: each
// item costs its own unravelling of every dim (a fast division each), its
// own load and its own store, about fifty instructions for a 1-byte item.
// Where every group of W consecutive dst elements (in dst's order, the
// gather's flat index) lies in one aligned dst word of Knobs.GatherWord
// bytes, a thread instead takes a word: it unravels the word's first item,
// steps to the others with a mixed-radix counter (an add and a compare
// each, more only where the fastest dim wraps), loads the items and stores
// one word.
//
// That holds where dst's fastest dims, from the fastest, are contiguous in
// dst (unit stride, each stride the next faster's times its extent: a
// linear prefix) and either cover every dim (a dense dst: the items after
// the last whole word are stored one by one) or hold a multiple of W items
// with every slower dst stride a multiple of W. The kernel also checks that
// the dst view's address is a multiple of the word's bytes, and otherwise
// stores items.

// wordItems returns the items of a gather word of the kernel for sig under
// knobs k (GatherWord bytes, for items that divide it and are smaller), or
// 0 where that kernel writes each item alone.
func wordItems(sig layout.Signature, k Knobs) int64 {
	s, gw := int64(sig.Itemsize)*int64(sig.Vec), int64(k.GatherWord)
	if sig.Class != layout.ClassGather || gw == 0 || s >= gw || gw%s != 0 {
		return 0
	}
	return gw / s
}

// gatherWords returns the number of whole dst words the gather kernel of
// plan p, built with knobs k, writes a word at a time (its flat elements
// 0 … words·W-1), or 0 where the word path does not apply.
func gatherWords(p *layout.Plan, k Knobs) int64 {
	w := wordItems(p.Sig, k)
	if w == 0 {
		return 0
	}
	n := len(p.Shape)
	lin, d := int64(1), n-1
	for ; d >= 0 && p.DstStrides[d] == lin; d-- {
		lin *= p.Shape[d]
	}
	if d < 0 {
		return p.Volume / w // dense dst
	}
	if lin%w != 0 {
		return 0
	}
	for _, s := range p.DstStrides[:d+1] {
		if s%w != 0 {
			return 0
		}
	}
	return p.Volume / w
}

// GatherWords returns the items a thread of the gather kernel for plan p,
// built with knobs k, writes as one dst word where the dst view's address
// is aligned to it (see Knobs.GatherWord), or 1 where it writes each item
// alone: what a description of the launch, or a test that wants that path,
// needs to know.
func GatherWords(k Knobs, p *layout.Plan) int {
	if gatherWords(p, k) == 0 {
		return 1
	}
	return int(wordItems(p.Sig, k))
}

// wordsPerThread is GWU of the gather kernel: the words a thread of the
// word path moves per trip, as many items in flight as Rows gives the item
// path (at least one word).
func wordsPerThread(sig layout.Signature, k Knobs) int64 {
	return max(1, int64(rowsPerThread(sig, k))/wordItems(sig, k))
}
