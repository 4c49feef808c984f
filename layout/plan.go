package layout

import (
	"fmt"

	"github.com/stridekit/stridekit/internal/tilegeom"
)

// PlanOptions carries what the planner cannot see in the layouts: how the
// buffers are aligned in memory, and how large a box tile may be. Alignment
// decides how wide the element and the vector accesses of a plan may be.
type PlanOptions struct {
	// DstAlign and SrcAlign are the byte alignments known for the lowest
	// byte of the dst and src views (see the pointer convention in the
	// package doc). Each must be 0 or a power of two; 0 assumes only the
	// natural alignment of the itemsize (its largest power-of-two divisor,
	// at most 16). Values above 16 are treated as 16.
	DstAlign, SrcAlign int
	// TileBytes is the most bytes of data a ClassBoxTile tile may hold (the
	// kernel stages one tile in shared memory); 0 means DefaultTileBytes.
	// Values are clamped to [MinTileBytes, MaxTileBytes].
	TileBytes int
	// LoadGrain is the grain a ClassBoxTile plan lays its src runs out at
	// in shared memory (tilegeom.BoxSrcWeights): 0 or 4 for 4-byte words,
	// 16 for 16-byte chunks where the plan allows them without bank
	// conflicts in the store phase (boxGeometry). The kernel loads the runs
	// in grains of that size where it is specialised to the plan, in words
	// otherwise.
	LoadGrain int
	// TripleStore is the shortest contiguous dst run, in bytes, that the
	// kernel of a ClassBoxTile plan of 3-byte items writes in groups of
	// three words (the kernel tuning's TripleStore; 0: none). The planner
	// re-plans such a tile in bytes only where its dst runs are shorter
	// (splitTriples): a tile of 3-byte items whose kernel stores them item
	// by item is slower than the same tile in bytes.
	TripleStore int
	// CutSrcRuns lets a ClassBoxTile plan cut its src runs after fewer of
	// the dims they span (tilegeom.BoxGeometry.CutSrcRuns) where the step
	// of a dst run inside the longer run puts the store phase's
	// shared-memory reads in few banks: where the cut at least halves
	// their wavefronts and leaves src runs of at least CutSrcRuns bytes
	// (any length where the reads are 16-way conflicted; cutSrcRuns; 0:
	// never), in copies of 1 MiB or more: below, a copy's time is its
	// launch's, and weighing the cuts would double its planning time. The
	// kernel tuning's CutRuns knob.
	CutSrcRuns int
	// ElemRunBytes is the shortest run, in bytes, contiguous in both views
	// for which a transposing copy is planned as ClassElementwise; 0 means
	// the package's ElemRunBytes. For callers whose measurements were made
	// at another bound (memview's copies between GPUs keep 64).
	ElemRunBytes int
	// Gather plans a copy that would be ClassElementwise, ClassTile or
	// ClassBoxTile as ClassGather: dst written in its own order, whole
	// lines of a dense dst, src read scattered. For copies whose writes
	// cost more than their reads, such as a dst across a peer link; a
	// local copy is faster through the classes PlanCopy picks itself.
	Gather bool
}

// TileMinExtent is the smallest extent that both fast dims of a transposing
// copy (dst's fastest dim and src's fastest dim) must have for PlanCopy to
// pick ClassTile; below it a tile would be mostly empty, and the plan is
// ClassBoxTile instead, which folds several dims into each side of a tile.
const TileMinExtent = 16

// ElemRunBytes is the shortest run, in bytes, contiguous in both views for
// which a transposing copy is planned as ClassElementwise (each thread moves
// whole 16-byte pieces of the run, every 32-byte sector is used whole);
// shorter common runs (the 3 bytes of an interleaved RGB pixel, say) go
// through a box tile, where each side is accessed in long runs. Measured on
// an H200 (random permutations of 256 MiB, both rules in one call, ABBA):
// the copies with common runs of 84-144 bytes ran 1.02-1.17 times as fast
// as box tiles (7 copies, 4-, 8- and 16-byte elements; an 8-byte 5-d
// permutation 76.8 → 90.0% of memcpy), those of 168-236 bytes 0.98-1.01
// and those of 392 bytes or more 0.93-0.97, so runs under 160 bytes go to
// the box tile (it was 64). Those copies were permutations of dense arrays,
// whose box tiles lengthen both views' runs past the common one; where a
// step or a slice leaves a view no dim that continues the run, runs of 64
// bytes or more stay elementwise.
const ElemRunBytes = 160

// Limits of a box tile's size, in bytes of data.
const (
	DefaultTileBytes = 16 << 10
	MinTileBytes     = 1 << 10
	MaxTileBytes     = 32 << 10
)

// PlanCopy plans the copy of every element of src into the element of dst at
// the same index. src must have dst's shape or be broadcastable to it by
// NumPy's rules (dims aligned at the end, src extents of 1 repeat); the
// itemsizes must be equal; dst must be unique (no two indices at one
// offset). It fails with ErrShape, ErrItemsize, ErrOverlappingDst or
// ErrAlignment, wrapped in a message naming the argument.
//
// The plan is the joint canonical form of the two views, made by a pipeline
// of small steps (plan_steps.go), each with its pre- and post-conditions
// documented and property-tested:
//
//  1. joinDims: one list of dims with a dst and a src stride each (src
//     dims of extent 1 broadcast with stride 0), extent-1 dims dropped.
//  2. flipDims: dims negative in dst and negative or zero in src are
//     reversed in both views (a dim negative in one view only keeps its
//     signs).
//  3. orderDims: dims ordered by |dst stride|, slowest first (stable).
//  4. coalesce: adjacent dims contiguous in both views merged (zero src
//     strides included).
//  5. checkUnique: dst must not address one element twice.
//  6. recut: when the innermost dim has unit stride in both views, its
//     bytes and the item bytes are re-cut into the widest power-of-two
//     element of at most 16 bytes that divides the run, every other byte
//     stride, both offsets and both alignments; items over 16 bytes, or
//     whose natural alignment is not available, are split into an inner
//     unit-stride dim of such elements. Items of 3, 5, 6, 7 and 9..15
//     bytes outside a contiguous run stay opaque elements.
//  7. foldRun: a transposition whose innermost dim is a run of 3 bytes
//     contiguous in both views (an interleaved RGB image) becomes one of
//     3-byte items where the vector tile then takes it.
//  8. classify: the class, and its vector width or tile (below).
//  9. fitsInt32: 32-bit index arithmetic where every offset fits.
//
// # Classes
//
// Checked in this order:
//   - ClassNone: dst has no elements (Shape empty, Sig.NDim 0).
//   - ClassMemcpy: one canonical dim with unit stride in both views (a single
//     element is such a plan too). Bytes contiguous bytes at each offset.
//   - ClassFill: every src stride is 0. ClassBroadcast: some src stride is 0.
//   - ClassElementwise: the dims ordered by |src stride| are in the same
//     order as by |dst stride| (no transposition: slices, flips, strided
//     views), or the innermost dim is contiguous in both views for at least
//     PlanOptions.ElemRunBytes bytes (default ElemRunBytes; 64 where no dim
//     of one view continues that run, so that a box tile could not
//     lengthen it) and its element has at least 4 bytes (each thread moves
//     long runs in wide pieces), or the canonical form has more than
//     MaxBoxNDim dims.
//   - ClassTile: a transposition whose dst fast dim (NDim-1, dst stride 1)
//     and src fast dim Fast (src stride 1) both fill the tile kernel's tiles
//     (32 to 128 elements a side, by vector width; each extent fills at
//     least five eighths of the tiles that cover it) and allow vectors of
//     at least 8 bytes on both sides (4 for items of 1 and 2 bytes): the
//     tiled kernel with vector accesses and register transposes.
//   - ClassBoxTile: every other transposition. Tile holds, per canonical
//     dim, the extent of the box the kernel stages in shared memory; several
//     dims may be folded into each side so that both views are accessed in
//     long runs. A box tile of 3-byte items whose runs are short (dst runs
//     of 512 bytes or less, forward in both views) in a copy of 1 MiB or
//     more is planned in bytes instead, under an innermost dim of 3.
//   - ClassGather: with opt.Gather, in place of the three classes above.
//
// # Guarantees a kernel may rely on
//
//   - len(Shape) == len(DstStrides) == len(SrcStrides) == Sig.NDim (NDim
//     saturates at 255 for larger canonical forms; len(Shape) is exact),
//     every extent ≥ 1, dims ordered by |dst stride| descending.
//   - Strides count elements of Sig.Itemsize bytes, signed; only src strides
//     can be 0. DstOffset and SrcOffset are byte offsets, multiples of
//     Sig.Itemsize, from the lowest byte of each view (the buffer convention
//     of the package doc), and every element offset Offset/Itemsize +
//     Σ i_k·Stride_k of either view lies in [0, Span/Itemsize) of that view,
//     where DstSpan and SrcSpan are the views' RequiredSizeInBytes.
//   - Alignment: with the alignments of opt, the address of every element of
//     either view is a multiple of the largest power of two dividing
//     Sig.Itemsize (all of it when Itemsize is a power of two).
//   - Vec is 1 for ClassMemcpy, ClassElementwise, ClassBoxTile and
//     ClassGather: widening
//     has already put up to 16 bytes into each element of a run contiguous
//     in both views.
//   - ClassTile: DstStrides[NDim-1] == 1, SrcStrides[Fast] == 1,
//     SrcStrides[NDim-1] != 1, Fast is the slowest canonical dim with src
//     stride 1, Shape[NDim-1] and Shape[Fast] ≥ TileMinExtent, no src stride
//     is 0, and Vec·Itemsize ≥ 8 (≥ 4 for Itemsize < 4): Vec divides
//     Shape[NDim-1] and Shape[Fast]; every dst stride but
//     DstStrides[NDim-1], and every src stride but
//     SrcStrides[Fast], is a multiple of Vec; DstOffset and SrcOffset are
//     multiples of the largest power of two dividing Vec·Itemsize (all of it
//     where Itemsize is a power of two; 4 for the 12-byte vectors of 3-byte
//     items, the one other Itemsize the tile takes, with Vec 4), and so are
//     both buffer alignments. So dst is accessed in vectors along dim
//     NDim-1 and src along dim Fast.
//   - ClassBoxTile: NDim ≤ MaxBoxNDim, no src stride is 0, len(Tile) ==
//     NDim with 1 ≤ Tile[k] ≤ Shape[k], and the tile's data (the product of
//     Tile times Itemsize) and its run tables fit the 48 KiB of shared
//     memory a block gets without opting in.
//   - ClassBroadcast and ClassFill, Vec > 1: DstStrides[NDim-1] == 1 and
//     SrcStrides[NDim-1] == 0; Vec divides Shape[NDim-1]; every other dst
//     stride is a multiple of Vec; DstOffset and the dst alignment are
//     multiples of Vec·Itemsize. dst is written in vectors of one repeated src
//     element; src is read as scalars.
//   - Index64 is false only when Volume and every element offset of either
//     view are at most math.MaxInt32.
//
// The signature holds no extent, stride, offset or tile, so pairs that
// differ only in those (and keep the same canonical ndim, class, element and
// vector width) share a Signature and thus a kernel.
func PlanCopy(dst, src Layout, opt PlanOptions) (Plan, error) {
	var p Plan
	err := PlanCopyInto(&p, dst, src, opt)
	return p, err
}

// PlanCopyInto is PlanCopy writing into p and reusing its slices, so a caller
// that plans in a loop allocates nothing once the slices have grown (for
// ndim ≤ 8 a reused Plan needs no allocation). On error p is reset to an
// empty ClassNone plan and the error is returned.
func PlanCopyInto(p *Plan, dst, src Layout, opt PlanOptions) error {
	err := planCopy(p, dst, src, opt)
	if err != nil {
		p.reset()
	}
	return err
}

// Transposes reports whether the plan's dims ordered by |src stride|
// differ from their order by |dst stride| (the canonical dims are in dst's
// order): only then does the copy need a kernel that reads both views in
// runs.
func (p *Plan) Transposes() bool { return outOfOrder(p.SrcStrides) }

func (p *Plan) reset() {
	p.Sig = Signature{Class: ClassNone, Vec: 1}
	p.Shape = p.Shape[:0]
	p.DstStrides = p.DstStrides[:0]
	p.SrcStrides = p.SrcStrides[:0]
	p.Tile = p.Tile[:0]
	p.DstOffset, p.SrcOffset, p.Volume, p.Bytes = 0, 0, 0, 0
	p.DstSpan, p.SrcSpan = 0, 0
	p.Box = nil
}

func checkAlign(name string, a int) error {
	if a < 0 || a&(a-1) != 0 {
		return fmt.Errorf("%w: %s = %d is not 0 or a power of two", ErrAlignment, name, a)
	}
	return nil
}

// checkPair validates the views and options of a copy.
func checkPair(dst, src Layout, opt PlanOptions) error {
	if err := checkAlign("PlanOptions.DstAlign", opt.DstAlign); err != nil {
		return err
	}
	if err := checkAlign("PlanOptions.SrcAlign", opt.SrcAlign); err != nil {
		return err
	}
	if opt.TileBytes < 0 {
		return fmt.Errorf("%w: PlanOptions.TileBytes = %d is negative", ErrOption, opt.TileBytes)
	}
	if opt.CutSrcRuns < 0 {
		return fmt.Errorf("%w: PlanOptions.CutSrcRuns = %d is negative", ErrOption, opt.CutSrcRuns)
	}
	if opt.ElemRunBytes < 0 {
		return fmt.Errorf("%w: PlanOptions.ElemRunBytes = %d is negative", ErrOption, opt.ElemRunBytes)
	}
	if g := opt.LoadGrain; g != 0 && g != tilegeom.WordGrain && g != tilegeom.ChunkGrain {
		return fmt.Errorf("%w: PlanOptions.LoadGrain = %d is not 0, 4 or 16", ErrOption, g)
	}
	if dst.itemsize != src.itemsize {
		return fmt.Errorf("%w: dst itemsize %d differs from src itemsize %d", ErrItemsize, dst.itemsize, src.itemsize)
	}
	if dst.itemsize <= 0 {
		return fmt.Errorf("%w: dst itemsize %d must be positive (zero Layout?)", ErrItemsize, dst.itemsize)
	}
	nd, ns := len(dst.shape), len(src.shape)
	if ns > nd {
		return fmt.Errorf("%w: src shape %v has more dims than dst shape %v", ErrShape, src.shape, dst.shape)
	}
	for j := 0; j < ns; j++ {
		es, ed := src.shape[j], dst.shape[nd-ns+j]
		if es != ed && es != 1 {
			return fmt.Errorf("%w: src shape %v cannot be broadcast to dst shape %v (src dim %d: %d vs %d)", ErrShape, src.shape, dst.shape, j, es, ed)
		}
	}
	return nil
}

func planCopy(p *Plan, dst, src Layout, opt PlanOptions) error {
	if err := checkPair(dst, src, opt); err != nil {
		return err
	}
	box := p.Box // reused by a box tile's plan
	p.reset()
	item := int64(dst.itemsize)
	if dst.Volume() == 0 {
		p.Sig.Itemsize = uint8(min(item, MaxVectorBytes))
		return nil
	}
	p.DstSpan, p.SrcSpan = dst.RequiredSizeInBytes(), src.RequiredSizeInBytes()
	j := joinDims(p, dst, src)
	flipDims(&j)
	orderDims(&j)
	coalesce(&j)
	if err := checkUnique(&j, dst); err != nil {
		return err
	}
	if j.n() == 0 { // a single element
		j.shape, j.ds, j.ss = append(j.shape, 1), append(j.ds, 1), append(j.ss, 1)
	}
	aD, aS := alignOf(opt.DstAlign, item), alignOf(opt.SrcAlign, item)
	recut(&j, aD, aS)
	if !opt.Gather && transposing(&j) {
		foldRun(&j, aD, aS)
	}
	classifyJoint(p, &j, aD, aS, opt)
	if splitTriples(p, &j, int64(opt.TripleStore)) {
		classifyJoint(p, &j, aD, aS, opt)
	}
	p.Sig.Index64 = !fitsInt32(&j, p.Volume)
	if p.Sig.Class == ClassBoxTile {
		if box == nil {
			box = new(tilegeom.BoxGeometry)
		}
		p.Box = box
		boxGeometry(p, int64(opt.LoadGrain))
		if opt.CutSrcRuns > 0 && !smallCopy(p.Shape, int64(p.Sig.Itemsize)) {
			cutSrcRuns(p, opt.CutSrcRuns)
		}
	}
	return nil
}

// classifyJoint sets p's canonical form, offsets, volume and signature
// from j and classifies it (classify).
func classifyJoint(p *Plan, j *joint, aD, aS int64, opt PlanOptions) {
	p.Shape, p.DstStrides, p.SrcStrides = j.shape, j.ds, j.ss
	p.DstOffset, p.SrcOffset = j.dOff*j.item, j.sOff*j.item
	p.Volume = 1
	for _, e := range j.shape {
		p.Volume *= e
	}
	p.Bytes = p.Volume * j.item
	p.Sig = Signature{NDim: uint8(min(j.n(), 255)), Itemsize: uint8(j.item), Vec: 1}
	classify(p, j, aD, aS, opt)
}

// alignOf returns the alignment to plan with for an option value: the
// natural alignment of the item when a is 0, else a (both at most 16).
func alignOf(a int, item int64) int64 {
	if a == 0 {
		return natAlign(item)
	}
	return natAlign(int64(a))
}

// tileBytes clamps a TileBytes option.
func tileBytes(b int) int64 {
	if b == 0 {
		return DefaultTileBytes
	}
	return min(max(int64(b), MinTileBytes), MaxTileBytes)
}
