package layout

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// This file holds the naive reference the property and fuzz tests compare
// against, and the rapid property tests.
//
// The reference is a plain C-order array ("ref") whose elements are the item
// offsets, in the original layout, of the elements a view shows. Operations
// on it are written the obvious way (index loops), independent of ops.go; a
// view with base offset b agrees with ref when b + offset(idx) == ref[idx]
// for every idx.

// ref is a naive n-dimensional array of offsets in C order.
type ref struct {
	shape []int64
	data  []int64
}

// naiveOffset is Σ idx_k·stride_k.
func naiveOffset(l Layout, idx []int64) int64 {
	var o int64
	for k, i := range idx {
		o += i * l.strides[k]
	}
	return o
}

// forEachIndex calls f with every index of shape in C order (last dim
// fastest). The slice passed to f is reused.
func forEachIndex(shape []int64, f func(idx []int64)) {
	for _, e := range shape {
		if e == 0 {
			return
		}
	}
	idx := make([]int64, len(shape))
	for {
		f(idx)
		k := len(shape) - 1
		for ; k >= 0; k-- {
			idx[k]++
			if idx[k] < shape[k] {
				break
			}
			idx[k] = 0
		}
		if k < 0 {
			return
		}
	}
}

// forEachIndexOrder is forEachIndex with dims visited fastest-last in the
// order p (p[0] slowest).
func forEachIndexOrder(shape []int64, p []int, f func(idx []int64)) {
	ps := make([]int64, len(p))
	for k, d := range p {
		ps[k] = shape[d]
	}
	idx := make([]int64, len(shape))
	forEachIndex(ps, func(pi []int64) {
		for k, d := range p {
			idx[d] = pi[k]
		}
		f(idx)
	})
}

func prod(shape []int64) int64 {
	v := int64(1)
	for _, e := range shape {
		v *= e
	}
	return v
}

func refOf(l Layout) ref {
	r := ref{shape: l.Shape()}
	forEachIndex(l.shape, func(idx []int64) { r.data = append(r.data, naiveOffset(l, idx)) })
	return r
}

// at returns the element at idx.
func (r ref) at(idx []int64) int64 {
	lin := int64(0)
	for k, i := range idx {
		lin = lin*r.shape[k] + i
	}
	return r.data[lin]
}

// gather builds the array of the given shape whose element idx is r at
// src(idx).
func (r ref) gather(shape []int64, src func(idx []int64) []int64) ref {
	out := ref{shape: append([]int64(nil), shape...)}
	forEachIndex(shape, func(idx []int64) { out.data = append(out.data, r.at(src(idx))) })
	return out
}

func (r ref) reshape(shape []int64) ref {
	return ref{shape: append([]int64(nil), shape...), data: r.data}
}

func (r ref) permute(perm []int) ref {
	sh := make([]int64, len(perm))
	for k, d := range perm {
		sh[k] = r.shape[d]
	}
	old := make([]int64, len(perm))
	return r.gather(sh, func(idx []int64) []int64 {
		for k, d := range perm {
			old[d] = idx[k]
		}
		return old
	})
}

// pyIndices lists the indices Python's range(n)[r.Start:r.Stop:r.Step]
// selects, by walking every candidate (the slow, obvious way).
func pyIndices(n int64, r Range) []int64 {
	step := r.Step
	if step == Omit {
		step = 1
	}
	norm := func(v int64) int64 { // a bound as a position in [-1, n]
		if v < 0 {
			v += n
		}
		return max(-1, min(v, n))
	}
	var out []int64
	if step > 0 {
		lo, hi := int64(0), n
		if r.Start != Omit {
			lo = max(norm(r.Start), 0)
		}
		if r.Stop != Omit {
			hi = max(norm(r.Stop), 0)
		}
		for j := range n {
			if j >= lo && j < hi && (j-lo)%step == 0 {
				out = append(out, j)
			}
		}
		return out
	}
	hi, lo := n-1, int64(-1)
	if r.Start != Omit {
		hi = min(norm(r.Start), n-1)
	}
	if r.Stop != Omit {
		lo = min(norm(r.Stop), n-1)
	}
	for j := n - 1; j >= 0; j-- {
		if j <= hi && j > lo && (hi-j)%(-step) == 0 {
			out = append(out, j)
		}
	}
	return out
}

func (r ref) slice(ranges []Range) ref {
	sel := make([][]int64, len(r.shape))
	sh := make([]int64, len(r.shape))
	for d, e := range r.shape {
		if d < len(ranges) {
			sel[d] = pyIndices(e, ranges[d])
		} else {
			for j := range e {
				sel[d] = append(sel[d], j)
			}
		}
		sh[d] = int64(len(sel[d]))
	}
	old := make([]int64, len(sh))
	return r.gather(sh, func(idx []int64) []int64 {
		for d, i := range idx {
			old[d] = sel[d][i]
		}
		return old
	})
}

func (r ref) index(axis int, i int64) ref {
	sh := slices.Delete(slices.Clone(r.shape), axis, axis+1)
	old := make([]int64, len(r.shape))
	return r.gather(sh, func(idx []int64) []int64 {
		copy(old, idx[:axis])
		old[axis] = i
		copy(old[axis+1:], idx[axis:])
		return old
	})
}

func (r ref) broadcast(shape []int64) ref {
	lead := len(shape) - len(r.shape)
	old := make([]int64, len(r.shape))
	return r.gather(shape, func(idx []int64) []int64 {
		for d := range old {
			if r.shape[d] == 1 {
				old[d] = 0
			} else {
				old[d] = idx[d+lead]
			}
		}
		return old
	})
}

// agree reports how view v with base offset base differs from r, or "".
func agree(v Layout, base int64, r ref) string {
	if !slices.Equal(v.shape, r.shape) {
		return fmt.Sprintf("shape %v, reference %v", v.shape, r.shape)
	}
	if err := checkInvariants(v); err != "" {
		return err
	}
	k := 0
	msg := ""
	forEachIndex(v.shape, func(idx []int64) {
		if msg == "" && base+naiveOffset(v, idx) != r.data[k] {
			msg = fmt.Sprintf("index %v: base %d + offset %d, reference %d", idx, base, naiveOffset(v, idx), r.data[k])
		}
		k++
	})
	return msg
}

// checkInvariants checks a small layout's cached offsets against the naive
// minimum and maximum, and the other invariants.
func checkInvariants(l Layout) string {
	if l.itemsize <= 0 || len(l.shape) != len(l.strides) {
		return fmt.Sprintf("bad layout %v", l)
	}
	for _, e := range l.shape {
		if e < 0 {
			return fmt.Sprintf("negative extent in %v", l)
		}
	}
	if l.Volume() > 1<<16 {
		return ""
	}
	lo, hi := int64(0), int64(0)
	first := true
	forEachIndex(l.shape, func(idx []int64) {
		o := naiveOffset(l, idx)
		if first || o < lo {
			lo = o
		}
		if first || o > hi {
			hi = o
		}
		first = false
	})
	if lo != l.MinOffset() || hi != l.MaxOffset() {
		return fmt.Sprintf("%v: offsets [%d,%d], naive [%d,%d]", l, l.MinOffset(), l.MaxOffset(), lo, hi)
	}
	want := int64(0)
	if l.Volume() > 0 {
		want = (hi - lo + 1) * int64(l.itemsize)
	}
	if l.RequiredSizeInBytes() != want {
		return fmt.Sprintf("%v: RequiredSizeInBytes %d, naive %d", l, l.RequiredSizeInBytes(), want)
	}
	return ""
}

// naiveViewable reports whether the elements listed in C order by offs (one
// per element of a layout) can be addressed by some strides for shape, so
// that C-order traversal of shape meets them in the same order.
func naiveViewable(offs []int64, shape []int64) bool {
	if len(offs) <= 1 {
		return true
	}
	// The stride of dim d is the offset step from index 0 to the unit
	// index e_d, whose C-order position is the product of later extents.
	st := make([]int64, len(shape))
	pos := int64(1)
	for d := len(shape) - 1; d >= 0; d-- {
		if shape[d] > 1 {
			st[d] = offs[pos] - offs[0]
		}
		pos *= shape[d]
	}
	k := 0
	ok := true
	forEachIndex(shape, func(idx []int64) {
		o := offs[0]
		for d, i := range idx {
			o += i * st[d]
		}
		ok = ok && o == offs[k]
		k++
	})
	return ok
}

// bruteUnique enumerates offsets.
func bruteUnique(l Layout) bool {
	seen := map[int64]bool{}
	u := true
	forEachIndex(l.shape, func(idx []int64) {
		o := naiveOffset(l, idx)
		if seen[o] {
			u = false
		}
		seen[o] = true
	})
	return u
}

// bruteDenseIn reports whether visiting dims in order p (slowest first) meets
// offsets 0, 1, 2, ….
func bruteDenseIn(l Layout, p []int) bool {
	want := int64(0)
	ok := true
	forEachIndexOrder(l.shape, p, func(idx []int64) {
		ok = ok && naiveOffset(l, idx) == want
		want++
	})
	return ok
}

func permutations(n int, f func([]int) bool) bool {
	p := make([]int, n)
	for i := range p {
		p[i] = i
	}
	var rec func(k int) bool
	rec = func(k int) bool {
		if k == n {
			return f(p)
		}
		for i := k; i < n; i++ {
			p[k], p[i] = p[i], p[k]
			if rec(k + 1) {
				return true
			}
			p[k], p[i] = p[i], p[k]
		}
		return false
	}
	return rec(0)
}

// genLayout draws a small layout: ndim 0..maxDim, extents 0..5, and strides
// that are random (negative and zero included), dense in a random order,
// dense with some dims reversed, or dense with one stride stretched.
func genLayout(t *rapid.T, maxDim int) Layout {
	n := rapid.IntRange(0, maxDim).Draw(t, "ndim")
	shape := make([]int64, n)
	for i := range shape {
		shape[i] = rapid.Int64Range(0, 5).Draw(t, "extent")
	}
	itemsize := rapid.SampledFrom([]int{1, 2, 4, 8}).Draw(t, "itemsize")
	mode := rapid.IntRange(0, 3).Draw(t, "mode")
	var strides []int64
	if mode == 0 {
		strides = make([]int64, n)
		for i := range strides {
			strides[i] = rapid.Int64Range(-7, 7).Draw(t, "stride")
		}
	} else {
		perm := rapid.Permutation(seq(n)).Draw(t, "perm")
		d, err := Dense(shape, itemsize, Perm(perm...))
		if err != nil {
			t.Fatalf("Dense: %v", err)
		}
		strides = d.Strides()
		for i := range strides {
			if mode == 2 && rapid.Bool().Draw(t, "neg") {
				strides[i] = -strides[i]
			}
		}
		if mode == 3 && n > 0 {
			strides[rapid.IntRange(0, n-1).Draw(t, "stretch")] *= 2
		}
	}
	l, err := New(shape, strides, itemsize)
	if err != nil {
		t.Fatalf("New(%v, %v, %d): %v", shape, strides, itemsize, err)
	}
	return l
}

func seq(n int) []int {
	p := make([]int, n)
	for i := range p {
		p[i] = i
	}
	return p
}

// genRange draws a Python-style range for a dim of extent e.
func genRange(t *rapid.T, e int64) Range {
	bound := func(name string) int64 {
		if rapid.IntRange(0, 3).Draw(t, name+"Omit") == 0 {
			return Omit
		}
		return rapid.Int64Range(-e-2, e+2).Draw(t, name)
	}
	step := rapid.SampledFrom([]int64{1, 1, 2, 3, -1, -2, -3, Omit}).Draw(t, "step")
	return Range{bound("start"), bound("stop"), step}
}

// factorShape splits v into a random shape whose product is v (with extra
// 1s, and a -1 sometimes).
func genShapeOfVolume(t *rapid.T, v int64) []int64 {
	var sh []int64
	rest := v
	for rest > 1 {
		var divs []int64
		for d := int64(2); d <= rest; d++ {
			if rest%d == 0 {
				divs = append(divs, d)
			}
		}
		d := rapid.SampledFrom(divs).Draw(t, "factor")
		sh = append(sh, d)
		rest /= d
	}
	if v == 0 {
		sh = append(sh, 0)
		for range rapid.IntRange(0, 2).Draw(t, "more") {
			sh = append(sh, rapid.Int64Range(0, 4).Draw(t, "extra"))
		}
	}
	for range rapid.IntRange(0, 2).Draw(t, "ones") {
		at := rapid.IntRange(0, len(sh)).Draw(t, "oneAt")
		sh = slices.Insert(sh, at, 1)
	}
	sh = rapid.Permutation(sh).Draw(t, "order")
	return sh
}

// step applies one random operation to (v, base, r) and checks the result
// against the reference; it returns the new state.
func step(t *rapid.T, v Layout, base int64, r ref) (Layout, int64, ref) {
	n := v.NDim()
	op := rapid.IntRange(0, 8).Draw(t, "op")
	switch op {
	case 0: // Permute
		perm := rapid.Permutation(seq(n)).Draw(t, "perm")
		w, err := v.Permute(perm...)
		if err != nil {
			t.Fatalf("%v.Permute(%v): %v", v, perm, err)
		}
		return w, base, r.permute(perm)
	case 1: // Slice
		k := rapid.IntRange(0, n).Draw(t, "nranges")
		rs := make([]Range, k)
		for d := range rs {
			rs[d] = genRange(t, v.shape[d])
		}
		w, off, err := v.Slice(rs...)
		if err != nil {
			t.Fatalf("%v.Slice(%v): %v", v, rs, err)
		}
		return w, base + off, r.slice(rs)
	case 2: // Index
		if n == 0 {
			return v, base, r
		}
		ax := rapid.IntRange(-n, n-1).Draw(t, "axis")
		d := (ax + n) % n
		e := v.shape[d]
		if e == 0 {
			if _, _, err := v.Index(ax, 0); !errors.Is(err, ErrRange) {
				t.Fatalf("%v.Index(%d, 0) on extent 0: %v, want ErrRange", v, ax, err)
			}
			return v, base, r
		}
		i := rapid.Int64Range(-e, e-1).Draw(t, "i")
		w, off, err := v.Index(ax, i)
		if err != nil {
			t.Fatalf("%v.Index(%d, %d): %v", v, ax, i, err)
		}
		if w.Volume() == 0 {
			return w, base + off, ref{shape: w.Shape()}
		}
		return w, base + off, r.index(d, (i+e)%e)
	case 3: // Squeeze all
		w, err := v.Squeeze()
		if err != nil {
			t.Fatalf("%v.Squeeze(): %v", v, err)
		}
		return w, base, r.reshape(w.shape)
	case 4: // Unsqueeze
		ax := rapid.IntRange(-n-1, n).Draw(t, "axis")
		w, err := v.Unsqueeze(ax)
		if err != nil {
			t.Fatalf("%v.Unsqueeze(%d): %v", v, ax, err)
		}
		return w, base, r.reshape(w.shape)
	case 5: // BroadcastTo
		sh := make([]int64, rapid.IntRange(0, 1).Draw(t, "lead"))
		for i := range sh {
			sh[i] = rapid.Int64Range(0, 3).Draw(t, "leadExtent")
		}
		for _, e := range v.shape {
			if e == 1 {
				e = rapid.Int64Range(0, 3).Draw(t, "stretch")
			}
			sh = append(sh, e)
		}
		w, err := v.BroadcastTo(sh...)
		if err != nil {
			t.Fatalf("%v.BroadcastTo(%v): %v", v, sh, err)
		}
		return w, base, r.broadcast(sh)
	case 6: // Flatten
		if n == 0 {
			w, err := v.Flatten(0, -1)
			if err != nil {
				t.Fatalf("%v.Flatten(0,-1): %v", v, err)
			}
			return w, base, r.reshape([]int64{1})
		}
		s := rapid.IntRange(0, n-1).Draw(t, "start")
		e := rapid.IntRange(s, n-1).Draw(t, "end")
		sh := slices.Clone(v.shape[:s])
		sh = append(sh, prod(v.shape[s:e+1]))
		sh = append(sh, v.shape[e+1:]...)
		w, err := v.Flatten(s, e-n) // end counted from the end
		if err != nil {
			if !errors.Is(err, ErrNotViewable) {
				t.Fatalf("%v.Flatten(%d,%d): %v", v, s, e-n, err)
			}
			if naiveViewable(relOffsets(r, base), sh) {
				t.Fatalf("%v.Flatten(%d,%d): %v, but the naive check finds it viewable", v, s, e-n, err)
			}
			return v, base, r
		}
		return w, base, r.reshape(sh)
	default: // Reshape
		sh := genShapeOfVolume(t, v.Volume())
		w, err := v.Reshape(sh...)
		viewable := naiveViewable(relOffsets(r, base), sh)
		if err != nil {
			if !errors.Is(err, ErrNotViewable) || viewable {
				t.Fatalf("%v.Reshape(%v): %v (naive viewable: %v)", v, sh, err, viewable)
			}
			return v, base, r
		}
		if !viewable {
			t.Fatalf("%v.Reshape(%v) = %v, but the naive check finds it not viewable", v, sh, w)
		}
		return w, base, r.reshape(sh)
	}
}

// relOffsets returns r's offsets relative to the view's index 0.
func relOffsets(r ref, base int64) []int64 {
	out := make([]int64, len(r.data))
	for i, o := range r.data {
		out[i] = o - base
	}
	return out
}

// TestPropOpsAgreeWithReference applies random sequences of view operations
// and checks every element of every intermediate view against the naive
// reference, and that every view stays inside the original's memory.
func TestPropOpsAgreeWithReference(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		l := genLayout(t, 5)
		v, base, r := l, int64(0), refOf(l)
		for range rapid.IntRange(1, 6).Draw(t, "nops") {
			v, base, r = step(t, v, base, r)
			if msg := agree(v, base, r); msg != "" {
				t.Fatalf("after ops, view %v base %d: %s", v, base, msg)
			}
			if v.Volume() > 0 && (base+v.MinOffset() < l.MinOffset() || base+v.MaxOffset() > l.MaxOffset()) {
				t.Fatalf("view %v at base %d leaves the memory of %v", v, base, l)
			}
		}
	})
}

// TestPropIsUniqueBruteForce: IsUnique equals the brute-force answer on
// small layouts.
func TestPropIsUniqueBruteForce(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		l := genLayout(t, 6)
		if got, want := l.IsUnique(), bruteUnique(l); got != want {
			t.Fatalf("%v.IsUnique() = %v, brute force %v", l, got, want)
		}
	})
}

// TestPropContiguityBruteForce: IsContiguousC/F/Any equal brute force (Any:
// some order of dims visits offsets 0, 1, 2, …).
func TestPropContiguityBruteForce(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		l := genLayout(t, 5)
		n := l.NDim()
		if got, want := l.IsContiguousC(), bruteDenseIn(l, seq(n)); got != want {
			t.Fatalf("%v.IsContiguousC() = %v, brute force %v", l, got, want)
		}
		f := seq(n)
		slices.Reverse(f)
		if got, want := l.IsContiguousF(), bruteDenseIn(l, f); got != want {
			t.Fatalf("%v.IsContiguousF() = %v, brute force %v", l, got, want)
		}
		want := permutations(n, func(p []int) bool { return bruteDenseIn(l, p) })
		if got := l.IsContiguousAny(); got != want {
			t.Fatalf("%v.IsContiguousAny() = %v, brute force %v", l, got, want)
		}
		if want && l.Volume() > 0 && int64(l.RequiredSizeInBytes()) != l.Volume()*int64(l.itemsize) {
			t.Fatalf("%v contiguous but needs %d bytes", l, l.RequiredSizeInBytes())
		}
	})
}

// TestPropDenseLike: DenseLike gives a unique, contiguous layout of the same
// shape; Keep keeps the stride order of dims with distinct |strides|.
func TestPropDenseLike(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		l := genLayout(t, 6)
		d := l.ToDense()
		if !slices.Equal(d.shape, l.shape) || d.itemsize != l.itemsize {
			t.Fatalf("%v.ToDense() = %v", l, d)
		}
		if !d.IsContiguousAny() || !d.IsUnique() {
			t.Fatalf("%v.ToDense() = %v is not dense", l, d)
		}
		if l.Volume() > 0 && l.IsContiguousAny() && !slices.Equal(d.strides, l.strides) {
			// Extent-1 dims may get different strides; compare the others.
			for i, e := range l.shape {
				if e > 1 && d.strides[i] != l.strides[i] {
					t.Fatalf("%v is dense, ToDense() = %v changed it", l, d)
				}
			}
		}
		so := l.StrideOrder()
		for k := 1; k < len(so); k++ {
			a, b := so[k-1], so[k]
			if l.shape[a] > 1 && l.shape[b] > 1 && uabs(l.strides[a]) > uabs(l.strides[b]) && d.strides[a] < d.strides[b] {
				t.Fatalf("%v.ToDense() = %v reverses dims %d and %d", l, d, a, b)
			}
		}
		c, err := DenseLike(l, C)
		if err != nil || !c.IsContiguousC() {
			t.Fatalf("DenseLike(%v, C) = %v, %v", l, c, err)
		}
		f, err := DenseLike(l, F)
		if err != nil || !f.IsContiguousF() {
			t.Fatalf("DenseLike(%v, F) = %v, %v", l, f, err)
		}
	})
}

// TestPropRepackRoundTrip: growing then shrinking the itemsize returns the
// same byte offsets.
func TestPropRepack(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		l := genLayout(t, 4)
		k := rapid.SampledFrom([]int{1, 2, 4, 8, 16, 3}).Draw(t, "itemsize")
		w, err := l.Repack(k)
		if err != nil {
			if !errors.Is(err, ErrItemsize) && !errors.Is(err, ErrNotViewable) && !errors.Is(err, ErrShape) {
				t.Fatalf("%v.Repack(%d): %v", l, k, err)
			}
			return
		}
		if msg := checkInvariants(w); msg != "" {
			t.Fatal(msg)
		}
		// The bytes of every element of w are bytes of elements of l, and
		// every byte of l is covered the same number of times by w as by l.
		count := func(x Layout) map[int64]int {
			m := map[int64]int{}
			forEachIndex(x.shape, func(idx []int64) {
				for b := range int64(x.itemsize) {
					m[naiveOffset(x, idx)*int64(x.itemsize)+b]++
				}
			})
			return m
		}
		cl, cw := count(l), count(w)
		if fmt.Sprint(cl) != fmt.Sprint(cw) {
			t.Fatalf("%v.Repack(%d) = %v covers bytes %v, want %v", l, k, w, cw, cl)
		}
		back, err := w.Repack(l.itemsize)
		if err != nil {
			t.Fatalf("%v.Repack(%d) = %v, which does not repack back: %v", l, k, w, err)
		}
		if fmt.Sprint(count(back)) != fmt.Sprint(cl) {
			t.Fatalf("round trip %v -> %v -> %v changes bytes", l, w, back)
		}
	})
}

// TestPropManyDims checks the operations at 64 and 100 dims.
func TestPropManyDims(t *testing.T) {
	for _, n := range []int{64, 100} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			rapid.Check(t, func(t *rapid.T) {
				shape := make([]int64, n)
				for i := range shape {
					shape[i] = 1
				}
				// A few dims of extent 2 (the volume stays small).
				for range rapid.IntRange(0, 10).Draw(t, "twos") {
					shape[rapid.IntRange(0, n-1).Draw(t, "at")] = 2
				}
				perm := rapid.Permutation(seq(n)).Draw(t, "perm")
				l, err := Dense(shape, 4, Perm(perm...))
				if err != nil {
					t.Fatal(err)
				}
				v, base, r := l, int64(0), refOf(l)
				for range 4 {
					v, base, r = step(t, v, base, r)
					if msg := agree(v, base, r); msg != "" {
						t.Fatalf("view %v base %d: %s", v, base, msg)
					}
				}
			})
		})
	}
}
