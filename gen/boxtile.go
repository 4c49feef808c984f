package gen

import (
	"fmt"

	"github.com/stridekit/stridekit/internal/tilegeom"
	"github.com/stridekit/stridekit/layout"
)

// packBoxTile is Pack for ClassBoxTile. Its argument block (boxArgs) holds
// the canonical form, the tile and its chunks along each dim (with the
// fast-division constants of the chunks), and the tile's geometry, which
// the planner computed with the plan (Plan.Box, a tilegeom.BoxGeometry):
// both sides' dims by |stride|, run lengths and runs per tile, the
// shared-memory weight of each dim, the ragged dims and the table offsets;
// plus the threads per run of each phase, chosen here from the knobs.
//
// The kernel stages src run j of a tile in the slot tilegeom.BoxSrcWeights
// gives it (plus the tile's phase, the src address modulo 4 of run 0);
// element i of a run at i·item bytes into the slot (reversed runs:
// (ls-1-i)·item), so the shared-memory offset of a tile element is the
// phase plus c0 + Σ coord_k·w[k].
func packBoxTile(sig layout.Signature, k Knobs, p *layout.Plan, smCount int, buf []byte) (Launch, error) {
	nd := int(sig.NDim)
	if len(p.Tile) != nd || nd > layout.MaxBoxNDim {
		return Launch{}, fmt.Errorf("%w: box tile %v for %d dims", ErrPlan, p.Tile, nd)
	}
	g := &p.Box
	src, dst := &g.Src, &g.Dst
	var chunks [layout.MaxBoxNDim]int64
	ntiles := int64(1)
	for d := range nd {
		if t := p.Tile[d]; t < 1 || t > p.Shape[d] {
			return Launch{}, fmt.Errorf("%w: tile %v of shape %v", ErrPlan, p.Tile, p.Shape)
		}
		chunks[d] = ceilDiv(p.Shape[d], p.Tile[d])
		ntiles *= chunks[d]
	}
	sl := g.Shared
	if sl.Total > tilegeom.MaxBoxSharedBytes || sl.Total == 0 {
		return Launch{}, fmt.Errorf("%w: box tile %v needs %d bytes of shared memory (at most %d)", ErrPlan, p.Tile, sl.Total, tilegeom.MaxBoxSharedBytes)
	}
	lgs, lgw, lgd := boxLanes(k, src, dst, int64(sig.Itemsize))

	clear(buf[:ArgsSize(sig)])
	w := newArgWriter(buf, boxArgs, nd)
	w.put("ntiles", ntiles)
	w.put("slo", -p.SrcOffset)
	w.put("shi", p.SrcSpan-p.SrcOffset)
	w.put("sstep", src.Step)
	w.put("dstep", dst.Step)
	w.put("shape", p.Shape...)
	w.put("dstride", p.DstStrides...)
	w.put("sstride", p.SrcStrides...)
	w.put("tile", p.Tile...)
	w.put("chunks", chunks[:nd]...)
	w.divisors(sig, "cmul", "cshr", chunks[:nd])
	var so, do [layout.MaxBoxNDim]int64
	w.put("sord", orderOf(&so, src, nd)...)
	w.put("dord", orderOf(&do, dst, nd)...)
	w.put("w", g.W[:nd]...)
	w.put("nk", int64(src.NDims))
	w.put("nsr", int64(src.NRun))
	w.put("ndr", int64(dst.NRun))
	w.put("ls", src.RunLen)
	w.put("rs", src.Runs)
	w.put("ld", dst.RunLen)
	w.put("rd", dst.Runs)
	w.put("offS", sl.S)
	w.put("lgs", int64(lgs))
	w.put("lgd", int64(lgd))
	w.put("c0", g.C0)
	var rs, rd [tilegeom.MaxRagged]int64
	w.put("rgs", ints(&rs, g.RaggedSrc)...)
	w.put("rgd", ints(&rd, g.RaggedDst)...)
	w.put("lasts", int64(g.LastSrc))
	w.put("lastd", int64(g.LastDst))
	w.put("offG", sl.G)
	w.put("offH", sl.H)
	w.put("offA", sl.A)
	w.put("offB", sl.B)
	w.put("offCs", sl.Cs)
	w.put("offCd", sl.Cd)
	w.put("lgw", int64(lgw))
	gx := min(ntiles, MaxGridX)
	if smCount > 0 {
		gx = min(gx, int64(smCount*k.BlocksPerSM))
	}
	l := Launch{Grid: Dim3{X: uint32(gx), Y: 1, Z: 1}, Block: Dim3{X: uint32(k.Threads), Y: 1, Z: 1}, Shared: int(sl.Total)}
	return l, w.done()
}

// boxLanes returns log2 of the threads per run of the box tile's three
// phases: a strided src run's elements (lgs), a contiguous src run's words
// (lgw), a dst run's 16-byte pieces or, with ElemStore or strided dst runs,
// its elements (lgd). Each is a power of two: the knob's lanes (a warp for
// elements; four times LoadLanes for words), more when the tile has too few
// runs to keep the block busy, never more than the run has pieces
// (elements) or the block has threads.
func boxLanes(k Knobs, src, dst *tilegeom.BoxSide, item int64) (lgs, lgw, lgd int) {
	lanes := func(knob int, pieces, runs int64) int {
		l := max(int64(knob), nextPow2(ceilDiv(int64(k.Threads), runs)))
		return log2(int(min(l, nextPow2(pieces), int64(k.Threads))))
	}
	words := ceilDiv(src.RunLen*item, 4) + 1   // a run at any address spans one word more
	pieces := ceilDiv(dst.RunLen*item, 16) + 1 // a misaligned run spans one piece more
	lgs = lanes(32, src.RunLen, src.Runs)
	lgw = lanes(4*k.LoadLanes, words, src.Runs)
	lgd = lanes(k.StoreLanes, pieces, dst.Runs)
	if k.ElemStore || (dst.Step != 1 && dst.Step != -1) {
		lgd = lanes(32, dst.RunLen, dst.Runs)
	}
	return lgs, lgw, lgd
}

// orderOf returns in o a side's tile dims by |stride| as argument values
// (nd entries; those past NDims are never read by the kernel).
func orderOf(o *[layout.MaxBoxNDim]int64, s *tilegeom.BoxSide, nd int) []int64 {
	for i := range nd {
		o[i] = int64(s.Order[i])
	}
	return o[:nd]
}

// ints widens an array of ints to argument values in o.
func ints(o *[tilegeom.MaxRagged]int64, a [tilegeom.MaxRagged]int) []int64 {
	for i, v := range a {
		o[i] = int64(v)
	}
	return o[:]
}
