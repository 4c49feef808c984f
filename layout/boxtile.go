package layout

// A box tile is the unit of work of a ClassBoxTile kernel: a box of the
// canonical form, Tile[k] consecutive indices of each dim k, staged through
// shared memory. In each view the tile's elements fall into runs: the tile
// dims taken by |stride| in that view, from the smallest, as long as each is
// whole in the tile and continues the previous one in memory (stride equal
// to the previous stride times the previous extent). A run's elements are
// at one stride apart (Step; ±1 means contiguous bytes). The kernel reads
// src run by run into shared memory (contiguous runs as the aligned words
// that cover them, whatever their alignment: see BoxSrcWeights), then
// writes dst run by run, gathering each dst element from where it sits in
// shared memory. Choosing the tile so that both views have long runs is
// what lets short fast dims, odd extents and odd itemsizes move in long
// bursts: several dims are folded into each side of the tile, and a dim may
// run inside the tile on both sides.

// MaxBoxNDim is the most canonical dims a ClassBoxTile plan may have.
const MaxBoxNDim = 16

// MaxBoxSharedBytes is the shared memory a box tile may use, data and run
// tables together: what every CUDA device gives a block without opting in.
const MaxBoxSharedBytes = 48 << 10

// boxTargetRun is the run length, in bytes, that chooseTile first gives
// each side: four 32-byte sectors.
const boxTargetRun = 128

// BoxSide is one view's side of a box tile.
type BoxSide struct {
	// Order lists the tile's dims (those with Tile[k] > 1) by |stride| in
	// this view, smallest first (ties: the later canonical dim first); the
	// first NDims entries are valid.
	Order [MaxBoxNDim]int8
	NDims int
	// NRun is how many dims of Order, from the first, form a run.
	NRun int
	// RunLen is the number of elements of a run: the product of Tile over
	// the run's dims (1 when the tile has no dims).
	RunLen int64
	// Runs is the number of runs in a whole tile: the product of Tile over
	// the other tile dims.
	Runs int64
	// Step is the element stride of a run in this view: consecutive
	// elements of a run are Step elements apart (±1: contiguous).
	Step int64
}

// BoxSides returns the src and dst sides of the box tile tile over a
// canonical form (the slices of a Plan: Shape, DstStrides, SrcStrides, Tile).
func BoxSides(shape, ds, ss, tile []int64) (src, dst BoxSide) {
	sideOf(&src, shape, ss, tile)
	sideOf(&dst, shape, ds, tile)
	return src, dst
}

func sideOf(b *BoxSide, shape, strides, tile []int64) {
	var ord [MaxBoxNDim]int8
	sideFromOrder(b, sortedDims(ord[:0], strides[:len(tile)]), shape, strides, tile)
}

// sortedDims appends to ord the dims of strides by |stride| ascending, the
// later dim first among equals (BoxSide.Order's rule), and returns it.
func sortedDims(ord []int8, strides []int64) []int8 {
	for k := len(strides) - 1; k >= 0; k-- {
		a := uabs(strides[k])
		ord = append(ord, int8(k))
		i := len(ord) - 1
		for i > 0 && uabs(strides[ord[i-1]]) > a {
			ord[i] = ord[i-1]
			i--
		}
		ord[i] = int8(k)
	}
	return ord
}

// sideFromOrder is sideOf for dims already sorted (sortedDims): the tile
// dims among them, in that order, and the side's runs.
func sideFromOrder(b *BoxSide, ord []int8, shape, strides, tile []int64) {
	*b = BoxSide{RunLen: 1, Runs: 1, Step: 1}
	vol := int64(1)
	for _, k := range ord {
		if tile[k] <= 1 {
			continue
		}
		vol *= tile[k]
		b.Order[b.NDims] = k
		b.NDims++
	}
	if b.NDims == 0 {
		return
	}
	k0 := int(b.Order[0])
	b.NRun, b.RunLen, b.Step = 1, tile[k0], strides[k0]
	for i := 1; i < b.NDims; i++ {
		prev, k := int(b.Order[i-1]), int(b.Order[i])
		if tile[prev] != shape[prev] || strides[k] != strides[prev]*shape[prev] {
			break
		}
		b.NRun++
		b.RunLen *= tile[k]
	}
	b.Runs = vol / b.RunLen
}

// BoxRunPitch returns the first step between src run slots in shared
// memory for runs of runLen elements of item bytes: room for the run's
// bytes plus the word that a run starting at any address modulo 4 may add,
// a multiple of 4 whose quarter is odd, so that neighbouring slots start in
// different banks.
func BoxRunPitch(runLen, item int64) int64 {
	p := (runLen*item+3)&^3 + 4
	if (p/4)%2 == 0 {
		p += 4
	}
	return p
}

// BoxSrcWeights lays out a box tile's src runs in shared memory: it sets
// w[k], for each tile dim k of the src side, to the bytes one index step of
// k moves in shared memory, and returns the bytes the tile's data takes.
// Within a run elements follow each other (reversed runs: backwards from
// the run's last slot byte); from run to run the step along the i-th dim
// outside the runs is U_i + (ss[k]·item mod 4), U_1 = BoxRunPitch and
// U_{i+1} = t_i·(U_i + 4). A slot's address then equals its src address
// modulo 4 up to one phase common to the whole tile, so a run moves as the
// aligned words that cover it, and no two slots' words overlap. ss may be
// nil for the size alone (the weights then are not set).
func BoxSrcWeights(src *BoxSide, ss, tile []int64, item int64, w []int64) int64 {
	x := item
	if src.Step == -1 {
		x = -item
	}
	for i := 0; i < src.NRun; i++ {
		k := src.Order[i]
		if w != nil {
			w[k] = x
		}
		x *= tile[k]
	}
	u := BoxRunPitch(src.RunLen, item)
	for i := src.NRun; i < src.NDims; i++ {
		k := src.Order[i]
		if w != nil {
			w[k] = u + ((ss[k]*item)%4+4)%4
		}
		u = tile[k] * (u + 4)
	}
	return u + 4
}

// BoxShared is the shared-memory layout of a box tile kernel: the src
// runs' data from offset 0 (BoxSrcWeights), then each table at its offset,
// each part 16-byte aligned. The planner sizes tiles by Total; gen packs the
// offsets into the kernel's argument block.
type BoxShared struct {
	G     int64 // each src run's offset in src (idxBytes a run)
	H     int64 // each dst run's offset in dst (idxBytes a run)
	A     int64 // each dst run's shared-memory base (4 bytes a run)
	B     int64 // each dst run element's shared-memory offset (4 bytes an element)
	Cs    int64 // each src run's ragged coordinates (8 bytes a run)
	Cd    int64 // each dst run's ragged coordinates (8 bytes a run)
	S     int64 // each src run's slot (4 bytes a run)
	Total int64 // bytes in all
}

// BoxSharedLayout returns the shared-memory layout of a box tile kernel for
// the tile tile with these sides, elements of item bytes and indices of
// idxBytes (4 or 8).
func BoxSharedLayout(src, dst BoxSide, tile []int64, item, idxBytes int64) BoxShared {
	al := func(x int64) int64 { return (x + 15) &^ 15 }
	var l BoxShared
	l.G = al(BoxSrcWeights(&src, nil, tile, item, nil))
	l.H = l.G + al(src.Runs*idxBytes)
	l.A = l.H + al(dst.Runs*idxBytes)
	l.B = l.A + al(dst.Runs*4)
	l.Cs = l.B + al(dst.RunLen*4)
	l.Cd = l.Cs + al(src.Runs*8)
	l.S = l.Cd + al(dst.Runs*8)
	l.Total = l.S + al(src.Runs*4)
	return l
}

// BoxSharedBytes returns the shared memory a box tile kernel needs:
// BoxSharedLayout's Total.
func BoxSharedBytes(src, dst BoxSide, tile []int64, item, idxBytes int64) int64 {
	return BoxSharedLayout(src, dst, tile, item, idxBytes).Total
}

// MaxRagged is the most ragged dims a box tile may have outside a side's
// runs (the kernel keeps a run's coordinates along them in 16 bits each).
const MaxRagged = 4

// ragged reports whether the tile's extent t along a dim of extent n leaves
// a short last tile.
func ragged(n, t int64) bool { return t > 1 && n%t != 0 }

// BoxRagged returns, for one side of a box tile, its ragged dims (tile dims
// whose extent does not divide the view's, so the last tile along them is
// short) outside the side's runs, padded with -1, and its last run dim if
// that is ragged (else -1). ok is false when there are more than MaxRagged
// such dims (chooseTile never makes such a tile).
func BoxRagged(shape, tile []int64, b *BoxSide) (rg [MaxRagged]int, last int, ok bool) {
	for i := range rg {
		rg[i] = -1
	}
	last = -1
	if b.NRun > 0 {
		if k := int(b.Order[b.NRun-1]); ragged(shape[k], tile[k]) {
			last = k
		}
	}
	n := 0
	for i := b.NRun; i < b.NDims; i++ {
		k := int(b.Order[i])
		if !ragged(shape[k], tile[k]) {
			continue
		}
		if n == MaxRagged {
			return rg, last, false
		}
		rg[n] = k
		n++
	}
	return rg, last, true
}

// chooseTile picks the extents of a box tile for a canonical form and
// returns them in out (reused). It grows the tile one dim at a time, always
// lengthening the shorter of the two sides' runs: first until each side's
// run holds boxTargetRun bytes, then doubling, as long as the tile's data
// stays within tileBytes and its shared memory within MaxBoxSharedBytes.
// Then, while the tile is under half full, it adds more of the dims outside
// the runs (more runs per tile), and finally it evens out the cut dims
// (extent e in chunks of ⌈e/⌈e/t⌉⌉) so that no tile is a sliver.
//
// Pre: 1 ≤ len(shape) ≤ MaxBoxNDim; no src stride is 0. Post: 1 ≤ out[k] ≤
// shape[k], the data fits tileBytes (or is one element) and the shared
// memory MaxBoxSharedBytes.
func chooseTile(out, shape, ds, ss []int64, item, tileBytes int64) []int64 {
	n := len(shape)
	for range n {
		out = append(out, 1)
	}
	var sOrd, dOrd [MaxBoxNDim]int8
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
	var sDims, dDims [MaxBoxNDim]int8
	c := tileChooser{t: out, shape: shape, ds: ds, ss: ss, item: item, capE: max(tileBytes/item, 1), vol: 1,
		sDims: sortedDims(sDims[:0], ss), dDims: sortedDims(dDims[:0], ds)}
	target := (boxTargetRun + item - 1) / item
	// First each side's run to the target, the shorter first.
	var doneS, doneD bool
	for {
		ls, ld := c.runLen(sOrd[:n], ss), c.runLen(dOrd[:n], ds)
		needS, needD := !doneS && ls < target, !doneD && ld < target
		if !needS && !needD {
			break
		}
		if needS && (!needD || ls <= ld) {
			doneS = !c.grow(sOrd[:n], ss, target)
		} else {
			doneD = !c.grow(dOrd[:n], ds, target)
		}
	}
	// Then double the shorter run while the tile fits.
	doneS, doneD = false, false
	for !doneS || !doneD {
		ls, ld := c.runLen(sOrd[:n], ss), c.runLen(dOrd[:n], ds)
		if !doneS && (doneD || ls <= ld) {
			doneS = !c.grow(sOrd[:n], ss, 2*ls)
		} else {
			doneD = !c.grow(dOrd[:n], ds, 2*ld)
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
	// At most MaxRagged ragged dims outside either side's runs: cut the
	// others to a divisor of their extent.
	for {
		src, dst := BoxSides(shape, ds, ss, out)
		_, _, okS := BoxRagged(shape, out, &src)
		_, _, okD := BoxRagged(shape, out, &dst)
		if okS && okD {
			break
		}
		for k := n - 1; k >= 0; k-- {
			if ragged(shape[k], out[k]) {
				out[k] = largestDivisor(shape[k], out[k])
				break
			}
		}
	}
	return out
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
// and every dim sorted by |stride| in each view (sortedDims), from which
// the tile's sides follow without sorting again.
type tileChooser struct {
	t, shape, ds, ss []int64
	item, capE, vol  int64
	sDims, dDims     []int8
}

// sharedBytes is the shared memory of the tile so far (BoxSharedBytes).
func (c *tileChooser) sharedBytes() int64 {
	var src, dst BoxSide
	sideFromOrder(&src, c.sDims, c.shape, c.ss, c.t)
	sideFromOrder(&dst, c.dDims, c.shape, c.ds, c.t)
	return BoxSharedBytes(src, dst, c.t, c.item, 8)
}

// runLen returns the elements of the run of the side whose dims by
// |stride| are ord, for the current extents: the same rule as BoxSide, but
// over all dims in ord (extent-1 tile dims included, which the walk passes
// only when they are whole).
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
	if c.sharedBytes() > MaxBoxSharedBytes {
		// Try the largest extent that fits, halving.
		lo, hi := old, e
		for hi-lo > 1 {
			m := (lo + hi) / 2
			c.t[k] = m
			if c.sharedBytes() > MaxBoxSharedBytes {
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

// BoxGeometry is everything about a ClassBoxTile plan's tile that the
// kernel's arguments derive from, computed once when the plan is made
// (PlanCopy): the two sides, the shared-memory weights of the src slots,
// the ragged dims of each side and the shared-memory layout.
type BoxGeometry struct {
	Src, Dst BoxSide
	// W is, for each canonical dim, the shared-memory bytes one index step
	// moves (BoxSrcWeights; 0 for dims outside the tile).
	W [MaxBoxNDim]int64
	// C0 is the shared-memory base of every dst run relative to its slot:
	// (RunLen-1)·item for reversed src runs, else 0.
	C0 int64
	// RaggedSrc, LastSrc, RaggedDst and LastDst are BoxRagged's answers
	// for each side.
	RaggedSrc, RaggedDst [MaxRagged]int
	LastSrc, LastDst     int
	// Shared is the shared-memory layout (BoxSharedLayout) for the plan's
	// index width.
	Shared BoxShared
}

// boxGeometry fills p.Box for a ClassBoxTile plan whose index width is set.
func boxGeometry(p *Plan) {
	g := &p.Box
	item := int64(p.Sig.Itemsize)
	g.Src, g.Dst = BoxSides(p.Shape, p.DstStrides, p.SrcStrides, p.Tile)
	g.W = [MaxBoxNDim]int64{}
	BoxSrcWeights(&g.Src, p.SrcStrides, p.Tile, item, g.W[:len(p.Tile)])
	g.C0 = 0
	if g.Src.Step == -1 {
		g.C0 = (g.Src.RunLen - 1) * item
	}
	// chooseTile never makes a tile with more than MaxRagged ragged dims
	// on a side (BoxRagged's ok), so the answers are complete.
	g.RaggedSrc, g.LastSrc, _ = BoxRagged(p.Shape, p.Tile, &g.Src)
	g.RaggedDst, g.LastDst, _ = BoxRagged(p.Shape, p.Tile, &g.Dst)
	idx := int64(4)
	if p.Sig.Index64 {
		idx = 8
	}
	g.Shared = BoxSharedLayout(g.Src, g.Dst, p.Tile, item, idx)
}
