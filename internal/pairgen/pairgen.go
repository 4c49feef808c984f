// Package pairgen draws random dst/src layout pairs for copy tests: every
// kind of copy stridekit plans (permutations and transposes of dense views,
// short and odd extents, slices with steps, flips, broadcasts, fills, dense
// same-order copies), ranks 1–8, itemsizes 1, 2, 3, 4, 6, 8, 12 and 16, each
// view placed at a random byte offset inside a larger buffer so that
// alignments and out-of-view bytes vary. The tests of the kernels, of
// runtime/memview and of the GPU suites share it.
package pairgen

import (
	"fmt"
	"math/rand/v2"

	"github.com/stridekit/stridekit/layout"
)

// Pair is one copy to check: every element of Src goes to the element of Dst
// at the same index (Src may broadcast). Each view's lowest byte sits at
// byte DstBase / SrcBase of a buffer of DstBuf / SrcBuf bytes; the bytes of
// the buffer outside the view must be left untouched.
type Pair struct {
	Kind             string
	Dst, Src         layout.Layout
	DstBase, SrcBase int64
	DstBuf, SrcBuf   int64
}

func (p Pair) String() string {
	return fmt.Sprintf("%s: dst %v at +%d of %d, src %v at +%d of %d", p.Kind, p.Dst, p.DstBase, p.DstBuf, p.Src, p.SrcBase, p.SrcBuf)
}

// Itemsizes are the item sizes Random draws from.
var Itemsizes = []int{1, 2, 3, 4, 6, 8, 12, 16}

// Kinds are the kinds of pair Random draws.
var Kinds = []string{"permute", "transpose", "small", "slice", "flip", "broadcast", "fill", "same", "rgb"}

// Random draws a pair whose views each span at most maxBytes bytes.
func Random(r *rand.Rand, maxBytes int64) Pair {
	for {
		p, ok := draw(r, maxBytes, Kinds[r.IntN(len(Kinds))])
		if ok {
			return p
		}
	}
}

// RandomKind draws a pair of the given kind (one of Kinds).
func RandomKind(r *rand.Rand, maxBytes int64, kind string) Pair {
	for {
		p, ok := draw(r, maxBytes, kind)
		if ok {
			return p
		}
	}
}

var extents = []int64{1, 2, 3, 4, 5, 7, 8, 13, 16, 17, 31, 32, 33, 64, 65, 96, 127, 128, 257}

func draw(r *rand.Rand, maxBytes int64, kind string) (Pair, bool) {
	item := Itemsizes[r.IntN(len(Itemsizes))]
	nd := 1 + r.IntN(8)
	if kind == "rgb" {
		nd = 3
	}
	shape := make([]int64, nd)
	for k := range shape {
		shape[k] = extents[r.IntN(len(extents))]
		if kind == "small" {
			shape[k] = int64(1 + r.IntN(9))
		}
	}
	if kind == "rgb" {
		shape[2] = int64(1 + r.IntN(4))
		item = []int{1, 2, 4}[r.IntN(3)]
	}
	vol := int64(1)
	for _, e := range shape {
		vol *= e
	}
	if vol*int64(item)*4 > maxBytes || vol == 0 {
		return Pair{}, false
	}
	ones := func() []int64 {
		s := make([]int64, nd)
		for k := range s {
			s[k] = 1
		}
		return s
	}
	dOrd, sOrd := r.Perm(nd), r.Perm(nd)
	dStep, sStep := ones(), ones()
	var dNeg, sNeg []bool
	switch kind {
	case "transpose":
		sOrd = append([]int(nil), dOrd...)
		if nd >= 2 {
			i := r.IntN(nd - 1)
			sOrd[i], sOrd[nd-1] = sOrd[nd-1], sOrd[i]
		}
	case "slice":
		for k := range sStep {
			if r.IntN(3) == 0 {
				sStep[k] = int64(2 + r.IntN(2))
			}
		}
		if r.IntN(3) == 0 {
			dStep[r.IntN(nd)] = 2
		}
		if r.IntN(2) == 0 {
			sOrd = append([]int(nil), dOrd...)
		}
	case "flip":
		sNeg, dNeg = make([]bool, nd), make([]bool, nd)
		for k := range sNeg {
			sNeg[k] = r.IntN(2) == 0
			dNeg[k] = r.IntN(4) == 0
		}
	case "same":
		sOrd = append([]int(nil), dOrd...)
	case "rgb":
		// (H, W, C) → (W, H, C): the channel run stays innermost in both.
		dOrd, sOrd = []int{0, 1, 2}, []int{1, 0, 2}
	}
	dl, err := layout.New(shape, Strides(shape, dOrd, dStep, dNeg), item)
	if err != nil {
		return Pair{}, false
	}
	ss := Strides(shape, sOrd, sStep, sNeg)
	switch kind {
	case "broadcast":
		for k := range ss {
			if r.IntN(2) == 0 {
				ss[k] = 0
			}
		}
	case "fill":
		for k := range ss {
			ss[k] = 0
		}
	}
	sl, err := layout.New(shape, ss, item)
	if err != nil {
		return Pair{}, false
	}
	if kind == "broadcast" && r.IntN(2) == 0 {
		// NumPy broadcasting: src without its leading dims.
		if k := r.IntN(nd + 1); k > 0 {
			if v, err := layout.New(sl.Shape()[k:], sl.Strides()[k:], item); err == nil {
				sl = v
			}
		}
	}
	if dl.RequiredSizeInBytes() > maxBytes || sl.RequiredSizeInBytes() > maxBytes {
		return Pair{}, false
	}
	p := Pair{Kind: kind, Dst: dl, Src: sl}
	p.DstBase = int64(item * r.IntN(9))
	p.SrcBase = int64(item * r.IntN(9))
	if r.IntN(4) == 0 { // a base that is not a multiple of the item
		p.SrcBase += int64(r.IntN(3))
	}
	p.DstBuf = p.DstBase + dl.RequiredSizeInBytes() + int64(r.IntN(64))
	p.SrcBuf = p.SrcBase + sl.RequiredSizeInBytes() + int64(r.IntN(64))
	return p, true
}

// Strides returns strides (in items) of shape dense in order (order[0]
// slowest), each dim's step multiplied in, negated where neg says (nil: no
// flips).
func Strides(shape []int64, order []int, step []int64, neg []bool) []int64 {
	st := make([]int64, len(shape))
	acc := int64(1)
	for i := len(order) - 1; i >= 0; i-- {
		d := order[i]
		st[d] = acc * step[d]
		acc *= shape[d] * step[d]
	}
	for d := range st {
		if neg != nil && neg[d] {
			st[d] = -st[d]
		}
	}
	return st
}

// Fill writes pseudo-random bytes into b.
func Fill(r *rand.Rand, b []byte) {
	for i := 0; i+8 <= len(b); i += 8 {
		v := r.Uint64()
		for j := range 8 {
			b[i+j] = byte(v >> (8 * j))
		}
	}
	for i := len(b) &^ 7; i < len(b); i++ {
		b[i] = byte(r.Uint32())
	}
}

// Poison fills b with a pattern no copy produces by accident.
func Poison(b []byte) {
	for i := range b {
		b[i] = byte(0xA5 ^ i*7)
	}
}
