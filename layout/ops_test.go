package layout

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
)

// mk builds a layout or fails the test.
func mk(t *testing.T, shape, strides []int64, itemsize int) Layout {
	t.Helper()
	l, err := New(shape, strides, itemsize)
	if err != nil {
		t.Fatalf("New(%v, %v, %d): %v", shape, strides, itemsize, err)
	}
	return l
}

// same reports whether l has the given shape, strides and itemsize.
func same(l Layout, shape, strides []int64, itemsize int) bool {
	return slices.Equal(l.shape, shape) && slices.Equal(l.strides, strides) && l.itemsize == itemsize
}

func TestDenseLike(t *testing.T) {
	cases := []struct {
		name           string
		shape, strides []int64
		order          Order
		want           []int64
	}{
		{"C order of a transposed view is row-major", []int64{2, 3}, []int64{1, 2}, C, []int64{3, 1}},
		{"F order is column-major", []int64{2, 3}, []int64{3, 1}, F, []int64{1, 2}},
		{"Keep keeps a transpose (NumPy order=K)", []int64{2, 3}, []int64{1, 2}, Keep, []int64{1, 2}},
		{"Keep closes the gaps of a sliced view", []int64{2, 3}, []int64{12, 2}, Keep, []int64{3, 1}},
		{"Keep makes reversed strides positive", []int64{2, 3}, []int64{-3, -1}, Keep, []int64{3, 1}},
		{"Keep on a permuted 3-d view", []int64{2, 3, 4}, []int64{1, 8, 2}, Keep, []int64{1, 8, 2}},
		{"Perm(1,0,2) puts dim 1 slowest", []int64{2, 3, 4}, nil, Perm(1, 0, 2), []int64{4, 8, 1}},
		{"Keep with broadcast (zero) strides: ties keep dim order", []int64{2, 3}, []int64{0, 0}, Keep, []int64{3, 1}},
		{"0-dim", nil, nil, Keep, []int64{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l := mk(t, c.shape, c.strides, 4)
			d, err := DenseLike(l, c.order)
			if err != nil {
				t.Fatal(err)
			}
			if !same(d, c.shape, c.want, 4) && !(len(c.want) == 0 && d.NDim() == 0) {
				t.Fatalf("DenseLike(%v, %v) = %v, want strides %v", l, c.order, d, c.want)
			}
			if c.order.kind == orderKeep && !same(l.ToDense(), d.shape, d.strides, 4) {
				t.Fatalf("ToDense() = %v, DenseLike(Keep) = %v", l.ToDense(), d)
			}
		})
	}
	l := mk(t, []int64{2, 3}, nil, 4)
	if _, err := DenseLike(l, Perm(0)); !errors.Is(err, ErrAxis) {
		t.Errorf("DenseLike with a 1-entry perm for 2 dims: %v, want ErrAxis", err)
	}
	if _, err := DenseLike(l, Perm(0, 0)); !errors.Is(err, ErrAxis) {
		t.Errorf("DenseLike with a repeated perm: %v, want ErrAxis", err)
	}
}

func TestToDenseEmptyOverflow(t *testing.T) {
	// Empty, but the non-zero extents multiply past int64: no dense strides
	// exist, ToDense falls back to zero strides and stays valid.
	l := mk(t, []int64{0, 1 << 40, 1 << 40}, []int64{1, 1, 1}, 1)
	d := l.ToDense()
	if !slices.Equal(d.shape, l.shape) || d.RequiredSizeInBytes() != 0 || d.Itemsize() != 1 {
		t.Fatalf("ToDense() = %v", d)
	}
}

func TestStrideOrder(t *testing.T) {
	cases := []struct {
		name    string
		strides []int64
		want    []int
	}{
		{"C order lists dims in order", []int64{12, 4, 1}, []int{0, 1, 2}},
		{"F order lists dims reversed", []int64{1, 2, 6}, []int{2, 1, 0}},
		{"uses |stride|: a reversed dim keeps its place", []int64{-12, 4, -1}, []int{0, 1, 2}},
		{"ties keep the lower dim first", []int64{4, 1, 4}, []int{0, 2, 1}},
		{"zero strides come last", []int64{0, 3, 0}, []int{1, 0, 2}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l := mk(t, []int64{2, 3, 4}, c.strides, 1)
			if got := l.StrideOrder(); !slices.Equal(got, c.want) {
				t.Fatalf("%v.StrideOrder() = %v, want %v", l, got, c.want)
			}
		})
	}
}

func TestContiguity(t *testing.T) {
	cases := []struct {
		name           string
		shape, strides []int64
		c, f, any, u   bool
	}{
		{"dense C", []int64{2, 3}, []int64{3, 1}, true, false, true, true},
		{"dense F", []int64{2, 3}, []int64{1, 2}, false, true, true, true},
		{"permuted 3-d is only Any", []int64{2, 3, 4}, []int64{4, 8, 1}, false, false, true, true},
		{"extent-1 dims are ignored (NumPy)", []int64{1, 3, 1}, []int64{99, 1, -7}, true, true, true, true},
		{"1-d stride 1 is both C and F", []int64{5}, []int64{1}, true, true, true, true},
		{"0-dim is contiguous", nil, nil, true, true, true, true},
		{"empty is contiguous (NumPy)", []int64{0, 3}, []int64{5, 7}, true, true, true, true},
		{"a gap (sliced rows) is not contiguous", []int64{2, 3}, []int64{4, 1}, false, false, false, true},
		{"a reversed dim is not contiguous", []int64{3}, []int64{-1}, false, false, false, true},
		{"stride 2 is not contiguous", []int64{3}, []int64{2}, false, false, false, true},
		{"a broadcast dim is not contiguous nor unique", []int64{2, 3}, []int64{0, 1}, false, false, false, false},
		{"overlapping rows (stride < row length) are not unique", []int64{3, 4}, []int64{2, 1}, false, false, false, false},
		{"interleaved but unique (2i+3j over 3×2 hits 0,3,2,5,4,7)", []int64{3, 2}, []int64{2, 3}, false, false, false, true},
		{"interleaved and colliding (2·3 = 3·2 over 4×3)", []int64{4, 3}, []int64{2, 3}, false, false, false, false},
		{"interleaved, unique: 0,2 + 0,5 distinct", []int64{2, 2}, []int64{2, 5}, false, false, false, true},
		{"negative and positive strides, unique", []int64{2, 3}, []int64{-3, 1}, false, false, false, true},
		{"strides ±1 on two dims collide", []int64{2, 2}, []int64{1, -1}, false, false, false, false},
		{"non-nested strides, still unique (exact check)", []int64{2, 3}, []int64{3, 2}, false, false, false, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l := mk(t, c.shape, c.strides, 4)
			if l.IsContiguousC() != c.c || l.IsContiguousF() != c.f || l.IsContiguousAny() != c.any || l.IsUnique() != c.u {
				t.Fatalf("%v: C %v F %v Any %v Unique %v, want %v %v %v %v", l,
					l.IsContiguousC(), l.IsContiguousF(), l.IsContiguousAny(), l.IsUnique(), c.c, c.f, c.any, c.u)
			}
			if l.IsUnique() != bruteUnique(l) {
				t.Fatalf("%v: IsUnique disagrees with brute force", l)
			}
		})
	}
}

func TestIsUniqueLarge(t *testing.T) {
	// Beyond the exact-check volume: the fast test still proves a dense
	// layout unique, and pigeonhole proves a squeezed one not unique.
	big := mk(t, []int64{1 << 12, 1 << 12}, nil, 1)
	if !big.IsUnique() {
		t.Errorf("%v: dense layout not unique", big)
	}
	p := mk(t, []int64{1 << 12, 1 << 12}, []int64{1 << 11, 1}, 1)
	if p.IsUnique() {
		t.Errorf("%v: overlapping rows reported unique", p)
	}
	// Unique but non-nested, volume 2^22: conservatively false is allowed;
	// it must not be true unless truly unique. (2 and 3 interleave: offsets
	// 2a+3b for a<2^11, b<2^11 collide, e.g. (3,0) and (0,2).)
	q := mk(t, []int64{1 << 11, 1 << 11}, []int64{2, 3}, 1)
	if q.IsUnique() {
		t.Errorf("%v: colliding layout reported unique", q)
	}
}

func TestReshape(t *testing.T) {
	cases := []struct {
		name              string
		shape, strides    []int64
		to                []int64
		wantSh, wantSt    []int64
		err               error
		errContainsString string
	}{
		{"C-contiguous splits freely", []int64{6}, []int64{1}, []int64{2, 3}, []int64{2, 3}, []int64{3, 1}, nil, ""},
		{"C-contiguous merges freely", []int64{2, 3, 4}, nil, []int64{6, 4}, []int64{6, 4}, []int64{4, 1}, nil, ""},
		{"-1 is inferred", []int64{2, 3, 4}, nil, []int64{-1, 4}, []int64{6, 4}, []int64{4, 1}, nil, ""},
		{"splitting a strided dim keeps its stride innermost", []int64{6}, []int64{2}, []int64{3, 2}, []int64{3, 2}, []int64{4, 2}, nil, ""},
		{"a reversed dim splits with negative strides", []int64{6}, []int64{-1}, []int64{2, 3}, []int64{2, 3}, []int64{-3, -1}, nil, ""},
		{"merging reversed C dims works (NumPy: a[::-1,::-1].reshape(6))", []int64{2, 3}, []int64{-3, -1}, []int64{6}, []int64{6}, []int64{-1}, nil, ""},
		{"sliced rows: merging the row dim is not viewable", []int64{2, 3}, []int64{4, 1}, []int64{6}, nil, nil, ErrNotViewable, "do not merge"},
		{"sliced rows: splitting the row dim is viewable", []int64{4, 3}, []int64{4, 1}, []int64{2, 2, 3}, []int64{2, 2, 3}, []int64{8, 4, 1}, nil, ""},
		{"transposed: flattening needs a copy (NumPy .T.reshape(-1) copies)", []int64{3, 2}, []int64{1, 3}, []int64{6}, nil, nil, ErrNotViewable, ""},
		{"F-order 2-d: adding/removing 1s is a view", []int64{3, 2}, []int64{1, 3}, []int64{1, 3, 1, 2}, []int64{1, 3, 1, 2}, []int64{3, 1, 6, 3}, nil, ""},
		{"broadcast dim kept separate stays a view", []int64{3, 4}, []int64{0, 1}, []int64{3, 2, 2}, []int64{3, 2, 2}, []int64{0, 2, 1}, nil, ""},
		{"broadcast dim merged with a real one is not a view", []int64{3, 4}, []int64{0, 1}, []int64{12}, nil, nil, ErrNotViewable, ""},
		{"all-broadcast merges with stride 0", []int64{3, 4}, []int64{0, 0}, []int64{12}, []int64{12}, []int64{0}, nil, ""},
		{"extent-1 dims of the source never block", []int64{2, 1, 3}, []int64{3, 77, 1}, []int64{6}, []int64{6}, []int64{1}, nil, ""},
		{"an empty layout reshapes to any volume-0 shape, dense C", []int64{0, 3}, []int64{1, 9}, []int64{3, 0, 2}, []int64{3, 0, 2}, []int64{2, 2, 1}, nil, ""},
		{"a single element reshapes to all ones", []int64{1, 1}, []int64{5, 9}, []int64{1, 1, 1}, []int64{1, 1, 1}, []int64{1, 1, 1}, nil, ""},
		{"to 0-dim", []int64{1}, []int64{3}, []int64{}, []int64{}, []int64{}, nil, ""},
		{"volume mismatch", []int64{2, 3}, nil, []int64{4, 2}, nil, nil, ErrShape, "6 elements"},
		{"two -1s", []int64{2, 3}, nil, []int64{-1, -1}, nil, nil, ErrShape, "only one extent may be -1"},
		{"-1 cannot be inferred with a 0 extent", []int64{0, 3}, nil, []int64{0, -1}, nil, nil, ErrShape, "multiply to 0"},
		{"-1 does not divide", []int64{2, 3}, nil, []int64{4, -1}, nil, nil, ErrShape, ""},
		{"negative extent", []int64{2, 3}, nil, []int64{-2, -3}, nil, nil, ErrShape, "negative"},
		{"overflowing target shape", []int64{2, 3}, nil, []int64{math.MaxInt64, 2}, nil, nil, ErrOverflow, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l := mk(t, c.shape, c.strides, 2)
			got, err := l.Reshape(c.to...)
			if c.err != nil {
				if !errors.Is(err, c.err) || !strings.Contains(err.Error(), c.errContainsString) {
					t.Fatalf("%v.Reshape(%v) = %v, %v; want %v containing %q", l, c.to, got, err, c.err, c.errContainsString)
				}
				return
			}
			if err != nil || !same(got, c.wantSh, c.wantSt, 2) {
				t.Fatalf("%v.Reshape(%v) = %v, %v; want (%v):(%v)", l, c.to, got, err, c.wantSh, c.wantSt)
			}
		})
	}
}

func TestSqueezeUnsqueeze(t *testing.T) {
	l := mk(t, []int64{1, 3, 1, 2}, []int64{7, 2, 5, 1}, 4)
	got, err := l.Squeeze()
	if err != nil || !same(got, []int64{3, 2}, []int64{2, 1}, 4) {
		t.Errorf("Squeeze() with no axes drops every extent-1 dim: %v, %v", got, err)
	}
	got, err = l.Squeeze(-2, 0)
	if err != nil || !same(got, []int64{3, 2}, []int64{2, 1}, 4) {
		t.Errorf("Squeeze(-2, 0): %v, %v", got, err)
	}
	got, err = l.Squeeze(2)
	if err != nil || !same(got, []int64{1, 3, 2}, []int64{7, 2, 1}, 4) {
		t.Errorf("Squeeze(2): %v, %v", got, err)
	}
	for _, c := range []struct {
		axes []int
		err  error
		msg  string
	}{
		{[]int{1}, ErrShape, "axis 1 of extent 3"},
		{[]int{4}, ErrAxis, "squeeze axis 4 out of range for 4 dims"},
		{[]int{-5}, ErrAxis, "-5 out of range"},
		{[]int{0, -4}, ErrAxis, "repeated"},
	} {
		if _, err := l.Squeeze(c.axes...); !errors.Is(err, c.err) || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("Squeeze(%v): %v, want %v with %q", c.axes, err, c.err, c.msg)
		}
	}

	d := mk(t, []int64{2, 3}, nil, 4)
	for _, c := range []struct {
		name       string
		axes       []int
		sh, st     []int64
		err        error
		stillDense bool
	}{
		{"axis 0 prepends (NumPy expand_dims)", []int{0}, []int64{1, 2, 3}, []int64{6, 3, 1}, nil, true},
		{"axis -1 appends", []int{-1}, []int64{2, 3, 1}, []int64{3, 1, 1}, nil, true},
		{"middle", []int{1}, []int64{2, 1, 3}, []int64{3, 3, 1}, nil, true},
		{"axes index the result", []int{0, 2, 4}, []int64{1, 2, 1, 3, 1}, []int64{6, 3, 3, 1, 1}, nil, true},
		{"two at the end", []int{-1, -2}, []int64{2, 3, 1, 1}, []int64{3, 1, 1, 1}, nil, true},
		{"out of range", []int{3}, nil, nil, ErrAxis, false},
		{"negative out of range", []int{-4}, nil, nil, ErrAxis, false},
		{"repeated", []int{1, 1}, nil, nil, ErrAxis, false},
		{"repeated via negative (-3 of 4 result dims is 1)", []int{1, -3}, nil, nil, ErrAxis, false},
	} {
		t.Run("Unsqueeze "+c.name, func(t *testing.T) {
			got, err := d.Unsqueeze(c.axes...)
			if c.err != nil {
				if !errors.Is(err, c.err) {
					t.Fatalf("Unsqueeze(%v): %v, want %v", c.axes, err, c.err)
				}
				return
			}
			if err != nil || !same(got, c.sh, c.st, 4) || got.IsContiguousC() != c.stillDense {
				t.Fatalf("Unsqueeze(%v) = %v, %v; want (%v):(%v)", c.axes, got, err, c.sh, c.st)
			}
		})
	}
	s, err := mk(t, nil, nil, 8).Unsqueeze(0, 1)
	if err != nil || !same(s, []int64{1, 1}, []int64{1, 1}, 8) {
		t.Errorf("0-dim Unsqueeze(0, 1) = %v, %v", s, err)
	}
	// A huge stride next to the new dim: its product would overflow; the
	// new extent-1 dim falls back to stride 1.
	h := mk(t, []int64{4}, []int64{math.MaxInt64 / 8}, 1)
	if u, err := h.Unsqueeze(0); err != nil || u.shape[0] != 1 {
		t.Errorf("Unsqueeze next to a huge stride: %v, %v", u, err)
	}
}

func TestPermute(t *testing.T) {
	l := mk(t, []int64{2, 3, 4}, nil, 4)
	got, err := l.Permute(2, 0, 1)
	if err != nil || !same(got, []int64{4, 2, 3}, []int64{1, 12, 4}, 4) {
		t.Fatalf("Permute(2,0,1): result dim k is source dim perm[k]: %v, %v", got, err)
	}
	if so := got.StrideOrder(); !slices.Equal(so, []int{1, 2, 0}) {
		t.Errorf("StrideOrder after permute = %v", so)
	}
	for _, c := range []struct {
		perm []int
		msg  string
	}{
		{[]int{0, 1}, "2 entries for 3 dims"},
		{[]int{0, 1, 3}, "out of range"},
		{[]int{0, 1, -1}, "out of range"},
		{[]int{0, 1, 1}, "repeats dim 1"},
	} {
		if _, err := l.Permute(c.perm...); !errors.Is(err, ErrAxis) || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("Permute(%v): %v, want ErrAxis with %q", c.perm, err, c.msg)
		}
	}
	z, err := mk(t, nil, nil, 1).Permute()
	if err != nil || z.NDim() != 0 {
		t.Errorf("0-dim Permute() = %v, %v", z, err)
	}
}

func TestFlatten(t *testing.T) {
	cases := []struct {
		name           string
		shape, strides []int64
		start, end     int
		sh, st         []int64
		err            error
	}{
		{"all dims of a C layout (PyTorch flatten())", []int64{2, 3, 4}, nil, 0, -1, []int64{24}, []int64{1}, nil},
		{"inner two", []int64{2, 3, 4}, nil, 1, 2, []int64{2, 12}, []int64{12, 1}, nil},
		{"outer two of sliced rows", []int64{2, 3, 4}, []int64{24, 8, 1}, 0, 1, []int64{6, 4}, []int64{8, 1}, nil},
		{"single dim is a no-op", []int64{2, 3}, nil, 1, 1, []int64{2, 3}, []int64{3, 1}, nil},
		{"extent-1 dims never block", []int64{2, 1, 3}, []int64{3, 100, 1}, 0, 2, []int64{6}, []int64{1}, nil},
		{"reversed C dims merge", []int64{2, 3}, []int64{-3, -1}, 0, 1, []int64{6}, []int64{-1}, nil},
		{"0-dim flattens to one dim of extent 1", nil, nil, 0, -1, []int64{1}, []int64{1}, nil},
		{"empty layout merges anything", []int64{2, 0, 3}, []int64{1, 5, 100}, 0, 2, []int64{0}, []int64{100}, nil},
		{"transposed cannot merge", []int64{3, 2}, []int64{1, 3}, 0, 1, nil, nil, ErrNotViewable},
		{"sliced inner dim cannot merge", []int64{2, 3}, []int64{4, 1}, 0, 1, nil, nil, ErrNotViewable},
		{"start after end", []int64{2, 3}, nil, 1, 0, nil, nil, ErrAxis},
		{"end out of range", []int64{2, 3}, nil, 0, 2, nil, nil, ErrAxis},
		{"start out of range", []int64{2, 3}, nil, -3, 1, nil, nil, ErrAxis},
		{"0-dim axis out of range", nil, nil, 0, 1, nil, nil, ErrAxis},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l := mk(t, c.shape, c.strides, 4)
			got, err := l.Flatten(c.start, c.end)
			if c.err != nil {
				if !errors.Is(err, c.err) {
					t.Fatalf("%v.Flatten(%d,%d) = %v, %v; want %v", l, c.start, c.end, got, err, c.err)
				}
				return
			}
			if err != nil || !same(got, c.sh, c.st, 4) {
				t.Fatalf("%v.Flatten(%d,%d) = %v, %v; want (%v):(%v)", l, c.start, c.end, got, err, c.sh, c.st)
			}
		})
	}
}

func TestRepack(t *testing.T) {
	cases := []struct {
		name           string
		shape, strides []int64
		from, to       int
		sh, st         []int64
		err            error
	}{
		{"2×float32 as complex64 (NumPy view): last extent halves", []int64{3, 4}, nil, 4, 8, []int64{3, 2}, []int64{2, 1}, nil},
		{"complex64 as float32: last extent doubles", []int64{3, 2}, nil, 8, 4, []int64{3, 4}, []int64{4, 1}, nil},
		{"grow with a padded row stride", []int64{3, 4}, []int64{6, 1}, 4, 8, []int64{3, 2}, []int64{3, 1}, nil},
		{"grow with negative outer stride", []int64{3, 4}, []int64{-4, 1}, 2, 8, []int64{3, 1}, []int64{-1, 1}, nil},
		{"shrink with transposed outer dims", []int64{2, 3, 2}, []int64{2, 4, 1}, 8, 2, []int64{2, 3, 8}, []int64{8, 16, 1}, nil},
		{"shrink a non-unit last stride of extent 1", []int64{3, 1}, []int64{1, 5}, 4, 1, []int64{3, 4}, []int64{4, 1}, nil},
		{"same itemsize is a no-op", []int64{2, 3}, []int64{1, 2}, 4, 4, []int64{2, 3}, []int64{1, 2}, nil},
		{"grow: extent-1 dims may have any stride", []int64{1, 4}, []int64{3, 1}, 1, 2, []int64{1, 2}, []int64{1, 1}, nil},
		{"grow: last stride not 1", []int64{4, 2}, []int64{1, 4}, 4, 8, nil, nil, ErrNotViewable},
		{"grow: last extent odd", []int64{3}, nil, 4, 8, nil, nil, ErrNotViewable},
		{"grow: outer stride not divisible", []int64{2, 4}, []int64{5, 1}, 4, 8, nil, nil, ErrNotViewable},
		{"grow: size not a multiple", []int64{6}, nil, 4, 6, nil, nil, ErrItemsize},
		{"shrink: size does not divide", []int64{6}, nil, 8, 3, nil, nil, ErrItemsize},
		{"shrink: last stride not 1", []int64{3}, []int64{2}, 8, 4, nil, nil, ErrNotViewable},
		{"itemsize 0", []int64{3}, nil, 8, 0, nil, nil, ErrItemsize},
		{"negative itemsize", []int64{3}, nil, 8, -8, nil, nil, ErrItemsize},
		{"0-dim cannot change itemsize (NumPy)", nil, nil, 8, 4, nil, nil, ErrShape},
		{"shrink near MaxInt64: byte strides do not change, so it fits", []int64{2, 2}, []int64{math.MaxInt64 / 16, 1}, 8, 1, []int64{2, 16}, []int64{math.MaxInt64 / 16 * 8, 1}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l := mk(t, c.shape, c.strides, c.from)
			got, err := l.Repack(c.to)
			if c.err != nil {
				if !errors.Is(err, c.err) {
					t.Fatalf("%v.Repack(%d) = %v, %v; want %v", l, c.to, got, err, c.err)
				}
				return
			}
			if err != nil || !same(got, c.sh, c.st, c.to) {
				t.Fatalf("%v.Repack(%d) = %v, %v; want (%v):(%v)x%d", l, c.to, got, err, c.sh, c.st, c.to)
			}
		})
	}
}

func TestBroadcastTo(t *testing.T) {
	l := mk(t, []int64{3, 1}, []int64{1, 1}, 4)
	cases := []struct {
		name   string
		to     []int64
		sh, st []int64
		err    error
	}{
		{"extent 1 stretches with stride 0 (NumPy)", []int64{3, 4}, []int64{3, 4}, []int64{1, 0}, nil},
		{"leading dims are added with stride 0", []int64{2, 3, 4}, []int64{2, 3, 4}, []int64{0, 1, 0}, nil},
		{"extent 1 to 0", []int64{3, 0}, []int64{3, 0}, []int64{1, 0}, nil},
		{"same shape keeps strides", []int64{3, 1}, []int64{3, 1}, []int64{1, 1}, nil},
		{"mismatched non-1 extent", []int64{4, 4}, nil, nil, ErrShape},
		{"fewer dims", []int64{3}, nil, nil, ErrShape},
		{"negative extent", []int64{-1, 3, 4}, nil, nil, ErrShape},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := l.BroadcastTo(c.to...)
			if c.err != nil {
				if !errors.Is(err, c.err) {
					t.Fatalf("BroadcastTo(%v) = %v, %v; want %v", c.to, got, err, c.err)
				}
				return
			}
			if err != nil || !same(got, c.sh, c.st, 4) {
				t.Fatalf("BroadcastTo(%v) = %v, %v; want (%v):(%v)", c.to, got, err, c.sh, c.st)
			}
		})
	}
	s, err := mk(t, nil, nil, 2).BroadcastTo(2, 3)
	if err != nil || !same(s, []int64{2, 3}, []int64{0, 0}, 2) || s.IsUnique() {
		t.Errorf("scalar broadcast: %v, %v", s, err)
	}
}

func TestSlice(t *testing.T) {
	l := mk(t, []int64{5, 4}, nil, 4) // strides (4, 1)
	cases := []struct {
		name   string
		rs     []Range
		sh, st []int64
		off    int64
		err    error
	}{
		{"no ranges: whole view", nil, []int64{5, 4}, []int64{4, 1}, 0, nil},
		{"a[1:3]: rest full", []Range{Span(1, 3)}, []int64{2, 4}, []int64{4, 1}, 4, nil},
		{"a[::2] (ceil(5/2)=3 rows)", []Range{{Omit, Omit, 2}}, []int64{3, 4}, []int64{8, 1}, 0, nil},
		{"a[::-1] starts at the last row", []Range{{Omit, Omit, -1}}, []int64{5, 4}, []int64{-4, 1}, 16, nil},
		{"a[-2:] counts from the end", []Range{Span(-2, Omit)}, []int64{2, 4}, []int64{4, 1}, 12, nil},
		{"a[:, 1:-1]", []Range{All(), Span(1, -1)}, []int64{5, 2}, []int64{4, 1}, 1, nil},
		{"a[3:1:-1] (rows 3, 2)", []Range{{3, 1, -1}}, []int64{2, 4}, []int64{-4, 1}, 12, nil},
		{"a[10:20] clamps to empty, offset 0", []Range{Span(10, 20)}, []int64{0, 4}, []int64{4, 1}, 0, nil},
		{"a[-100:100] clamps to everything", []Range{Span(-100, 100)}, []int64{5, 4}, []int64{4, 1}, 0, nil},
		{"a[3:1] is empty", []Range{Span(3, 1)}, []int64{0, 4}, []int64{4, 1}, 0, nil},
		{"a[::7] selects one row; the stride stays", []Range{{Omit, Omit, 7}}, []int64{1, 4}, []int64{4, 1}, 0, nil},
		{"a[4::-2] (rows 4, 2, 0)", []Range{{4, Omit, -2}}, []int64{3, 4}, []int64{-8, 1}, 16, nil},
		{"a[-1:-6:-1] walks back past 0", []Range{{-1, -6, -1}}, []int64{5, 4}, []int64{-4, 1}, 16, nil},
		{"a[-1:-7:-1] clamps stop to before 0", []Range{{-1, -7, -1}}, []int64{5, 4}, []int64{-4, 1}, 16, nil},
		{"step Omit means 1", []Range{{1, Omit, Omit}}, []int64{4, 4}, []int64{4, 1}, 4, nil},
		{"huge step: one element", []Range{{1, Omit, math.MaxInt64}}, []int64{1, 4}, []int64{4, 1}, 4, nil},
		{"huge negative step", []Range{{Omit, Omit, math.MinInt64 + 1}}, []int64{1, 4}, []int64{4, 1}, 16, nil},
		{"zero step", []Range{{0, 5, 0}}, nil, nil, 0, ErrRange},
		{"the zero Range{} is a zero step, not 'all'", []Range{{}}, nil, nil, 0, ErrRange},
		{"too many ranges", []Range{All(), All(), All()}, nil, nil, 0, ErrAxis},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, off, err := l.Slice(c.rs...)
			if c.err != nil {
				if !errors.Is(err, c.err) {
					t.Fatalf("Slice(%v) = %v, %d, %v; want %v", c.rs, got, off, err, c.err)
				}
				return
			}
			if err != nil || !same(got, c.sh, c.st, 4) || off != c.off {
				t.Fatalf("Slice(%v) = %v, %d, %v; want (%v):(%v) at %d", c.rs, got, off, err, c.sh, c.st, c.off)
			}
			if msg := agree(got, off, refOf(l).slice(c.rs)); msg != "" {
				t.Fatal(msg)
			}
		})
	}
	if s := (Range{Omit, -1, 2}).String(); s != ":-1:2" {
		t.Errorf("Range String = %q", s)
	}
}

func TestIndex(t *testing.T) {
	l := mk(t, []int64{5, 4}, []int64{4, -1}, 2)
	got, off, err := l.Index(0, 2)
	if err != nil || !same(got, []int64{4}, []int64{-1}, 2) || off != 8 {
		t.Errorf("Index(0, 2) = %v, %d, %v; want (4):(-1) at 8", got, off, err)
	}
	got, off, err = l.Index(-1, -1)
	if err != nil || !same(got, []int64{5}, []int64{4}, 2) || off != -3 {
		t.Errorf("Index(-1, -1): last column = %v, %d, %v; want (5):(4) at -3", got, off, err)
	}
	for _, c := range []struct {
		axis int
		i    int64
		err  error
		msg  string
	}{
		{2, 0, ErrAxis, "index axis 2 out of range for 2 dims"},
		{-3, 0, ErrAxis, "out of range"},
		{0, 5, ErrRange, "index 5 out of range for axis 0 of extent 5"},
		{1, -5, ErrRange, "index -5"},
		{0, math.MinInt64, ErrRange, ""},
	} {
		if _, _, err := l.Index(c.axis, c.i); !errors.Is(err, c.err) || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("Index(%d, %d): %v, want %v with %q", c.axis, c.i, err, c.err, c.msg)
		}
	}
	e := mk(t, []int64{3, 0}, []int64{7, 1}, 1)
	if v, off, err := e.Index(0, 2); err != nil || off != 0 || v.Volume() != 0 {
		t.Errorf("Index of an empty layout: %v, %d, %v; want empty view at 0", v, off, err)
	}
}

func BenchmarkIsUnique(b *testing.B) {
	l, _ := New([]int64{8, 16, 32, 4}, []int64{1, 8, 128, 4096}, 4)
	b.ReportAllocs()
	for b.Loop() {
		if !l.IsUnique() {
			b.Fatal("not unique")
		}
	}
}
