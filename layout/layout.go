package layout

import (
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"strings"
)

// Layout describes how an n-dimensional array of fixed-size items sits in
// linear memory: a shape (extents), strides counted in items (not bytes), and
// the item size in bytes. It is the Go form of cuda.core's StridedLayout and of
// CuTe's (Shape):(Stride) pair.
//
// A Layout is an immutable value: every method returns a new Layout and never
// changes the receiver, and the slices it returns are copies. The zero Layout
// is a 0-dimensional (scalar) layout with itemsize 0 and is only useful as a
// placeholder; build layouts with New, FromByteStrides or Dense.
//
// Invariants established by the constructors: itemsize > 0; every extent ≥ 0;
// the minimum and maximum element offsets, and the byte sizes derived from
// them, fit in int64.
type Layout struct {
	shape    []int64
	strides  []int64
	itemsize int
	minOff   int64
	maxOff   int64
}

// New returns the layout with the given shape, strides (in items) and item size
// in bytes. nil strides mean dense C (row-major) order. The slices are copied.
//
// Strides may be negative (reversed dims) or zero (broadcast dims). New fails
// with ErrShape for a negative extent, ErrStride when len(strides) differs from
// len(shape), ErrItemsize for itemsize ≤ 0, and ErrOverflow when an offset or
// the byte size of the addressed memory would not fit in int64.
func New(shape, strides []int64, itemsize int) (Layout, error) {
	if itemsize <= 0 {
		return Layout{}, fmt.Errorf("%w: itemsize %d must be positive", ErrItemsize, itemsize)
	}
	for i, e := range shape {
		if e < 0 {
			return Layout{}, fmt.Errorf("%w: shape[%d] = %d is negative", ErrShape, i, e)
		}
	}
	if strides == nil {
		return Dense(shape, itemsize, C)
	}
	if len(strides) != len(shape) {
		return Layout{}, fmt.Errorf("%w: %d strides %v for %d dims of shape %v", ErrStride, len(strides), strides, len(shape), shape)
	}
	// One backing array for both copies: one allocation.
	n := len(shape)
	b := make([]int64, 2*n)
	copy(b, shape)
	copy(b[n:], strides)
	return build(b[:n:n], b[n:], itemsize)
}

// build checks offsets and sizes for overflow and fills the cached offsets.
// It takes ownership of shape and strides.
func build(shape, strides []int64, itemsize int) (Layout, error) {
	l := Layout{shape: shape, strides: strides, itemsize: itemsize}
	if l.Volume() < 0 { // overflowed
		return Layout{}, fmt.Errorf("%w: volume of shape %v", ErrOverflow, shape)
	}
	for i, s := range strides {
		if _, ok := mul64(s, int64(itemsize)); !ok {
			return Layout{}, fmt.Errorf("%w: strides[%d] = %d times itemsize %d", ErrOverflow, i, s, itemsize)
		}
	}
	empty := false
	for _, e := range shape {
		if e == 0 {
			empty = true
		}
	}
	if !empty {
		var lo, hi int64
		for i, e := range shape {
			s := strides[i]
			span, ok := mul64(e-1, s)
			if !ok {
				return Layout{}, fmt.Errorf("%w: offset (shape[%d]-1)·strides[%d] = (%d-1)·%d", ErrOverflow, i, i, e, s)
			}
			var ok2 bool
			if span < 0 {
				lo, ok2 = add64(lo, span)
			} else {
				hi, ok2 = add64(hi, span)
			}
			if !ok2 {
				return Layout{}, fmt.Errorf("%w: offsets of shape %v strides %v", ErrOverflow, shape, strides)
			}
		}
		n, ok := sub64(hi, lo)
		if ok {
			n, ok = add64(n, 1)
		}
		if ok {
			_, ok = mul64(n, int64(itemsize))
		}
		if !ok {
			return Layout{}, fmt.Errorf("%w: required size of shape %v strides %v itemsize %d", ErrOverflow, shape, strides, itemsize)
		}
		l.minOff, l.maxOff = lo, hi
	}
	return l, nil
}

// FromByteStrides is New with strides given in bytes, as NumPy and DLPack
// report them. A byte stride that is not a multiple of itemsize is an
// ErrStride error.
func FromByteStrides(shape, byteStrides []int64, itemsize int) (Layout, error) {
	if itemsize <= 0 {
		return Layout{}, fmt.Errorf("%w: itemsize %d must be positive", ErrItemsize, itemsize)
	}
	if byteStrides == nil {
		return New(shape, nil, itemsize)
	}
	if len(byteStrides) != len(shape) {
		return Layout{}, fmt.Errorf("%w: %d byte strides %v for %d dims of shape %v", ErrStride, len(byteStrides), byteStrides, len(shape), shape)
	}
	st := make([]int64, len(byteStrides))
	for i, b := range byteStrides {
		if b%int64(itemsize) != 0 {
			return Layout{}, fmt.Errorf("%w: byteStrides[%d] = %d is not a multiple of itemsize %d", ErrStride, i, b, itemsize)
		}
		st[i] = b / int64(itemsize)
	}
	return New(shape, st, itemsize)
}

// NDim returns the number of dimensions.
func (l Layout) NDim() int { return len(l.shape) }

// Shape returns a copy of the extents.
func (l Layout) Shape() []int64 { return append([]int64(nil), l.shape...) }

// Strides returns a copy of the strides, in items.
func (l Layout) Strides() []int64 { return append([]int64(nil), l.strides...) }

// StridesInBytes returns the strides multiplied by the itemsize. It cannot
// overflow: the constructors refuse a stride whose byte value does not fit.
func (l Layout) StridesInBytes() []int64 {
	out := make([]int64, len(l.strides))
	for i, s := range l.strides {
		out[i] = s * int64(l.itemsize)
	}
	return out
}

// Itemsize returns the size of one item in bytes.
func (l Layout) Itemsize() int { return l.itemsize }

// Volume returns the number of elements (the product of the extents; 1 for a
// 0-dim layout). It returns -1 only for a Layout that was not built by this
// package's constructors and whose volume overflows.
func (l Layout) Volume() int64 {
	v := int64(1)
	for _, e := range l.shape {
		if e == 0 {
			return 0
		}
	}
	for _, e := range l.shape {
		var ok bool
		v, ok = mul64(v, e)
		if !ok {
			return -1
		}
	}
	return v
}

// MinOffset returns the smallest element offset Σ i_k·stride_k over all valid
// indices, in items; 0 when the layout has no elements.
func (l Layout) MinOffset() int64 { return l.minOff }

// MaxOffset returns the largest element offset over all valid indices, in
// items; 0 when the layout has no elements.
func (l Layout) MaxOffset() int64 { return l.maxOff }

// RequiredSizeInBytes returns (MaxOffset-MinOffset+1)·Itemsize, the length of
// a buffer that holds every element under the buffer convention (offset o at
// byte (o-MinOffset)·Itemsize); 0 when the layout has no elements.
func (l Layout) RequiredSizeInBytes() int64 {
	if l.Volume() == 0 {
		return 0
	}
	return (l.maxOff - l.minOff + 1) * int64(l.itemsize)
}

// String prints the layout in CuTe's notation with the itemsize appended,
// e.g. "(4,2):(2,1)x4" for a dense 4×2 C-order layout of 4-byte items.
func (l Layout) String() string {
	var b strings.Builder
	b.WriteByte('(')
	for i, e := range l.shape {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatInt(e, 10))
	}
	b.WriteString("):(")
	for i, s := range l.strides {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatInt(s, 10))
	}
	b.WriteString(")x")
	b.WriteString(strconv.Itoa(l.itemsize))
	return b.String()
}

// Equal reports whether l and m are the same layout: same itemsize, shape
// and strides. It allocates nothing.
func (l Layout) Equal(m Layout) bool {
	if l.itemsize != m.itemsize || len(l.shape) != len(m.shape) {
		return false
	}
	for k := range l.shape {
		if l.shape[k] != m.shape[k] || l.strides[k] != m.strides[k] {
			return false
		}
	}
	return true
}

// Hash returns a 64-bit hash of the layout (item size, shape and strides):
// layouts that are Equal hash the same, so a cache keyed by layouts can
// look one up by its hash and confirm it with Equal. It allocates nothing.
func (l Layout) Hash() uint64 {
	h := mix(0x9e3779b97f4a7c15, uint64(l.itemsize))
	for k := range l.shape {
		h = mix(mix(h, uint64(l.shape[k])), uint64(l.strides[k]))
	}
	return h
}

// mix folds v into the hash h (a multiply-xorshift step: every bit of v
// reaches every bit of the result).
func mix(h, v uint64) uint64 {
	h ^= v + 0x9e3779b97f4a7c15 + h<<6 + h>>2
	h *= 0xff51afd7ed558ccd
	return h ^ h>>32
}

// mul64 returns a·b and whether it fits in int64.
func mul64(a, b int64) (int64, bool) {
	if a == 0 || b == 0 {
		return 0, true
	}
	if (a == -1 && b == math.MinInt64) || (b == -1 && a == math.MinInt64) {
		return 0, false
	}
	hi, lo := bits.Mul64(uint64(abs64(a)), uint64(abs64(b)))
	if hi != 0 || lo > math.MaxInt64 {
		if hi == 0 && lo == 1<<63 && (a < 0) != (b < 0) {
			return math.MinInt64, true
		}
		return 0, false
	}
	r := int64(lo)
	if (a < 0) != (b < 0) {
		r = -r
	}
	return r, true
}

// add64 returns a+b and whether it fits in int64.
func add64(a, b int64) (int64, bool) {
	c := a + b
	if (c > a) != (b > 0) {
		return 0, false
	}
	return c, true
}

// sub64 returns a-b and whether it fits in int64.
func sub64(a, b int64) (int64, bool) {
	c := a - b
	if (c < a) != (b > 0) {
		return 0, false
	}
	return c, true
}

func abs64(a int64) int64 {
	if a < 0 {
		return -a // MinInt64 stays MinInt64; uint64 conversion gives 1<<63
	}
	return a
}
