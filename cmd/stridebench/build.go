package main

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/stridekit/stridekit/layout"
)

// This file turns a Case into layouts: the dense source and destination
// arrays, the two views taken of them and where each view's lowest byte
// lies, and shrinks cases for quick runs.

// errCase is wrapped by every error about a case whose views cannot be
// built (a bad permutation, shapes that do not match, …).
var errCase = errors.New("bad case")

// bufAlign is the alignment of every array the harness allocates; view
// buffers start at byte offsets within these arrays.
const bufAlign = 256

// built is a case turned into layouts. Both arrays are dense C-order
// layouts of the case's item size, allocated bufAlign-aligned. Following
// the pointer convention of package layout, a view's index 0 is SrcOff or
// DstOff items into its array, and its lowest byte (where a host slice of
// the view starts, and what a plan's offsets count from) SrcStart or
// DstStart bytes into it.
type built struct {
	Case             *Case
	Item             int
	SrcBase, DstBase layout.Layout // the dense arrays
	Src, Dst         layout.Layout // the views
	SrcOff, DstOff   int64         // item offset of each view's index 0 in its array
	SrcStart         int64         // byte offset of the src view's lowest byte in its array
	DstStart         int64         // byte offset of the dst view's lowest byte in its array
	SrcBytes         int64         // size of the src array
	DstBytes         int64         // size of the dst array
	Moved            int64         // bytes the copy writes: dst view volume · item
}

// buildCase builds the layouts of c. Errors wrap errCase and the layout
// error at fault, and name the case and the operation.
func buildCase(c *Case) (*built, error) {
	item := c.DType.Itemsize()
	if item <= 0 {
		return nil, fmt.Errorf("%w: %s: dtype %v has no whole-byte item size", errCase, c.where(), c.DType)
	}
	b := &built{Case: c, Item: item}
	var err error
	if b.SrcBase, err = layout.Dense(c.Base, item, layout.C); err != nil {
		return nil, fmt.Errorf("%w: %s: base shape %v: %w", errCase, c.where(), c.Base, err)
	}
	if b.Src, b.SrcOff, err = applyOps(b.SrcBase, c.Src); err != nil {
		return nil, fmt.Errorf("%w: %s: src: %w", errCase, c.where(), err)
	}
	want := b.Src.Shape()
	dstBase := c.DstBase
	if dstBase == nil {
		if dstBase, err = inferDstBase(want, c.Dst); err != nil {
			return nil, fmt.Errorf("%w: %s: dst: %w", errCase, c.where(), err)
		}
	}
	if b.DstBase, err = layout.Dense(dstBase, item, layout.C); err != nil {
		return nil, fmt.Errorf("%w: %s: dst base shape %v: %w", errCase, c.where(), dstBase, err)
	}
	if b.Dst, b.DstOff, err = applyOps(b.DstBase, c.Dst); err != nil {
		return nil, fmt.Errorf("%w: %s: dst: %w", errCase, c.where(), err)
	}
	if got := b.Dst.Shape(); !slices.Equal(got, want) {
		return nil, fmt.Errorf("%w: %s: dst view shape %v differs from src view shape %v", errCase, c.where(), got, want)
	}
	if !b.Dst.IsUnique() {
		return nil, fmt.Errorf("%w: %s: dst view %v: %w", errCase, c.where(), b.Dst, layout.ErrOverlappingDst)
	}
	b.SrcBytes = b.SrcBase.RequiredSizeInBytes()
	b.DstBytes = b.DstBase.RequiredSizeInBytes()
	b.SrcStart = (b.SrcOff + b.Src.MinOffset()) * int64(item)
	b.DstStart = (b.DstOff + b.Dst.MinOffset()) * int64(item)
	b.Moved = b.Dst.Volume() * int64(item)
	if b.Moved == 0 {
		return nil, fmt.Errorf("%w: %s: the views have no elements (shape %v)", errCase, c.where(), want)
	}
	return b, nil
}

// applyOps applies a view expression to l and returns the view and the item
// offset of its index 0 relative to index 0 of l.
func applyOps(l layout.Layout, ops []viewOp) (layout.Layout, int64, error) {
	off := int64(0)
	for k, op := range ops {
		var o int64
		var err error
		switch op.Kind {
		case opPerm:
			l, err = l.Permute(ints(op.Args)...)
		case opBcast:
			l, err = l.BroadcastTo(op.Args...)
		case opFlip:
			rs := make([]layout.Range, l.NDim())
			for i := range rs {
				rs[i] = layout.All()
			}
			for _, d := range op.Args {
				a := int(d)
				if a < 0 {
					a += l.NDim()
				}
				if a < 0 || a >= l.NDim() {
					err = fmt.Errorf("%w: flip dim %d out of range for %d dims", layout.ErrAxis, d, l.NDim())
					break
				}
				rs[a] = layout.Range{Start: layout.Omit, Stop: layout.Omit, Step: -1}
			}
			if err == nil {
				l, o, err = l.Slice(rs...)
			}
		case opSlice:
			l, o, err = applySlice(l, op.Items)
		default:
			err = fmt.Errorf("unknown operation kind %d", op.Kind)
		}
		if err != nil {
			return layout.Layout{}, 0, fmt.Errorf("operation %d %v: %w", k+1, op, err)
		}
		off += o
	}
	return l, off, nil
}

// applySlice applies slice entries: ranges first (whole dims where an
// index stands), then the indices from the last dim down, so that the
// dims of the earlier entries keep their numbers.
func applySlice(l layout.Layout, items []sliceItem) (layout.Layout, int64, error) {
	rs := make([]layout.Range, len(items))
	for i, it := range items {
		if it.Index {
			rs[i] = layout.All()
		} else {
			rs[i] = layout.Range{Start: it.Start, Stop: it.Stop, Step: it.Step}
		}
	}
	v, off, err := l.Slice(rs...)
	if err != nil {
		return layout.Layout{}, 0, err
	}
	for i := len(items) - 1; i >= 0; i-- {
		if !items[i].Index {
			continue
		}
		var o int64
		if v, o, err = v.Index(i, items[i].Start); err != nil {
			return layout.Layout{}, 0, err
		}
		off += o
	}
	return v, off, nil
}

func ints(a []int64) []int {
	out := make([]int, len(a))
	for i, v := range a {
		out[i] = int(v)
	}
	return out
}

// inferDstBase finds the shape of the dense destination array whose view
// through ops has shape want, undoing the operations from the last: perm
// puts each extent back on its dim, flip keeps the shape, and a slice
// entry with both bounds left out (":" or "::s") multiplies its extent by
// |s|. Anything else (bounds, indices, bcast) needs dstbase=.
func inferDstBase(want []int64, ops []viewOp) ([]int64, error) {
	s := slices.Clone(want)
	for k := len(ops) - 1; k >= 0; k-- {
		op := ops[k]
		switch op.Kind {
		case opPerm:
			if len(op.Args) != len(s) {
				return nil, fmt.Errorf("%w: operation %d %v has %d dims for a view of %d dims", layout.ErrAxis, k+1, op, len(op.Args), len(s))
			}
			pre := make([]int64, len(s))
			seen := make([]bool, len(s))
			for i, d := range op.Args {
				if d < 0 || int(d) >= len(s) || seen[d] {
					return nil, fmt.Errorf("%w: operation %d %v is not a permutation of %d dims", layout.ErrAxis, k+1, op, len(s))
				}
				seen[d] = true
				pre[d] = s[i]
			}
			s = pre
		case opFlip:
		case opSlice:
			if len(op.Items) > len(s) {
				return nil, fmt.Errorf("%w: operation %d %v has %d entries for %d dims", layout.ErrAxis, k+1, op, len(op.Items), len(s))
			}
			for i, it := range op.Items {
				if it.Index || it.Start != layout.Omit || it.Stop != layout.Omit {
					return nil, fmt.Errorf("%w: operation %d %v: cannot infer the dst array through entry %v; give dstbase=SHAPE", layout.ErrShape, k+1, op, it)
				}
				st := it.Step
				if st < 0 {
					st = -st
				}
				if s[i] > math.MaxInt64/st {
					return nil, fmt.Errorf("%w: dst extent %d·%d", layout.ErrOverflow, s[i], st)
				}
				s[i] *= st
			}
		case opBcast:
			return nil, fmt.Errorf("%w: operation %d %v: a broadcast dst would write one element many times", layout.ErrOverlappingDst, k+1, op)
		}
	}
	return s, nil
}

// shrinkMin is the extent below which shrinking leaves a dim alone (image
// channels, small matrices of a batch keep their size).
const shrinkMin = 8

// scaleExtent maps an extent to its shrunk value for factor f in [0, 1].
func scaleExtent(e int64, f float64) int64 {
	if e <= shrinkMin {
		return e
	}
	return max(shrinkMin, int64(math.Round(float64(e)*f)))
}

// scaleCase returns c with every extent it names (the base shape, bcast
// targets, dstbase and explicit slice bounds) mapped by scaleExtent. The
// same extent always maps to the same value, so broadcasts stay consistent.
func scaleCase(c *Case, f float64) *Case {
	sc := func(e int64) int64 {
		if e < 0 {
			return -scaleExtent(-e, f)
		}
		return scaleExtent(e, f)
	}
	mapAll := func(s []int64) []int64 {
		if s == nil {
			return nil
		}
		out := make([]int64, len(s))
		for i, e := range s {
			out[i] = sc(e)
		}
		return out
	}
	mapOps := func(ops []viewOp) []viewOp {
		out := make([]viewOp, len(ops))
		for i, op := range ops {
			n := viewOp{Kind: op.Kind, Args: slices.Clone(op.Args)}
			if op.Kind == opBcast {
				n.Args = mapAll(op.Args)
			}
			for _, it := range op.Items {
				if !it.Index {
					if it.Start != layout.Omit {
						it.Start = sc(it.Start)
					}
					if it.Stop != layout.Omit {
						it.Stop = sc(it.Stop)
					}
				}
				n.Items = append(n.Items, it)
			}
			out[i] = n
		}
		return out
	}
	n := *c
	n.Base = mapAll(c.Base)
	n.DstBase = mapAll(c.DstBase)
	n.Src = mapOps(c.Src)
	n.Dst = mapOps(c.Dst)
	return &n
}

// shrinkCase returns c unchanged when it moves at most maxBytes, else the
// largest scaleCase(c, f) that does (or the smallest it can be made, when
// even f = 0 moves more), found by bisection on f.
func shrinkCase(c *Case, maxBytes int64) (*Case, error) {
	b, err := buildCase(c)
	if err != nil {
		return nil, err
	}
	if maxBytes <= 0 || b.Moved <= maxBytes {
		return c, nil
	}
	fits := func(f float64) (*Case, bool) {
		s := scaleCase(c, f)
		b, err := buildCase(s)
		return s, err == nil && b.Moved <= maxBytes
	}
	lo, hi := 0.0, 1.0
	best, ok := fits(0)
	if !ok {
		if _, err := buildCase(best); err != nil {
			return nil, fmt.Errorf("%s cannot be shrunk: %w", c.where(), err)
		}
		return best, nil
	}
	for range 40 {
		mid := (lo + hi) / 2
		if s, ok := fits(mid); ok {
			lo, best = mid, s
		} else {
			hi = mid
		}
	}
	return best, nil
}
