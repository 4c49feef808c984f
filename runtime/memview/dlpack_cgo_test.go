//go:build cgo

package memview

import (
	"encoding/binary"
	"slices"
	"sync/atomic"
	"testing"
	"unsafe"

	"github.com/stridekit/stridekit/internal/dlpackc"
	"github.com/stridekit/stridekit/layout"
	"github.com/stridekit/stridekit/runtime/dlpack"
)

// cIDs hands out ids for the C producer's deleter counts.
var cIDs atomic.Int32

func newCID() int { return int(cIDs.Add(1)) }

// cBase returns C memory holding the case's base array (1000+f at flat
// index f, int32).
func cBase(t *testing.T, c strided) *dlpackc.Buffer {
	t.Helper()
	n := int64(1)
	for _, e := range c.base {
		n *= e
	}
	b := dlpackc.Malloc(int(n) * 4)
	t.Cleanup(b.Free)
	for f := range n {
		binary.LittleEndian.PutUint32(b.Bytes()[4*f:], uint32(1000+f))
	}
	return b
}

// cSpec describes the case's view of b for the C producer, element 0 at
// byte_offset.
func cSpec(c strided, b *dlpackc.Buffer, id int, flags dlpack.Flags) dlpackc.Spec {
	return dlpackc.Spec{ID: id, Data: b.Addr(), NDim: int32(len(c.shape)), Shape: c.shape, Strides: c.strides,
		Code: layout.KDLInt, Bits: 32, Lanes: 1, ByteOffset: uint64(4 * c.off), DeviceType: int32(dlpack.KDLCPU),
		Major: dlpack.MajorVersion, Minor: dlpack.MinorVersion, Flags: uint64(flags)}
}

// TestDLPackFromC imports tensors made by the C producer (transposed,
// sliced through byte_offset, flipped, permuted, 0-d), versioned and
// legacy, copies each with CopyFrom into a Go host view and checks every
// element; the C deleter runs exactly once, at Close.
func TestDLPackFromC(t *testing.T) {
	for _, c := range stridedCases {
		if c.name == "empty" {
			continue // the C producer takes shapes with elements
		}
		for _, legacy := range []bool{false, true} {
			name := c.name + "/versioned"
			if legacy {
				name = c.name + "/legacy"
			}
			t.Run(name, func(t *testing.T) {
				b := cBase(t, c)
				id := newCID()
				var v *StridedMemoryView
				var err error
				if legacy {
					v, err = FromDLPackLegacy((*dlpack.DLManagedTensor)(dlpackc.ProduceLegacy(cSpec(c, b, id, 0))))
				} else {
					v, err = FromDLPack((*dlpack.DLManagedTensorVersioned)(dlpackc.Produce(cSpec(c, b, id, dlpack.FlagReadOnly))))
				}
				if err != nil {
					t.Fatal(err)
				}
				if v.ReadOnly() == legacy {
					t.Errorf("read-only %v, want %v", v.ReadOnly(), !legacy)
				}
				l, err := layout.Dense(c.shape, 4, layout.C)
				if err != nil {
					t.Fatal(err)
				}
				got := make([]int32, l.Volume())
				dst, err := FromHost(got, l)
				if err != nil {
					t.Fatal(err)
				}
				if err := dst.CopyFrom(v, nil); err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(got, c.want()) {
					t.Errorf("copied %v, want %v", got, c.want())
				}
				v.Close()
				v.Close()
				ver, leg := dlpackc.DeleterCalls(id)
				if legacy && (ver != 0 || leg != 1) || !legacy && (ver != 1 || leg != 0) {
					t.Errorf("deleter calls: versioned %d, legacy %d", ver, leg)
				}
			})
		}
	}
}

// TestDLPackCToC copies between two tensors of the C producer through
// memview: a flipped, sliced source into a transposed destination in C
// memory, which C then reads back.
func TestDLPackCToC(t *testing.T) {
	sc := stridedCases[3] // flipped-sliced, 3×4
	dc := strided{"transposed-dst", []int64{4, 3}, []int64{3, 4}, []int64{1, 3}, 0}
	sb, db := cBase(t, sc), cBase(t, dc)
	sid, did := newCID(), newCID()
	src, err := FromDLPack((*dlpack.DLManagedTensorVersioned)(dlpackc.Produce(cSpec(sc, sb, sid, dlpack.FlagReadOnly))))
	if err != nil {
		t.Fatal(err)
	}
	dst, err := FromDLPack((*dlpack.DLManagedTensorVersioned)(dlpackc.Produce(cSpec(dc, db, did, 0))))
	if err != nil {
		t.Fatal(err)
	}
	if err := dst.CopyFrom(src, nil); err != nil {
		t.Fatal(err)
	}
	// Element (i, j) of dst sits at flat index j*3+i... of its C base as
	// transposed: dst[i][j] = db[i + 3j], and must equal src[i][j].
	want := sc.want()
	for i := range int64(3) {
		for j := range int64(4) {
			got := int32(binary.LittleEndian.Uint32(db.Bytes()[4*(i+3*j):]))
			if got != want[i*4+j] {
				t.Fatalf("dst[%d][%d] = %d, want %d", i, j, got, want[i*4+j])
			}
		}
	}
	src.Close()
	dst.Close()
	for _, id := range []int{sid, did} {
		if ver, _ := dlpackc.DeleterCalls(id); ver != 1 {
			t.Errorf("tensor %d: %d deleter calls", id, ver)
		}
	}
}

// TestDLPackToC exports Go views (transposed, sliced, flipped, permuted)
// to the C consumer, which reads every element and calls the deleter,
// twice: the second call is harmless, and no export stays alive.
func TestDLPackToC(t *testing.T) {
	live := dlpack.LiveExports()
	for _, c := range stridedCases {
		t.Run(c.name, func(t *testing.T) {
			data := c.data()
			bv, err := FromHost(data, mustLayout(layout.Dense(c.base, 4, layout.C)))
			if err != nil {
				t.Fatal(err)
			}
			v, err := bv.ViewAt(4*c.off, mustLayout(layout.New(c.shape, c.strides, 4)), layout.Int32)
			if err != nil {
				t.Fatal(err)
			}
			if c.name == "transposed" {
				v = v.AsReadOnly()
			}
			m, err := v.ToDLPack(dlpack.StreamNoSync)
			if err != nil {
				t.Fatal(err)
			}
			got, err := dlpackc.ConsumeVersioned(unsafe.Pointer(m), indices(c.shape))
			if err != nil {
				t.Fatal(err)
			}
			want := c.want()
			for i, w := range want {
				if int32(got.Values[i]) != w {
					t.Fatalf("C read %d at %v, want %d", int32(got.Values[i]), indices(c.shape)[i], w)
				}
			}
			if got.Major != dlpack.MajorVersion || got.Minor != dlpack.MinorVersion || got.DeviceType != int32(dlpack.KDLCPU) ||
				(got.Flags&uint64(dlpack.FlagReadOnly) != 0) != (c.name == "transposed") || c.shape != nil && got.Strides == nil {
				t.Errorf("C read %+v", got)
			}
			dlpackc.DeleteVersioned(unsafe.Pointer(m), 2)
			if n := dlpack.LiveExports(); n != live {
				t.Errorf("%d live exports, want %d", n, live)
			}
		})
	}
}

// TestDLPackRoundTripC hands a C tensor through memview back to C: the C
// producer's tensor is imported, sliced, exported to the C consumer, and
// its deleter runs once, only after both the view is closed and the export
// deleted (from a thread Go has never seen).
func TestDLPackRoundTripC(t *testing.T) {
	c := stridedCases[4] // permuted-4d
	b := cBase(t, c)
	id := newCID()
	live := dlpack.LiveExports()
	v, err := FromDLPack((*dlpack.DLManagedTensorVersioned)(dlpackc.Produce(cSpec(c, b, id, 0))))
	if err != nil {
		t.Fatal(err)
	}
	s, err := v.Slice(layout.Span(1, 4), layout.All(), layout.All(), layout.Range{Start: layout.Omit, Stop: layout.Omit, Step: -1})
	if err != nil {
		t.Fatal(err)
	}
	m, err := s.ToDLPack(dlpack.StreamNoSync)
	if err != nil {
		t.Fatal(err)
	}
	v.Close()
	if ver, _ := dlpackc.DeleterCalls(id); ver != 0 {
		t.Fatalf("tensor given back with an export alive (%d calls)", ver)
	}
	idx := indices(s.Shape())
	got, err := dlpackc.ConsumeVersioned(unsafe.Pointer(m), idx)
	if err != nil {
		t.Fatal(err)
	}
	want := c.want()
	for i, ix := range idx {
		// s[a][b][c][d] = v[1+a][b][c][3-d]
		f := ((1+ix[0])*3+ix[1])*2*4 + ix[2]*4 + 3 - ix[3]
		if int32(got.Values[i]) != want[f] {
			t.Fatalf("C read %d at %v, want %d", int32(got.Values[i]), ix, want[f])
		}
	}
	if err := dlpackc.DeleteVersionedOnThread(unsafe.Pointer(m)); err != nil {
		t.Fatal(err)
	}
	if ver, _ := dlpackc.DeleterCalls(id); ver != 1 {
		t.Errorf("tensor given back %d times, want 1", ver)
	}
	if n := dlpack.LiveExports(); n != live {
		t.Errorf("%d live exports, want %d", n, live)
	}
}

// indices returns every index of shape, in C order.
func indices(shape []int64) [][]int64 {
	out := [][]int64{{}}
	for _, e := range shape {
		var next [][]int64
		for _, ix := range out {
			for i := range e {
				next = append(next, append(slices.Clone(ix), i))
			}
		}
		out = next
	}
	return out
}

// BenchmarkFromDLPackCDeleter is BenchmarkFromDLPack with a C deleter,
// which Close calls through purego.
func BenchmarkFromDLPackCDeleter(b *testing.B) {
	m, data := benchTensor()
	m.Deleter = dlpackc.CountingDeleter()
	b.SetBytes(int64(unsafe.Sizeof(m)) + 2*4*8)
	b.ReportAllocs()
	n := dlpackc.CountingDeleterCalls()
	for b.Loop() {
		v, err := FromDLPack(&m)
		if err != nil {
			b.Fatal(err)
		}
		v.Close()
	}
	if got := dlpackc.CountingDeleterCalls() - n; got != b.N {
		b.Fatalf("%d deleter calls for %d imports", got, b.N)
	}
	_ = data[0]
}
