package gen

import (
	"fmt"

	"github.com/stridekit/stridekit/layout"
	"github.com/stridekit/stridekit/runtime/cuda"
)

// boxArgsSize is the size of the box-tile kernel's argument block for nd
// canonical dims: struct A of btile.cu.tmpl.
func boxArgsSize(nd int) int {
	n := 40 + 64*nd + boxInts*4
	return (n + 7) &^ 7
}

// boxInts is the number of 32-bit scalars at the end of the box-tile
// argument block.
const boxInts = 30

// packBoxTile is Pack for ClassBoxTile. The argument block is, in order
// (little-endian, C alignment):
//
//	int64  ntiles, slo, shi     tiles in the launch; src bytes [slo, shi) from
//	                            the src pointer (the view's span) may be read
//	int64  sstep, dstep         element stride of a run in src, in dst
//	int64  shape, dstride, sstride, tile, chunks [nd]
//	uint64 cmul[nd]; uint32 cshr[nd]   fast division by chunks
//	int32  sord, dord [nd]      tile dims by |stride|, src and dst (layout.BoxSides)
//	int32  w[nd]                shared-memory bytes per index step of each dim
//	int32  nk, nsr, ndr, ls, rs, ld, rd, offS, nws, cprd, lgs, lgd, c0
//	int32  rgs[4], rgd[4], lasts, lastd   ragged dims (see layout.BoxRagged)
//	int32  offG, offH, offA, offB, offCs, offCd   table offsets
//	int32  lgw                  log2 threads per src run, word loads
//
// The kernel stages src run j of a tile in the slot layout.BoxSrcWeights
// gives it (plus the tile's phase, the src address modulo 4 of run 0);
// element i of a run at i·item bytes into the slot (reversed runs:
// (ls-1-i)·item), so the shared-memory offset of a tile element is the
// phase plus c0 + Σ coord_k·w[k].
func packBoxTile(sig layout.Signature, k Knobs, p *layout.Plan, smCount int, buf []byte) (Launch, error) {
	nd := int(sig.NDim)
	if len(p.Tile) != nd || nd > layout.MaxBoxNDim {
		return Launch{}, fmt.Errorf("%w: box tile %v for %d dims", ErrPlan, p.Tile, nd)
	}
	item := int64(sig.Itemsize)
	src, dst := layout.BoxSides(p.Shape, p.DstStrides, p.SrcStrides, p.Tile)
	idx := int64(4)
	if sig.Index64 {
		idx = 8
	}
	var chunks [layout.MaxBoxNDim]int64
	ntiles := int64(1)
	for d := range nd {
		if t := p.Tile[d]; t < 1 || t > p.Shape[d] {
			return Launch{}, fmt.Errorf("%w: tile %v of shape %v", ErrPlan, p.Tile, p.Shape)
		}
		chunks[d] = ceilDiv(p.Shape[d], p.Tile[d])
		ntiles *= chunks[d]
	}
	var w [layout.MaxBoxNDim]int64
	layout.BoxSrcWeights(&src, p.SrcStrides, p.Tile, item, w[:nd])
	rev := src.Step == -1
	c0 := int64(0)
	if rev {
		c0 = (src.RunLen - 1) * item
	}
	rgs, lasts, oks := layout.BoxRagged(p.Shape, p.Tile, &src)
	rgd, lastd, okd := layout.BoxRagged(p.Shape, p.Tile, &dst)
	if !oks || !okd {
		return Launch{}, fmt.Errorf("%w: box tile %v has more than 4 ragged dims on a side", ErrPlan, p.Tile)
	}
	sl := layout.BoxSharedLayout(src, dst, p.Tile, item, idx)
	if shared := sl.Total; shared > layout.MaxBoxSharedBytes {
		return Launch{}, fmt.Errorf("%w: box tile %v needs %d bytes of shared memory, over %d", ErrPlan, p.Tile, shared, layout.MaxBoxSharedBytes)
	}
	nws := ceilDiv(src.RunLen*item, 4) + 1   // a run at any address spans one word more
	cprd := ceilDiv(dst.RunLen*item, 16) + 1 // a misaligned run spans one piece more
	// Threads per run, a power of two: the knob's lanes over a dst run's
	// 16-byte pieces, four times as many over a src run's words (a warp over
	// a strided run's elements, or with ElemStore a dst run's), more when
	// the tile has too few runs to keep the block busy, never more than the
	// run has pieces (elements) or the block has threads.
	lanes := func(knob int, pieces, runs int64) int {
		l := max(int64(knob), nextPow2(ceilDiv(int64(k.Threads), runs)))
		return log2(int(min(l, nextPow2(pieces), int64(k.Threads))))
	}
	lgs := lanes(32, src.RunLen, src.Runs)
	lgw := lanes(4*k.LoadLanes, nws, src.Runs)
	lgd := lanes(k.StoreLanes, cprd, dst.Runs)
	if k.ElemStore || (dst.Step != 1 && dst.Step != -1) {
		lgd = lanes(32, dst.RunLen, dst.Runs)
	}

	clear(buf[:boxArgsSize(nd)])
	a := argWriter{b: buf}
	a.i64s(ntiles, -p.SrcOffset, p.SrcSpan-p.SrcOffset, src.Step, dst.Step)
	for _, s := range [][]int64{p.Shape, p.DstStrides, p.SrcStrides, p.Tile, chunks[:nd]} {
		a.i64s(s...)
	}
	a.divisors(sig, chunks[:nd])
	for _, s := range []*layout.BoxSide{&src, &dst} {
		for i := range nd {
			a.i32(int64(s.Order[i]))
		}
	}
	a.i32s(w[:nd]...)
	a.i32s(int64(src.NDims), int64(src.NRun), int64(dst.NRun),
		src.RunLen, src.Runs, dst.RunLen, dst.Runs, sl.S, nws, cprd, int64(lgs), int64(lgd), c0)
	for _, rg := range [][layout.MaxRagged]int{rgs, rgd} {
		for _, v := range rg {
			a.i32(int64(v))
		}
	}
	a.i32s(int64(lasts), int64(lastd), sl.G, sl.H, sl.A, sl.B, sl.Cs, sl.Cd, int64(lgw))
	g := min(ntiles, MaxGridX)
	if smCount > 0 {
		g = min(g, int64(smCount*k.BlocksPerSM))
	}
	return Launch{Grid: cuda.Dim3{X: uint32(g), Y: 1, Z: 1}, Block: cuda.Dim3{X: uint32(k.Threads), Y: 1, Z: 1}, Shared: int(sl.Total)}, nil
}
