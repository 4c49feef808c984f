package dlpack

import (
	"errors"
	"strings"
	"testing"
)

// TestCheckNDim tests Export's dims limit directly: a shape of 2³¹ dims
// would need 16 GiB.
func TestCheckNDim(t *testing.T) {
	if err := checkNDim(1<<31 - 1); err != nil {
		t.Errorf("2³¹-1 dims: %v", err)
	}
	err := checkNDim(1 << 31)
	if !errors.Is(err, ErrNDim) || !strings.Contains(err.Error(), "2147483648 dims") {
		t.Errorf("2³¹ dims: error %v, want ErrNDim naming the count", err)
	}
}

// TestLayoutCacheCollisions builds layouts whose keys share a cache slot,
// alternately and each twice in a row (so each enters the cache): each
// must come back as its own layout, never the other's.
func TestLayoutCacheCollisions(t *testing.T) {
	shape := []int64{3, 5}
	slot := layoutHash(shape, []int64{7, 1}, 4) >> (64 - layoutCacheBits)
	var strides [][]int64
	for s := int64(1); len(strides) < 3 && s < 1<<20; s++ {
		st := []int64{s, 1}
		if layoutHash(shape, st, 4)>>(64-layoutCacheBits) == slot {
			strides = append(strides, st)
		}
	}
	if len(strides) < 3 {
		t.Fatal("found no colliding keys")
	}
	for round := range 3 {
		for _, st := range strides {
			for range 2 {
				l, e, err := newLayout(shape, st, 4)
				if err != nil {
					t.Fatal(err)
				}
				if got := l.Strides(); got[0] != st[0] || got[1] != st[1] || l.Itemsize() != 4 || l.Shape()[1] != 5 {
					t.Fatalf("round %d: strides %v gave layout %v", round, st, l)
				}
				if e != nil && !e.l.Equal(l) {
					t.Fatalf("round %d: layout %v given with the entry of %v", round, l, e.l)
				}
			}
		}
	}
	// Same shape and strides, other item sizes; nil strides.
	for range 2 {
		a, _, _ := newLayout(shape, []int64{5, 1}, 4)
		b, _, _ := newLayout(shape, []int64{5, 1}, 8)
		c, _, _ := newLayout(shape, nil, 2)
		if a.String() != "(3,5):(5,1)x4" || b.String() != "(3,5):(5,1)x8" || c.String() != "(3,5):(5,1)x2" {
			t.Errorf("got %v, %v, %v", a, b, c)
		}
	}
	// Dims past the cache's limit are built every time.
	long := make([]int64, layoutCacheMaxDims+1)
	for i := range long {
		long[i] = 2
	}
	if l, e, err := newLayout(long, nil, 1); err != nil || l.NDim() != len(long) || e != nil {
		t.Errorf("%d dims: %v (entry %p), %v", len(long), l, e, err)
	}
}

// TestLayoutCacheHits checks that a layout seen twice is then served
// without allocating, and that a one-off layout is not cached.
func TestLayoutCacheHits(t *testing.T) {
	shape, strides := []int64{4, 6, 8}, []int64{1, 4, 24}
	newLayout(shape, strides, 2)
	newLayout(shape, strides, 2)
	if n := testing.AllocsPerRun(100, func() { newLayout(shape, strides, 2) }); n != 0 {
		t.Errorf("cached layout: %v allocations per call, want 0", n)
	}
	i := layoutHash(shape, []int64{1, 4, 25}, 2) >> (64 - layoutCacheBits)
	layoutSeen[i].Store(0)
	layoutCache[i].Store(nil)
	newLayout(shape, []int64{1, 4, 25}, 2)
	if layoutCache[i].Load() != nil {
		t.Error("a layout seen once entered the cache")
	}
}

// TestIsUniqueRemembered: Desc.IsUnique gives the layout's answer, and
// remembers it in the table entry of a cached layout, for unique, broadcast
// and overlapping layouts alike.
func TestIsUniqueRemembered(t *testing.T) {
	for _, c := range []struct {
		shape, strides []int64
		want           bool
	}{
		{[]int64{3, 5}, []int64{5, 1}, true},
		{[]int64{3, 5}, []int64{0, 1}, false},
		{[]int64{4, 4}, []int64{2, 1}, false}, // overlapping rows
		{[]int64{4, 2}, []int64{1, 4}, true},
	} {
		data := uintptr(0x7f0000001000)
		x := DLTensor{Data: data, Device: DLDevice{DeviceType: KDLCPU}, NDim: int32(len(c.shape)),
			DType: DLDataType{Code: 2, Bits: 32, Lanes: 1}, Shape: &c.shape[0], Strides: &c.strides[0]}
		p := Producer{Versioned: true, Version: Version}
		for i := range 4 {
			d, err := Import(&x, p)
			if err != nil {
				t.Fatal(err)
			}
			if got := d.IsUnique(); got != c.want {
				t.Errorf("%v:%v import %d: IsUnique = %v, want %v", c.shape, c.strides, i, got, c.want)
			}
			if d.cache != nil {
				want := uint32(uniqueNo)
				if c.want {
					want = uniqueYes
				}
				if got := d.cache.unique.Load(); got != want {
					t.Errorf("%v:%v import %d: entry remembers %d, want %d", c.shape, c.strides, i, got, want)
				}
			} else if i >= 2 {
				t.Errorf("%v:%v import %d: not served from the table", c.shape, c.strides, i)
			}
		}
	}
}
