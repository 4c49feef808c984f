package gen

import (
	"fmt"
	"slices"

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
	g := p.Box
	if g == nil {
		return Launch{}, fmt.Errorf("%w: box tile plan without its geometry", ErrPlan)
	}
	src, dst := &g.Src, &g.Dst
	var chunks [layout.MaxBoxNDim]int64
	ntiles, tileBytes, ok := boxTiles(&chunks, p.Shape, p.Tile, int64(sig.Itemsize))
	if !ok {
		return Launch{}, fmt.Errorf("%w: tile %v of shape %v", ErrPlan, p.Tile, p.Shape)
	}
	sl := g.Shared
	if sl.Total > tilegeom.MaxBoxSharedBytes || sl.Total == 0 {
		return Launch{}, fmt.Errorf("%w: box tile %v needs %d bytes of shared memory (at most %d)", ErrPlan, p.Tile, sl.Total, tilegeom.MaxBoxSharedBytes)
	}
	lgs, lgw, lgd := boxLanes(k, src, dst, int64(sig.Itemsize))
	sb := siblingsOf(k, p)
	if sb.groups > 0 {
		lgd = laneLog(k, 32, ceilDiv(dst.RunLen, 4)+1, sb.groups)
	}

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
	var to [layout.MaxBoxNDim]int64
	w.put("tord", tileOrder(&to, int64(k.CutFirst), src, dst, chunks[:nd], tileBytes, int64(sig.Itemsize))...)
	w.put("w", g.W[:nd]...)
	w.put("nk", int64(src.NDims))
	w.put("nsr", int64(src.NRun))
	w.put("ndr", int64(dst.NRun))
	w.put("ls", src.LoadLen())
	w.put("rs", src.Runs)
	w.put("ld", dst.RunLen)
	w.put("rd", dst.Runs)
	w.put("offS", sl.S)
	w.put("lgs", int64(lgs))
	w.put("lgd", int64(lgd))
	w.put("c0", g.C0)
	w.put("grain", g.Grain)
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
	w.put("gn", sb.groups)
	w.put("gta", sb.extent)
	w.put("gdim", sb.dim)
	w.put("gdiv", sb.div[:]...)
	w.divisors(layout.Signature{}, "gmul", "gshr", sb.div[:]) // 32-bit: the kernel divides group numbers
	w.put("gds", sb.stride)
	gx := boxGrid(ntiles, tileBytes, int64(k.BlockBytes), int64(smCount))
	l := Launch{Grid: Dim3{X: uint32(gx), Y: 1, Z: 1}, Block: Dim3{X: uint32(k.Threads), Y: 1, Z: 1}, Shared: int(sl.Total)}
	return l, w.done()
}

// boxGrid returns the box-tile kernel's grid for ntiles tiles of
// tileBytes bytes of data each on a device of sm multiprocessors (0:
// unknown): one block for every ⌈blockBytes/tileBytes⌉ tiles, but never
// more tiles a block than leave a block for every multiprocessor, and at
// most MaxGridX blocks (the kernel's blocks loop over the tiles, each
// taking the tile gridDim.x on from its last, so any grid covers them).
//
// Blocks the GPU hands out as multiprocessors free up keep every
// multiprocessor busy to the end, where a grid of the blocks that fit at
// once, each looping over a fixed share of the tiles, left some idle while
// others finished: on an H200 this grid ran 1.08-1.09 times as fast on 40
// slow box tiles of 64 MiB (per case 0.96-1.25) and 1.15 on the 67 box
// tiles of 100 random cases of 256 MiB (docs/design.md, "The box tile's
// grid"). Tiles under 16 KiB go two or more a block: one a block lost
// on a u8 copy of 9 KiB tiles (0.89, against 0.97-1.02).
func boxGrid(ntiles, tileBytes, blockBytes, sm int64) int64 {
	per := max(ceilDiv(blockBytes, max(tileBytes, 1)), 1)
	if sm > 0 {
		per = min(per, max(ntiles/sm, 1))
	}
	return min(ceilDiv(ntiles, per), MaxGridX)
}

// boxLanes returns log2 of the threads per run of the box tile's three
// phases: a strided src run's elements (lgs), a contiguous src run's words
// (lgw), a dst run's 16-byte pieces or, with ElemStore or strided dst runs,
// its elements (lgd; a specialised kernel's word store, Knobs.WordStore,
// keeps these lanes) or its groups of four 3-byte items (tripleStore, at
// most StoreLanes). Each is a power of two: the knob's lanes (a warp for
// elements; four times LoadLanes for words), more when the tile has too few
// runs to keep the block busy, never more than the run has pieces
// (elements) or the block has threads.
func boxLanes(k Knobs, src, dst *tilegeom.BoxSide, item int64) (lgs, lgw, lgd int) {
	lanes := func(knob int, pieces, runs int64) int { return laneLog(k, knob, pieces, runs) }
	words := ceilDiv(src.LoadLen()*item, 4) + 1 // a run at any address spans one word more
	pieces := ceilDiv(dst.RunLen*item, 16) + 1  // a misaligned run spans one piece more
	lgs = lanes(32, src.RunLen, src.Runs)
	lgw = lanes(4*k.LoadLanes, words, src.Runs)
	lgd = lanes(k.StoreLanes, pieces, dst.Runs)
	if k.ElemStore || (dst.Step != 1 && dst.Step != -1) {
		lgd = lanes(32, dst.RunLen, dst.Runs)
	}
	if tripleStore(k, dst, item) {
		lgd = lanes(k.StoreLanes, ceilDiv(dst.RunLen, 4)+2, dst.Runs)
	}
	return lgs, lgw, lgd
}

// tripleStore reports whether the box-tile kernel writes the dst runs of
// side dst in groups of three words (the template's storeTriples, whose
// test this mirrors): 3-byte items, Knobs.TripleStore set and contiguous
// dst runs of that many bytes or more.
func tripleStore(k Knobs, dst *tilegeom.BoxSide, item int64) bool {
	return item == 3 && k.TripleStore > 0 && dst.RunLen*item >= int64(k.TripleStore) && (dst.Step == 1 || dst.Step == -1)
}

// TripleStore reports whether the box-tile kernel packed for plan p under
// knobs k writes its dst runs in groups of three words (storeTriples), as
// SiblingRuns does for the sibling store: for a description of the launch,
// or a test that wants that path.
func TripleStore(k Knobs, p *layout.Plan) bool {
	return p.Sig.Class == layout.ClassBoxTile && p.Box != nil && tripleStore(k, &p.Box.Dst, int64(p.Sig.Itemsize))
}

// WordStore reports whether the box-tile kernel specialised to plan p
// under knobs k writes its dst runs in aligned words (the template's
// storeWords): items of 3 bytes or more that are not whole words (dataFor),
// Knobs.WordStore set, contiguous dst runs of that many bytes or more, and
// not the triple store, which comes first. The generic kernel never does.
func WordStore(k Knobs, p *layout.Plan) bool {
	item := int64(p.Sig.Itemsize)
	if p.Sig.Class != layout.ClassBoxTile || p.Box == nil || item < 3 || item%4 == 0 || k.WordStore == 0 || tripleStore(k, &p.Box.Dst, item) {
		return false
	}
	d := &p.Box.Dst
	return d.RunLen*item >= int64(k.WordStore) && (d.Step == 1 || d.Step == -1)
}

// orderOf returns in o a side's tile dims by |stride| as argument values
// (nd entries; those past NDims are never read by the kernel).
func orderOf(o *[layout.MaxBoxNDim]int64, s *tilegeom.BoxSide, nd int) []int64 {
	for i := range nd {
		o[i] = int64(s.Order[i])
	}
	return o[:nd]
}

// boxTiles sets chunks to the tiles along each dim of shape for the box
// tile tile, and returns the tiles in all and the bytes of a tile of
// item-byte elements; ok is false where an extent of tile lies outside
// 1..shape.
func boxTiles(chunks *[layout.MaxBoxNDim]int64, shape, tile []int64, item int64) (ntiles, tileBytes int64, ok bool) {
	ntiles, tileBytes = 1, item
	for d, t := range tile {
		if t < 1 || t > shape[d] {
			return 0, 0, false
		}
		chunks[d] = ceilDiv(shape[d], t)
		ntiles *= chunks[d]
		tileBytes *= t
	}
	return ntiles, tileBytes, true
}

// tileOrder returns in o the order in which the box-tile kernel numbers
// the tiles of a launch with chunks tiles along each dim, of tileBytes
// bytes of item-byte elements (tileAt: the last dim of the order varies
// fastest). By default the canonical dims in order, dst's innermost last.
// Where the src runs are under cutRunBytes and the tiles on either side
// of their cut lie more than far bytes of copy apart in that order (far
// 0: never; Knobs.CutFirst), the dims that cut a run of either side move
// last, the one with fewer tiles along it last of all, so that the tiles
// on both sides of either cut lie at most that many tiles apart.
func tileOrder(o *[layout.MaxBoxNDim]int64, far int64, src, dst *tilegeom.BoxSide, chunks []int64, tileBytes, item int64) []int64 {
	nd := len(chunks)
	cs, cd := -1, -1 // the cut dims, cd the one with fewer tiles along it
	if k := cutDim(src, chunks); far > 0 && k >= 0 && src.RunLen*item < cutRunBytes && bytesApart(chunks[k+1:], tileBytes, far) > far {
		cs, cd = k, cutDim(dst, chunks)
		if cs == cd {
			cs = -1
		} else if cd < 0 || chunks[cs] < chunks[cd] {
			cs, cd = cd, cs
		}
	}
	n := 0
	for k := range nd {
		if k != cs && k != cd {
			o[n] = int64(k)
			n++
		}
	}
	for _, k := range [2]int{cs, cd} {
		if k >= 0 {
			o[n] = int64(k)
			n++
		}
	}
	return o[:nd]
}

// cutRunBytes bounds the src runs whose cut tileOrder moves: a sector
// re-read from DRAM at a cut (64 bytes) is a quarter of such a run or more.
const cutRunBytes = 256

// bytesApart returns the bytes of copy (read and written) between a tile
// and the next along a dim whose faster dims hold chunks tiles each, in
// tiles of tileBytes: at most a little over limit, where it stops.
func bytesApart(chunks []int64, tileBytes, limit int64) int64 {
	apart := 2 * tileBytes
	for _, c := range chunks {
		if apart *= c; apart > limit {
			break
		}
	}
	return apart
}

// TileOrder returns the order in which the box-tile kernel packed for plan
// p under knobs k numbers its tiles (tileOrder: the last dim varies
// fastest), or nil for other plans: for a description of the launch, or a
// test that wants tiles numbered out of the canonical order. Only the
// specialised tier follows it; the generic kernel numbers its tiles in the
// canonical order.
func TileOrder(k Knobs, p *layout.Plan) []int64 {
	if p.Sig.Class != layout.ClassBoxTile || p.Box == nil || len(p.Tile) != len(p.Shape) || len(p.Shape) > layout.MaxBoxNDim {
		return nil
	}
	var chunks [layout.MaxBoxNDim]int64
	_, tileBytes, ok := boxTiles(&chunks, p.Shape, p.Tile, int64(p.Sig.Itemsize))
	if !ok {
		return nil
	}
	var o [layout.MaxBoxNDim]int64
	return slices.Clone(tileOrder(&o, int64(k.CutFirst), &p.Box.Src, &p.Box.Dst, chunks[:len(p.Shape)], tileBytes, int64(p.Sig.Itemsize)))
}

// cutDim returns the dim that cuts the runs of side s (the last dim of a
// run, where more than one tile lies along it), or -1.
func cutDim(s *tilegeom.BoxSide, chunks []int64) int {
	if s.NRun == 0 {
		return -1
	}
	if k := int(s.Order[s.NRun-1]); chunks[k] > 1 {
		return k
	}
	return -1
}

// ints widens an array of ints to argument values in o.
func ints(o *[tilegeom.MaxRagged]int64, a [tilegeom.MaxRagged]int) []int64 {
	for i, v := range a {
		o[i] = int64(v)
	}
	return o[:]
}

// laneLog returns log2 of the threads a phase puts on each of runs runs of
// pieces pieces (boxLanes's rule): knob, more when the runs are too few to
// keep the block busy, never more than the pieces or the block's threads.
func laneLog(k Knobs, knob int, pieces, runs int64) int {
	l := max(int64(knob), nextPow2(ceilDiv(int64(k.Threads), runs)))
	return log2(int(min(l, nextPow2(pieces), int64(k.Threads))))
}

// siblings is where a box tile's sibling store applies (the template's
// storeSiblings): src's first run dim a, a tile dim outside the dst runs,
// whose 4 neighbouring indices sit side by side in one shared-memory word
// and whose dst runs start at the same address modulo 4.
type siblings struct {
	groups int64    // groups of 4 sibling dst runs in a whole tile (0: the store is off)
	extent int64    // the tile's extent along a
	dim    int64    // a, or -1
	div    [2]int64 // the dst run step between siblings; groups along a
	stride int64    // a's dst stride
}

// siblingsOf returns the sibling store of box-tile plan p under knobs k:
// off unless k.Siblings, the items are bytes, src runs are neither
// reversed in shared memory nor spans, dst runs are contiguous, forward
// and of whole words (wordRuns), and src's first run dim lies outside the
// dst runs.
func siblingsOf(k Knobs, p *layout.Plan) siblings {
	off := siblings{dim: -1, div: [2]int64{1, 1}}
	g := p.Box
	if !k.Siblings || p.Sig.Itemsize != 1 || g.Src.NDims == 0 || g.Src.Step == -1 || g.Src.Holes || g.Dst.Step != 1 {
		return off
	}
	if !wordRuns(p) {
		return off
	}
	a := g.Src.Order[0]
	step := int64(1) // the product of the tile's extents along the dst dims between the runs and a
	for i := 0; i < g.Dst.NDims; i++ {
		d := g.Dst.Order[i]
		if d == a {
			if i < g.Dst.NRun {
				return off
			}
			break
		}
		if i >= g.Dst.NRun {
			step *= p.Tile[d]
		}
	}
	t := p.Tile[a]
	per := ceilDiv(t, 4)
	return siblings{groups: g.Dst.Runs / t * per, extent: t, dim: int64(a), div: [2]int64{step, per}, stride: p.DstStrides[a]}
}

// SiblingRuns returns how many dst runs the box-tile kernel packed for
// plan p under knobs k writes together, a 4×4-byte block at a time (4
// where its sibling store applies, else 0): what a description of the
// launch, or a test that wants that path, needs to know.
func SiblingRuns(k Knobs, p *layout.Plan) int {
	if p.Sig.Class != layout.ClassBoxTile || siblingsOf(k, p).groups == 0 {
		return 0
	}
	return 4
}

// wordRuns reports whether every dst run of box-tile plan p (1-byte items)
// starts and ends at the same address modulo 4 as the dst view's lowest
// byte: runs of whole words, and whole words between the starts of any two
// runs of any tiles.
func wordRuns(p *layout.Plan) bool {
	d := &p.Box.Dst
	if d.RunLen%4 != 0 {
		return false
	}
	inRun := func(k int) bool {
		for i := 0; i < d.NRun; i++ {
			if int(d.Order[i]) == k {
				return true
			}
		}
		return false
	}
	for k, s := range p.DstStrides {
		if inRun(k) {
			if p.Tile[k] < p.Shape[k] && p.Tile[k]*s%4 != 0 {
				return false
			}
		} else if s%4 != 0 {
			return false
		}
	}
	return true
}
