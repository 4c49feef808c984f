package layout

import (
	"fmt"
	"math"
	"math/bits"
)

// PlanOptions carries what the planner cannot see in the layouts: how the
// buffers are aligned in memory. Alignment decides how wide the element and
// the vector accesses of a plan may be.
type PlanOptions struct {
	// DstAlign and SrcAlign are the byte alignments known for the start of
	// the dst and src buffers (the element at MinOffset, see the buffer
	// convention on Plan). Each must be 0 or a power of two; 0 assumes only
	// the natural alignment of the itemsize (its largest power-of-two
	// divisor, at most 16). Values above 16 are treated as 16.
	DstAlign, SrcAlign int
}

// TileMinExtent is the smallest extent that both fast dims of a transposing
// copy (dst's fastest dim and src's fastest dim) must have for PlanCopy to
// pick ClassTile; below it a tile would be mostly empty and the plan is
// ClassElementwise instead. 16 fills half of a 32×32 tile edge.
const TileMinExtent = 16

// PlanCopy plans the copy of every element of src into the element of dst at
// the same index, following DESIGN.md decision 3. src must have dst's shape or
// be broadcastable to it by NumPy's rules (dims aligned at the end, src
// extents of 1 repeat); the itemsizes must be equal; dst must be unique (no
// two indices at one offset). It fails with ErrShape, ErrItemsize,
// ErrOverlappingDst or ErrAlignment, wrapped in a message naming the argument.
//
// The plan is the joint canonical form of the two views: extent-1 dims
// dropped; dims negative in dst and negative or zero in src flipped (a dim
// negative in one view only keeps its signs); dims ordered by |dst stride|,
// slowest first (stable); adjacent dims contiguous in both views merged
// (zero src strides included); then the element is re-cut: when the innermost
// dim has unit stride in both views, its bytes and the item bytes are re-cut
// into the widest power-of-two element of at most 16 bytes that divides the
// run, every other byte stride, both offsets and both alignments; items over
// 16 bytes, or whose natural alignment is not available, are split into an
// inner unit-stride dim of such elements. Items of 3, 5, 6, 7 and 9..15 bytes
// outside a contiguous run stay opaque elements.
//
// # Classes
//
// Checked in this order:
//   - ClassNone: dst has no elements (Shape empty, Sig.NDim 0).
//   - ClassMemcpy: one canonical dim with unit stride in both views (a single
//     element is such a plan too). Bytes contiguous bytes at each offset.
//   - ClassFill: every src stride is 0. ClassBroadcast: some src stride is 0.
//   - ClassTile: DstStrides[NDim-1] == 1, SrcStrides[NDim-1] != 1, and Fast is
//     the first (slowest) canonical dim with SrcStrides[Fast] == 1, with both
//     Shape[NDim-1] and Shape[Fast] at least TileMinExtent. No src stride is 0.
//   - ClassElementwise: everything else.
//
// # Guarantees a kernel may rely on
//
//   - len(Shape) == len(DstStrides) == len(SrcStrides) == Sig.NDim (NDim
//     saturates at 255 for larger canonical forms; len(Shape) is exact),
//     every extent ≥ 1, dims ordered by |dst stride| descending.
//   - Strides count elements of Sig.Itemsize bytes, signed; only src strides
//     can be 0. DstOffset and SrcOffset are byte offsets, multiples of
//     Sig.Itemsize, and every element offset Offset/Itemsize + Σ i_k·Stride_k
//     of either view lies in [0, RequiredSizeInBytes/Itemsize) of the
//     original layout (no offset is negative).
//   - Alignment: with the alignments of opt, the address of every element of
//     either view is a multiple of the largest power of two dividing
//     Sig.Itemsize (all of it when Itemsize is a power of two).
//   - Vec is 1 for ClassMemcpy and ClassElementwise: widening has already put
//     up to 16 bytes into each element of a run contiguous in both views.
//   - ClassTile, Vec > 1: Vec divides Shape[NDim-1] and Shape[Fast]; every dst
//     stride but DstStrides[NDim-1], and every src stride but
//     SrcStrides[Fast], is a multiple of Vec; DstOffset and SrcOffset are
//     multiples of Vec·Itemsize, and so are both buffer alignments. So dst is
//     accessed in vectors along dim NDim-1 and src along dim Fast.
//   - ClassBroadcast and ClassFill, Vec > 1: DstStrides[NDim-1] == 1 and
//     SrcStrides[NDim-1] == 0; Vec divides Shape[NDim-1]; every other dst
//     stride is a multiple of Vec; DstOffset and the dst alignment are
//     multiples of Vec·Itemsize. dst is written in vectors of one repeated src
//     element; src is read as scalars.
//   - Index64 is false only when Volume and every element offset of either
//     view are at most math.MaxInt32.
//
// The signature holds no extent, stride or offset, so pairs that differ only
// in those (and keep the same canonical ndim, class, element and vector
// width) share a Signature and thus a kernel.
func PlanCopy(dst, src Layout, opt PlanOptions) (Plan, error) {
	var p Plan
	err := PlanCopyInto(&p, dst, src, opt)
	return p, err
}

// PlanCopyInto is PlanCopy writing into p and reusing its slices, so a caller
// that plans in a loop allocates nothing once the slices have grown (for
// ndim ≤ 8 a reused Plan needs no allocation). On error p is reset to an
// empty ClassNone plan and the error is returned.
func PlanCopyInto(p *Plan, dst, src Layout, opt PlanOptions) error {
	err := planCopy(p, dst, src, opt)
	if err != nil {
		p.reset()
	}
	return err
}

func (p *Plan) reset() {
	p.Sig = Signature{Class: ClassNone, Vec: 1}
	p.Shape = p.Shape[:0]
	p.DstStrides = p.DstStrides[:0]
	p.SrcStrides = p.SrcStrides[:0]
	p.DstOffset, p.SrcOffset, p.Volume, p.Bytes = 0, 0, 0, 0
}

// natAlign returns the largest power of two dividing x, at most
// MaxVectorBytes; MaxVectorBytes for x == 0.
func natAlign(x int64) int64 {
	if x == 0 {
		return MaxVectorBytes
	}
	a := int64(1) << bits.TrailingZeros64(uint64(x))
	if a > MaxVectorBytes || a <= 0 {
		return MaxVectorBytes
	}
	return a
}

func checkAlign(name string, a int) error {
	if a < 0 || a&(a-1) != 0 {
		return fmt.Errorf("%w: %s = %d is not 0 or a power of two", ErrAlignment, name, a)
	}
	return nil
}

func planCopy(p *Plan, dst, src Layout, opt PlanOptions) error {
	if err := checkAlign("PlanOptions.DstAlign", opt.DstAlign); err != nil {
		return err
	}
	if err := checkAlign("PlanOptions.SrcAlign", opt.SrcAlign); err != nil {
		return err
	}
	if dst.itemsize != src.itemsize {
		return fmt.Errorf("%w: dst itemsize %d differs from src itemsize %d", ErrItemsize, dst.itemsize, src.itemsize)
	}
	if dst.itemsize <= 0 {
		return fmt.Errorf("%w: dst itemsize %d must be positive (zero Layout?)", ErrItemsize, dst.itemsize)
	}
	nd, ns := len(dst.shape), len(src.shape)
	if ns > nd {
		return fmt.Errorf("%w: src shape %v has more dims than dst shape %v", ErrShape, src.shape, dst.shape)
	}
	for j := 0; j < ns; j++ {
		es, ed := src.shape[j], dst.shape[nd-ns+j]
		if es != ed && es != 1 {
			return fmt.Errorf("%w: src shape %v cannot be broadcast to dst shape %v (src dim %d: %d vs %d)", ErrShape, src.shape, dst.shape, j, es, ed)
		}
	}
	item := int64(dst.itemsize)
	p.reset()
	vol := dst.Volume()
	if vol == 0 {
		p.Sig.Itemsize = uint8(min(item, MaxVectorBytes))
		return nil
	}

	// Joint dims, extent-1 dims dropped; offsets in items from the buffer
	// starts to index 0.
	dOff, sOff := -dst.minOff, -src.minOff
	shape, ds, ss := p.Shape[:0], p.DstStrides[:0], p.SrcStrides[:0]
	for i := 0; i < nd; i++ {
		e := dst.shape[i]
		if e == 1 {
			continue
		}
		d, s := dst.strides[i], int64(0)
		if j := i - (nd - ns); j >= 0 && src.shape[j] != 1 {
			s = src.strides[j]
		}
		if d < 0 && s <= 0 { // flip: index i -> e-1-i in both views
			dOff += (e - 1) * d
			sOff += (e - 1) * s
			d, s = -d, -s
		}
		// Insertion in order of |dst stride|, descending; stable.
		k := len(shape)
		shape, ds, ss = append(shape, e), append(ds, d), append(ss, s)
		ad := uabs(d)
		for k > 0 && uabs(ds[k-1]) < ad {
			shape[k], ds[k], ss[k] = shape[k-1], ds[k-1], ss[k-1]
			k--
		}
		shape[k], ds[k], ss[k] = e, d, s
	}
	// Merge adjacent dims contiguous in both views (inner k+1 into outer k).
	n := 0
	for k := 0; k < len(shape); k++ {
		if n > 0 {
			e := shape[k]
			if ds[n-1] == e*ds[k] && ss[n-1] == e*ss[k] {
				shape[n-1] *= e
				ds[n-1], ss[n-1] = ds[k], ss[k]
				continue
			}
		}
		shape[n], ds[n], ss[n] = shape[k], ds[k], ss[k]
		n++
	}
	shape, ds, ss = shape[:n], ds[:n], ss[:n]

	// Uniqueness of dst: each |stride| must exceed the span of the faster
	// dims (sufficient); else ask the exact (or conservative) check.
	span := uint64(0)
	for k := n - 1; k >= 0; k-- {
		a := uabs(ds[k])
		if a <= span {
			if !dst.IsUnique() {
				return fmt.Errorf("%w: dst %v has two indices at one offset", ErrOverlappingDst, dst)
			}
			break
		}
		span += a * uint64(shape[k]-1)
	}

	if n == 0 { // a single element
		shape, ds, ss = append(shape, 1), append(ds, 1), append(ss, 1)
		n = 1
	}

	// Re-cut the element. The run is the innermost dim when it has unit
	// stride in both views, else a virtual run of one item.
	alignD, alignS := int64(opt.DstAlign), int64(opt.SrcAlign)
	if alignD == 0 {
		alignD = natAlign(item)
	}
	if alignS == 0 {
		alignS = natAlign(item)
	}
	realRun := ds[n-1] == 1 && ss[n-1] == 1
	runE := int64(1)
	if realRun {
		runE = shape[n-1]
	}
	dOffB, sOffB := dOff*item, sOff*item
	g := uint64(runE*item) | uint64(dOffB) | uint64(sOffB)
	last := n
	if realRun {
		last = n - 1
	}
	for k := 0; k < last; k++ {
		g |= uabs(ds[k]*item) | uabs(ss[k]*item)
	}
	w := min(natAlign(int64(g)), natAlign(alignD), natAlign(alignS))
	if !(runE == 1 && !realRun && item <= MaxVectorBytes && w == natAlign(item)) {
		// Re-express in w-byte elements. Strides and offsets are multiples
		// of w bytes; the run (real or virtual) becomes runE·item/w elements.
		for k := 0; k < last; k++ {
			ds[k] = ds[k] * item / w
			ss[k] = ss[k] * item / w
		}
		if realRun {
			shape[n-1] = shape[n-1] * item / w
		} else if item != w {
			shape, ds, ss = append(shape, item/w), append(ds, 1), append(ss, 1)
			n++
		}
		dOff, sOff, item = dOffB/w, sOffB/w, w
	}
	p.Shape, p.DstStrides, p.SrcStrides = shape, ds, ss
	p.DstOffset, p.SrcOffset = dOff*item, sOff*item
	p.Volume = 1
	for _, e := range shape {
		p.Volume *= e
	}
	p.Bytes = p.Volume * item

	// Index width: the volume and every element offset a kernel forms lie in
	// [0, max] of each view (offsets are from the buffer starts, so the
	// smallest is 0).
	dMax, sMax := dOff, sOff
	for k := 0; k < n; k++ {
		dMax += max(ds[k], 0) * (shape[k] - 1)
		sMax += max(ss[k], 0) * (shape[k] - 1)
	}
	fits := p.Volume <= math.MaxInt32 && dMax <= math.MaxInt32 && sMax <= math.MaxInt32

	// Signature.NDim is a byte: a plan of more than 255 canonical dims cannot
	// name a kernel (NDim saturates at 255), but len(Shape) stays exact.
	sig := Signature{NDim: uint8(min(n, 255)), Itemsize: uint8(item), Vec: 1, Index64: !fits}
	zeros := 0
	for k := 0; k < n; k++ {
		if ss[k] == 0 {
			zeros++
		}
	}
	aD, aS := natAlign(alignD), natAlign(alignS)
	switch {
	case n == 1 && ds[0] == 1 && ss[0] == 1:
		sig.Class = ClassMemcpy
	case zeros > 0:
		sig.Class = ClassBroadcast
		if zeros == n {
			sig.Class = ClassFill
		}
		if ds[n-1] == 1 && ss[n-1] == 0 {
			// Vectorised dst writes of a repeated src element.
			sig.Vec = uint8(vecWidth(shape[n-1], 0, item, p.DstOffset, aD, ds[:n-1], nil))
		}
	default:
		f := -1
		if ds[n-1] == 1 && ss[n-1] != 1 && shape[n-1] >= TileMinExtent {
			for k := 0; k < n-1; k++ {
				if ss[k] == 1 {
					if shape[k] >= TileMinExtent {
						f = k
					}
					break
				}
			}
		}
		if f < 0 {
			sig.Class = ClassElementwise
			break
		}
		sig.Class, sig.Fast = ClassTile, uint8(f)
		vd := vecWidth(shape[n-1], shape[f], item, p.DstOffset, aD, ds[:n-1], nil)
		vs := vecWidth(shape[f], shape[n-1], item, p.SrcOffset, aS, ss[:f], ss[f+1:])
		sig.Vec = uint8(min(vd, vs))
	}
	if n > 255 && sig.Class == ClassTile {
		sig.Class, sig.Fast, sig.Vec = ClassElementwise, 0, 1
	}
	p.Sig = sig
	return nil
}

// vecWidth returns the largest power of two v with v·item ≤ MaxVectorBytes
// that divides e1 and e2 (e2 == 0: ignored), every stride of others1 and
// others2, and with off (bytes) and align multiples of v·item.
func vecWidth(e1, e2, item, off, align int64, others1, others2 []int64) int64 {
	g := uint64(e1) | uint64(e2)
	for _, s := range others1 {
		g |= uabs(s)
	}
	for _, s := range others2 {
		g |= uabs(s)
	}
	v := int64(1)
	for v*2*item <= MaxVectorBytes && g&uint64(v*2-1) == 0 && off%(v*2*item) == 0 && align%(v*2*item) == 0 {
		v *= 2
	}
	return v
}
