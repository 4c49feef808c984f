package dlpack

import (
	"sync/atomic"

	"github.com/stridekit/stridekit/layout"
)

// Import's layout cache. Building a layout.Layout costs two allocations and
// most of Import's time, while a program tends to exchange tensors of the
// same few shapes over and over (the parameters and activations of a model,
// step after step). Layouts are immutable values, so the layout built for
// one import can be returned again for any later tensor with the same shape,
// strides and item size. The cache is a fixed table of slots indexed by a
// hash of that key, each holding an immutable entry behind an atomic
// pointer: no locks, no map, a bounded size, and a layout that keeps
// coming back replaces the slot's entry.
const (
	layoutCacheBits    = 8
	layoutCacheSlots   = 1 << layoutCacheBits
	layoutCacheMaxDims = 8 // tensors with more dims are not cached
)

type cachedLayout struct {
	n          int
	itemsize   int
	nilStrides bool
	key        [2 * layoutCacheMaxDims]int64 // shape, then strides
	l          layout.Layout
	unique     atomic.Uint32 // l.IsUnique() once asked (Desc.IsUnique): 0 unknown, uniqueNo or uniqueYes
}

// The values of cachedLayout.unique once known.
const (
	uniqueNo  = 1
	uniqueYes = 2
)

// isUnique returns l.IsUnique(), remembered in e when e is not nil: the
// answer is cheap for most layouts but takes an exact check over the
// elements for ones whose strides overlap.
func (e *cachedLayout) isUnique(l layout.Layout) bool {
	if e == nil {
		return l.IsUnique()
	}
	switch e.unique.Load() {
	case uniqueYes:
		return true
	case uniqueNo:
		return false
	}
	u := e.l.IsUnique()
	if u {
		e.unique.Store(uniqueYes)
	} else {
		e.unique.Store(uniqueNo)
	}
	return u
}

var (
	layoutCache [layoutCacheSlots]atomic.Pointer[cachedLayout]
	layoutSeen  [layoutCacheSlots]atomic.Uint64
)

// layoutHash returns the hash of a key; its top layoutCacheBits bits pick
// the slot.
func layoutHash(shape, strides []int64, itemsize int) uint64 {
	const prime = 0x100000001b3
	h := uint64(0xcbf29ce484222325) ^ uint64(itemsize)
	h = (h ^ uint64(len(shape))) * prime
	for _, v := range shape {
		h = (h ^ uint64(v)) * prime
	}
	if strides == nil {
		h = (h ^ 0x5bd1e995) * prime
	}
	for _, v := range strides {
		h = (h ^ uint64(v)) * prime
	}
	h ^= h >> 29
	return h * 0xbf58476d1ce4e5b9
}

// newLayout returns layout.New(shape, strides, itemsize), from the cache
// when it holds that layout, with the cache entry that holds it (nil when
// none does). A layout enters the cache the second time its
// key is seen in a row in its slot (layoutSeen remembers the last key hash
// that missed there), so that tensors of one-off shapes cost no more than
// layout.New.
func newLayout(shape, strides []int64, itemsize int) (layout.Layout, *cachedLayout, error) {
	n := len(shape)
	if n > layoutCacheMaxDims {
		l, err := layout.New(shape, strides, itemsize)
		return l, nil, err
	}
	h := layoutHash(shape, strides, itemsize)
	i := h >> (64 - layoutCacheBits)
	if e := layoutCache[i].Load(); e != nil && e.matches(shape, strides, itemsize) {
		return e.l, e, nil
	}
	l, err := layout.New(shape, strides, itemsize)
	if err != nil {
		return l, nil, err
	}
	if layoutSeen[i].Swap(h) == h {
		e := &cachedLayout{n: n, itemsize: itemsize, nilStrides: strides == nil, l: l}
		copy(e.key[:n], shape)
		copy(e.key[n:2*n], strides)
		layoutCache[i].Store(e)
		return l, e, nil
	}
	return l, nil, nil
}

func (e *cachedLayout) matches(shape, strides []int64, itemsize int) bool {
	n := len(shape)
	if e.n != n || e.itemsize != itemsize || e.nilStrides != (strides == nil) {
		return false
	}
	for i, v := range shape {
		if e.key[i] != v {
			return false
		}
	}
	for i, v := range strides {
		if e.key[n+i] != v {
			return false
		}
	}
	return true
}
