//go:build cgo

package dlpack_test

import (
	"encoding/binary"
	"errors"
	"slices"
	"testing"
	"unsafe"

	"github.com/stridekit/stridekit/internal/dlpackc"
	"github.com/stridekit/stridekit/layout"
	"github.com/stridekit/stridekit/runtime/dlpack"
)

// viewCase is a strided view of a C-order int32 array whose element at
// flat index f holds 1000+f.
type viewCase struct {
	name       string
	base       []int64 // shape of the C-order base array
	shape      []int64 // the view
	strides    []int64 // in elements
	byteOffset uint64  // of the view's element 0 from the base's
	flat       func(ix []int64) int64
}

var viewCases = []viewCase{
	{"transposed", []int64{3, 4}, []int64{4, 3}, []int64{1, 4}, 0,
		func(ix []int64) int64 { return ix[1]*4 + ix[0] }},
	{"sliced", []int64{6, 8}, []int64{2, 2}, []int64{16, 3}, (1*8 + 2) * 4, // a[1:5:2, 2:8:3]
		func(ix []int64) int64 { return (1+2*ix[0])*8 + 2 + 3*ix[1] }},
	{"flipped", []int64{5, 4}, []int64{5, 4}, []int64{-4, 1}, 4 * 4 * 4, // a[::-1, :]
		func(ix []int64) int64 { return (4-ix[0])*4 + ix[1] }},
	{"flipped-sliced", []int64{5, 4}, []int64{3, 4}, []int64{-8, -1}, (4*4 + 3) * 4, // a[::-2, ::-1]
		func(ix []int64) int64 { return (4-2*ix[0])*4 + 3 - ix[1] }},
	{"permuted-4d", []int64{2, 3, 4, 5}, []int64{5, 3, 2, 4}, []int64{1, 20, 60, 5}, 0, // a.transpose(3, 1, 0, 2)
		func(ix []int64) int64 { return ix[0] + ix[1]*20 + ix[2]*60 + ix[3]*5 }},
	{"scalar", []int64{7}, nil, nil, 5 * 4, // a[5]
		func([]int64) int64 { return 5 }},
}

// newBase returns C memory holding the case's base array.
func (c viewCase) newBase(t *testing.T) *dlpackc.Buffer {
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

func (c viewCase) want(ix []int64) uint64 { return uint64(1000 + c.flat(ix)) }

var nextID = 1

// newID returns an id for the C producer's deleter counts.
func newID() int { nextID++; return nextID }

// readInt32 reads the element at index ix of the imported d, whose memory
// lies in b, in Go.
func readInt32(t *testing.T, d dlpack.Desc, b *dlpackc.Buffer, ix []int64) uint64 {
	t.Helper()
	off := int64(d.Ptr - b.Addr())
	for k, s := range d.Layout.Strides() {
		off += ix[k] * s * int64(d.Layout.Itemsize())
	}
	if off < 0 || off+4 > int64(len(b.Bytes())) {
		t.Fatalf("index %v reads byte %d of a %d-byte buffer", ix, off, len(b.Bytes()))
	}
	return uint64(binary.LittleEndian.Uint32(b.Bytes()[off:]))
}

// TestImportFromC imports tensors made by the C producer, versioned and
// legacy, reads every element through the description, and gives each
// tensor back through its C deleter exactly once.
func TestImportFromC(t *testing.T) {
	for _, c := range viewCases {
		for _, legacy := range []bool{false, true} {
			name := c.name + "/versioned"
			if legacy {
				name = c.name + "/legacy"
			}
			t.Run(name, func(t *testing.T) {
				b := c.newBase(t)
				spec := dlpackc.Spec{ID: newID(), Data: b.Addr(), NDim: int32(len(c.shape)), Shape: c.shape, Strides: c.strides,
					Code: layout.KDLInt, Bits: 32, Lanes: 1, ByteOffset: c.byteOffset, DeviceType: int32(dlpack.KDLCPU),
					Major: 1, Minor: 3, Flags: uint64(dlpack.FlagReadOnly)}
				var d dlpack.Desc
				var err error
				var release func()
				if legacy {
					m := (*dlpack.DLManagedTensor)(dlpackc.ProduceLegacy(spec))
					d, err = dlpack.ImportLegacy(m)
					release = func() { dlpack.CallLegacyDeleter(m) }
				} else {
					m := (*dlpack.DLManagedTensorVersioned)(dlpackc.Produce(spec))
					d, err = dlpack.ImportVersioned(m)
					release = func() { dlpack.CallDeleter(m) }
				}
				if err != nil {
					release()
					t.Fatal(err)
				}
				if d.Ptr != b.Addr()+uintptr(c.byteOffset) {
					t.Errorf("Ptr = base%+d, want base%+d", int64(d.Ptr-b.Addr()), c.byteOffset)
				}
				if !slices.Equal(d.Layout.Shape(), c.shape) && len(c.shape) > 0 || !slices.Equal(d.Layout.Strides(), c.strides) && len(c.shape) > 0 {
					t.Errorf("layout %v, want shape %v strides %v", d.Layout, c.shape, c.strides)
				}
				if d.DType != layout.Int32 || d.ReadOnly == legacy || d.Device.DeviceType != dlpack.KDLCPU {
					t.Errorf("dtype %v read-only %v device %+v", d.DType, d.ReadOnly, d.Device)
				}
				for _, ix := range indices(c.shape) {
					if got := readInt32(t, d, b, ix); got != c.want(ix) {
						t.Errorf("element %v = %d, want %d", ix, got, c.want(ix))
					}
				}
				release()
				wantV, wantL := 1, 0
				if legacy {
					wantV, wantL = 0, 1
				}
				if v, l := dlpackc.DeleterCalls(spec.ID); v != wantV || l != wantL {
					t.Errorf("C deleter calls (versioned, legacy) = (%d, %d), want (%d, %d)", v, l, wantV, wantL)
				}
			})
		}
	}
}

// TestImportFromCNullStrides imports C tensors with NULL strides: C order
// from a legacy or DLPack 1.1 producer, an error (and still exactly one
// deleter call) from a 1.3 one.
func TestImportFromCNullStrides(t *testing.T) {
	c := viewCase{base: []int64{3, 4}}
	b := c.newBase(t)
	spec := dlpackc.Spec{Data: b.Addr(), NDim: 2, Shape: []int64{3, 4}, Code: layout.KDLInt, Bits: 32, Lanes: 1,
		DeviceType: int32(dlpack.KDLCPU), Major: 1, Minor: 1}

	spec.ID = newID()
	lm := (*dlpack.DLManagedTensor)(dlpackc.ProduceLegacy(spec))
	d, err := dlpack.ImportLegacy(lm)
	if err != nil || d.Layout.String() != "(3,4):(4,1)x4" || readInt32(t, d, b, []int64{2, 1}) != 1009 {
		t.Errorf("legacy: %v, %v", d.Layout, err)
	}
	dlpack.CallLegacyDeleter(lm)
	if _, l := dlpackc.DeleterCalls(spec.ID); l != 1 {
		t.Errorf("legacy deleter ran %d times", l)
	}

	spec.ID = newID()
	vm := (*dlpack.DLManagedTensorVersioned)(dlpackc.Produce(spec))
	d, err = dlpack.ImportVersioned(vm)
	if err != nil || d.Layout.String() != "(3,4):(4,1)x4" {
		t.Errorf("1.1: %v, %v", d.Layout, err)
	}
	dlpack.CallDeleter(vm)

	spec.ID, spec.Minor = newID(), 3
	vm = (*dlpack.DLManagedTensorVersioned)(dlpackc.Produce(spec))
	if _, err := dlpack.ImportVersioned(vm); !errors.Is(err, dlpack.ErrStrides) {
		t.Errorf("1.3 with NULL strides: error %v, want ErrStrides", err)
	}
	dlpack.CallDeleter(vm)
	if v, _ := dlpackc.DeleterCalls(spec.ID); v != 1 {
		t.Errorf("versioned deleter ran %d times", v)
	}
}

// TestImportFromCRefused gives back, through CallDeleter, C tensors that
// Import refuses: an unknown major version (whose fields past the flags may
// not even be read), an unsupported device, a packed fp4 tensor with an odd
// row.
func TestImportFromCRefused(t *testing.T) {
	for _, c := range []struct {
		name string
		spec dlpackc.Spec
		err  error
	}{
		{"major-2", dlpackc.Spec{Major: 2, NDim: -7, Code: 99}, dlpack.ErrVersion},
		{"rocm", dlpackc.Spec{Major: 1, Minor: 3, Data: 0x1000, NDim: 1, Shape: []int64{4}, Strides: []int64{1},
			Code: layout.KDLFloat, Bits: 32, Lanes: 1, DeviceType: int32(dlpack.KDLROCM)}, dlpack.ErrUnsupportedDevice},
		{"fp4-odd", dlpackc.Spec{Major: 1, Minor: 3, Data: 0x1000, NDim: 2, Shape: []int64{2, 3}, Strides: []int64{3, 1},
			Code: layout.KDLFloat4E2M1FN, Bits: 4, Lanes: 1, DeviceType: int32(dlpack.KDLCUDA)}, dlpack.ErrSubByte},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.spec.ID = newID()
			m := (*dlpack.DLManagedTensorVersioned)(dlpackc.Produce(c.spec))
			if _, err := dlpack.ImportVersioned(m); !errors.Is(err, c.err) {
				t.Errorf("error %v, want %v", err, c.err)
			}
			dlpack.CallDeleter(m)
			if v, _ := dlpackc.DeleterCalls(c.spec.ID); v != 1 {
				t.Errorf("deleter ran %d times, want 1", v)
			}
		})
	}
}

// TestImportFromCSubByte imports packed and padded fp4 tensors from C.
func TestImportFromCSubByte(t *testing.T) {
	spec := dlpackc.Spec{Major: 1, Minor: 3, Data: 0x10000, NDim: 2, Shape: []int64{3, 8}, Strides: []int64{16, 1},
		Code: layout.KDLFloat4E2M1FN, Bits: 4, Lanes: 1, DeviceType: int32(dlpack.KDLCUDA), DeviceID: 2, ByteOffset: 3}
	for _, c := range []struct {
		flags dlpack.Flags
		want  string
	}{{0, "(3,4):(8,1)x1"}, {dlpack.FlagIsSubbyteTypePadded, "(3,8):(16,1)x1"}} {
		spec.ID, spec.Flags = newID(), uint64(c.flags)
		m := (*dlpack.DLManagedTensorVersioned)(dlpackc.Produce(spec))
		d, err := dlpack.ImportVersioned(m)
		if err != nil || d.Layout.String() != c.want || d.Ptr != 0x10003 || d.DType != layout.Float4E2M1 ||
			d.Device != (dlpack.DLDevice{DeviceType: dlpack.KDLCUDA, DeviceID: 2}) {
			t.Errorf("flags %v: %v at %#x %v %+v, %v; want %s at 0x10003", c.flags, d.Layout, d.Ptr, d.DType, d.Device, err, c.want)
		}
		dlpack.CallDeleter(m)
	}
}

// TestExportToC hands Go exports of each view to the C consumer, which reads
// the fields and every element through data, byte_offset and strides, and
// then calls the deleter: release must run exactly once.
func TestExportToC(t *testing.T) {
	for _, c := range viewCases {
		for _, legacy := range []bool{false, true} {
			name := c.name + "/versioned"
			if legacy {
				name = c.name + "/legacy"
			}
			t.Run(name, func(t *testing.T) {
				b := c.newBase(t)
				var cnt counter
				r := dlpack.ExportRequest{Data: b.Addr() + uintptr(c.byteOffset), Device: dlpack.DLDevice{DeviceType: dlpack.KDLCPU},
					DType: layout.Int32, Shape: c.shape, Strides: c.strides, Release: cnt.release}
				ix := indices(c.shape)
				var got dlpackc.Consumed
				var err error
				var p unsafe.Pointer
				if legacy {
					m, xerr := dlpack.ExportLegacy(r)
					if xerr != nil {
						t.Fatal(xerr)
					}
					p = unsafe.Pointer(m)
					got, err = dlpackc.ConsumeLegacy(p, ix)
				} else {
					r.Flags = dlpack.FlagReadOnly | dlpack.FlagIsCopied
					m, xerr := dlpack.Export(r)
					if xerr != nil {
						t.Fatal(xerr)
					}
					p = unsafe.Pointer(m)
					got, err = dlpackc.ConsumeVersioned(p, ix)
				}
				if err != nil {
					t.Fatal(err)
				}
				if !legacy && (got.Major != 1 || got.Minor != 3 || got.Flags != uint64(r.Flags)) {
					t.Errorf("version %d.%d flags %#x", got.Major, got.Minor, got.Flags)
				}
				if got.Data != r.Data || got.ByteOffset != 0 || got.DeviceType != int32(dlpack.KDLCPU) || got.DeviceID != 0 {
					t.Errorf("data %#x offset %d device %d/%d", got.Data, got.ByteOffset, got.DeviceType, got.DeviceID)
				}
				if int(got.NDim) != len(c.shape) || got.Code != layout.KDLInt || got.Bits != 32 || got.Lanes != 1 {
					t.Errorf("ndim %d dtype %d/%d/%d", got.NDim, got.Code, got.Bits, got.Lanes)
				}
				if len(c.shape) > 0 && (!slices.Equal(got.Shape, c.shape) || !slices.Equal(got.Strides, c.strides)) {
					t.Errorf("shape %v strides %v, want %v %v", got.Shape, got.Strides, c.shape, c.strides)
				}
				if got.ManagerCtx == 0 || got.Deleter == 0 {
					t.Errorf("manager_ctx %#x deleter %#x", got.ManagerCtx, got.Deleter)
				}
				for i, x := range ix {
					if got.Values[i] != c.want(x) {
						t.Errorf("C read element %v = %d, want %d", x, got.Values[i], c.want(x))
					}
				}
				if cnt.n.Load() != 0 {
					t.Error("release ran before the deleter")
				}
				if legacy {
					dlpackc.DeleteLegacy(p, 1)
				} else {
					dlpackc.DeleteVersioned(p, 1)
				}
				if cnt.n.Load() != 1 {
					t.Errorf("release ran %d times, want 1", cnt.n.Load())
				}
				checkNoLiveExports(t)
			})
		}
	}
}

// TestRoundTripCGoC imports a C tensor, re-exports it from Go to the C
// consumer and releases both: the C consumer's deleter call releases the Go
// export, whose release gives the C tensor back, each exactly once.
func TestRoundTripCGoC(t *testing.T) {
	for _, c := range viewCases {
		t.Run(c.name, func(t *testing.T) {
			b := c.newBase(t)
			spec := dlpackc.Spec{ID: newID(), Data: b.Addr(), NDim: int32(len(c.shape)), Shape: c.shape, Strides: c.strides,
				Code: layout.KDLInt, Bits: 32, Lanes: 1, ByteOffset: c.byteOffset, DeviceType: int32(dlpack.KDLCPU), Major: 1, Minor: 3}
			in := (*dlpack.DLManagedTensorVersioned)(dlpackc.Produce(spec))
			d, err := dlpack.ImportVersioned(in)
			if err != nil {
				dlpack.CallDeleter(in)
				t.Fatal(err)
			}
			out, err := dlpack.Export(dlpack.ExportRequest{Data: d.Ptr, Device: d.Device, DType: d.DType,
				Shape: d.Layout.Shape(), Strides: d.Layout.Strides(), Release: func() { dlpack.CallDeleter(in) }})
			if err != nil {
				dlpack.CallDeleter(in)
				t.Fatal(err)
			}
			ix := indices(c.shape)
			got, err := dlpackc.ConsumeVersioned(unsafe.Pointer(out), ix)
			if err != nil {
				t.Fatal(err)
			}
			for i, x := range ix {
				if got.Values[i] != c.want(x) {
					t.Errorf("element %v = %d, want %d", x, got.Values[i], c.want(x))
				}
			}
			if v, _ := dlpackc.DeleterCalls(spec.ID); v != 0 {
				t.Errorf("C tensor released before the Go export")
			}
			dlpackc.DeleteVersioned(unsafe.Pointer(out), 1)
			if v, l := dlpackc.DeleterCalls(spec.ID); v != 1 || l != 0 {
				t.Errorf("C deleter calls (%d, %d), want (1, 0)", v, l)
			}
			checkNoLiveExports(t)
		})
	}
}

// TestCDeletesTwice has C call the deleter of a Go export twice with the
// same pointer: the second call must do nothing.
func TestCDeletesTwice(t *testing.T) {
	var cnt counter
	r := dlpack.ExportRequest{Data: base, Device: dlpack.DLDevice{DeviceType: dlpack.KDLCPU}, DType: layout.Float64,
		Shape: []int64{2, 2}, Release: cnt.release}
	m, err := dlpack.Export(r)
	if err != nil {
		t.Fatal(err)
	}
	dlpackc.DeleteVersioned(unsafe.Pointer(m), 2)
	l, err := dlpack.ExportLegacy(r)
	if err != nil {
		t.Fatal(err)
	}
	dlpackc.DeleteLegacy(unsafe.Pointer(l), 2)
	if cnt.n.Load() != 2 {
		t.Errorf("release ran %d times for two exports, want 2", cnt.n.Load())
	}
	checkNoLiveExports(t)
}

// TestDeleterOnForeignThread has a thread the Go runtime never saw call the
// deleter, as a consumer's garbage collector might.
func TestDeleterOnForeignThread(t *testing.T) {
	var cnt counter
	m, err := dlpack.Export(dlpack.ExportRequest{Data: base, Device: dlpack.DLDevice{DeviceType: dlpack.KDLCUDA}, DType: layout.Float32,
		Shape: []int64{8}, Release: cnt.release})
	if err != nil {
		t.Fatal(err)
	}
	if err := dlpackc.DeleteVersionedOnThread(unsafe.Pointer(m)); err != nil {
		t.Fatal(err)
	}
	if cnt.n.Load() != 1 {
		t.Errorf("release ran %d times, want 1", cnt.n.Load())
	}
	checkNoLiveExports(t)
}
