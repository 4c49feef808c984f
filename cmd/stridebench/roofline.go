package main

import (
	"math/bits"

	"github.com/stridekit/stridekit/layout"
)

// This file computes the roofline of a case: the bytes DRAM must move for
// it, counted in the 32-byte sectors that are the unit of a GPU's memory
// transactions.

// sectorBytes is the size of a DRAM sector (the granularity of L2 ↔ DRAM
// traffic on NVIDIA GPUs).
const sectorBytes = 32

// sectors returns the number of distinct 32-byte sectors the src view and
// the dst view of b touch.
func sectors(b *built) (src, dst int64) {
	return touchedSectors(b.Src, b.SrcOff), touchedSectors(b.Dst, b.DstOff)
}

// touchedSectors returns the number of distinct 32-byte sectors holding a
// byte of some element of view l, whose index 0 is item off of an array that
// starts on a sector boundary. A dim of stride 0 (a broadcast) reads the same
// bytes again and is left out. The count walks the rows of the view's
// canonical form (layout.PlanCopy of the view with itself: extent-1 dims
// dropped, negative strides flipped, dims sorted and merged, items widened
// along contiguous runs) and marks sectors in a bitmap spanning the view.
func touchedSectors(l layout.Layout, off int64) int64 {
	l, off = dropBroadcast(l, off)
	if l.Volume() == 0 {
		return 0
	}
	item := int64(l.Itemsize())
	start := (off + l.MinOffset()) * item // the view's lowest byte, from the array start
	first := start / sectorBytes
	last := (start + l.RequiredSizeInBytes() - 1) / sectorBytes
	m := newBitmap(last - first + 1)
	base := start - first*sectorBytes // the view's lowest byte, from sector first
	mark := func(lo, n int64) {       // bytes [lo, lo+n) from the view's lowest byte
		m.setRange((base+lo)/sectorBytes, (base+lo+n-1)/sectorBytes)
	}
	p, err := layout.PlanCopy(l, l, layout.PlanOptions{})
	if err != nil {
		// Overlapping strides the planner will not take as a destination:
		// visit every element.
		eachOffset(l, func(o int64) { mark((o-l.MinOffset())*item, item) })
		return m.count()
	}
	w := int64(p.Sig.Itemsize)
	nd := len(p.Shape)
	inner, innerStride := p.Shape[nd-1], p.DstStrides[nd-1]*w
	idx := make([]int64, nd-1)
	row := p.DstOffset
	for {
		if innerStride > 0 && innerStride-w < sectorBytes {
			// Gaps between the row's elements are shorter than a sector,
			// so every sector from its first byte to its last is touched.
			mark(row, (inner-1)*innerStride+w)
		} else {
			for i, o := int64(0), row; i < inner; i, o = i+1, o+innerStride {
				mark(o, w)
			}
		}
		k := nd - 2
		for ; k >= 0; k-- {
			idx[k]++
			row += p.DstStrides[k] * w
			if idx[k] < p.Shape[k] {
				break
			}
			row -= p.DstStrides[k] * w * idx[k]
			idx[k] = 0
		}
		if k < 0 {
			return m.count()
		}
	}
}

// dropBroadcast removes the dims of stride 0 from l (index 0 of each), which
// leaves the offset of index 0 unchanged.
func dropBroadcast(l layout.Layout, off int64) (layout.Layout, int64) {
	st := l.Strides()
	for d := len(st) - 1; d >= 0; d-- {
		if st[d] == 0 && l.Shape()[d] > 1 {
			v, o, err := l.Index(d, 0)
			if err == nil {
				l, off = v, off+o
			}
		}
	}
	return l, off
}

// eachOffset calls f with the item offset of every index of l, in C order.
func eachOffset(l layout.Layout, f func(int64)) {
	if l.Volume() == 0 {
		return
	}
	shape, st := l.Shape(), l.Strides()
	n := len(shape)
	idx := make([]int64, n)
	o := int64(0)
	for {
		f(o)
		k := n - 1
		for ; k >= 0; k-- {
			idx[k]++
			o += st[k]
			if idx[k] < shape[k] {
				break
			}
			o -= st[k] * idx[k]
			idx[k] = 0
		}
		if k < 0 {
			return
		}
	}
}

// bitmap is a set of sector numbers 0 … n-1.
type bitmap []uint64

func newBitmap(n int64) bitmap { return make(bitmap, (n+63)/64) }

// setRange sets bits lo … hi (inclusive).
func (m bitmap) setRange(lo, hi int64) {
	wl, wh := lo/64, hi/64
	ml := ^uint64(0) << (lo % 64)
	mh := ^uint64(0) >> (63 - hi%64)
	if wl == wh {
		m[wl] |= ml & mh
		return
	}
	m[wl] |= ml
	for w := wl + 1; w < wh; w++ {
		m[w] = ^uint64(0)
	}
	m[wh] |= mh
}

func (m bitmap) count() int64 {
	n := 0
	for _, w := range m {
		n += bits.OnesCount64(w)
	}
	return int64(n)
}
