package layout

import "fmt"

// Order names a dense order of dims: which dim has the largest stride, which
// the next, down to the one with stride 1. Use C, F, Keep or Perm.
type Order struct {
	kind orderKind
	perm []int
}

type orderKind uint8

const (
	orderC orderKind = iota
	orderF
	orderKeep
	orderPerm
)

var (
	// C is row-major order: the last dim is fastest (NumPy's default).
	C = Order{kind: orderC}
	// F is column-major (Fortran) order: the first dim is fastest.
	F = Order{kind: orderF}
	// Keep, given to DenseLike, keeps the stride order of the layout it
	// starts from (Layout.StrideOrder), as NumPy's order='K' does.
	Keep = Order{kind: orderKeep}
)

// Perm returns the dense order that lists dims from the largest stride to the
// smallest: Perm(0, 1, …, n-1) is C and Perm(n-1, …, 0) is F. It is checked
// against the layout's ndim where it is used.
func Perm(dims ...int) Order {
	return Order{kind: orderPerm, perm: append([]int(nil), dims...)}
}

// String returns "C", "F", "Keep" or "Perm(…)".
func (o Order) String() string {
	switch o.kind {
	case orderC:
		return "C"
	case orderF:
		return "F"
	case orderKeep:
		return "Keep"
	}
	return fmt.Sprintf("Perm%v", o.perm)
}

// dims returns the order as a permutation of n dims, slowest first.
func (o Order) dims(n int) ([]int, error) {
	p := make([]int, n)
	switch o.kind {
	case orderC:
		for i := range p {
			p[i] = i
		}
	case orderF:
		for i := range p {
			p[i] = n - 1 - i
		}
	case orderPerm:
		if err := checkPerm(o.perm, n); err != nil {
			return nil, err
		}
		copy(p, o.perm)
	default:
		return nil, fmt.Errorf("%w: order %v needs a layout to keep (use DenseLike)", ErrAxis, o)
	}
	return p, nil
}

// checkPerm reports whether perm is a permutation of 0..n-1.
func checkPerm(perm []int, n int) error {
	if len(perm) != n {
		return fmt.Errorf("%w: permutation %v has %d entries for %d dims", ErrAxis, perm, len(perm), n)
	}
	seen := make([]bool, n)
	for i, d := range perm {
		if d < 0 || d >= n {
			return fmt.Errorf("%w: permutation %v: entry %d = %d is out of range [0,%d)", ErrAxis, perm, i, d, n)
		}
		if seen[d] {
			return fmt.Errorf("%w: permutation %v repeats dim %d", ErrAxis, perm, d)
		}
		seen[d] = true
	}
	return nil
}

// Dense returns the layout that stores shape without gaps, in the given order
// (C, F or Perm; Keep is refused here because there is nothing to keep).
// Extent-1 and empty dims get the stride they would have with extent 1, so
// that the strides stay meaningful.
func Dense(shape []int64, itemsize int, order Order) (Layout, error) {
	if itemsize <= 0 {
		return Layout{}, fmt.Errorf("%w: itemsize %d must be positive", ErrItemsize, itemsize)
	}
	for i, e := range shape {
		if e < 0 {
			return Layout{}, fmt.Errorf("%w: shape[%d] = %d is negative", ErrShape, i, e)
		}
	}
	p, err := order.dims(len(shape))
	if err != nil {
		return Layout{}, err
	}
	st := make([]int64, len(shape))
	s := int64(1)
	for k := len(p) - 1; k >= 0; k-- {
		d := p[k]
		st[d] = s
		e := shape[d]
		if e > 1 {
			var ok bool
			if s, ok = mul64(s, e); !ok {
				return Layout{}, fmt.Errorf("%w: dense strides of shape %v", ErrOverflow, shape)
			}
		}
	}
	return build(append([]int64(nil), shape...), st, itemsize)
}
