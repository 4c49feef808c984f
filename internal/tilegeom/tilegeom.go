// Package tilegeom is the geometry of the tiles that the tiled copy kernels
// stage in shared memory: what the copy planner (package layout) sizes a
// tile by and what the kernel generator (package gen) packs into a kernel's
// arguments. It is internal: users see only a plan's class, signature and
// Tile extents.
//
// # The vector tile
//
// A ClassTile kernel's tile has Rows × Cols elements (TileEdges), Rows along
// dst's fast dim and Cols along src's fast dim.
//
// # The box tile
//
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
//
// The planner chooses the tile's extents and computes its BoxGeometry once,
// with the plan (layout.Plan's Box field); gen packs it.
package tilegeom

// TileEdges returns the edges of the ClassTile kernel's tile for elements of
// item bytes moved in vectors of vec: rows along dst's fast dim, columns
// along src's fast dim. Tiles hold 4–32 KiB, so every thread keeps several
// 16-byte loads in flight and a micro-tile's register transpose fits.
func TileEdges(item, vec int) (rows, cols int) {
	switch vb := item * vec; {
	case vec >= 16:
		return 128, 128
	case vec == 8:
		return 64, 128
	case vec == 4:
		return 64, 64
	case vec == 2 && vb <= 8:
		return 64, 64
	case vb == 12:
		return 64, 64
	}
	return 32, 32
}

// MaxBoxNDim is the most canonical dims a box tile may have (layout's
// MaxBoxNDim, which layout checks equal to this at compile time).
const MaxBoxNDim = 16

// MaxBoxSharedBytes is the shared memory a box tile may use, data and run
// tables together: what every CUDA device gives a block without opting in.
const MaxBoxSharedBytes = 48 << 10

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
	// Span is, for a side with Holes, the elements a run's load covers,
	// from its lowest element to its highest (0 otherwise: LoadLen).
	Span int64
	// Holes marks a src side whose runs are spans (SpanSide): a run's dims
	// need not continue each other in memory, and the kernel loads the
	// Span elements from its lowest whole, the bytes between its elements
	// included (Step is 1).
	Holes bool
}

// BoxSides returns the src and dst sides of the box tile tile over a
// canonical form (the slices of a plan: Shape, DstStrides, SrcStrides, Tile).
func BoxSides(shape, ds, ss, tile []int64) (src, dst BoxSide) {
	sideOf(&src, shape, ss, tile)
	sideOf(&dst, shape, ds, tile)
	return src, dst
}

func sideOf(b *BoxSide, shape, strides, tile []int64) {
	var ord [MaxBoxNDim]int8
	SideFromOrder(b, SortedDims(ord[:0], strides[:len(tile)]), shape, strides, tile)
}

// SortedDims appends to ord the dims of strides by |stride| ascending, the
// later dim first among equals (BoxSide.Order's rule), and returns it.
func SortedDims(ord []int8, strides []int64) []int8 {
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

// SideFromOrder sets b to the side of the box tile tile in the view with
// these strides, given all of the view's dims already sorted (SortedDims):
// the tile dims among them, in that order, and the side's runs. A caller
// that sizes a tile step by step sorts once and calls it for each step.
func SideFromOrder(b *BoxSide, ord []int8, shape, strides, tile []int64) {
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

// SpanSide sets b to the src side of the box tile tile whose runs take, by
// |stride|, every next tile dim whose stride is at most twice the span of
// the run so far (SideFromOrder's run dims, and more where a step, a flip
// or a slice stops the run short), as long as the run's span stays under
// twice its elements: the holes between them are the bytes the tile's
// sectors hold anyway. It reports whether the run took more dims than
// SideFromOrder's; if not, b is SideFromOrder's side. lo is the offset in
// elements of a run's lowest element from its first (at or below 0).
func SpanSide(b *BoxSide, ord []int8, shape, strides, tile []int64) (lo int64, ok bool) {
	SideFromOrder(b, ord, shape, strides, tile)
	plain := b.NRun
	var hi int64
	elems, n := int64(1), 0
	for ; n < b.NDims; n++ {
		k := b.Order[n]
		st, t := strides[k], tile[k]
		span := hi - lo + 1
		if st == 0 || n > 0 && int64(uabs(st)) > 2*span {
			break
		}
		ext := (t - 1) * st
		nlo, nhi := lo+min(ext, 0), hi+max(ext, 0)
		if nhi-nlo+1 > 2*elems*t {
			break
		}
		lo, hi, elems = nlo, nhi, elems*t
	}
	if n <= plain {
		return 0, false // b is still SideFromOrder's side
	}
	b.NRun, b.RunLen, b.Runs = n, elems, b.Runs*b.RunLen/elems
	b.Span, b.Step, b.Holes = hi-lo+1, 1, true
	return lo, true
}

// LoadLen returns the elements the kernel loads a run as: Span for a side
// with Holes, else RunLen.
func (b *BoxSide) LoadLen() int64 {
	if b.Holes {
		return b.Span
	}
	return b.RunLen
}

// The src runs' slots are laid out at a grain: every slot's shared-memory
// address equals its src address modulo the grain, up to one phase common
// to the tile, so a contiguous run moves as the aligned grains that cover
// it. WordGrain (4-byte cp.async words) also keeps every step between slots
// an odd number of 4-byte words, so that the store phase's threads, which
// read consecutive elements of a dst run one such step apart, fall in 32
// different banks. ChunkGrain (16-byte cp.async chunks, a quarter of the
// copies) cannot keep that in general: a step of U + (src stride·item mod
// 16) with U a multiple of 16 has an odd number of words only where the
// stride's remainder does, so the planner takes it where the store phase's
// reads meet no more bank conflicts than at WordGrain.
const (
	WordGrain  = 4
	ChunkGrain = 16
)

// BoxRunPitch returns the first step between src run slots in shared
// memory for runs of runLen elements of item bytes laid out at grain
// (WordGrain or ChunkGrain): room for the run's bytes plus the grain that a
// run starting at any address modulo the grain may add, a multiple of the
// grain; at WordGrain one whose quarter is odd, so that neighbouring slots
// start in different banks; at ChunkGrain an odd number of chunks, so that
// the chunks of 8 neighbouring slots land in 8 different groups of 4 banks.
func BoxRunPitch(runLen, item, grain int64) int64 {
	if grain == ChunkGrain {
		return oddChunks((runLen*item+ChunkGrain-1)&^(ChunkGrain-1) + ChunkGrain)
	}
	return oddWords((runLen*item+3)&^3 + 4)
}

// nextPitch returns the step U_{i+1} between slots along the next dim
// outside the runs, from the step U_i of t slots along the previous one
// (each slot step of that dim up to a grain more than U_i).
func nextPitch(t, u, grain int64) int64 {
	if grain == ChunkGrain {
		return oddChunks(t * (u + ChunkGrain))
	}
	return oddWords(t * (u + 4))
}

// oddChunks returns the multiple of 16 u, or u+16 where u/16 is even: a
// step of an odd number of 16-byte chunks, so that a warp's 16-byte copies
// into 8 neighbouring slots fall in 8 different groups of 4 banks.
func oddChunks(u int64) int64 {
	if (u/16)%2 == 0 {
		return u + 16
	}
	return u
}

// oddWords returns the multiple of 4 u, or u+4 where u/4 is even: a step
// of an odd number of 4-byte words, so that 32 consecutive steps fall in
// 32 different shared-memory banks (the store phase's threads read
// consecutive elements of a dst run, which may lie one such step apart).
func oddWords(u int64) int64 {
	if (u/4)%2 == 0 {
		return u + 4
	}
	return u
}

// BoxSrcWeights lays out a box tile's src runs in shared memory at grain
// (WordGrain or ChunkGrain): it sets w[k], for each tile dim k of the src
// side, to the bytes one index step of k moves in shared memory, and
// returns the bytes the tile's data takes. Within a run elements follow
// each other (reversed runs: backwards from the run's last slot byte; a
// span's, Holes, as in src: ss[k]·item apart along its dims k);
// from run to run the step along the i-th dim outside the runs is U_i +
// (ss[k]·item mod grain), U_1 = BoxRunPitch and U_{i+1} = t_i·(U_i +
// grain), at WordGrain each rounded up to an odd number of words
// (oddWords). A slot's address then equals its src address modulo the
// grain up to one phase common to the whole tile, so a run moves as the
// aligned grains that cover it, and no two slots' grains overlap. ss may
// be nil for the size alone (the weights then are not set).
func BoxSrcWeights(src *BoxSide, ss, tile []int64, item, grain int64, w []int64) int64 {
	x := item
	if src.Step == -1 {
		x = -item
	}
	for i := 0; i < src.NRun; i++ {
		k := src.Order[i]
		if w != nil {
			w[k] = x
			if src.Holes {
				w[k] = ss[k] * item
			}
		}
		x *= tile[k]
	}
	u := BoxRunPitch(src.LoadLen(), item, grain)
	for i := src.NRun; i < src.NDims; i++ {
		k := src.Order[i]
		if w != nil {
			w[k] = u + ((ss[k]*item)%grain+grain)%grain
		}
		u = nextPitch(tile[k], u, grain)
	}
	return u + grain
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
// the tile tile with these sides, elements of item bytes, src slots at
// grain and indices of idxBytes (4 or 8).
func BoxSharedLayout(src, dst BoxSide, tile []int64, item, grain, idxBytes int64) BoxShared {
	al := func(x int64) int64 { return (x + 15) &^ 15 }
	var l BoxShared
	l.G = al(BoxSrcWeights(&src, nil, tile, item, grain, nil))
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
func BoxSharedBytes(src, dst BoxSide, tile []int64, item, grain, idxBytes int64) int64 {
	return BoxSharedLayout(src, dst, tile, item, grain, idxBytes).Total
}

// BoxSharedBytesSorted is BoxSharedBytes of the tile tile at grain for idxBytes of 8,
// from both views' dims already sorted by |stride| (SortedDims of ss and
// ds) rather than from their sides: one pass over each view's dims, for
// the planner, which sizes a tile by trying extents one after another.
func BoxSharedBytesSorted(sOrd, dOrd []int8, shape, ds, ss, tile []int64, item, grain int64) int64 {
	al := func(x int64) int64 { return (x + 15) &^ 15 }
	_, sRuns, g := sideSize(sOrd, shape, ss, tile, item, grain)
	dLen, dRuns, _ := sideSize(dOrd, shape, ds, tile, item, grain)
	return al(g) + al(sRuns*8) + al(dRuns*8) + al(dRuns*4) + al(dLen*4) + al(sRuns*8) + al(dRuns*8) + al(sRuns*4)
}

// BoxSharedBytesCut is BoxSharedBytesSorted for a tile whose dst runs
// CutDstRuns cuts where it does not fit as it stands.
func BoxSharedBytesCut(sOrd, dOrd []int8, shape, ds, ss, tile []int64, item, grain int64) int64 {
	var src, dst BoxSide
	SideFromOrder(&src, sOrd, shape, ss, tile)
	SideFromOrder(&dst, dOrd, shape, ds, tile)
	CutDstRuns(&dst, &src, shape, tile, item)
	return BoxSharedBytes(src, dst, tile, item, grain, 8)
}

// minCutDst is the shortest dst run, in elements and in bytes, that
// CutDstRuns leaves.
const minCutDst = 64

// CutDstRuns cuts the runs of dst, the dst side of a box tile whose src
// side is src (SideFromOrder's, not spans or cut runs), after fewer of
// their dims where the tile's shared memory (BoxSharedBytes at WordGrain
// with 8-byte indices, as the planner sizes tiles) does not fit
// MaxBoxSharedBytes as it stands: after the most dims that make it fit
// with runs of minCutDst elements and bytes or more and at most MaxRagged
// ragged dims outside them. It reports whether it cut the runs.
//
// The element table holds an entry for each element of a dst run, so a
// tile whose dst run spans it (a batched transpose whose dst rows
// continue each other) needs 4 bytes of table for each element of data:
// such tiles stopped growing at a fraction of the tile size, with runs
// cut in the middle of the view's rows. Cut after their first dims, the
// runs' table shrinks to a row; the rows still follow each other in dst,
// written by the same tile. Runs under minCutDst elements leave lanes of
// the store phase idle (a warp a run). The planner sizes a tile with cut
// dst runs only where the tile it sizes without them is not one run on
// both sides (layout's chooseTile).
func CutDstRuns(dst, src *BoxSide, shape, tile []int64, item int64) bool {
	if dst.NRun < 2 || BoxSharedBytes(*src, *dst, tile, item, WordGrain, 8) <= MaxBoxSharedBytes {
		return false
	}
	for n := dst.NRun - 1; n >= 1; n-- {
		c := dst.cutAfter(tile, n)
		if c.RunLen < minCutDst || c.RunLen*item < minCutDst {
			return false
		}
		if _, _, ok := BoxRagged(shape, tile, &c); ok && BoxSharedBytes(*src, c, tile, item, WordGrain, 8) <= MaxBoxSharedBytes {
			*dst = c
			return true
		}
	}
	return false
}

// cutAfter returns side b of the box tile tile with its runs cut after
// their first n dims (1 ≤ n ≤ b.NRun): shorter runs, more of them, the
// same elements.
func (b *BoxSide) cutAfter(tile []int64, n int) BoxSide {
	c := *b
	c.NRun, c.RunLen = n, 1
	for _, k := range c.Order[:n] {
		c.RunLen *= tile[k]
	}
	c.Runs = b.RunLen * b.Runs / c.RunLen
	return c
}

// sideSize returns, for the side of the tile in the view whose dims by
// |stride| are ord, its run length and runs (SideFromOrder's RunLen and
// Runs) and the bytes its src slots take (BoxSrcWeights's result, were it
// the src side).
func sideSize(ord []int8, shape, strides, tile []int64, item, grain int64) (runLen, runs, g int64) {
	runLen, runs = 1, 1
	prev, inRun := -1, true
	var u int64
	for _, k8 := range ord {
		k := int(k8)
		t := tile[k]
		if t <= 1 {
			continue
		}
		if inRun {
			if prev < 0 || (tile[prev] == shape[prev] && strides[k] == strides[prev]*shape[prev]) {
				runLen *= t
				prev = k
				continue
			}
			inRun = false
			u = BoxRunPitch(runLen, item, grain)
		}
		runs *= t
		u = nextPitch(t, u, grain)
	}
	if inRun {
		u = BoxRunPitch(runLen, item, grain)
	}
	return runLen, runs, u + grain
}

// MaxRagged is the most ragged dims a box tile may have outside a side's
// runs (the kernel keeps a run's coordinates along them in 16 bits each).
const MaxRagged = 4

// Ragged reports whether the tile's extent t along a dim of extent n leaves
// a short last tile.
func Ragged(n, t int64) bool { return t > 1 && n%t != 0 }

// BoxRagged returns, for one side of a box tile, its ragged dims (tile dims
// whose extent does not divide the view's, so the last tile along them is
// short) outside the side's runs, padded with -1, and its last run dim if
// that is ragged (else -1). ok is false when there are more than MaxRagged
// such dims (the planner never makes such a tile).
func BoxRagged(shape, tile []int64, b *BoxSide) (rg [MaxRagged]int, last int, ok bool) {
	for i := range rg {
		rg[i] = -1
	}
	last = -1
	if b.NRun > 0 && !b.Holes { // a span loads whole, its last dim ragged or not
		if k := int(b.Order[b.NRun-1]); Ragged(shape[k], tile[k]) {
			last = k
		}
	}
	n := 0
	for i := b.NRun; i < b.NDims; i++ {
		k := int(b.Order[i])
		if !Ragged(shape[k], tile[k]) {
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

// BoxGeometry is everything about a box tile that the kernel's arguments
// derive from, computed once when the plan is made (layout.PlanCopy, into
// the plan's Box field): the two sides, the shared-memory weights of the
// src slots, the ragged dims of each side and the shared-memory layout.
type BoxGeometry struct {
	Src, Dst BoxSide
	// W is, for each canonical dim, the shared-memory bytes one index step
	// moves (BoxSrcWeights; 0 for dims outside the tile).
	W [MaxBoxNDim]int64
	// C0 is the shared-memory offset of a src run's first element from its
	// slot's lowest byte: (RunLen-1)·item for reversed src runs, -lo·item
	// for spans (SpanSide), else 0. The kernel finds a run's lowest byte
	// C0 below its first element's.
	C0 int64
	// RaggedSrc, LastSrc, RaggedDst and LastDst are BoxRagged's answers
	// for each side.
	RaggedSrc, RaggedDst [MaxRagged]int
	LastSrc, LastDst     int
	// Shared is the shared-memory layout (BoxSharedLayout) for the plan's
	// index width.
	Shared BoxShared
	// Grain is the grain the src slots are laid out at (WordGrain or
	// ChunkGrain; BoxSrcWeights).
	Grain int64
}

// Set sets g to the geometry of the box tile tile over a canonical form
// (shape, dst and src strides in elements of item bytes), its src slots at
// grain, for indices of 64 bits if index64, else 32. The tile must have at
// most MaxRagged ragged dims outside either side's runs (BoxRagged's ok),
// as the planner's tiles do; else the ragged answers are incomplete.
func (g *BoxGeometry) Set(shape, ds, ss, tile []int64, item, grain int64, index64 bool) {
	g.Src, g.Dst = BoxSides(shape, ds, ss, tile)
	CutDstRuns(&g.Dst, &g.Src, shape, tile, item)
	g.set(shape, ss, tile, item, grain, index64, 0)
}

// SetSpans is Set with the src side's runs as spans (SpanSide) where that
// lengthens them; it reports whether it did.
func (g *BoxGeometry) SetSpans(shape, ds, ss, tile []int64, item, grain int64, index64 bool) bool {
	var ord [MaxBoxNDim]int8
	lo, ok := SpanSide(&g.Src, SortedDims(ord[:0], ss[:len(tile)]), shape, ss, tile)
	sideOf(&g.Dst, shape, ds, tile)
	plain := g.Src
	if ok {
		SideFromOrder(&plain, ord[:len(tile)], shape, ss, tile)
	}
	CutDstRuns(&g.Dst, &plain, shape, tile, item)
	g.set(shape, ss, tile, item, grain, index64, lo)
	return ok
}

// CutSrcRuns sets g to Set's geometry with the src runs cut after their
// first n dims (1 ≤ n < the plain side's NRun): shorter runs, more of
// them, each slot padded apart as runs are (BoxSrcWeights), so that a dim
// whose step inside the longer run put a dst run's elements in few
// shared-memory banks steps by an odd number of words instead. It reports
// false, leaving g as Set would, where n is out of range or the cut leaves
// more than MaxRagged ragged dims outside the src runs.
func (g *BoxGeometry) CutSrcRuns(shape, ds, ss, tile []int64, item, grain int64, index64 bool, n int) bool {
	g.Src, g.Dst = BoxSides(shape, ds, ss, tile)
	CutDstRuns(&g.Dst, &g.Src, shape, tile, item)
	ok := n >= 1 && n < g.Src.NRun
	if ok {
		cut := g.Src.cutAfter(tile, n)
		if _, _, ok = BoxRagged(shape, tile, &cut); ok {
			g.Src = cut
		}
	}
	g.set(shape, ss, tile, item, grain, index64, 0)
	return ok
}

// set is Set's and SetSpans's rest, for sides already set and a span's
// lowest element lo.
func (g *BoxGeometry) set(shape, ss, tile []int64, item, grain int64, index64 bool, lo int64) {
	g.Grain = grain
	g.W = [MaxBoxNDim]int64{}
	BoxSrcWeights(&g.Src, ss, tile, item, grain, g.W[:len(tile)])
	g.C0 = -lo * item
	if g.Src.Step == -1 {
		g.C0 = (g.Src.RunLen - 1) * item
	}
	g.RaggedSrc, g.LastSrc, _ = BoxRagged(shape, tile, &g.Src)
	g.RaggedDst, g.LastDst, _ = BoxRagged(shape, tile, &g.Dst)
	idx := int64(4)
	if index64 {
		idx = 8
	}
	g.Shared = BoxSharedLayout(g.Src, g.Dst, tile, item, grain, idx)
}

// uabs is |x| as a uint64 (math.MinInt64 included).
func uabs(x int64) uint64 {
	if x < 0 {
		return uint64(-x)
	}
	return uint64(x)
}
