package layout

import (
	"reflect"
	"testing"

	"github.com/stridekit/stridekit/internal/tilegeom"
)

// TestBoxNoPointers checks that a box geometry holds no pointers, so that
// CloneInto may keep one in its slab of int64s, memory the garbage
// collector does not scan.
func TestBoxNoPointers(t *testing.T) {
	var walk func(reflect.Type) bool
	walk = func(ty reflect.Type) bool {
		switch ty.Kind() {
		case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
			return true
		case reflect.Array:
			return walk(ty.Elem())
		case reflect.Struct:
			for i := range ty.NumField() {
				if !walk(ty.Field(i).Type) {
					return false
				}
			}
			return true
		}
		return false
	}
	if ty := reflect.TypeFor[tilegeom.BoxGeometry](); !walk(ty) {
		t.Fatalf("%v holds a pointer (or a type this test does not know): CloneInto cannot keep it in a slab of int64s", ty)
	}
}

// TestCloneIntoBox checks that CloneInto copies a box tile's plan, its
// geometry included, into the slab alone.
func TestCloneIntoBox(t *testing.T) {
	dst, _ := New([]int64{16, 32, 32}, nil, 1)
	src, _ := New([]int64{16, 32, 32}, []int64{1, 16, 512}, 1)
	var p Plan
	if err := PlanCopyInto(&p, dst, src, PlanOptions{}); err != nil || p.Sig.Class != ClassBoxTile {
		t.Fatalf("planned %v, %v; want a box tile", p.Sig, err)
	}
	slab := make([]int64, p.PlanWords()+3)
	var q Plan
	if rest := p.CloneInto(&q, slab); len(rest) != 3 {
		t.Fatalf("CloneInto left %d words of the slab, want 3", len(rest))
	}
	if !reflect.DeepEqual(q, p) || q.Box == p.Box || *q.Box != *p.Box {
		t.Fatalf("clone %+v differs from %+v or shares its geometry", q, p)
	}
	p.Box.C0++ // the clone's geometry is its own
	if q.Box.C0 == p.Box.C0 {
		t.Fatal("the clone shares the plan's geometry")
	}
}
