package gen

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/stridekit/stridekit/layout"
	"github.com/stridekit/stridekit/runtime/cuda"
)

// ErrPlan reports a plan a kernel cannot run: its signature differs from the
// kernel's, or its slices disagree with its rank.
var ErrPlan = errors.New("gen: plan does not fit the kernel")

// Launch is what a kernel launch needs besides its function and pointers:
// the grid, the block and the bytes of dynamic shared memory.
type Launch struct {
	Grid, Block cuda.Dim3
	Shared      int
}

// Pack writes into buf (at least ArgsSize(sig) bytes) the argument block
// that sig's kernel, built with knobs k, takes for plan p, and returns how to
// launch it. smCount is the number of multiprocessors of the device (it
// sizes the looping grids). It allocates nothing.
//
// The kernel's parameters are (dst, src, A): the views' lowest bytes moved
// by p.DstOffset and p.SrcOffset, and the argument block, which for every
// class but ClassBoxTile (see boxtile.go) is, in order (little-endian, C
// alignment):
//
//	int64  n[4]        class-specific counts (see below)
//	int64  shape[nd]   extents, in kernel elements
//	int64  dstride[nd] dst strides, in kernel elements
//	int64  sstride[nd] src strides, in kernel elements
//	int64  div[nd]     divisors the kernel unravels a linear index by
//	uint64 mul[nd]     fast-division multipliers of div (Magic32 or Magic64)
//	uint32 shr[nd]     fast-division shifts of div
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
	case layout.ClassContiguous:
		n[0] = p.Volume / vec
		per := int64(k.Threads * k.Unroll)
		g := max(1, min(ceilDiv(n[0], per), int64(max(smCount, 1)*k.BlocksPerSM)))
		l.Grid, l.Block = cuda.Dim3{X: uint32(g), Y: 1, Z: 1}, cuda.Dim3{X: uint32(k.Threads), Y: 1, Z: 1}
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
		l.Grid = cuda.Dim3{X: uint32(ceilDiv(inner, bx*int64(x))), Y: uint32(min(rb, MaxGridY)), Z: 1}
		l.Block = cuda.Dim3{X: uint32(bx), Y: uint32(by), Z: 1}
	case layout.ClassTile:
		tc := tileConfig(sig, k)
		div[nd-1] = ceilDiv(p.Shape[nd-1], int64(tc.Rows))
		div[sig.Fast] = ceilDiv(p.Shape[sig.Fast], int64(tc.Cols))
		t := int64(1)
		for _, d := range div[:nd] {
			t *= d
		}
		n[0] = t
		l.Grid, l.Block = cuda.Dim3{X: uint32(min(t, MaxGridX)), Y: 1, Z: 1}, cuda.Dim3{X: uint32(tc.Threads), Y: 1, Z: 1}
	default:
		return Launch{}, fmt.Errorf("%w: class %v has no kernel", ErrPlan, sig.Class)
	}
	w := argWriter{b: buf}
	w.i64s(n[:]...)
	for _, a := range [][]int64{p.Shape, p.DstStrides, p.SrcStrides, div[:nd]} {
		w.i64s(a...)
	}
	w.divisors(sig, div[:nd])
	return l, nil
}

// argWriter writes a kernel's argument block: little-endian fields, one
// after another, in the order of the kernel's struct A (whose alignment
// the packers' layouts keep: 8-byte fields first, then 4-byte ones).
type argWriter struct {
	b []byte
	o int
}

func (w *argWriter) i64(v int64) {
	binary.LittleEndian.PutUint64(w.b[w.o:], uint64(v))
	w.o += 8
}

func (w *argWriter) i32(v int64) {
	binary.LittleEndian.PutUint32(w.b[w.o:], uint32(v))
	w.o += 4
}

func (w *argWriter) i64s(vs ...int64) {
	for _, v := range vs {
		w.i64(v)
	}
}

func (w *argWriter) i32s(vs ...int64) {
	for _, v := range vs {
		w.i32(v)
	}
}

// divisors writes the fast-division multipliers of the divisors ds (Magic,
// 8 bytes each), then their shifts (4 bytes each).
func (w *argWriter) divisors(sig layout.Signature, ds []int64) {
	var shr [max(MaxNDim, layout.MaxBoxNDim)]int64
	for i, d := range ds {
		m, s := Magic(sig, uint64(d))
		w.i64(int64(m))
		shr[i] = int64(s)
	}
	w.i32s(shr[:len(ds)]...)
}
