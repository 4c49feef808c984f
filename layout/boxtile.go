package layout

import (
	"sync"

	"github.com/stridekit/stridekit/internal/tilegeom"
)

// The box tile's geometry (its sides, runs, shared-memory layout and ragged
// dims) is in internal/tilegeom, shared with the kernel generator; the
// planner here chooses the tile's extents (chooseTile) and computes its
// geometry once, with the plan (boxGeometry).

// MaxBoxNDim is the most canonical dims a ClassBoxTile plan may have.
const MaxBoxNDim = 16

// The box tile's geometry is laid out for tilegeom.MaxBoxNDim dims: the two
// must be equal (a constant index other than 0 does not compile).
var _ = [1]struct{}{}[MaxBoxNDim-tilegeom.MaxBoxNDim]

// boxTargetRun is the run length, in bytes, that chooseTile first gives
// each side: four 32-byte sectors.
const boxTargetRun = 128

// boxSkews are the dst-run preferences chooseTile grows candidate tiles
// with: while doubling, the src run is lengthened only while it is at most
// 1/skew of the dst run's length.
var boxSkews = [...]int64{1, 2, 4}

// chooseTile picks the extents of a box tile for a canonical form and
// returns them in out (reused). It grows one candidate tile for each of
// boxSkews (growToTarget, finishTile) and keeps the one that moves the
// fewest 32-byte sectors (tileSectors), the first (skew 1) unless another
// moves under boxSkewGain percent of its sectors: on the H100, tiles whose
// evened extents left them half full were up to 1.6 times slower than the
// fuller tile of another skew, and sectors ranked the candidates' measured
// times. A copy under boxChoiceBytes keeps the first candidate without
// growing the others. Where the dst runs' element table stopped the
// tile's growth, it grows the tile again with those runs cut to fit
// (regrowCutDst).
//
// Pre: 1 ≤ len(shape) ≤ MaxBoxNDim; no src stride is 0. Post: 1 ≤ out[k] ≤
// shape[k], the data fits tileBytes (or is one element) and the shared
// memory tilegeom.MaxBoxSharedBytes.
func chooseTile(out, shape, ds, ss []int64, item, tileBytes int64) []int64 {
	skews := boxSkews[:]
	small := smallCopy(shape, item)
	if small {
		skews = skews[:1]
	}
	start, n := len(out), len(shape)
	out, r := chooseTileOf(out, shape, ds, ss, item, tileBytes, skews, false, false)
	span := false
	if r.cut && shortSrcRuns(out[start:], shape, ss, item) {
		var first [MaxBoxNDim]int64
		copy(first[:], out[start:])
		var rs growth
		out, rs = chooseTileOf(out[:start], shape, ds, ss, item, tileBytes, skews, true, false)
		if span = keepGrown(first[:n], out[start:], shape, ds, ss, item); !span {
			copy(out[start:], first[:n])
		} else {
			r = rs
		}
	}
	if small || !regrowCutDst(out[start:], r, shape, ds, ss, item) {
		return out
	}
	out, _ = chooseTileOf(out[:start], shape, ds, ss, item, tileBytes, skews, span, true)
	return out
}

// regrowCutDst reports whether chooseTile grows tile t again with its dst
// runs cut where the shared memory needs it (tilegeom.CutDstRuns): where
// the element table stopped t's growth (r.blocked), for items of under
// cutDstItem bytes, unless t is one run in both views (oneRun) or its src
// runs are scattered (cutDstSrcRun).
//
// The table takes 4 bytes an element of a dst run, 4 times the data of a
// uint8 tile: such tiles stopped at a fraction of the tile size, with dst
// runs cut mid-row. Measured on an H200 (256 MiB, the old and new
// planners' binaries in one call, ABBA), over the plans the regrowth
// changes: items of 1-3 bytes 1.159 times as fast in geometric mean on 45
// cases of seeds 29, 3991, 4001-4031 (a uint8 view 31 → 64% of memcpy, a
// 3-byte permutation 24 → 51) and 1.144 on 27 of fresh seeds 4041 and
// 4051, the slowest 0.77-0.85 (four tiles whose dst runs went from
// kilobytes to a row); items of 4-16 bytes 1.015 and 1.007 (0.81-1.42),
// whose table is at most their data: not regrown.
func regrowCutDst(t []int64, r growth, shape, ds, ss []int64, item int64) bool {
	if !r.blocked || item >= cutDstItem || oneRun(t, shape, ds, ss) {
		return false
	}
	return item > ScatteredItem || runBytes(t, shape, ss, item) >= cutDstSrcRun
}

// cutDstItem bounds the items whose tiles chooseTile regrows with cut dst
// runs (regrowCutDst).
const cutDstItem = 4

// cutDstSrcRun is the least src run, in bytes, of a tile of items of at
// most ScatteredItem bytes that chooseTile grows further by cutting its
// dst runs: shorter src runs are the scattered sources that
// runtime/memview gathers (by the length of the dst runs) or the planner
// loads as spans, and four such views, grown, lost their gather or their
// spans (0.27-0.88 times as fast on an H200).
const cutDstSrcRun = 64

// oneRun reports whether tile t is one run in both views: a block that
// continues in both, which a larger tile does not read or write in fewer
// pieces. chooseTile does not grow such a tile further by cutting its dst
// runs (tilegeom.CutDstRuns): on an H200 the named batched 30x30 float32
// transposes, whose 6 matrices a tile are one run each way, ran 0.96 times
// as fast in tiles of 8 with dst runs of a matrix each.
func oneRun(t, shape, ds, ss []int64) bool {
	src, dst := tilegeom.BoxSides(shape, ds, ss, t)
	return src.Runs == 1 && dst.Runs == 1
}

// keepGrown reports whether chooseTile keeps tile grown, which growSpan
// grew from tile first: always, but for items of at most ScatteredItem
// bytes whose first tile has dst runs of ScatteredDstBytes or more, which
// runtime/memview gathers instead, where grown's src runs do not become
// spans.
func keepGrown(first, grown, shape, ds, ss []int64, item int64) bool {
	return item > ScatteredItem || spansTake(grown, shape, ss) || runBytes(first, shape, ds, item) < ScatteredDstBytes
}

// ScatteredItem and ScatteredDstBytes bound the box tiles with short src
// runs that runtime/memview gathers rather than copies (items of at most
// ScatteredItem bytes, dst runs of ScatteredDstBytes or more): the one
// definition of those bounds, which the planner reads too. A tile regrown
// by growSpan replaces such a tile only where its src runs become spans,
// which ran 1.29-2.38 times the gather on the four such views measured
// (H200); no grown tile without spans was timed against it.
const (
	ScatteredItem     = 3
	ScatteredDstBytes = 4096
)

// spansTake reports whether tile t's src runs, in the view with strides
// ss, would be spans (tilegeom.SpanSide lengthens them).
func spansTake(t, shape, ss []int64) bool {
	var sd [MaxBoxNDim]int8
	var b tilegeom.BoxSide
	_, ok := tilegeom.SpanSide(&b, tilegeom.SortedDims(sd[:0], ss), shape, ss, t)
	return ok
}

// runBytes returns the bytes of tile t's runs in the view with strides
// st.
func runBytes(t, shape, st []int64, item int64) int64 {
	var sd [MaxBoxNDim]int8
	var b tilegeom.BoxSide
	tilegeom.SideFromOrder(&b, tilegeom.SortedDims(sd[:0], st), shape, st, t)
	return b.RunLen * item
}

// shortSrcRuns reports whether tile t's src runs hold under spanRunBytes:
// a tile to choose again with growSpan.
func shortSrcRuns(t, shape, ss []int64, item int64) bool {
	return runBytes(t, shape, ss, item) < spanRunBytes
}

// growth is what chooseTileOf reports of its tile's growth: cut, the src
// run stopped short of spanRunBytes before the tile's budget did
// (tileChooser.cut); blocked, the shared memory stopped a dim's growth
// where the dst runs span more than one dim, so that cutting them
// (tilegeom.CutDstRuns) may let the tile grow.
type growth struct{ cut, blocked bool }

// chooseTileOf is chooseTile over the candidates of skews, a prefix of
// boxSkews (with one, that candidate, its sectors not counted), with
// growSpan where span is set, and the dst runs cut where the shared
// memory needs it if cutDst is set.
func chooseTileOf(out, shape, ds, ss []int64, item, tileBytes int64, skews []int64, span, cutDst bool) (_ []int64, r growth) {
	n := len(shape)
	sOrd, dOrd := growOrders(ss)
	var sDims, dDims [MaxBoxNDim]int8
	sd, dd := tilegeom.SortedDims(sDims[:0], ss), tilegeom.SortedDims(dDims[:0], ds)
	var best, cand [MaxBoxNDim]int64
	c := tileChooser{t: cand[:n], shape: shape, ds: ds, ss: ss, item: item, capE: max(tileBytes/item, 1), vol: 1, sDims: sd, dDims: dd, span: span, cutDst: cutDst}
	c.growToTarget(sOrd[:n], dOrd[:n]) // the same for every skew
	start, startVol := cand, c.vol
	base, least := int64(0), int64(0)
	for i, skew := range skews {
		cand, c.vol = start, startVol
		more := c.finishTile(sOrd[:n], dOrd[:n], tileBytes, skew)
		if len(skews) == 1 {
			return append(out, cand[:n]...), growth{c.cut, c.blocked}
		}
		cost := tileSectors(cand[:n], shape, ds, ss, sd, dd, item)
		if i == 0 {
			base, least, best = cost, cost, cand
		} else if cost < least && 100*cost < boxSkewGain*base {
			least, best = cost, cand
		}
		if !more {
			break // a larger skew grows the same tile
		}
	}
	return append(out, best[:n]...), growth{c.cut, c.blocked}
}

// boxChoiceBytes is the least data a copy moves for chooseTile to grow more
// than one candidate: below it a copy's time is mostly its launch's (about
// 3 µs on an H200), so a better tile saves less than growing and weighing
// the others costs its first copy (about a microsecond of host time).
const boxChoiceBytes = 1 << 20

// smallCopy reports whether a copy of shape in items of item bytes moves
// under boxChoiceBytes.
func smallCopy(shape []int64, item int64) bool {
	v := item
	for _, e := range shape {
		if v *= e; v >= boxChoiceBytes {
			return false
		}
	}
	return true
}

// growOrders returns the dims of a canonical form by |src stride| (sOrd,
// stable) and by |dst stride| (dOrd, the canonical order reversed), the
// orders a candidate tile lengthens the two sides' runs in.
func growOrders(ss []int64) (sOrd, dOrd [MaxBoxNDim]int8) {
	n := len(ss)
	for k := 0; k < n; k++ {
		dOrd[k] = int8(n - 1 - k)
		a := uabs(ss[k])
		i := k
		for i > 0 && uabs(ss[sOrd[i-1]]) > a {
			sOrd[i] = sOrd[i-1]
			i--
		}
		sOrd[i] = int8(k)
	}
	return sOrd, dOrd
}

// boxSkewGain is the percentage of the first candidate's sectors another
// candidate must move less than to be chosen instead.
const boxSkewGain = 97

// tileSectors returns the 32-byte sectors a copy through tiles of extents
// t moves, counting every tile as whole and each run at the worst
// alignment (one sector more than its bytes fill).
func tileSectors(t, shape, ds, ss []int64, sd, dd []int8, item int64) int64 {
	var src, dst tilegeom.BoxSide
	tilegeom.SideFromOrder(&src, sd, shape, ss, t)
	tilegeom.SideFromOrder(&dst, dd, shape, ds, t)
	tiles := int64(1)
	for k := range t {
		tiles *= (shape[k] + t[k] - 1) / t[k]
	}
	sectors := func(b *tilegeom.BoxSide) int64 { return b.Runs * ((b.RunLen*item+31)/32 + 1) }
	return tiles * (sectors(&src) + sectors(&dst))
}

// A candidate tile grows one dim at a time, lengthening the shorter of the
// two sides' runs: first until each side's run holds boxTargetRun bytes
// (growToTarget), then doubling, the src run while it is at most 1/skew of
// the dst run (finishTile), as long as the tile's data stays within
// tileBytes and its shared memory within tilegeom.MaxBoxSharedBytes. Then,
// while the tile is under half full, it takes more of the dims outside the
// runs (more runs per tile), and last its cut dims are evened out (extent e
// in chunks of ⌈e/⌈e/t⌉⌉) so that no tile is a sliver.

// growToTarget sets c.t to ones and grows each side's run to
// boxTargetRun bytes, the shorter first.
func (c *tileChooser) growToTarget(sOrd, dOrd []int8) {
	ss, ds, item := c.ss, c.ds, c.item
	for k := range c.t {
		c.t[k] = 1
	}
	c.vol = 1
	target := (boxTargetRun + item - 1) / item
	// First each side's run to the target, the shorter first.
	var doneS, doneD bool
	for {
		ls, ld := c.runLen(sOrd, ss), c.runLen(dOrd, ds)
		needS, needD := !doneS && ls < target, !doneD && ld < target
		if !needS && !needD {
			break
		}
		if needS && (!needD || ls <= ld) {
			if doneS = !c.grow(sOrd, ss, target); doneS && ls*item < spanRunBytes {
				c.cut = true
				if c.span {
					c.growSpan(sOrd, ss, target)
				}
			}
		} else {
			doneD = !c.grow(dOrd, ds, target)
		}
	}
}

// spanHoles returns, for box-tile plan p whose geometry has plain sides,
// the most bytes a span of its src runs may take per byte of its elements,
// in halves (setBox): 4 where the src runs stop under spanRunBytes
// (growSpan's tiles, whose holes are the bytes their sectors hold anyway),
// 3 for other src runs under spanWideBytes, 0 (no spans) for longer ones.
// A span loads a run's bytes from its lowest element to its highest at
// once, where each short run took a slot, a table entry and its own
// copies. Measured on an H200 (random views and permutations of 256 MiB
// whose plans change, ABBA): runs under 32 bytes 1.03-2.43 times as fast
// (9 cases with dst runs under 4 KiB), 1.40-3.52 (7 with longer dst runs,
// which memview had gathered or tiled without growSpan; a uint8 view 12.9
// → 45.5% of memcpy); runs of 36-120 bytes 1.36 in geometric mean over 14
// cases (4- to 12-byte views 41 → 80, 29 → 68, 44
// → 88% of memcpy), but a float64 view whose spans were half holes 0.85:
// so those take spans only with a third of their bytes holes at most.
func spanHoles(p *Plan, item int64) int64 {
	g := p.Box
	switch src := g.Src.RunLen * item; {
	case src < spanRunBytes:
		return 4
	case src < spanWideBytes:
		return 3
	}
	return 0
}

// spanWideBytes is the src run under which a box tile's src runs may be
// spans (spanHoles).
const spanWideBytes = 128

// spanRunBytes bounds growSpan: a tile whose src runs hold under a sector.
const spanRunBytes = 32

// growSpan widens the src side of a tile whose src run stopped short of
// want elements (a step, a flip or a slice cut it off from the next dim):
// it takes the next dims by |src stride| into the tile, each while its
// stride is at most twice the memory the tile's src side spans so far (the
// sectors between then mostly hold the tile's own data), until that span
// reaches want elements. Without it a tile of 7-byte runs 8 bytes apart
// read 7 bytes of each sector it touched and left the rest to tiles of
// other blocks, which DRAM then served again: two uint8 8-d views ran at
// 10-13% of memcpy on an H200.
func (c *tileChooser) growSpan(ord []int8, strides []int64, want int64) {
	span := int64(1)
	for _, k8 := range ord {
		k := int(k8)
		st := abs64(strides[k])
		if c.t[k] > 1 {
			span = max(span, st*c.t[k])
			continue
		}
		if c.shape[k] == 1 {
			continue
		}
		if span >= want || st > 2*span {
			return
		}
		limit := c.capE / c.vol
		if nt := min(c.shape[k], max((want+st-1)/st, 2), limit); nt < 2 || !c.setExtent(k, nt) {
			return
		}
		span = st * c.t[k]
	}
}

// finishTile grows c.t from growToTarget's tile by doubling with skew,
// fills and evens it out. It reports whether a larger skew of boxSkews
// could grow another tile (a step lengthened the src run where a larger
// skew lengthens the dst run).
func (c *tileChooser) finishTile(sOrd, dOrd []int8, tileBytes, skew int64) (more bool) {
	n, out, shape := len(c.t), c.t, c.shape
	ss, ds, item := c.ss, c.ds, c.item
	// Then double the shorter run (by skew) while the tile fits.
	doneS, doneD := false, false
	for !doneS || !doneD {
		ls, ld := c.runLen(sOrd, ss), c.runLen(dOrd, ds)
		if !doneS && (doneD || skew*ls <= ld) {
			more = more || (!doneD && boxSkews[len(boxSkews)-1]*ls > ld)
			doneS = !c.grow(sOrd, ss, 2*ls)
		} else {
			doneD = !c.grow(dOrd, ds, 2*ld)
		}
	}
	// Fill: more runs per tile, from the dst side's next dims.
	for i := 0; i < n && c.vol*item*2 < tileBytes; i++ {
		k := int(dOrd[i])
		if c.t[k] < shape[k] {
			c.setExtent(k, min(shape[k], c.capE/(c.vol/c.t[k])))
		}
	}
	// Even out the cut dims: an extent that divides the dim's when one is
	// close (no ragged last tile), else chunks of ⌈e/⌈e/t⌉⌉.
	for k := 0; k < n; k++ {
		if t := out[k]; t > 1 && t < shape[k] {
			out[k] = evenExtent(shape[k], t)
		}
	}
	// At most tilegeom.MaxRagged ragged dims outside either side's runs: cut the
	// others to a divisor of their extent.
	for {
		var src, dst tilegeom.BoxSide
		tilegeom.SideFromOrder(&src, c.sDims, shape, ss, out)
		tilegeom.SideFromOrder(&dst, c.dDims, shape, ds, out)
		_, _, okS := tilegeom.BoxRagged(shape, out, &src)
		_, _, okD := tilegeom.BoxRagged(shape, out, &dst)
		if okS && okD {
			break
		}
		for k := n - 1; k >= 0; k-- {
			if tilegeom.Ragged(shape[k], out[k]) {
				out[k] = largestDivisor(shape[k], out[k])
				break
			}
		}
	}
	return more
}

// evenExtent returns the tile extent to use along a dim of extent e cut at
// t: the largest divisor of e not over t when it is at least 3/4 of t (no
// ragged tile), else ⌈e/⌈e/t⌉⌉ (chunks of equal size but the last).
func evenExtent(e, t int64) int64 {
	if d := largestDivisor(e, t); 4*d >= 3*t {
		return d
	}
	chunks := (e + t - 1) / t
	return (e + chunks - 1) / chunks
}

// largestDivisor returns the largest divisor of e that is at most t (≥ 1),
// in O(√e) steps.
func largestDivisor(e, t int64) int64 {
	best := int64(1)
	for d := int64(1); d*d <= e; d++ {
		if e%d != 0 {
			continue
		}
		if d <= t {
			best = max(best, d)
		}
		if q := e / d; q <= t {
			best = max(best, q)
		}
	}
	return best
}

// tileChooser is chooseTile's state: the extents so far and their product,
// and every dim sorted by |stride| in each view (tilegeom.SortedDims), from
// which the tile's sides follow without sorting again.
type tileChooser struct {
	t, shape, ds, ss []int64
	item, capE, vol  int64
	sDims, dDims     []int8
	span             bool // growSpan where the src run stops short
	cut              bool // the src run stopped short of spanRunBytes
	cutDst           bool // size the shared memory with the dst runs cut where needed
	blocked          bool // the shared memory stopped a growth whose dst runs span dims
}

// sharedBytes is the shared memory of the tile so far
// (tilegeom.BoxSharedBytesSorted).
func (c *tileChooser) sharedBytes() int64 {
	b := tilegeom.BoxSharedBytesSorted(c.sDims, c.dDims, c.shape, c.ds, c.ss, c.t, c.item, tilegeom.WordGrain)
	if b <= tilegeom.MaxBoxSharedBytes || c.runLen(c.dDims, c.ds) <= c.dimRun(c.dDims) {
		return b
	}
	if !c.cutDst {
		c.blocked = true
		return b
	}
	return tilegeom.BoxSharedBytesCut(c.sDims, c.dDims, c.shape, c.ds, c.ss, c.t, c.item, tilegeom.WordGrain)
}

// dimRun returns the extent of the first tile dim along ord (its extent
// over 1): the dst run's length were it cut after its first dim.
func (c *tileChooser) dimRun(ord []int8) int64 {
	for _, k := range ord {
		if c.t[k] > 1 {
			return c.t[k]
		}
	}
	return 1
}

// runLen returns the elements of the run of the side whose dims by
// |stride| are ord, for the current extents: the same rule as
// tilegeom.BoxSide, but over all dims in ord (extent-1 tile dims included,
// which the walk passes only when they are whole).
func (c *tileChooser) runLen(ord []int8, strides []int64) int64 {
	l := int64(1)
	for i, k8 := range ord {
		k := int(k8)
		if i > 0 {
			p := int(ord[i-1])
			if c.t[p] != c.shape[p] || strides[k] != strides[p]*c.shape[p] {
				break
			}
		}
		l *= c.t[k]
		if c.t[k] != c.shape[k] {
			break
		}
	}
	return l
}

// grow lengthens the run of the side ord toward want elements by extending
// the first dim along ord that is not whole, if the run reaches it; it
// reports whether it could.
func (c *tileChooser) grow(ord []int8, strides []int64, want int64) bool {
	l := int64(1)
	for i, k8 := range ord {
		k := int(k8)
		if i > 0 {
			p := int(ord[i-1])
			if strides[k] != strides[p]*c.shape[p] {
				return false // the run ends at p, which is whole
			}
		}
		if c.t[k] < c.shape[k] {
			need := (want + l - 1) / l
			limit := c.capE / (c.vol / c.t[k])
			nt := min(c.shape[k], max(need, c.t[k]+1), limit)
			if nt <= c.t[k] {
				return false
			}
			return c.setExtent(k, nt)
		}
		l *= c.t[k]
	}
	return false
}

// setExtent sets the tile extent of dim k to e if the tile's shared memory
// still fits, and reports whether it did.
func (c *tileChooser) setExtent(k int, e int64) bool {
	old := c.t[k]
	if e <= old {
		return false
	}
	c.t[k] = e
	if c.sharedBytes() > tilegeom.MaxBoxSharedBytes {
		// Try the largest extent that fits, halving.
		lo, hi := old, e
		for hi-lo > 1 {
			m := (lo + hi) / 2
			c.t[k] = m
			if c.sharedBytes() > tilegeom.MaxBoxSharedBytes {
				hi = m
			} else {
				lo = m
			}
		}
		c.t[k] = lo
		if lo == old {
			return false
		}
	}
	c.vol = c.vol / old * c.t[k]
	return true
}

// boxGeometry fills p.Box for a ClassBoxTile plan whose index width is set,
// its src slots at tilegeom.ChunkGrain if grain asks for it, the src runs
// are contiguous, the copy moves at least boxChoiceBytes (below, its time is
// its launch's, and its first copy's host time is kept) and the store
// phase's reads meet no more bank conflicts (storeConflicts); else at
// tilegeom.WordGrain. The tile was sized at WordGrain, so it is the same
// either way.
func boxGeometry(p *Plan, grain int64) {
	item := int64(p.Sig.Itemsize)
	g := p.Box
	g.Set(p.Shape, p.DstStrides, p.SrcStrides, p.Tile, item, tilegeom.WordGrain, p.Sig.Index64)
	spans := spanHoles(p, item)
	if spans > 0 {
		setBox(p, tilegeom.WordGrain, spans)
	}
	if grain != tilegeom.ChunkGrain || g.Src.Step != 1 && g.Src.Step != -1 || smallCopy(p.Shape, item) {
		return // strided src runs move element by element; a small copy's time is its launch's
	}
	var w [MaxBoxNDim]int64
	tilegeom.BoxSrcWeights(&g.Src, p.SrcStrides, p.Tile, item, tilegeom.ChunkGrain, w[:len(p.Tile)])
	idx := int64(4)
	if p.Sig.Index64 {
		idx = 8
	}
	if tilegeom.BoxSharedBytes(g.Src, g.Dst, p.Tile, item, tilegeom.ChunkGrain, idx) > tilegeom.MaxBoxSharedBytes ||
		!sameFirst(g, &w, p.Tile) && storeConflicts(g, &w, p.Tile, item) > storeConflicts(g, &g.W, p.Tile, item) {
		return
	}
	setBox(p, tilegeom.ChunkGrain, spans)
}

// cutSrcRuns cuts the src runs of box-tile plan p after fewer of their
// dims (tilegeom.BoxGeometry.CutSrcRuns), or drops their spans for plain
// runs, where that at least halves the wavefronts of the element store's
// shared-memory reads (storeConflicts) and leaves src runs of minRun bytes
// or more; or runs of any length where the reads are cutDegree-way
// conflicted or worse. A src run that
// spans several dims lays the dims after its first contiguously (a span,
// as in src), so a dst run along one of them steps by their product of extents
// (a span: their src stride): 64 bytes in a 2-d uint8 transpose of 64 by a
// million, 16 of a warp's 32 reads in one bank (storeConflicts 64, where 4
// is none); 128 bytes in a transpose from rows padded to 128, 32 in one
// bank. Cut after the dims before it, the runs' slots lie an odd number of
// words apart. Of the geometries that fit the shared memory, at the plan's
// grain or at words (the grain the tile was sized at), the one of fewest
// wavefronts is kept (the plan's grain, then the longest runs, among
// equals).
//
// The cut's shorter src runs cost the load phase. Measured on an H200 (47
// copies of 64 and 256 MiB that a cut changes, each timed cut and uncut):
// cuts that left src runs under 128 bytes ran 0.52-0.90 times as fast
// unless the reads they relieved were 16-way conflicted (2.6-5.4 times
// faster); those leaving runs of 192 bytes or more ran 0.98-1.70 times.
func cutSrcRuns(p *Plan, minRun int) {
	g, item := p.Box, int64(p.Sig.Itemsize)
	if g.Src.NRun < 2 && !g.Src.Holes {
		return // runs of one dim: nothing to cut
	}
	base := storeConflicts(g, &g.W, p.Tile, item)
	free := freeWavefronts(min(g.Dst.RunLen, 32), item)
	if base < 2*free {
		return // no cut can halve the wavefronts (most plans: this keeps planning cheap)
	}
	short := base >= cutDegree*free // any run length will do
	plain, _ := tilegeom.BoxSides(p.Shape, p.DstStrides, p.SrcStrides, p.Tile)
	top := plain.NRun // a plain side's run dims: n == top is no cut
	if !g.Src.Holes {
		top--
	}
	var runLen [MaxBoxNDim + 1]int64 // the src run's elements cut after n dims
	runLen[0] = 1
	for n, k := range plain.Order[:top] {
		runLen[n+1] = runLen[n] * p.Tile[k]
	}
	grains := []int64{g.Grain, tilegeom.WordGrain}
	if g.Grain == tilegeom.WordGrain {
		grains = grains[:1]
	}
	best, at, grain := base, 0, g.Grain
	var c tilegeom.BoxGeometry
	for _, gr := range grains {
		for n := top; n >= 1 && (short || runLen[n]*item >= int64(minRun)); n-- {
			if !cutGeometry(&c, p, gr, n) || c.Shared.Total > tilegeom.MaxBoxSharedBytes {
				continue
			}
			if w := storeConflicts(&c, &c.W, p.Tile, item); w < best {
				best, at, grain = w, n, gr
			}
		}
	}
	if at > 0 && 2*best <= base {
		cutGeometry(g, p, grain, at)
	}
}

// cutGeometry sets g to p's plain geometry at grain with its src runs cut
// after n dims (none cut where n is the plain side's run dims), reporting
// whether the cut could be made.
func cutGeometry(g *tilegeom.BoxGeometry, p *Plan, grain int64, n int) bool {
	item := int64(p.Sig.Itemsize)
	if g.CutSrcRuns(p.Shape, p.DstStrides, p.SrcStrides, p.Tile, item, grain, p.Sig.Index64, n) {
		return true
	}
	return g.Src.NRun == n // CutSrcRuns left Set's geometry, whose runs have n dims
}

// setBox sets p.Box to the box tile's geometry at grain, with its src runs
// as spans (tilegeom.SpanSide) where halves is not 0, that lengthens them,
// the tile's shared memory stays within bounds and a span takes at most
// halves/2 bytes per byte of its elements (spanHoles).
func setBox(p *Plan, grain, halves int64) {
	g, item := p.Box, int64(p.Sig.Itemsize)
	if halves > 0 {
		if !g.SetSpans(p.Shape, p.DstStrides, p.SrcStrides, p.Tile, item, grain, p.Sig.Index64) {
			return // no spans: SetSpans set the plain geometry
		}
		if g.Shared.Total <= tilegeom.MaxBoxSharedBytes && 2*g.Src.Span <= halves*g.Src.RunLen {
			return
		}
	}
	g.Set(p.Shape, p.DstStrides, p.SrcStrides, p.Tile, item, grain, p.Sig.Index64)
}

// sameFirst reports whether the weights w give a dst run's first 32
// elements the shared-memory offsets g.W gives them (their dims' steps are
// the same), so that their reads meet the same banks.
func sameFirst(g *tilegeom.BoxGeometry, w *[MaxBoxNDim]int64, tile []int64) bool {
	span := int64(1)
	for _, k := range g.Dst.Order[:g.Dst.NRun] {
		if span >= 32 {
			break
		}
		if w[k] != g.W[k] {
			return false
		}
		span *= tile[k]
	}
	return true
}

// storeConflicts returns the shared-memory wavefronts a warp's reads of the
// first 32 elements of a dst run take (the element store's reads: one
// element a lane) with the src slots' weights w, summed over the four
// phases a tile's slots may have modulo 4 (a phase of 4 more moves every
// word to the next bank, which keeps the count). Slots at 16-byte chunks
// change the steps between them (tilegeom.BoxSrcWeights), and with them
// the banks that consecutive dst elements fall in: measured on an H200,
// chunked tiles ran up to 1.3 times slower where their steps put twice the
// words in a bank, the same or faster where they did not.
func storeConflicts(g *tilegeom.BoxGeometry, w *[MaxBoxNDim]int64, tile []int64, item int64) int {
	n := min(g.Dst.RunLen, 32)
	var off [32]int64
	var c [MaxBoxNDim]int64 // element i's coordinates along the run's dims, a counter
	run := g.Dst.Order[:g.Dst.NRun]
	for i := int64(1); i < n; i++ {
		off[i] = off[i-1]
		for d, k := range run {
			if c[d]++; c[d] < tile[k] {
				off[i] += w[k]
				break
			}
			off[i] -= (tile[k] - 1) * w[k]
			c[d] = 0
		}
	}
	return phaseWavefronts(off[:n], item)
}

// cutDegree is the conflict degree of the element store's reads (their
// wavefronts over freeWavefronts') from which cutSrcRuns cuts src runs to
// any length.
const cutDegree = 16

// freeWavefronts returns the wavefronts of storeConflicts for n elements
// of item bytes at consecutive slots, summed over the four phases: the
// fewest a warp's reads of a dst run can take. Looked up in a table built
// on first use: planning asks for it on every box tile.
func freeWavefronts(n, item int64) int {
	if n < 0 || n > 32 || item < 1 || item > MaxVectorBytes {
		return countFreeWavefronts(n, item)
	}
	return int(freeTable()[n][item])
}

// freeTable holds countFreeWavefronts for runs of 0 to 32 elements of 1 to
// MaxVectorBytes bytes.
var freeTable = sync.OnceValue(func() *[33][MaxVectorBytes + 1]int16 {
	var t [33][MaxVectorBytes + 1]int16
	for n := range int64(33) {
		for item := int64(1); item <= MaxVectorBytes; item++ {
			t[n][item] = int16(countFreeWavefronts(n, item))
		}
	}
	return &t
})

// countFreeWavefronts computes freeWavefronts.
func countFreeWavefronts(n, item int64) int {
	n = min(max(n, 0), 32)
	var off [32]int64
	for i := range n {
		off[i] = i * item
	}
	return phaseWavefronts(off[:n], item)
}

// phaseWavefronts returns the wavefronts of a warp's reads of elements of
// item bytes at the shared-memory offsets off, summed over the four phases
// a slot may have modulo 4 (storeConflicts).
func phaseWavefronts(off []int64, item int64) int {
	var sc banks
	sum := 0
	for ph := range int64(4) {
		sum += sc.wavefronts(off, ph, item)
	}
	return sum
}

// banks is wavefronts' scratch: each bank's words as a list threaded
// through next (most lists hold a word or two).
type banks struct {
	head [32]int16
	per  [32]int
	next [32 * 5]int16 // an item of 16 bytes at any offset spans 5 words
	word [32 * 5]int64
}

// wavefronts returns the most distinct 4-byte words in one of the 32
// banks among the words that items of item bytes at byte offsets off+ph
// touch: the wavefronts a shared-memory read of them takes.
func (s *banks) wavefronts(off []int64, ph, item int64) int {
	for b := range s.head {
		s.head[b], s.per[b] = -1, 0
	}
	n, most := int16(0), 0
	for _, o := range off {
		for x := (o + ph) >> 2; x <= (o+ph+min(item, 16)-1)>>2; x++ {
			b := x & 31
			i := s.head[b]
			for i >= 0 && s.word[i] != x {
				i = s.next[i]
			}
			if i >= 0 {
				continue // a word already read
			}
			s.word[n], s.next[n], s.head[b] = x, s.head[b], n
			n++
			s.per[b]++
			most = max(most, s.per[b])
		}
	}
	return most
}

// splitRunBytes is the longest dst run, in bytes, of a box tile of 3-byte
// items that splitTriples re-plans in bytes.
const splitRunBytes = 512

// splitTriples re-expresses j, classified as p, in bytes where p is a box
// tile of 3-byte items whose runs are contiguous and forward in both views,
// whose dst runs hold at most splitRunBytes and fewer than triple bytes
// (PlanOptions.TripleStore, where non-zero), and the copy moves at least
// boxChoiceBytes: each item becomes an innermost dim of 3 bytes,
// unit-strided in both views, which the tile then holds whole in every
// run. It reports whether it did; the caller classifies j again
// (classifyJoint).
//
// A box tile of bytes writes a dst run a byte a thread, a warp on 32
// consecutive bytes, where one of 3-byte items stores each item in three
// byte stores, a warp's 32 lanes 3 bytes apart. Measured on an H200 (the
// 46 box tiles of 3-byte items among 480 random copies of 64 MiB, seeds
// 1301-1313, both plans in one binary, two rounds each way): the 27 whose
// dst runs held 512 bytes or less ran 1.16 times as fast with specialised
// kernels (per case 0.91-1.42) and 1.07 with generic ones (0.98-1.18);
// longer runs split lose in the generic tier (0.37-0.95 from 2.4 KB up),
// where three times the element table's entries take shared memory from
// the tile or from other blocks. On fresh seeds (H100, 1601-1613) the 29
// it takes ran 1.10 and 1.06 times as fast (0.97-1.26, 0.93-1.18).
// Reversed or strided src runs split into runs of 3 bytes, and ran
// 0.28-0.72 (random views, seed 1503): they keep their plan. Small copies
// keep theirs too, and their first copy its host time.
func splitTriples(p *Plan, j *joint, triple int64) bool {
	if p.Sig.Class != ClassBoxTile || j.item != 3 || j.n() >= MaxBoxNDim || smallCopy(j.shape, j.item) {
		return false
	}
	var sd, dd [MaxBoxNDim]int8
	var src, dst tilegeom.BoxSide
	tilegeom.SideFromOrder(&src, tilegeom.SortedDims(sd[:0], j.ss), j.shape, j.ss, p.Tile)
	tilegeom.SideFromOrder(&dst, tilegeom.SortedDims(dd[:0], j.ds), j.shape, j.ds, p.Tile)
	if src.Step != 1 || dst.Step != 1 || dst.RunLen*3 > splitRunBytes || (triple > 0 && dst.RunLen*3 >= triple) {
		return false
	}
	splitItems(j, 1)
	return true
}
