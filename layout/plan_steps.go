package layout

import (
	"fmt"
	"math"
	"math/bits"

	"github.com/stridekit/stridekit/internal/tilegeom"
)

// This file holds the steps of the copy planner, in the order planCopy runs
// them. Each works on a joint form and states what it needs (Pre) and what
// it leaves (Post); every step keeps the copy's meaning: the set of
// (dst byte, src byte) pairs the joint form addresses (plan_steps_test.go
// checks that for each step on random forms).

// joint is the planner's working form of a copy: one list of dims with a dst
// and a src stride each, counted in elements of item bytes, and the offsets
// (in elements) of index 0 from the lowest byte of each view. Element
// (i_0, …, i_{n-1}) of dst at element offset dOff + Σ i_k·ds[k] receives
// element sOff + Σ i_k·ss[k] of src. The slices are the Plan's, reused.
type joint struct {
	shape, ds, ss []int64
	dOff, sOff    int64
	item          int64
}

func (j *joint) n() int { return len(j.shape) }

// joinDims lays dst and src side by side.
//
// Pre: checkPair accepted the views; dst has at least one element.
// Post: every extent ≥ 2 (extent-1 dims are dropped); a src dim broadcast by
// NumPy's rules (missing or of extent 1) has src stride 0; dOff and sOff
// are -MinOffset of each view, so every element offset lies in [0, span).
func joinDims(p *Plan, dst, src Layout) joint {
	nd, ns := len(dst.shape), len(src.shape)
	j := joint{shape: p.Shape[:0], ds: p.DstStrides[:0], ss: p.SrcStrides[:0],
		dOff: -dst.minOff, sOff: -src.minOff, item: int64(dst.itemsize)}
	for i := 0; i < nd; i++ {
		e := dst.shape[i]
		if e == 1 {
			continue
		}
		s := int64(0)
		if k := i - (nd - ns); k >= 0 && src.shape[k] != 1 {
			s = src.strides[k]
		}
		j.shape, j.ds, j.ss = append(j.shape, e), append(j.ds, dst.strides[i]), append(j.ss, s)
	}
	return j
}

// flipDims reverses the dims that run backwards in dst and backwards or not
// at all in src: index i becomes e-1-i in both views, which moves both
// offsets to the old last element of the dim.
//
// Pre: none. Post: no dim has ds < 0 and ss ≤ 0.
func flipDims(j *joint) {
	for k, e := range j.shape {
		if d, s := j.ds[k], j.ss[k]; d < 0 && s <= 0 {
			j.dOff += (e - 1) * d
			j.sOff += (e - 1) * s
			j.ds[k], j.ss[k] = -d, -s
		}
	}
}

// orderDims sorts the dims by |dst stride|, largest first (insertion sort,
// stable, allocation-free).
//
// Pre: none. Post: |ds[k]| ≥ |ds[k+1]| for every k.
func orderDims(j *joint) {
	for k := 1; k < j.n(); k++ {
		e, d, s := j.shape[k], j.ds[k], j.ss[k]
		a := uabs(d)
		i := k
		for i > 0 && uabs(j.ds[i-1]) < a {
			j.shape[i], j.ds[i], j.ss[i] = j.shape[i-1], j.ds[i-1], j.ss[i-1]
			i--
		}
		j.shape[i], j.ds[i], j.ss[i] = e, d, s
	}
}

// coalesce merges each dim into the one before it when the pair is
// contiguous in both views (CuTe's coalesce, on two layouts at once): dims
// k, k+1 with ds[k] == shape[k+1]·ds[k+1] and ss[k] == shape[k+1]·ss[k+1]
// become one dim of extent shape[k]·shape[k+1] and strides ds[k+1], ss[k+1].
//
// Pre: orderDims. Post: no adjacent pair is mergeable; dims stay ordered.
func coalesce(j *joint) {
	n := 0
	for k := 0; k < j.n(); k++ {
		if n > 0 {
			e := j.shape[k]
			if j.ds[n-1] == e*j.ds[k] && j.ss[n-1] == e*j.ss[k] {
				j.shape[n-1] *= e
				j.ds[n-1], j.ss[n-1] = j.ds[k], j.ss[k]
				continue
			}
		}
		j.shape[n], j.ds[n], j.ss[n] = j.shape[k], j.ds[k], j.ss[k]
		n++
	}
	j.shape, j.ds, j.ss = j.shape[:n], j.ds[:n], j.ss[:n]
}

// checkUnique refuses a dst that addresses one element twice. Each |stride|
// exceeding the span of the faster dims is sufficient; where that quick test
// fails it asks the exact (or conservative) check of the original layout.
//
// Pre: orderDims. Post: dst is unique, or an ErrOverlappingDst error.
func checkUnique(j *joint, dst Layout) error {
	span := uint64(0)
	for k := j.n() - 1; k >= 0; k-- {
		a := uabs(j.ds[k])
		if a <= span {
			if !dst.IsUnique() {
				return fmt.Errorf("%w: dst %v has two indices at one offset", ErrOverlappingDst, dst)
			}
			return nil
		}
		span += a * uint64(j.shape[k]-1)
	}
	return nil
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

// recut re-expresses the copy in the widest element that every address
// allows. The run is the innermost dim when it has unit stride in both
// views, else a virtual run of one item; the new element size w is the
// largest power of two (≤ 16) dividing the run's bytes, every other byte
// stride, both byte offsets and both alignments (aD, aS: the alignments of
// the views' lowest bytes).
//
// Pre: at least one dim; ordered and coalesced. Post: item == w except for
// an item whose own size w already is (odd sizes 3, 5, 6, … outside a
// contiguous run keep their size); every stride and offset counts w-byte
// elements; a split item adds an innermost unit-stride dim of item/w
// elements. Every element address is a multiple of natAlign(item).
func recut(j *joint, aD, aS int64) {
	n := j.n()
	item := j.item
	realRun := j.ds[n-1] == 1 && j.ss[n-1] == 1
	runE := int64(1)
	last := n
	if realRun {
		runE = j.shape[n-1]
		last = n - 1
	}
	dOffB, sOffB := j.dOff*item, j.sOff*item
	g := uint64(runE*item) | uint64(dOffB) | uint64(sOffB)
	for k := 0; k < last; k++ {
		g |= uabs(j.ds[k]*item) | uabs(j.ss[k]*item)
	}
	w := min(natAlign(int64(g)), natAlign(aD), natAlign(aS))
	if !realRun {
		if item != w && (item > MaxVectorBytes || w != natAlign(item)) {
			splitItems(j, w)
		}
		return // else an element of its own size, aligned as it can be
	}
	for k := 0; k < last; k++ {
		j.ds[k] = j.ds[k] * item / w
		j.ss[k] = j.ss[k] * item / w
	}
	j.shape[n-1] = j.shape[n-1] * item / w
	j.dOff, j.sOff, j.item = dOffB/w, sOffB/w, w
}

// splitItems re-expresses j's items as elements of w bytes (w divides the
// item) under a new innermost dim of item/w elements, unit-strided in both
// views.
func splitItems(j *joint, w int64) {
	f := j.item / w
	for k := range j.shape {
		j.ds[k], j.ss[k] = j.ds[k]*f, j.ss[k]*f
	}
	j.shape, j.ds, j.ss = append(j.shape, f), append(j.ds, 1), append(j.ss, 1)
	j.dOff, j.sOff, j.item = j.dOff*f, j.sOff*f, w
}

// foldRun makes a run of 3 bytes contiguous in both views one 3-byte item
// where the vector tile then takes the copy: an interleaved RGB image,
// whose recut leaves 1-byte items under a common dim of 3, is transposed
// as 3-byte items in 12-byte vectors. Where the folded copy would be a box
// tile it stays as it was: on an H100 (18 copies with common runs of 3 to
// 12 bytes, the planner before and after in one call, twice) the folds
// that reached the vector tile ran 1.04-1.60x (the 8192x16384 RGB
// transpose 49.7 -> 79.6% of memcpy, one 100x200000 image 0.92x), and
// those that ended in box tiles of 3-, 5-, 6-, 7- and 12-byte items
// 0.51-1.08x, most slower.
//
// Pre: recut; transposing. Post: as recut's, with item 3 where it folded.
func foldRun(j *joint, aD, aS int64) {
	n := j.n()
	if n < 3 || n-1 > MaxBoxNDim || j.item != 1 || j.shape[n-1] != 3 || j.ds[n-1] != 1 || j.ss[n-1] != 1 {
		return
	}
	if j.dOff%3 != 0 || j.sOff%3 != 0 {
		return
	}
	for k := 0; k < n-1; k++ {
		if j.ds[k]%3 != 0 || j.ss[k]%3 != 0 || j.ss[k] == 0 {
			return
		}
	}
	scaleRun(j, n-1, 3)
	if _, _, ok := tileOf(j, aD, aS); !ok {
		scaleRun(j, n-1, 1) // unfold
	}
}

// scaleRun re-expresses j, whose dims but the innermost run are its first
// outer, in items of item bytes: with the run dim (rank outer+1) where item
// is 1, folded into the item (rank outer) where item is the run's bytes. An
// unfolded run's extent and unit strides are still in the slices' backing
// arrays, where a fold left them.
func scaleRun(j *joint, outer int, item int64) {
	for k := 0; k < outer; k++ {
		j.ds[k], j.ss[k] = j.ds[k]*j.item/item, j.ss[k]*j.item/item
	}
	n := outer
	if item == 1 {
		n++
	}
	j.dOff, j.sOff = j.dOff*j.item/item, j.sOff*j.item/item
	j.shape, j.ds, j.ss, j.item = j.shape[:n], j.ds[:n], j.ss[:n], item
}

// tileOf returns the src fast dim and vector width of the vector tile for
// j and whether the tile takes j (tileFast, tileVector, tileFits).
func tileOf(j *joint, aD, aS int64) (f int, v int64, ok bool) {
	n := j.n()
	if f = tileFast(j); f < 0 {
		return f, 0, false
	}
	vd := vecWidth(j.shape[n-1], j.shape[f], j.item, j.dOff*j.item, aD, j.ds[:n-1], nil, true)
	vs := vecWidth(j.shape[f], j.shape[n-1], j.item, j.sOff*j.item, aS, j.ss[:f], j.ss[f+1:], true)
	v = min(vd, vs)
	rows, cols := tilegeom.TileEdges(int(j.item), int(v))
	e1, e2 := j.shape[n-1], j.shape[f]
	return f, v, tileVector(j.item, v) && tileFits(e1, int64(rows)) && tileFits(e2, int64(cols))
}

// classify picks the class of the plan and its vector width or tile, by
// opt's ElemRunBytes and TileBytes; with opt.Gather, ClassGather for every
// plan that needs a copy kernel other than a broadcast or fill.
//
// Pre: recut; p.Shape/DstStrides/SrcStrides are j's slices. Post: p.Sig's
// class, Fast and Vec, and p.Tile for ClassBoxTile, as PlanCopy's doc says.
func classify(p *Plan, j *joint, aD, aS int64, opt PlanOptions) {
	n := j.n()
	shape, ds, ss, item := j.shape, j.ds, j.ss, j.item
	zeros := 0
	for k := 0; k < n; k++ {
		if ss[k] == 0 {
			zeros++
		}
	}
	switch {
	case n == 1 && ds[0] == 1 && ss[0] == 1:
		p.Sig.Class = ClassMemcpy
		return
	case zeros > 0:
		p.Sig.Class = ClassBroadcast
		if zeros == n {
			p.Sig.Class = ClassFill
		}
		if ds[n-1] == 1 && ss[n-1] == 0 {
			// Vectorised dst writes of a repeated src element.
			p.Sig.Vec = uint8(vecWidth(shape[n-1], 0, item, p.DstOffset, aD, ds[:n-1], nil, false))
		}
		return
	}
	if opt.Gather {
		p.Sig.Class = ClassGather
		return
	}
	p.Sig.Class = ClassElementwise
	if n > MaxBoxNDim || !transposing(j) {
		return
	}
	if ds[n-1] == 1 && ss[n-1] == 1 && item >= 4 && elemRuns(j, opt.ElemRunBytes) {
		return // long runs, moved in elements of 4 bytes or more
	}
	if f, v, ok := tileOf(j, aD, aS); ok {
		p.Sig.Class, p.Sig.Fast, p.Sig.Vec = ClassTile, uint8(f), uint8(v)
		return
	}
	p.Sig.Class = ClassBoxTile
	p.Tile = chooseTile(p.Tile[:0], shape, ds, ss, item, tileBytes(opt.TileBytes))
}

// elemRuns reports whether j, whose innermost dim is contiguous in both
// views, goes to the elementwise kernel: where that common run holds
// ElemRunBytes (the option's bound, 0: the package's) or more, or
// elemShortRunBytes or more where a box tile could not lengthen the runs
// of both views past it (a step or a slice cuts one view's next dim off
// from the run).
func elemRuns(j *joint, opt int) bool {
	n := j.n()
	run, bound := j.shape[n-1]*j.item, int64(ElemRunBytes)
	if opt != 0 {
		bound = int64(opt)
	}
	if run >= bound {
		return true
	}
	return run >= elemShortRunBytes && !(continues(j.ds[:n-1], j.shape[n-1]) && continues(j.ss[:n-1], j.shape[n-1]))
}

// elemShortRunBytes is the shortest common run that goes to the
// elementwise kernel where a box tile could not lengthen both views' runs
// (elemRuns): the bound ElemRunBytes had before an H200 measured longer
// ones on permutations of dense arrays, which such views are not.
const elemShortRunBytes = 64

// continues reports whether a view whose strides outside its innermost
// dim (stride 1) are strides has a dim that continues that dim's run of e
// elements contiguously, in its direction (a stride of e).
func continues(strides []int64, e int64) bool {
	for _, s := range strides {
		if s == e {
			return true
		}
	}
	return false
}

// transposing reports whether the dims ordered by |src stride| differ from
// their order by |dst stride| (dims are already in the latter): only then
// does a copy need a tile to access both views in runs.
func transposing(j *joint) bool { return outOfOrder(j.ss[:j.n()]) }

// outOfOrder reports whether |ss| is not falling along the dims (which are
// in dst's order, slowest first).
func outOfOrder(ss []int64) bool {
	for k := 1; k < len(ss); k++ {
		if uabs(ss[k-1]) < uabs(ss[k]) {
			return true
		}
	}
	return false
}

// tileFast returns the src fast dim of a ClassTile candidate, or -1: dst's
// fastest dim has unit dst stride and a non-unit src stride, the slowest dim
// with unit src stride is that dim, and both are at least TileMinExtent.
func tileFast(j *joint) int {
	n := j.n()
	if j.ds[n-1] != 1 || j.ss[n-1] == 1 || j.shape[n-1] < TileMinExtent {
		return -1
	}
	for k := 0; k < n-1; k++ {
		if j.ss[k] == 1 {
			if j.shape[k] >= TileMinExtent {
				return k
			}
			return -1
		}
	}
	return -1
}

// tileVector reports whether the vector tile serves items of item bytes in
// vectors of v. Items whose size is not a power of two go to the box tile,
// which moves 4-byte-aligned items as words, where the vector tile would
// move them one at a time (12-byte items: 0.67-0.74x the box tile on an
// H100); but four 3-byte items make a vector of three words, which the
// vector tile moves whole and transposes in registers a byte at a time,
// where the box tile stores every item byte by byte. Vectors narrower than
// 8 bytes go there too, except those of 4 bytes that pack 1- or 2-byte
// items: single floats in 32×32 tiles ran 0.62-1.42x the box tile (six of
// ten cases slower on an H100; on an H200 the eight random ones whose fast
// extents both exceed 96, which an earlier rule gave the tile, ran 1.14x
// as fast in the box tile, 0.95-1.36x), four bytes and two halves in 64×64
// tiles 1.11-1.37x.
func tileVector(item, v int64) bool {
	if item == 3 {
		return v == 4
	}
	return item&(item-1) == 0 && (v*item >= 8 || (item < 4 && v*item >= 4))
}

// tileFits reports whether an extent e fills at least five eighths of the
// tiles of edge t that cover it: else a box tile, which folds dims and cuts
// them evenly, serves the dim better. Measured on an H100 (seeds 179, 181
// and 191, 100 random cases of 64 MiB each, both planners in one run): the
// cases of 8- and 16-byte items and of packed 1- and 2-byte items that
// moved from the box tile ran 1.09-1.39x faster with their fast dims
// filling 62-100% of their tiles (an 8-byte 107 by 71 transpose, 69 -> 77%
// of memcpy), and a fast dim filling half its tiles lost (16 of 32: 92 ->
// 55%, float32).
func tileFits(e, t int64) bool {
	full := (e + t - 1) / t * t
	return 8*e >= 5*full
}

// vecWidth returns the largest power of two v with v·item ≤ MaxVectorBytes
// that divides e1 and e2 (e2 == 0: ignored) and every stride of others1 and
// others2, with off (bytes) and align multiples of v·item, or, where
// natural is set, of the largest power of two dividing v·item: the vector
// tile's vectors need only their natural alignment (the same for items
// whose size is a power of two; 4 for the 12-byte vectors of four 3-byte
// items, whose starts then all lie at multiples of 4 bytes from an aligned
// view).
func vecWidth(e1, e2, item, off, align int64, others1, others2 []int64, natural bool) int64 {
	g := uint64(e1) | uint64(e2)
	for _, s := range others1 {
		g |= uabs(s)
	}
	for _, s := range others2 {
		g |= uabs(s)
	}
	v := int64(1)
	for v*2*item <= MaxVectorBytes && g&uint64(v*2-1) == 0 {
		a := v * 2 * item
		if natural {
			a &= -a
		}
		if off%a != 0 || align%a != 0 {
			break
		}
		v *= 2
	}
	return v
}

// fitsInt32 reports whether the volume and every element offset a kernel
// forms lie in [0, MaxInt32] (offsets are from the views' lowest bytes, so
// the smallest is 0).
func fitsInt32(j *joint, vol int64) bool {
	dMax, sMax := j.dOff, j.sOff
	for k := 0; k < j.n(); k++ {
		dMax += max(j.ds[k], 0) * (j.shape[k] - 1)
		sMax += max(j.ss[k], 0) * (j.shape[k] - 1)
	}
	return vol <= math.MaxInt32 && dMax <= math.MaxInt32 && sMax <= math.MaxInt32
}
