package layout

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
)

func TestNewAndAccessors(t *testing.T) {
	cases := []struct {
		name                 string
		shape, strides       []int64
		itemsize             int
		vol, lo, hi, bytes   int64
		str                  string
		wantStrides, byteStr []int64
	}{
		{"nil strides are dense C", []int64{2, 3, 4}, nil, 4, 24, 0, 23, 96, "(2,3,4):(12,4,1)x4", []int64{12, 4, 1}, []int64{48, 16, 4}},
		{"negative stride: MinOffset is (e-1)·s", []int64{3, 2}, []int64{-2, 1}, 2, 6, -4, 1, 12, "(3,2):(-2,1)x2", []int64{-2, 1}, []int64{-4, 2}},
		{"zero stride: every index at 0", []int64{5}, []int64{0}, 8, 5, 0, 0, 8, "(5):(0)x8", []int64{0}, []int64{0}},
		{"empty: offsets and size 0", []int64{3, 0}, []int64{7, 1}, 4, 0, 0, 0, 0, "(3,0):(7,1)x4", []int64{7, 1}, []int64{28, 4}},
		{"0-dim scalar: volume 1", nil, nil, 16, 1, 0, 0, 16, "():()x16", []int64{}, []int64{}},
		{"sliced: gaps count in the size", []int64{2, 2}, []int64{10, 3}, 1, 4, 0, 13, 14, "(2,2):(10,3)x1", []int64{10, 3}, []int64{10, 3}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l := mk(t, c.shape, c.strides, c.itemsize)
			if l.NDim() != len(c.shape) || !slices.Equal(l.Shape(), c.shape) && len(c.shape) > 0 {
				t.Fatalf("NDim/Shape: %v", l)
			}
			if !slices.Equal(l.Strides(), c.wantStrides) || !slices.Equal(l.StridesInBytes(), c.byteStr) {
				t.Fatalf("Strides %v StridesInBytes %v", l.Strides(), l.StridesInBytes())
			}
			if l.Volume() != c.vol || l.MinOffset() != c.lo || l.MaxOffset() != c.hi || l.RequiredSizeInBytes() != c.bytes || l.Itemsize() != c.itemsize {
				t.Fatalf("%v: volume %d offsets [%d,%d] bytes %d", l, l.Volume(), l.MinOffset(), l.MaxOffset(), l.RequiredSizeInBytes())
			}
			if l.String() != c.str {
				t.Fatalf("String() = %q, want %q", l.String(), c.str)
			}
			if msg := checkInvariants(l); msg != "" {
				t.Fatal(msg)
			}
		})
	}
}

func TestLayoutIsImmutable(t *testing.T) {
	shape, strides := []int64{2, 3}, []int64{3, 1}
	l := mk(t, shape, strides, 4)
	shape[0], strides[0] = 99, 99
	sh := l.Shape()
	sh[1] = 42
	st := l.Strides()
	st[1] = 42
	if !same(l, []int64{2, 3}, []int64{3, 1}, 4) {
		t.Fatalf("layout changed through caller slices: %v", l)
	}
	_, _ = l.Reshape(6)
	_, _, _ = l.Slice(Range{Omit, Omit, -1})
	_, _ = l.Permute(1, 0)
	if !same(l, []int64{2, 3}, []int64{3, 1}, 4) {
		t.Fatalf("an operation changed its receiver: %v", l)
	}
}

func TestFromByteStrides(t *testing.T) {
	l, err := FromByteStrides([]int64{2, 3}, []int64{24, -8}, 8)
	if err != nil || !same(l, []int64{2, 3}, []int64{3, -1}, 8) {
		t.Fatalf("FromByteStrides = %v, %v", l, err)
	}
	if _, err := FromByteStrides([]int64{2, 3}, []int64{12, 4}, 8); !errors.Is(err, ErrStride) || !strings.Contains(err.Error(), "byteStrides[0] = 12 is not a multiple of itemsize 8") {
		t.Errorf("non-divisible byte stride: %v", err)
	}
	if _, err := FromByteStrides([]int64{2}, []int64{8, 8}, 8); !errors.Is(err, ErrStride) {
		t.Errorf("byte stride count: %v", err)
	}
	if _, err := FromByteStrides([]int64{2}, nil, 0); !errors.Is(err, ErrItemsize) {
		t.Errorf("itemsize 0: %v", err)
	}
	d, err := FromByteStrides([]int64{2, 3}, nil, 2)
	if err != nil || !d.IsContiguousC() {
		t.Errorf("nil byte strides: %v, %v", d, err)
	}
}

func TestDenseOrders(t *testing.T) {
	for _, c := range []struct {
		name  string
		order Order
		want  []int64
	}{
		{"C: last dim fastest", C, []int64{12, 4, 1}},
		{"F: first dim fastest", F, []int64{1, 2, 6}},
		{"Perm lists dims slowest first: dim 2, then 0, then 1", Perm(2, 0, 1), []int64{3, 1, 6}},
	} {
		t.Run(c.name, func(t *testing.T) {
			l, err := Dense([]int64{2, 3, 4}, 2, c.order)
			if err != nil || !slices.Equal(l.strides, c.want) {
				t.Fatalf("Dense(%v) = %v, %v; want strides %v", c.order, l, err, c.want)
			}
			if !l.IsContiguousAny() || !l.IsUnique() {
				t.Fatalf("Dense(%v) = %v is not dense", c.order, l)
			}
		})
	}
	// Extent-1 and empty dims get the stride they would have with extent 1.
	l, err := Dense([]int64{2, 1, 0, 3}, 1, C)
	if err != nil || !slices.Equal(l.strides, []int64{3, 3, 3, 1}) {
		t.Errorf("Dense with 1 and 0 extents = %v, %v", l, err)
	}
	if _, err := Dense([]int64{2}, 1, Keep); !errors.Is(err, ErrAxis) {
		t.Errorf("Dense(Keep): %v", err)
	}
	if s := Perm(1, 0).String(); s != "Perm[1 0]" || C.String() != "C" || F.String() != "F" || Keep.String() != "Keep" {
		t.Errorf("Order strings: %q", s)
	}
}

// TestBadInput checks every kind of bad input returns its sentinel, names
// the value, and does not panic.
func TestBadInput(t *testing.T) {
	const big = math.MaxInt64
	cases := []struct {
		name string
		f    func() error
		err  error
		msg  string
	}{
		{"negative extent", func() error { _, err := New([]int64{2, -1}, nil, 4); return err }, ErrShape, "shape[1] = -1 is negative"},
		{"negative extent with strides", func() error { _, err := New([]int64{-3}, []int64{1}, 4); return err }, ErrShape, "-3"},
		{"wrong stride count", func() error { _, err := New([]int64{2, 3}, []int64{1}, 4); return err }, ErrStride, "1 strides [1] for 2 dims"},
		{"itemsize 0", func() error { _, err := New([]int64{2}, nil, 0); return err }, ErrItemsize, "itemsize 0"},
		{"itemsize negative", func() error { _, err := New([]int64{2}, []int64{1}, -4); return err }, ErrItemsize, "itemsize -4"},
		{"Dense itemsize 0", func() error { _, err := Dense([]int64{2}, 0, C); return err }, ErrItemsize, "itemsize 0"},
		{"Dense negative extent", func() error { _, err := Dense([]int64{-2}, 1, C); return err }, ErrShape, "-2"},
		{"bad Perm order", func() error { _, err := Dense([]int64{2, 3}, 1, Perm(0, 2)); return err }, ErrAxis, "out of range"},
		{"volume overflow", func() error { _, err := New([]int64{1 << 32, 1 << 32}, []int64{0, 0}, 1); return err }, ErrOverflow, "volume"},
		{"dense volume overflow", func() error { _, err := New([]int64{1 << 32, 1 << 32}, nil, 1); return err }, ErrOverflow, ""},
		{"offset overflow", func() error { _, err := New([]int64{3}, []int64{big/2 + 1}, 1); return err }, ErrOverflow, ""},
		{"byte stride overflow", func() error { _, err := New([]int64{1}, []int64{big / 4}, 8); return err }, ErrOverflow, "itemsize 8"},
		{"min offset overflow", func() error { _, err := New([]int64{3, 3}, []int64{-(big / 2), -(big / 2)}, 1); return err }, ErrOverflow, ""},
		{"required size overflow", func() error { _, err := New([]int64{2, 2}, []int64{big/2 + 1, -(big/2 + 1)}, 1); return err }, ErrOverflow, "required size"},
		{"required bytes overflow", func() error { _, err := New([]int64{big / 4}, nil, 8); return err }, ErrOverflow, ""},
		{"MinInt64 stride", func() error { _, err := New([]int64{2}, []int64{math.MinInt64}, 1); return err }, ErrOverflow, ""},
		{"broadcast to overflowing volume", func() error {
			l, _ := New([]int64{1, 1}, nil, 1)
			_, err := l.BroadcastTo(1<<40, 1<<40)
			return err
		}, ErrOverflow, ""},
		{"slice step overflow is impossible but stride·step is checked", func() error {
			l, _ := New([]int64{4}, []int64{1 << 40}, 1)
			_, _, err := l.Slice(Range{Omit, Omit, 0})
			return err
		}, ErrRange, "step 0"},
		{"flatten overflowing empty extent", func() error {
			l, _ := New([]int64{0, 1 << 40, 1 << 40}, []int64{1, 1, 1}, 1)
			_, err := l.Flatten(1, 2)
			return err
		}, ErrOverflow, ""},
		{"unsqueeze axis", func() error {
			l, _ := New([]int64{2}, nil, 1)
			_, err := l.Unsqueeze(5)
			return err
		}, ErrAxis, "unsqueeze axis 5 out of range for 2 dims"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.f()
			if !errors.Is(err, c.err) || !strings.Contains(err.Error(), c.msg) {
				t.Fatalf("got %v, want %v with %q", err, c.err, c.msg)
			}
		})
	}
}

// TestNearMaxInt64 builds layouts whose sizes sit just below the limit.
func TestNearMaxInt64(t *testing.T) {
	l, err := New([]int64{2}, []int64{math.MaxInt64 / 2}, 1)
	if err != nil || l.MaxOffset() != math.MaxInt64/2 || l.RequiredSizeInBytes() != math.MaxInt64/2+1 {
		t.Fatalf("%v, %v", l, err)
	}
	n, err := New([]int64{2}, []int64{-(math.MaxInt64 / 2)}, 1)
	if err != nil || n.MinOffset() != -(math.MaxInt64/2) || n.RequiredSizeInBytes() != math.MaxInt64/2+1 {
		t.Fatalf("%v, %v", n, err)
	}
	// Its views stay valid.
	if r, off, err := n.Slice(Range{Omit, Omit, -1}); err != nil || off != -(math.MaxInt64/2) || r.strides[0] != math.MaxInt64/2 {
		t.Fatalf("reversed: %v, %d, %v", r, off, err)
	}
	if u, err := l.Unsqueeze(0, 2); err != nil || u.NDim() != 3 {
		t.Fatalf("Unsqueeze near the limit: %v, %v", u, err)
	}
}

func TestMulAddSub(t *testing.T) {
	for _, c := range []struct {
		a, b, want int64
		ok         bool
	}{
		{3, 4, 12, true},
		{-3, 4, -12, true},
		{math.MaxInt64, 1, math.MaxInt64, true},
		{math.MaxInt64, 2, 0, false},
		{math.MinInt64, -1, 0, false},
		{-1 << 62, 2, math.MinInt64, true},
		{1 << 32, 1 << 31, 0, false},
		{-1 << 32, 1 << 31, math.MinInt64, true},
		{0, math.MinInt64, 0, true},
	} {
		got, ok := mul64(c.a, c.b)
		if ok != c.ok || (ok && got != c.want) {
			t.Errorf("mul64(%d, %d) = %d, %v", c.a, c.b, got, ok)
		}
	}
	if _, ok := add64(math.MaxInt64, 1); ok {
		t.Error("add64 overflow not caught")
	}
	if v, ok := add64(math.MinInt64, math.MaxInt64); !ok || v != -1 {
		t.Error("add64(min, max)")
	}
	if _, ok := sub64(math.MinInt64, 1); ok {
		t.Error("sub64 overflow not caught")
	}
	if _, ok := sub64(0, math.MinInt64); ok {
		t.Error("sub64(0, min) overflow not caught")
	}
}
