package gen

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/stridekit/stridekit/layout"
)

// ErrPlan reports a plan a kernel cannot run: its signature differs from the
// kernel's, or its slices disagree with its rank.
var ErrPlan = errors.New("gen: plan does not fit the kernel")

// Dim3 is a grid or block size, x, y, z.
type Dim3 [3]uint32

// Pack is the generic launcher's half of a launch: it writes into buf (at
// least ArgsSize(nd) bytes) the argument block that a kernel of sig takes for
// plan p, and returns the grid and block to launch it with. smCount is the
// number of multiprocessors of the device (it sizes the contiguous kernel's
// looping grid). The generated launch stubs compute the same bytes and sizes
// with code specialised to their signature; a test checks they agree.
//
// The argument block is, in order (little-endian, C alignment):
//
//	int64  n[4]        class-specific counts (see below)
//	int64  shape[nd]   extents, in kernel elements
//	int64  dstride[nd] dst strides, in kernel elements
//	int64  sstride[nd] src strides, in kernel elements
//	int64  div[nd]     divisors the kernel unravels a linear index by
//	uint64 mul[nd]     fast-division multipliers of div (Magic32 or Magic64)
//	uint32 shr[nd]     fast-division shifts of div
//
// The kernel's other two parameters are the dst and src pointers, already
// moved by p.DstOffset and p.SrcOffset.
func Pack(sig layout.Signature, p *layout.Plan, smCount int, buf []byte) (grid, block Dim3, err error) {
	nd := int(sig.NDim)
	if p.Sig != sig || len(p.Shape) != nd || len(p.DstStrides) != nd || len(p.SrcStrides) != nd {
		return grid, block, fmt.Errorf("%w: plan %v (rank %d) for kernel %v", ErrPlan, p.Sig, len(p.Shape), sig)
	}
	if len(buf) < ArgsSize(nd) {
		return grid, block, fmt.Errorf("gen: argument buffer of %d bytes, need %d", len(buf), ArgsSize(nd))
	}
	clear(buf[:ArgsSize(nd)])
	var n [4]int64
	div := make([]int64, nd)
	copy(div, p.Shape)
	vec := int64(sig.Vec)
	switch sig.Class {
	case layout.ClassContiguous:
		n[0] = p.Volume / vec
		per := int64(ContigThreads * ContigUnroll)
		g := max(1, min(ceilDiv(n[0], per), int64(max(smCount, 1)*ContigBlocksPerSM)))
		grid, block = Dim3{uint32(g), 1, 1}, Dim3{ContigThreads, 1, 1}
	case layout.ClassElementwise, layout.ClassBroadcast, layout.ClassFill:
		inner := p.Shape[nd-1] / vec
		rows := int64(1)
		for _, e := range p.Shape[:nd-1] {
			rows *= e
		}
		x := ColsPerThread(sig.Class, nd)
		bx := rowsBlockX(inner, x)
		by := RowsThreads / bx
		rb := ceilDiv(rows, by*int64(RowsPerThread(sig.Class, nd)))
		n = [4]int64{inner, rows, rb, 0}
		div[nd-1] = inner
		grid = Dim3{uint32(ceilDiv(inner, bx*int64(x))), uint32(min(rb, MaxGridY)), 1}
		block = Dim3{uint32(bx), uint32(by), 1}
	case layout.ClassTile:
		tc := DefaultTile(sig)
		div[nd-1] = ceilDiv(p.Shape[nd-1], int64(tc.Rows))
		div[sig.Fast] = ceilDiv(p.Shape[sig.Fast], int64(tc.Cols))
		t := int64(1)
		for _, d := range div {
			t *= d
		}
		n[0] = t
		grid, block = Dim3{uint32(min(t, MaxGridX)), 1, 1}, Dim3{uint32(tc.Threads), 1, 1}
	default:
		return grid, block, fmt.Errorf("%w: class %v has no kernel", ErrPlan, sig.Class)
	}
	le := binary.LittleEndian
	o := 0
	put := func(v uint64) { le.PutUint64(buf[o:], v); o += 8 }
	for _, v := range n {
		put(uint64(v))
	}
	for _, a := range [][]int64{p.Shape, p.DstStrides, p.SrcStrides, div} {
		for _, v := range a {
			put(uint64(v))
		}
	}
	shr := make([]uint32, nd)
	for k, d := range div {
		var m uint64
		m, shr[k] = Magic(sig, uint64(d))
		put(m)
	}
	for _, s := range shr {
		le.PutUint32(buf[o:], s)
		o += 4
	}
	return grid, block, nil
}
