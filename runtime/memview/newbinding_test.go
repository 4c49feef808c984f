package memview

import (
	"reflect"
	"testing"
)

// TestNewBinding checks the one allocation of a first device copy: for
// slabs that fit each size class, at its edges and past the largest
// (where the binding and slab are allocated apart), newBinding returns a
// zero binding and a zero slab of exactly the words asked for, and
// writing the whole slab leaves the binding zero (the slab lies after it,
// not over it).
func TestNewBinding(t *testing.T) {
	sizes := []int{0, 1, 2}
	for _, w := range []int{slabWords896, slabWords1024, slabWords1280, slabWords1536, slabWords1792} {
		sizes = append(sizes, w-1, w, w+1)
	}
	sizes = append(sizes, 4*slabWords1792)
	for _, n := range sizes {
		b, slab := newBinding(n)
		if b == nil || len(slab) != n {
			t.Fatalf("newBinding(%d): binding %p, slab of %d words", n, b, len(slab))
		}
		if !reflect.ValueOf(b).Elem().IsZero() {
			t.Fatalf("newBinding(%d): binding not zero", n)
		}
		for i, v := range slab {
			if v != 0 {
				t.Fatalf("newBinding(%d): slab[%d] = %d, want 0", n, i, v)
			}
			slab[i] = -1
		}
		if !reflect.ValueOf(b).Elem().IsZero() {
			t.Fatalf("newBinding(%d): writing the slab changed the binding", n)
		}
	}
}
