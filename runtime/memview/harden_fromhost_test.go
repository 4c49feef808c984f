package memview

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"unsafe"

	"github.com/stridekit/stridekit/layout"
)

// fromHostOf calls FromHost with n zero elements of T over a dense 1-d
// layout of T's size (at least 1 byte).
func fromHostOf[T any](n int) (*StridedMemoryView, error) {
	var zero T
	size := int(unsafe.Sizeof(zero))
	if size == 0 {
		size, n = 1, 0
	}
	l, err := layout.Dense([]int64{int64(n)}, size, layout.C)
	if err != nil {
		return nil, err
	}
	return FromHost(make([]T, n), l)
}

type (
	plainPair struct {
		A int32
		B [2]float64
		C bool
	}
	nestedPlain struct {
		P [3]plainPair
		U uintptr
		_ [4]byte
	}
	withSlice struct {
		A int64
		S []int
	}
	withMap struct {
		A int64
		M map[int]int
	}
	withIface struct {
		A int64
		I any
	}
	withString  struct{ S string }
	deepPointer struct {
		A [2]struct {
			B int32
			C [1]struct{ P *int }
		}
	}
)

// TestFromHostRefusesPointers: FromHost refuses element types that hold Go
// pointers anywhere inside (ErrDType, naming the type and where the pointer
// is) and keeps accepting numbers, bools and arrays and structs of them.
func TestFromHostRefusesPointers(t *testing.T) {
	for _, c := range []struct {
		name string
		f    func(n int) (*StridedMemoryView, error)
		msg  []string // parts of the message; nil: accepted
	}{
		{"pointer", fromHostOf[*int], []string{"element type *int", "(pointer)"}},
		{"string", fromHostOf[string], []string{"string"}},
		{"slice", fromHostOf[[]float32], []string{"[]float32"}},
		{"map", fromHostOf[map[int]int], []string{"map[int]int"}},
		{"chan", fromHostOf[chan int], []string{"chan int", "(channel)"}},
		{"func", fromHostOf[func()], []string{"func()", "(function)"}},
		{"interface", fromHostOf[any], []string{"interface {}"}},
		{"unsafe-pointer", fromHostOf[unsafe.Pointer], []string{"unsafe.Pointer", "(unsafe.Pointer)"}},
		{"array-of-pointers", fromHostOf[[2]*int], []string{"[2]*int", "(pointer at [i])"}},
		{"struct-slice", fromHostOf[withSlice], []string{"memview.withSlice", "(slice at .S)"}},
		{"struct-map", fromHostOf[withMap], []string{"memview.withMap", "(map at .M)"}},
		{"struct-interface", fromHostOf[withIface], []string{"memview.withIface", "(interface at .I)"}},
		{"struct-string", fromHostOf[withString], []string{"(string at .S)"}},
		{"deep", fromHostOf[deepPointer], []string{"memview.deepPointer", "(pointer at .A[i].C[i].P)"}},
		{"empty-slice-of-pointers", func(int) (*StridedMemoryView, error) { return fromHostOf[*int](0) }, []string{"*int"}},
		{"float32", fromHostOf[float32], nil},
		{"bool", fromHostOf[bool], nil},
		{"complex128", fromHostOf[complex128], nil},
		{"int", fromHostOf[int], nil},
		{"uintptr", fromHostOf[uintptr], nil},
		{"array", fromHostOf[[4]float32], nil},
		{"struct", fromHostOf[plainPair], nil},
		{"nested-struct", fromHostOf[nestedPlain], nil},
		{"empty-array-of-pointers", fromHostOf[[0]*int], nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			for range 2 { // the second verdict comes from the cache
				v, err := c.f(3)
				if c.msg == nil {
					if err != nil {
						t.Fatalf("refused: %v", err)
					}
					continue
				}
				if err == nil || v != nil {
					t.Fatalf("accepted (view %v, error %v)", v, err)
				}
				if !errors.Is(err, ErrDType) {
					t.Errorf("error %q is not ErrDType", err)
				}
				for _, m := range c.msg {
					if !strings.Contains(err.Error(), m) {
						t.Errorf("error %q does not say %q", err, m)
					}
				}
			}
		})
	}
}

// TestCheckPointerFreeCached: the verdict on a type is reached once and
// then served from the cache without allocating.
func TestCheckPointerFreeCached(t *testing.T) {
	for _, typ := range []reflect.Type{reflect.TypeFor[deepPointer](), reflect.TypeFor[nestedPlain]()} {
		want := checkPointerFree(typ)
		if _, ok := pointerFree.Load(typ); !ok {
			t.Fatalf("%v: verdict not cached", typ)
		}
		if a := testing.AllocsPerRun(100, func() {
			if err := checkPointerFree(typ); err != want {
				t.Fatalf("%v: verdict changed: %v, then %v", typ, want, err)
			}
		}); a != 0 {
			t.Errorf("%v: cached verdict allocates %v times", typ, a)
		}
	}
}
