package gen

import (
	"errors"
	"fmt"

	"github.com/stridekit/stridekit/layout"
)

// ErrPlan reports a plan a kernel cannot run: its signature differs from the
// kernel's, or its slices disagree with its rank.
var ErrPlan = errors.New("gen: plan does not fit the kernel")

// Dim3 is a grid or block size, as CUDA's dim3 (runtime/cuda.Dim3 has the
// same fields, so one converts to the other).
type Dim3 struct{ X, Y, Z uint32 }

// Launch is what a kernel launch needs besides its function and pointers:
// the grid, the block and the bytes of dynamic shared memory.
type Launch struct {
	Grid, Block Dim3
	Shared      int
}

// Pack writes into buf (at least ArgsSize(sig) bytes) the argument block
// that sig's kernel, built with knobs k, takes for plan p, and returns how to
// launch it. smCount is the number of multiprocessors of the device (0:
// unknown; the box tile's grid leaves none of them without a block). It
// allocates nothing.
//
// The kernel's parameters are (dst, src, A): the views' lowest bytes moved
// by p.DstOffset and p.SrcOffset, and the argument block, whose fields are
// described once in args.go (rowsArgs, boxArgs). For every class but
// ClassBoxTile (see boxtile.go) they are the extents and both views'
// strides, the divisors the kernel unravels a linear index by with their
// fast-division multipliers and shifts, and four class-specific counts n:
// elementwise, broadcast and fill kernels take the vectors along the
// innermost dim, the outer rows and the blocks of rows; the tile kernel
// takes the number of tiles; the gather kernel the number of elements (its
// divisors are the extents of every dim) and of the dst words it writes a
// word at a time (gatherwords.go).
func Pack(sig layout.Signature, k Knobs, p *layout.Plan, smCount int, buf []byte) (Launch, error) {
	nd := int(sig.NDim)
	if p.Sig != sig || len(p.Shape) != nd || len(p.DstStrides) != nd || len(p.SrcStrides) != nd || nd > MaxNDim {
		return Launch{}, fmt.Errorf("%w: plan %v (rank %d) for kernel %v", ErrPlan, p.Sig, len(p.Shape), sig)
	}
	if len(buf) < ArgsSize(sig) {
		return Launch{}, fmt.Errorf("gen: argument buffer of %d bytes, need %d", len(buf), ArgsSize(sig))
	}
	if sig.Class == layout.ClassBoxTile {
		return packBoxTile(sig, k, p, smCount, buf)
	}
	clear(buf[:ArgsSize(sig)])
	var n [4]int64
	var div [MaxNDim]int64
	copy(div[:], p.Shape)
	vec := int64(sig.Vec)
	var l Launch
	switch sig.Class {
	case layout.ClassElementwise, layout.ClassBroadcast, layout.ClassFill:
		inner := p.Shape[nd-1] / vec
		rows := int64(1)
		for _, e := range p.Shape[:nd-1] {
			rows *= e
		}
		x := colsPerThread(sig)
		bx := rowsBlockX(inner, x, k.Threads)
		by := int64(k.Threads) / bx
		rb := ceilDiv(rows, by*int64(rowsPerThread(sig, k)))
		n = [4]int64{inner, rows, rb, 0}
		div[nd-1] = inner
		l.Grid = Dim3{X: uint32(ceilDiv(inner, bx*int64(x))), Y: uint32(min(rb, MaxGridY)), Z: 1}
		l.Block = Dim3{X: uint32(bx), Y: uint32(by), Z: 1}
	case layout.ClassGather:
		per := int64(k.Threads) * int64(rowsPerThread(sig, k))
		n[0], n[1] = p.Volume, gatherWords(p, k)
		units := p.Volume // a thread's unit: an element, or a word of them
		if n[1] > 0 {
			units, per = n[1], int64(k.Threads)*wordsPerThread(sig, k)
		}
		l.Grid, l.Block = Dim3{X: uint32(min(ceilDiv(units, per), MaxGridX)), Y: 1, Z: 1}, Dim3{X: uint32(k.Threads), Y: 1, Z: 1}
	case layout.ClassTile:
		tc := tileConfig(sig, k)
		div[nd-1] = ceilDiv(p.Shape[nd-1], int64(tc.Rows))
		div[sig.Fast] = ceilDiv(p.Shape[sig.Fast], int64(tc.Cols))
		t := int64(1)
		for _, d := range div[:nd] {
			t *= d
		}
		n[0] = t
		l.Grid, l.Block = Dim3{X: uint32(min(ceilDiv(t, int64(max(tc.Pipe, 1))), MaxGridX)), Y: 1, Z: 1}, Dim3{X: uint32(tc.Threads), Y: 1, Z: 1}
	default:
		return Launch{}, fmt.Errorf("%w: class %v has no kernel", ErrPlan, sig.Class)
	}
	w := newArgWriter(buf, rowsArgs, nd)
	w.put("n", n[:]...)
	w.put("shape", p.Shape...)
	w.put("dstride", p.DstStrides...)
	w.put("sstride", p.SrcStrides...)
	w.put("div", div[:nd]...)
	w.divisors(sig, "mul", "shr", div[:nd])
	return l, w.done()
}
