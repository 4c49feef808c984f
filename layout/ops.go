package layout

import (
	"fmt"
	"math"
	"slices"
	"sort"
)

// This file holds the layout algebra: dense layouts derived from a layout,
// the contiguity and uniqueness queries, and the view operations (reshape,
// squeeze, unsqueeze, permute, flatten, repack, broadcast, slice, index).
//
// Every view operation returns a layout that addresses the same memory as
// its receiver: for every index of the result, the result's offset plus the
// returned base offset (Slice, Index) equals the receiver's offset of the
// corresponding index. The receiver is never changed. Results are built by
// build, so they satisfy the Layout invariants or come with an error.

// normAxis maps axis (negative counts from the end) into [0, n).
func normAxis(what string, axis, n int) (int, error) {
	a := axis
	if a < 0 {
		a += n
	}
	if a < 0 || a >= n {
		return 0, fmt.Errorf("%w: %s %d out of range for %d dims", ErrAxis, what, axis, n)
	}
	return a, nil
}

// DenseLike returns the dense layout with l's shape and itemsize in the given
// order. Keep keeps l's stride order (StrideOrder), as NumPy's order='K'
// does, so that a copy of a permuted or sliced view keeps its fastest dim
// fastest; the result always has non-negative strides and no gaps.
func DenseLike(l Layout, order Order) (Layout, error) {
	if order.kind == orderKeep {
		order = Perm(l.StrideOrder()...)
	}
	return Dense(l.shape, l.itemsize, order)
}

// ToDense is DenseLike(l, Keep): the gap-free layout of l's shape that keeps
// l's stride order, the layout to allocate for a compact copy of l.
//
// It cannot fail for a layout built by this package, with one exception that
// has no elements: an empty layout whose non-zero extents multiply past int64
// has no dense strides; ToDense then returns the same shape with all strides
// 0, which addresses no memory either (RequiredSizeInBytes is 0).
func (l Layout) ToDense() Layout {
	d, err := DenseLike(l, Keep)
	if err != nil {
		d, err = build(l.Shape(), make([]int64, len(l.shape)), max(l.itemsize, 1))
		if err != nil { // unreachable for a valid layout
			return Layout{shape: l.Shape(), strides: make([]int64, len(l.shape)), itemsize: l.itemsize}
		}
	}
	return d
}

// StrideOrder returns the dims ordered from the largest |stride| to the
// smallest; dims with equal |stride| keep their order (the lower dim first).
// For a dense layout in order Perm(p...) it returns p (up to extent-1 dims,
// whose stride ties with a neighbour's), so DenseLike(l, Keep) reproduces it.
func (l Layout) StrideOrder() []int {
	p := make([]int, len(l.shape))
	for i := range p {
		p[i] = i
	}
	sort.SliceStable(p, func(a, b int) bool {
		return uabs(l.strides[p[a]]) > uabs(l.strides[p[b]])
	})
	return p
}

// uabs returns |a| as uint64 (exact for math.MinInt64).
func uabs(a int64) uint64 {
	if a < 0 {
		return uint64(-a) // MinInt64 wraps to itself; as uint64 that is 1<<63
	}
	return uint64(a)
}

// denseIn reports whether the dims listed in p (slowest first) are dense:
// visiting them fastest-first, each dim with extent > 1 has the stride equal
// to the product of the extents after it. Extent-1 dims are ignored. A layout
// without elements is dense in every order (as in NumPy).
func (l Layout) denseIn(p []int) bool {
	if l.Volume() == 0 {
		return true
	}
	want := int64(1)
	for k := len(p) - 1; k >= 0; k-- {
		d := p[k]
		e := l.shape[d]
		if e == 1 {
			continue
		}
		if l.strides[d] != want {
			return false
		}
		want *= e // cannot overflow: the volume fits in int64
	}
	return true
}

// IsContiguousC reports whether l is dense in C (row-major) order: visiting
// the indices with the last dim fastest meets offsets 0, 1, 2, … in turn.
// Extent-1 dims and their strides are ignored; a layout with no elements is
// contiguous, as in NumPy.
func (l Layout) IsContiguousC() bool {
	p, _ := C.dims(len(l.shape))
	return l.denseIn(p)
}

// IsContiguousF reports whether l is dense in Fortran (column-major) order:
// visiting the indices with the first dim fastest meets offsets 0, 1, 2, ….
// Extent-1 dims are ignored; a layout with no elements is contiguous.
func (l Layout) IsContiguousF() bool {
	p, _ := F.dims(len(l.shape))
	return l.denseIn(p)
}

// IsContiguousAny reports whether l is dense in some order of its dims: its
// elements fill offsets 0 … Volume()-1 exactly, each once, with non-negative
// strides. Such a layout can be copied with one memcpy to a layout of the same
// stride order. Extent-1 dims are ignored; a layout with no elements is
// contiguous.
func (l Layout) IsContiguousAny() bool {
	return l.denseIn(l.StrideOrder())
}

// maxExactUnique bounds the volume for which IsUnique enumerates offsets when
// the fast test is inconclusive.
const maxExactUnique = 1 << 20

// IsUnique reports whether no two indices of l share an offset, i.e. whether
// l may be written through without losing data (a copy destination must be).
//
// A layout with a zero stride on a dim of extent > 1 is never unique. The
// fast sufficient test sorts the dims by |stride| and checks that each stride
// exceeds the span of the smaller ones; when it fails the answer is exact as
// well if the volume exceeds the span of offsets (pigeonhole), and otherwise
// exact by enumerating the offsets when the volume is at most 2^20. Only a
// larger layout that passes neither test is reported as not unique
// conservatively: IsUnique never returns true for an overlapping layout.
func (l Layout) IsUnique() bool {
	v := l.Volume()
	if v <= 1 {
		return true
	}
	type dim struct {
		e int64
		s uint64
	}
	var buf [8]dim // no allocation for the common ndim ≤ 8
	ds := buf[:0]
	for i, e := range l.shape {
		if e == 1 {
			continue
		}
		if l.strides[i] == 0 {
			return false
		}
		ds = append(ds, dim{e, uabs(l.strides[i])})
	}
	for i := 1; i < len(ds); i++ { // insertion sort: ndim is small
		for j := i; j > 0 && ds[j].s < ds[j-1].s; j-- {
			ds[j], ds[j-1] = ds[j-1], ds[j]
		}
	}
	span := uint64(0) // largest offset reachable by the dims so far, from 0
	fast := true
	for _, d := range ds {
		if d.s <= span {
			fast = false
			break
		}
		span += d.s * uint64(d.e-1) // ≤ MaxOffset-MinOffset, fits
	}
	if fast {
		return true
	}
	if uint64(l.maxOff-l.minOff) < uint64(v-1) { // pigeonhole
		return false
	}
	if v > maxExactUnique {
		return false // conservative
	}
	offs := make([]int64, 0, v)
	l.eachOffset(func(o int64) { offs = append(offs, o) })
	slices.Sort(offs)
	for i := 1; i < len(offs); i++ {
		if offs[i] == offs[i-1] {
			return false
		}
	}
	return true
}

// eachOffset calls f with the offset of every index of l, in C order.
func (l Layout) eachOffset(f func(int64)) {
	if l.Volume() == 0 {
		return
	}
	n := len(l.shape)
	idx := make([]int64, n)
	off := int64(0)
	for {
		f(off)
		k := n - 1
		for ; k >= 0; k-- {
			idx[k]++
			off += l.strides[k]
			if idx[k] < l.shape[k] {
				break
			}
			off -= l.strides[k] * idx[k]
			idx[k] = 0
		}
		if k < 0 {
			return
		}
	}
}

// resolveShape checks a requested shape of the given volume, infers one -1
// entry and returns the shape to use.
func resolveShape(shape []int64, volume int64) ([]int64, error) {
	out := append([]int64(nil), shape...)
	infer := -1
	known := int64(1)
	zero := false
	for i, e := range shape {
		switch {
		case e == -1:
			if infer >= 0 {
				return nil, fmt.Errorf("%w: shape %v: only one extent may be -1 (dims %d and %d are)", ErrShape, shape, infer, i)
			}
			infer = i
		case e < 0:
			return nil, fmt.Errorf("%w: shape %v: extent %d of dim %d is negative", ErrShape, shape, e, i)
		case e == 0:
			zero = true
		}
	}
	if !zero {
		for _, e := range shape {
			if e > 0 {
				var ok bool
				if known, ok = mul64(known, e); !ok {
					return nil, fmt.Errorf("%w: volume of shape %v", ErrOverflow, shape)
				}
			}
		}
	} else {
		known = 0
	}
	if infer >= 0 {
		if known == 0 {
			return nil, fmt.Errorf("%w: cannot infer the -1 extent of shape %v for %d elements: the other extents multiply to 0", ErrShape, shape, volume)
		}
		if volume%known != 0 {
			return nil, fmt.Errorf("%w: cannot reshape %d elements into shape %v", ErrShape, volume, shape)
		}
		out[infer] = volume / known
		known = volume
	}
	if known != volume {
		return nil, fmt.Errorf("%w: cannot reshape %d elements into shape %v (%d elements)", ErrShape, volume, shape, known)
	}
	return out, nil
}

// Reshape returns a view of l with the given shape, the elements taken in C
// order (as NumPy's reshape and PyTorch's view). One extent may be -1; it is
// inferred from the volume. The volume must not change (ErrShape).
//
// The result shares l's memory, so it exists only when every group of old
// dims that the new shape splits or merges is itself mergeable (each stride
// equals the next dim's stride times its extent); otherwise Reshape fails with
// ErrNotViewable and the data must be copied first (e.g. to ToDense()).
// Extent-1 dims never block a reshape; a layout without elements reshapes to
// any shape of volume 0 (it gets dense C strides).
func (l Layout) Reshape(shape ...int64) (Layout, error) {
	v := l.Volume()
	ns, err := resolveShape(shape, v)
	if err != nil {
		return Layout{}, err
	}
	if v <= 1 {
		d, err := Dense(ns, l.itemsize, C)
		if err != nil { // an empty shape whose other extents overflow
			return build(ns, make([]int64, len(ns)), l.itemsize)
		}
		return d, nil
	}
	// Old dims without the extent-1 ones (NumPy's _attempt_nocopy_reshape).
	var od, os []int64
	for i, e := range l.shape {
		if e != 1 {
			od = append(od, e)
			os = append(os, l.strides[i])
		}
	}
	nst := make([]int64, len(ns))
	oi, oj, ni, nj := 0, 1, 0, 1
	for ni < len(ns) && oi < len(od) {
		np, op := ns[ni], od[oi]
		for np != op {
			// Both partial products stay ≤ v, so they cannot overflow.
			if np < op {
				np *= ns[nj]
				nj++
			} else {
				op *= od[oj]
				oj++
			}
		}
		for ok := oi; ok < oj-1; ok++ {
			if m, fits := mul64(od[ok+1], os[ok+1]); !fits || os[ok] != m {
				return Layout{}, fmt.Errorf("%w: cannot reshape %v to shape %v: old dims of extents %v with strides %v do not merge",
					ErrNotViewable, l, ns, od[oi:oj], os[oi:oj])
			}
		}
		nst[nj-1] = os[oj-1]
		for nk := nj - 1; nk > ni; nk-- {
			s, ok := mul64(nst[nk], ns[nk])
			if !ok {
				if ns[nk-1] != 1 {
					return Layout{}, fmt.Errorf("%w: strides of reshape %v to %v", ErrOverflow, l, ns)
				}
				s = nst[nk] // the stride of an extent-1 dim is never used
			}
			nst[nk-1] = s
		}
		ni, oi = nj, oj
		nj++
		oj++
	}
	// Trailing extent-1 dims take the stride of the last dim placed.
	last := int64(1)
	if ni >= 1 {
		last = nst[ni-1]
	}
	for nk := ni; nk < len(ns); nk++ {
		nst[nk] = last
	}
	return build(ns, nst, l.itemsize)
}

// Squeeze removes extent-1 dims: the listed axes (negative counts from the
// end), or every extent-1 dim when none are given, as NumPy's squeeze. An
// axis whose extent is not 1 is an ErrShape error, a repeated or out-of-range
// axis an ErrAxis error. Offsets are unchanged.
func (l Layout) Squeeze(axes ...int) (Layout, error) {
	n := len(l.shape)
	drop := make([]bool, n)
	if len(axes) == 0 {
		for i, e := range l.shape {
			drop[i] = e == 1
		}
	}
	for _, a := range axes {
		d, err := normAxis("squeeze axis", a, n)
		if err != nil {
			return Layout{}, err
		}
		if drop[d] {
			return Layout{}, fmt.Errorf("%w: squeeze axis %d repeated in %v", ErrAxis, a, axes)
		}
		if l.shape[d] != 1 {
			return Layout{}, fmt.Errorf("%w: cannot squeeze axis %d of extent %d (only extent 1)", ErrShape, a, l.shape[d])
		}
		drop[d] = true
	}
	var sh, st []int64
	for i := range l.shape {
		if !drop[i] {
			sh = append(sh, l.shape[i])
			st = append(st, l.strides[i])
		}
	}
	return build(sh, st, l.itemsize)
}

// Unsqueeze inserts extent-1 dims at the given axes, which index the result
// (negative counts from the end of the result), as NumPy's expand_dims. A new
// dim gets the stride that keeps a dense layout dense (the next dim's stride
// times its extent, 1 at the end); it never changes an offset. A repeated or
// out-of-range axis is an ErrAxis error.
func (l Layout) Unsqueeze(axes ...int) (Layout, error) {
	n := len(l.shape) + len(axes)
	isNew := make([]bool, n)
	for _, a := range axes {
		d, err := normAxis("unsqueeze axis", a, n)
		if err != nil {
			return Layout{}, err
		}
		if isNew[d] {
			return Layout{}, fmt.Errorf("%w: unsqueeze axis %d repeated in %v", ErrAxis, a, axes)
		}
		isNew[d] = true
	}
	sh := make([]int64, n)
	st := make([]int64, n)
	j := 0
	for i := range n {
		if !isNew[i] {
			sh[i], st[i] = l.shape[j], l.strides[j]
			j++
		}
	}
	for i := n - 1; i >= 0; i-- {
		if !isNew[i] {
			continue
		}
		sh[i], st[i] = 1, 1
		if i+1 < n {
			s, ok := mul64(st[i+1], sh[i+1])
			if ok {
				_, ok = mul64(s, int64(l.itemsize))
			}
			if ok {
				st[i] = s
			}
		}
	}
	return build(sh, st, l.itemsize)
}

// Permute reorders the dims: dim k of the result is dim perm[k] of l, as
// NumPy's transpose. perm must be a permutation of 0…NDim()-1 (ErrAxis).
func (l Layout) Permute(perm ...int) (Layout, error) {
	if err := checkPerm(perm, len(l.shape)); err != nil {
		return Layout{}, err
	}
	sh := make([]int64, len(perm))
	st := make([]int64, len(perm))
	for k, d := range perm {
		sh[k], st[k] = l.shape[d], l.strides[d]
	}
	return build(sh, st, l.itemsize)
}

// Flatten merges dims start…end (inclusive; negative counts from the end)
// into one, as PyTorch's flatten. The merged dims must be mergeable in C order
// (each stride equals the next non-1 dim's stride times its extent), else
// ErrNotViewable; extent-1 dims never block. Flattening a 0-dim layout gives
// one dim of extent 1. start after end is an ErrAxis error.
func (l Layout) Flatten(start, end int) (Layout, error) {
	n := len(l.shape)
	if n == 0 {
		if (start != 0 && start != -1) || (end != 0 && end != -1) {
			return Layout{}, fmt.Errorf("%w: flatten axes (%d, %d) out of range for 0 dims", ErrAxis, start, end)
		}
		return build([]int64{1}, []int64{1}, l.itemsize)
	}
	s, err := normAxis("flatten start axis", start, n)
	if err != nil {
		return Layout{}, err
	}
	e, err := normAxis("flatten end axis", end, n)
	if err != nil {
		return Layout{}, err
	}
	if s > e {
		return Layout{}, fmt.Errorf("%w: flatten start axis %d comes after end axis %d", ErrAxis, start, end)
	}
	ext := int64(1)
	zero := false
	for d := s; d <= e; d++ {
		zero = zero || l.shape[d] == 0
	}
	if zero {
		ext = 0
	} else {
		for d := s; d <= e; d++ {
			var ok bool
			if ext, ok = mul64(ext, l.shape[d]); !ok {
				return Layout{}, fmt.Errorf("%w: flattened extent of dims %d…%d of shape %v", ErrOverflow, s, e, l.shape)
			}
		}
	}
	stride := l.strides[e] // the stride of the last non-1 dim, if any
	prev := -1             // the previous non-1 dim
	for d := s; d <= e; d++ {
		if l.shape[d] == 1 {
			continue
		}
		m, fits := mul64(l.strides[d], l.shape[d])
		if prev >= 0 && l.Volume() > 0 && (!fits || l.strides[prev] != m) {
			return Layout{}, fmt.Errorf("%w: cannot flatten dims %d…%d of %v: dim %d (stride %d) does not continue dim %d (extent %d, stride %d)",
				ErrNotViewable, start, end, l, prev, l.strides[prev], d, l.shape[d], l.strides[d])
		}
		prev = d
		stride = l.strides[d]
	}
	sh := make([]int64, 0, n-(e-s))
	st := make([]int64, 0, n-(e-s))
	sh = append(append(append(sh, l.shape[:s]...), ext), l.shape[e+1:]...)
	st = append(append(append(st, l.strides[:s]...), stride), l.strides[e+1:]...)
	return build(sh, st, l.itemsize)
}

// Repack returns the view of the same bytes with another itemsize, as
// NumPy's ndarray.view(dtype): e.g. a (…, 2k) layout of float32 viewed as a
// (…, k) layout of complex64, or back.
//
// Growing by a factor f = itemsize/Itemsize() merges f items of the last dim
// into one: the last dim must have stride 1 and an extent divisible by f, and
// every other stride (of a dim with extent > 1) must be divisible by f.
// Shrinking by f splits each item of the last dim into f: the last dim must
// have stride 1 or extent ≤ 1; the other strides are multiplied by f. One
// size must divide the other (ErrItemsize); a 0-dim layout cannot change
// itemsize (ErrShape); layouts that do not meet the conditions are
// ErrNotViewable. Offsets, in bytes, are unchanged.
func (l Layout) Repack(itemsize int) (Layout, error) {
	m := l.itemsize
	if itemsize <= 0 {
		return Layout{}, fmt.Errorf("%w: repack itemsize %d must be positive", ErrItemsize, itemsize)
	}
	if itemsize == m {
		return build(l.Shape(), l.Strides(), m)
	}
	n := len(l.shape)
	if n == 0 {
		return Layout{}, fmt.Errorf("%w: cannot repack a 0-dim layout from itemsize %d to %d", ErrShape, m, itemsize)
	}
	sh, st := l.Shape(), l.Strides()
	last := n - 1
	empty := l.Volume() == 0
	if itemsize > m {
		if itemsize%m != 0 {
			return Layout{}, fmt.Errorf("%w: repack itemsize %d is not a multiple of itemsize %d", ErrItemsize, itemsize, m)
		}
		f := int64(itemsize / m)
		if sh[last]%f != 0 {
			return Layout{}, fmt.Errorf("%w: repack from itemsize %d to %d: last extent %d is not a multiple of %d", ErrNotViewable, m, itemsize, sh[last], f)
		}
		if st[last] != 1 && !empty && sh[last] != 0 {
			return Layout{}, fmt.Errorf("%w: repack from itemsize %d to %d: last stride %d is not 1", ErrNotViewable, m, itemsize, st[last])
		}
		sh[last] /= f
		st[last] = 1
		for d := range last {
			if st[d]%f != 0 {
				if sh[d] != 1 && !empty {
					return Layout{}, fmt.Errorf("%w: repack from itemsize %d to %d: stride %d of dim %d is not a multiple of %d", ErrNotViewable, m, itemsize, st[d], d, f)
				}
			}
			st[d] /= f // exact unless unused (extent 1 or no elements)
		}
		return build(sh, st, itemsize)
	}
	if m%itemsize != 0 {
		return Layout{}, fmt.Errorf("%w: repack itemsize %d does not divide itemsize %d", ErrItemsize, itemsize, m)
	}
	f := int64(m / itemsize)
	if st[last] != 1 && sh[last] > 1 {
		return Layout{}, fmt.Errorf("%w: repack from itemsize %d to %d: last stride %d is not 1", ErrNotViewable, m, itemsize, st[last])
	}
	var ok bool
	if sh[last], ok = mul64(sh[last], f); !ok {
		return Layout{}, fmt.Errorf("%w: repacked last extent %d·%d", ErrOverflow, l.shape[last], f)
	}
	st[last] = 1
	for d := range last {
		if st[d], ok = mul64(st[d], f); !ok {
			return Layout{}, fmt.Errorf("%w: repacked stride %d·%d of dim %d", ErrOverflow, l.strides[d], f, d)
		}
	}
	return build(sh, st, itemsize)
}

// BroadcastTo returns l broadcast to shape by NumPy's rules: dims are
// aligned at the end; a dim of extent 1 stretches to any extent with stride 0;
// missing leading dims are added with stride 0; any other mismatch, a shorter
// target or a negative extent is an ErrShape error. The result usually
// repeats offsets (it is not IsUnique): a copy source, never a destination.
func (l Layout) BroadcastTo(shape ...int64) (Layout, error) {
	n := len(l.shape)
	if len(shape) < n {
		return Layout{}, fmt.Errorf("%w: cannot broadcast %d dims %v to %d dims %v", ErrShape, n, l.shape, len(shape), shape)
	}
	lead := len(shape) - n
	sh := append([]int64(nil), shape...)
	st := make([]int64, len(shape))
	for i, e := range shape {
		if e < 0 {
			return Layout{}, fmt.Errorf("%w: broadcast shape %v: extent %d of dim %d is negative", ErrShape, shape, e, i)
		}
		if i < lead {
			continue
		}
		d := i - lead
		switch l.shape[d] {
		case e:
			st[i] = l.strides[d]
		case 1:
			st[i] = 0
		default:
			return Layout{}, fmt.Errorf("%w: cannot broadcast dim %d of extent %d to extent %d (shape %v to %v)", ErrShape, d, l.shape[d], e, l.shape, shape)
		}
	}
	return build(sh, st, l.itemsize)
}

// Omit marks an omitted bound in a Range (Python's None in a[None:5]): an
// omitted Start is the first index in the direction of the step, an omitted
// Stop runs past the last one. As a Step it means 1. It is math.MinInt64, which
// no real bound needs (any bound ≤ -extent clamps the same way).
const Omit = math.MinInt64

// Range selects indices of one dim as Python's slice(Start, Stop, Step):
// Start is included, Stop excluded; a negative bound counts from the end;
// bounds beyond the ends are clamped; a negative Step walks backwards.
//
// Step must be given: Step 0 is an ErrRange error, so the zero Range{} is
// not "everything" (use All()). A Step of Omit means 1.
type Range struct{ Start, Stop, Step int64 }

// All returns the Range that selects a whole dim, Python's a[:].
func All() Range { return Range{Omit, Omit, 1} }

// Span returns the Range start:stop with step 1, Python's a[start:stop].
// Either bound may be Omit.
func Span(start, stop int64) Range { return Range{start, stop, 1} }

// indices resolves r against a dim of extent n as Python's
// slice.indices: the first index and the count of indices selected.
func (r Range) indices(n int64) (start, count int64) {
	step := r.Step
	if step == Omit {
		step = 1
	}
	clamp := func(v, lo, hi int64) int64 {
		if v < 0 {
			v += n
			if v < 0 {
				v = lo
			}
		} else if v > hi {
			v = hi
		}
		return v
	}
	if step > 0 {
		start, stop := int64(0), n
		if r.Start != Omit {
			start = clamp(r.Start, 0, n)
		}
		if r.Stop != Omit {
			stop = clamp(r.Stop, 0, n)
		}
		if stop <= start {
			return start, 0
		}
		return start, (stop-start-1)/step + 1
	}
	start, stop := n-1, int64(-1)
	if r.Start != Omit {
		start = clamp(r.Start, -1, n-1)
	}
	if r.Stop != Omit {
		stop = clamp(r.Stop, -1, n-1)
	}
	if start <= stop {
		return start, 0
	}
	// -step cannot overflow: step ≠ Omit = MinInt64 here.
	return start, (start-stop-1)/(-step) + 1
}

// Slice returns the view selected by one Range per dim, with Python's slice
// semantics, and the offset (in items, relative to index 0 of l) of the
// view's index 0. Fewer ranges than dims leave the remaining dims whole; more
// is an ErrAxis error; a zero Step an ErrRange error. A view with no
// elements comes with offset 0.
//
// The view's offsets plus the returned offset are l's offsets of the selected
// indices, so a buffer for l serves the view under the buffer convention with
// base offset shifted by the returned value.
func (l Layout) Slice(ranges ...Range) (Layout, int64, error) {
	n := len(l.shape)
	if len(ranges) > n {
		return Layout{}, 0, fmt.Errorf("%w: %d ranges for %d dims", ErrAxis, len(ranges), n)
	}
	sh, st := l.Shape(), l.Strides()
	off := int64(0)
	for d, r := range ranges {
		if r.Step == 0 {
			return Layout{}, 0, fmt.Errorf("%w: range %d (%v) has step 0", ErrRange, d, r)
		}
		start, count := r.indices(l.shape[d])
		sh[d] = count
		if count > 1 {
			step := r.Step
			if step == Omit {
				step = 1
			}
			s, ok := mul64(l.strides[d], step)
			if !ok {
				return Layout{}, 0, fmt.Errorf("%w: stride %d times step %d of range %d", ErrOverflow, l.strides[d], step, d)
			}
			st[d] = s
		}
		if count > 0 {
			// start·stride lies between MinOffset and MaxOffset: it fits, and so
			// does the running sum.
			off += start * l.strides[d]
		}
	}
	v, err := build(sh, st, l.itemsize)
	if err != nil {
		return Layout{}, 0, err
	}
	if v.Volume() == 0 {
		off = 0
	}
	return v, off, nil
}

// String formats r as Python's slice notation, e.g. "1:-1:2" or "::-1".
func (r Range) String() string {
	f := func(v int64) string {
		if v == Omit {
			return ""
		}
		return fmt.Sprint(v)
	}
	return f(r.Start) + ":" + f(r.Stop) + ":" + f(r.Step)
}

// Index selects index i (negative counts from the end) of dim axis and drops
// that dim, as NumPy's a[:, i]. It returns the view and the offset of its
// index 0 relative to index 0 of l (0 when the view has no elements). An axis
// out of range is an ErrAxis error; an index out of range an ErrRange error.
func (l Layout) Index(axis int, i int64) (Layout, int64, error) {
	n := len(l.shape)
	d, err := normAxis("index axis", axis, n)
	if err != nil {
		return Layout{}, 0, err
	}
	e := l.shape[d]
	j := i
	if j < 0 {
		j += e
	}
	if j < 0 || j >= e {
		return Layout{}, 0, fmt.Errorf("%w: index %d out of range for axis %d of extent %d", ErrRange, i, axis, e)
	}
	sh := append(l.Shape()[:d], l.shape[d+1:]...)
	st := append(l.Strides()[:d], l.strides[d+1:]...)
	v, err := build(sh, st, l.itemsize)
	if err != nil {
		return Layout{}, 0, err
	}
	if v.Volume() == 0 {
		return v, 0, nil
	}
	return v, j * l.strides[d], nil
}
