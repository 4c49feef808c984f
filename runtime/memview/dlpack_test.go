package memview

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"unsafe"

	"github.com/stridekit/stridekit/internal/pairgen"
	"github.com/stridekit/stridekit/layout"
	"github.com/stridekit/stridekit/runtime/cuda"
	"github.com/stridekit/stridekit/runtime/dlpack"
)

// strided is a strided view of a C-order int32 array (base) whose element
// at flat index f holds 1000+f: shape and strides in elements, and the
// flat index of the view's element 0.
type strided struct {
	name    string
	base    []int64
	shape   []int64
	strides []int64
	off     int64
}

var stridedCases = []strided{
	{"transposed", []int64{3, 4}, []int64{4, 3}, []int64{1, 4}, 0},
	{"sliced", []int64{6, 8}, []int64{2, 2}, []int64{16, 3}, 1*8 + 2}, // a[1:5:2, 2:8:3]
	{"flipped", []int64{5, 4}, []int64{5, 4}, []int64{-4, 1}, 4 * 4},  // a[::-1, :]
	{"flipped-sliced", []int64{5, 4}, []int64{3, 4}, []int64{-8, -1}, 4*4 + 3},
	{"permuted-4d", []int64{2, 3, 4, 5}, []int64{5, 3, 2, 4}, []int64{1, 20, 60, 5}, 0},
	{"scalar", []int64{7}, nil, nil, 5},
	{"empty", []int64{4}, []int64{0, 3}, []int64{3, 1}, 0},
}

// data returns the case's base array.
func (c strided) data() []int32 {
	n := int64(1)
	for _, e := range c.base {
		n *= e
	}
	d := make([]int32, n)
	for i := range d {
		d[i] = int32(1000 + i)
	}
	return d
}

// want returns the view's elements in C order.
func (c strided) want() []int32 {
	var out []int32
	var walk func(k int, f int64)
	walk = func(k int, f int64) {
		if k == len(c.shape) {
			out = append(out, int32(1000+f))
			return
		}
		for i := range c.shape[k] {
			walk(k+1, f+i*c.strides[k])
		}
	}
	walk(0, c.off)
	return out
}

// counter counts the releases of tensors exported as test producers.
type counter struct{ n atomic.Int32 }

func (c *counter) release() { c.n.Add(1) }

// produce hands out the case's view of data as a DLPack producer would:
// a DLManagedTensorVersioned made by dlpack.Export, whose deleter counts
// into c, with element 0 moved to byte_offset when byteOffset is set.
func produce(t testing.TB, c strided, data []int32, flags dlpack.Flags, byteOffset bool, cnt *counter) *dlpack.DLManagedTensorVersioned {
	t.Helper()
	m, err := dlpack.Export(dlpack.ExportRequest{
		Data: uintptr(unsafe.Pointer(&data[0])) + uintptr(4*c.off), Device: dlpack.DLDevice{DeviceType: dlpack.KDLCPU},
		DType: layout.Int32, Shape: c.shape, Strides: c.strides, Flags: flags, Release: cnt.release,
	})
	if err != nil {
		t.Fatal(err)
	}
	if byteOffset && m.DLTensor.Data != 0 {
		m.DLTensor.Data = uintptr(unsafe.Pointer(&data[0]))
		m.DLTensor.ByteOffset = uint64(4 * c.off)
	}
	return m
}

// contents copies v into a dense Go slice and returns its elements in C
// order.
func contents(t testing.TB, v *StridedMemoryView) []int32 {
	t.Helper()
	l, err := layout.Dense(v.Shape(), 4, layout.C)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]int32, l.Volume())
	d, err := FromHost(out, l)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.CopyFrom(v, nil); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestFromDLPackHost imports transposed, sliced (through byte_offset),
// flipped, permuted, 0-d and empty host tensors, versioned and legacy,
// reads every element through a copy, and checks that the deleter runs
// exactly once, at Close, for the view and the views derived from it.
func TestFromDLPackHost(t *testing.T) {
	for _, c := range stridedCases {
		for _, legacy := range []bool{false, true} {
			name := c.name + "/versioned"
			if legacy {
				name = c.name + "/legacy"
			}
			t.Run(name, func(t *testing.T) {
				data := c.data()
				var cnt counter
				var v *StridedMemoryView
				var err error
				var info ImportInfo
				if legacy {
					m, err2 := dlpack.ExportLegacy(dlpack.ExportRequest{
						Data: uintptr(unsafe.Pointer(&data[0])) + uintptr(4*c.off), Device: dlpack.DLDevice{DeviceType: dlpack.KDLCPU},
						DType: layout.Int32, Shape: c.shape, Strides: c.strides, Release: cnt.release,
					})
					if err2 != nil {
						t.Fatal(err2)
					}
					v, err = FromDLPackLegacy(m, Report(&info))
				} else {
					v, err = FromDLPack(produce(t, c, data, 0, true, &cnt), Report(&info))
				}
				if err != nil {
					t.Fatal(err)
				}
				if info.Versioned == legacy || info.Device.DeviceType != dlpack.KDLCPU || info.Copied() || info.HostCopy != nil {
					t.Errorf("report %+v", info)
				}
				if !slices.Equal(v.Shape(), c.shape) || v.DType() != layout.Int32 || v.Kind() != cuda.MemoryPageable || v.ReadOnly() || v.Device() != nil {
					t.Errorf("view %v: shape %v dtype %v kind %v read-only %v", v, v.Shape(), v.DType(), v.Kind(), v.ReadOnly())
				}
				if c.shape != nil && !slices.Equal(v.Strides(), c.strides) {
					t.Errorf("strides %v, want %v", v.Strides(), c.strides)
				}
				if got, want := contents(t, v), c.want(); !slices.Equal(got, want) {
					t.Errorf("elements %v, want %v", got, want)
				}
				w := v.AsReadOnly()
				if len(c.shape) > 0 && c.shape[0] > 1 {
					rs := []layout.Range{layout.Span(1, 2)}
					for range len(c.shape) - 1 {
						rs = append(rs, layout.All())
					}
					if w, err = v.Slice(rs...); err != nil {
						t.Fatal(err)
					}
				}
				if n := cnt.n.Load(); n != 0 {
					t.Fatalf("deleter ran %d times before Close", n)
				}
				if err := w.Close(); err != nil { // a derived view closes the owner
					t.Fatal(err)
				}
				if n := cnt.n.Load(); n != 1 {
					t.Fatalf("deleter ran %d times after Close, want 1", n)
				}
				if err := v.Close(); err != nil {
					t.Fatal(err)
				}
				if n := cnt.n.Load(); n != 1 {
					t.Fatalf("deleter ran %d times after a second Close, want 1", n)
				}
				if err := contentsErr(v); !errors.Is(err, ErrClosed) {
					t.Errorf("copy from a closed view: %v", err)
				}
			})
		}
	}
}

func contentsErr(v *StridedMemoryView) error {
	d, err := FromHost(make([]int32, v.Layout().Volume()), mustLayout(layout.Dense(v.Shape(), 4, layout.C)))
	if err != nil {
		return err
	}
	return d.CopyFrom(v, nil)
}

func mustLayout(l layout.Layout, err error) layout.Layout {
	if err != nil {
		panic(err)
	}
	return l
}

// TestFromDLPackReadOnly: a tensor flagged read-only is a read-only view,
// which copies out but refuses to be written.
func TestFromDLPackReadOnly(t *testing.T) {
	c := stridedCases[0]
	data := c.data()
	var cnt counter
	v, err := FromDLPack(produce(t, c, data, dlpack.FlagReadOnly, false, &cnt))
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	if !v.ReadOnly() {
		t.Fatal("view of a read-only tensor is writable")
	}
	src, err := FromHost(make([]int32, 12), v.Layout())
	if err != nil {
		t.Fatal(err)
	}
	if err := v.CopyFrom(src, nil); !errors.Is(err, ErrReadOnly) {
		t.Errorf("CopyFrom into a read-only tensor: %v", err)
	}
	if got := contents(t, v); !slices.Equal(got, c.want()) {
		t.Errorf("read-only tensor reads %v", got)
	}
	if !slices.Equal(data, c.data()) {
		t.Error("the refused copy changed the tensor")
	}
}

// TestFromDLPackWritable writes through the view of a writable tensor into
// the producer's memory.
func TestFromDLPackWritable(t *testing.T) {
	c := stridedCases[2] // flipped
	data := c.data()
	var cnt counter
	v, err := FromDLPack(produce(t, c, data, 0, true, &cnt))
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	src := make([]int32, 20)
	for i := range src {
		src[i] = int32(-i)
	}
	sv, err := FromHost(src, mustLayout(layout.Dense([]int64{5, 4}, 4, layout.C)))
	if err != nil {
		t.Fatal(err)
	}
	if err := v.CopyFrom(sv, nil); err != nil {
		t.Fatal(err)
	}
	for i := range 5 { // row i of the view is row 4-i of data
		for j := range 4 {
			if got := data[(4-i)*4+j]; got != int32(-(i*4 + j)) {
				t.Fatalf("data[%d][%d] = %d, want %d", 4-i, j, got, -(i*4 + j))
			}
		}
	}
}

// TestFromDLTensorBorrowed: the view of a borrowed DLTensor never calls a
// deleter; the producer's version decides what NULL strides mean, and its
// flags whether the view is read-only.
func TestFromDLTensorBorrowed(t *testing.T) {
	c := stridedCases[1]
	data := c.data()
	var cnt counter
	m := produce(t, c, data, 0, true, &cnt)
	v, err := FromDLTensor(&m.DLTensor, dlpack.Producer{Versioned: true, Version: m.Version, Flags: dlpack.FlagReadOnly})
	if err != nil {
		t.Fatal(err)
	}
	if !v.ReadOnly() || !slices.Equal(contents(t, v), c.want()) {
		t.Errorf("borrowed view %v: read-only %v", v, v.ReadOnly())
	}
	if err := v.Close(); err != nil {
		t.Fatal(err)
	}
	if n := cnt.n.Load(); n != 0 {
		t.Errorf("closing a borrowed view ran the deleter %d times", n)
	}
	dlpack.CallDeleter(m)
	if n := cnt.n.Load(); n != 1 {
		t.Errorf("deleter ran %d times, want 1", n)
	}

	dense := []int32{1, 2, 3, 4, 5, 6}
	shape := []int64{2, 3}
	tt := dlpack.DLTensor{Data: uintptr(unsafe.Pointer(&dense[0])), Device: dlpack.DLDevice{DeviceType: dlpack.KDLCPU}, NDim: 2,
		DType: dlpack.DLDataType{Code: layout.KDLInt, Bits: 32, Lanes: 1}, Shape: &shape[0]}
	for _, p := range []dlpack.Producer{{}, {Versioned: true, Version: dlpack.DLPackVersion{Major: 1, Minor: 1}}} {
		v, err := FromDLTensor(&tt, p)
		if err != nil {
			t.Fatalf("NULL strides from %+v: %v", p, err)
		}
		if !slices.Equal(v.Strides(), []int64{3, 1}) || !slices.Equal(contents(t, v), dense) || v.ReadOnly() {
			t.Errorf("NULL strides from %+v: %v", p, v)
		}
	}
	_, err = FromDLTensor(&tt, dlpack.Producer{Versioned: true, Version: dlpack.DLPackVersion{Major: 1, Minor: 2}})
	if !errors.Is(err, dlpack.ErrStrides) {
		t.Errorf("NULL strides from a 1.2 producer: %v", err)
	}
}

// TestFromDLPackErrors checks every refusal of an import: a typed error
// (errors.Is) naming what is wrong, no panic, and the tensor left to the
// caller (its deleter not run).
func TestFromDLPackErrors(t *testing.T) {
	data := make([]int32, 64)
	addr := uintptr(unsafe.Pointer(&data[0]))
	shape := []int64{4, 4}
	strides := []int64{4, 1}
	neg := []int64{4, -4}
	ok := func() dlpack.DLManagedTensorVersioned {
		return dlpack.DLManagedTensorVersioned{Version: dlpack.Version, DLTensor: dlpack.DLTensor{
			Data: addr, Device: dlpack.DLDevice{DeviceType: dlpack.KDLCPU}, NDim: 2,
			DType: dlpack.DLDataType{Code: layout.KDLFloat, Bits: 32, Lanes: 1}, Shape: &shape[0], Strides: &strides[0],
		}}
	}
	cases := []struct {
		name   string
		edit   func(m *dlpack.DLManagedTensorVersioned)
		want   []error
		phrase string
	}{
		{"major version 2", func(m *dlpack.DLManagedTensorVersioned) { m.Version.Major = 2 }, []error{dlpack.ErrVersion}, "2.3"},
		{"major version 0", func(m *dlpack.DLManagedTensorVersioned) { m.Version = dlpack.DLPackVersion{} }, []error{dlpack.ErrVersion}, "0.0"},
		{"NULL strides from 1.3", func(m *dlpack.DLManagedTensorVersioned) { m.DLTensor.Strides = nil }, []error{dlpack.ErrStrides}, "strides"},
		{"four lanes", func(m *dlpack.DLManagedTensorVersioned) { m.DLTensor.DType.Lanes = 4 }, []error{dlpack.ErrDType}, "float32x4"},
		{"unknown dtype code", func(m *dlpack.DLManagedTensorVersioned) { m.DLTensor.DType.Code = 99 }, []error{dlpack.ErrDType, layout.ErrDType}, "code 99"},
		{"OpenCL", func(m *dlpack.DLManagedTensorVersioned) { m.DLTensor.Device.DeviceType = dlpack.KDLOpenCL }, []error{dlpack.ErrUnsupportedDevice}, "kDLOpenCL"},
		{"ROCm", func(m *dlpack.DLManagedTensorVersioned) { m.DLTensor.Device.DeviceType = dlpack.KDLROCM }, []error{dlpack.ErrUnsupportedDevice}, "kDLROCM"},
		{"unknown device type", func(m *dlpack.DLManagedTensorVersioned) { m.DLTensor.Device.DeviceType = 99 }, []error{dlpack.ErrUnsupportedDevice}, "99"},
		{"negative device id", func(m *dlpack.DLManagedTensorVersioned) { m.DLTensor.Device.DeviceID = -1 }, []error{dlpack.ErrDeviceID}, "-1"},
		{"negative ndim", func(m *dlpack.DLManagedTensorVersioned) { m.DLTensor.NDim = -2 }, []error{dlpack.ErrNDim}, "-2"},
		{"NULL shape", func(m *dlpack.DLManagedTensorVersioned) { m.DLTensor.Shape = nil }, []error{dlpack.ErrShape}, "shape"},
		{"NULL data", func(m *dlpack.DLManagedTensorVersioned) { m.DLTensor.Data = 0 }, []error{dlpack.ErrData}, "NULL"},
		{"byte_offset past the address space", func(m *dlpack.DLManagedTensorVersioned) { m.DLTensor.ByteOffset = 1<<64 - 16 }, []error{dlpack.ErrOverflow}, "byte_offset"},
		{"below address 0", func(m *dlpack.DLManagedTensorVersioned) { m.DLTensor.Data, m.DLTensor.Strides = 4, &neg[0] }, []error{dlpack.ErrOverflow}, "below"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := ok()
			c.edit(&m)
			v, err := FromDLPack(&m)
			for _, w := range c.want {
				if !errors.Is(err, w) {
					t.Errorf("error %v, want %v", err, w)
				}
			}
			if v != nil {
				t.Errorf("a view %v with the error", v)
			}
			if err != nil && !strings.Contains(err.Error(), c.phrase) {
				t.Errorf("error %q does not name %q", err, c.phrase)
			}
			if err != nil && !strings.HasPrefix(err.Error(), "memview: FromDLPack") {
				t.Errorf("error %q does not name FromDLPack", err)
			}
			// Legacy tensors and borrowed ones are checked alike (but
			// have no version).
			if m.Version.Major == dlpack.MajorVersion {
				lm := dlpack.DLManagedTensor{DLTensor: m.DLTensor}
				_, lerr := FromDLPackLegacy(&lm)
				_, berr := FromDLTensor(&m.DLTensor, dlpack.Producer{Versioned: true, Version: m.Version})
				for _, w := range c.want {
					if !errors.Is(berr, w) {
						t.Errorf("FromDLTensor error %v, want %v", berr, w)
					}
					if w != dlpack.ErrStrides && !errors.Is(lerr, w) {
						t.Errorf("FromDLPackLegacy error %v, want %v", lerr, w)
					}
				}
			}
		})
	}

	// The deleter of a refused tensor is not run: it is the caller's.
	var cnt counter
	m, err := dlpack.Export(dlpack.ExportRequest{Data: addr, Device: dlpack.DLDevice{DeviceType: dlpack.KDLCPU}, DType: layout.Int32,
		Shape: []int64{4}, Release: cnt.release})
	if err != nil {
		t.Fatal(err)
	}
	m.Version.Major = 9
	if _, err := FromDLPack(m); !errors.Is(err, dlpack.ErrVersion) {
		t.Errorf("version 9: %v", err)
	}
	if n := cnt.n.Load(); n != 0 {
		t.Errorf("a refused import ran the deleter %d times", n)
	}
	dlpack.CallDeleter(m)

	// CUDA memory needs the driver and the device.
	cm := ok()
	cm.DLTensor.Device = dlpack.DLDevice{DeviceType: dlpack.KDLCUDA, DeviceID: 1 << 20}
	if _, err := FromDLPack(&cm); !errors.Is(err, cuda.ErrNoDriver) && !errors.Is(err, cuda.ErrInvalidDevice) {
		t.Errorf("kDLCUDA device 1<<20: %v", err)
	}
	cm.DLTensor.Device.DeviceType = dlpack.KDLCUDAManaged
	if _, err := FromDLPack(&cm); !errors.Is(err, cuda.ErrNoDriver) && !errors.Is(err, cuda.ErrInvalidDevice) {
		t.Errorf("kDLCUDAManaged device 1<<20: %v", err)
	}

	for name, err := range map[string]error{
		"FromDLPack(nil)":       func() error { _, err := FromDLPack(nil); return err }(),
		"FromDLPackLegacy(nil)": func() error { _, err := FromDLPackLegacy(nil); return err }(),
		"FromDLTensor(nil)":     func() error { _, err := FromDLTensor(nil, dlpack.Producer{}); return err }(),
	} {
		if !errors.Is(err, ErrNilView) || !errors.Is(err, dlpack.ErrNilTensor) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestFromDLPackOptions: nil options are ignored, a nil report is not
// written, host tensors are not copied by ToHost, and a producer stream
// that is no stream fails the import without running the deleter.
func TestFromDLPackOptions(t *testing.T) {
	c := stridedCases[0]
	data := c.data()
	var cnt counter
	var info ImportInfo
	v, err := FromDLPack(produce(t, c, data, dlpack.FlagReadOnly, false, &cnt), nil, Report(nil), ToHost(), Report(&info))
	if err != nil {
		t.Fatal(err)
	}
	if info.Copied() || info.HostCopy != nil || info.Flags != dlpack.FlagReadOnly || info.Version != dlpack.Version || !info.Versioned {
		t.Errorf("ToHost of a host tensor reports %+v", info)
	}
	if v.Ptr() != uintptr(unsafe.Pointer(&data[0])) || !v.ReadOnly() {
		t.Errorf("ToHost of a host tensor made %v, not a view of it", v)
	}
	v.Close()

	m := produce(t, c, data, 0, false, &cnt)
	if _, err := FromDLPack(m, ProducerStream(new(cuda.Stream))); !errors.Is(err, cuda.ErrInvalidValue) {
		t.Errorf("zero producer stream: %v", err)
	}
	if n := cnt.n.Load(); n != 1 {
		t.Errorf("deleter count %d, want 1 (the first tensor's)", n)
	}
	dlpack.CallDeleter(m)
}

// TestReleaserReuse: closing a view whose releaser serves another view by
// then does not release the other view's tensor.
func TestReleaserReuse(t *testing.T) {
	c := stridedCases[0]
	data := c.data()
	var a, b counter
	va, err := FromDLPack(produce(t, c, data, 0, false, &a))
	if err != nil {
		t.Fatal(err)
	}
	va.Close()
	for range 10 {
		vb, err := FromDLPack(produce(t, c, data, 0, false, &b))
		if err != nil {
			t.Fatal(err)
		}
		va.Close()
		if dlpackOwner(vb.owner) == nil {
			t.Fatal("a DLPack view's owner is not recognised")
		}
		if n := b.n.Load(); n != 0 {
			t.Fatalf("closing another view released this one (%d)", n)
		}
		vb.Close()
		b.n.Store(0)
	}
	if n := a.n.Load(); n != 1 {
		t.Errorf("first tensor released %d times", n)
	}
	h, _ := FromHost(data, mustLayout(layout.Dense([]int64{12}, 4, layout.C)))
	if dlpackOwner(h.owner) != nil || dlpackOwner(&owner{release: func() error { return nil }}) != nil {
		t.Error("an owner of no DLPack tensor is taken for one")
	}
}

// TestToDLPackHost exports host views (transposed, sliced, flipped,
// permuted, 0-d, empty) of Go memory, checks the fields a consumer reads,
// imports them back, and checks the elements and that every export is
// deleted once.
func TestToDLPackHost(t *testing.T) {
	live := dlpack.LiveExports()
	for _, c := range stridedCases {
		t.Run(c.name, func(t *testing.T) {
			data := c.data()
			bv, err := FromHost(data, mustLayout(layout.Dense(c.base, 4, layout.C)))
			if err != nil {
				t.Fatal(err)
			}
			l, err := layout.New(c.shape, c.strides, 4)
			if err != nil {
				t.Fatal(err)
			}
			v, err := bv.ViewAt(4*c.off, l, layout.Int32)
			if err != nil {
				t.Fatal(err)
			}
			m, err := v.ToDLPack(dlpack.StreamNoSync)
			if err != nil {
				t.Fatal(err)
			}
			dt := m.DLTensor
			if m.Version != dlpack.Version || m.Flags != 0 || dt.Device != (dlpack.DLDevice{DeviceType: dlpack.KDLCPU}) ||
				int(dt.NDim) != len(c.shape) || dt.ByteOffset != 0 || dt.DType != (dlpack.DLDataType{Code: layout.KDLInt, Bits: 32, Lanes: 1}) {
				t.Errorf("exported %+v", m)
			}
			if l.Volume() > 0 && dt.Data != v.Ptr() {
				t.Errorf("data %#x, want element 0 at %#x", dt.Data, v.Ptr())
			}
			if c.shape != nil {
				if dt.Strides == nil || !slices.Equal(unsafe.Slice(dt.Shape, dt.NDim), c.shape) || !slices.Equal(unsafe.Slice(dt.Strides, dt.NDim), c.strides) {
					t.Errorf("shape and strides %v %v", dt.Shape, dt.Strides)
				}
			}
			if n := dlpack.LiveExports(); n != live+1 {
				t.Errorf("%d live exports, want %d", n, live+1)
			}
			w, err := FromDLPack(m)
			if err != nil {
				t.Fatal(err)
			}
			if got := contents(t, w); !slices.Equal(got, c.want()) {
				t.Errorf("elements %v, want %v", got, c.want())
			}
			w.Close()
			if n := dlpack.LiveExports(); n != live {
				t.Errorf("%d live exports after the consumer's Close, want %d", n, live)
			}
			// The view stays usable: the export held it, not its memory.
			if got := contents(t, v); !slices.Equal(got, c.want()) {
				t.Errorf("view after the export: %v", got)
			}
		})
	}
}

// TestToDLPackFlags: read-only views are exported read-only.
func TestToDLPackFlags(t *testing.T) {
	live := dlpack.LiveExports()
	data := make([]float32, 6)
	v, err := FromHost(data, mustLayout(layout.Dense([]int64{2, 3}, 4, layout.C)))
	if err != nil {
		t.Fatal(err)
	}
	m, err := v.AsReadOnly().ToDLPack(dlpack.StreamNoSync)
	if err != nil {
		t.Fatal(err)
	}
	if !m.Flags.Has(dlpack.FlagReadOnly) || m.DLTensor.DType != (dlpack.DLDataType{Code: layout.KDLFloat, Bits: 32, Lanes: 1}) {
		t.Errorf("read-only export: flags %#x dtype %+v", m.Flags, m.DLTensor.DType)
	}
	dlpack.CallDeleter(m)
	if n := dlpack.LiveExports(); n != live {
		t.Errorf("%d live exports, want %d", n, live)
	}
}

// TestToDLPackSubByte exports packed and padded fp6 views and a packed fp4
// view in elements, and imports them back to the same layouts.
func TestToDLPackSubByte(t *testing.T) {
	buf := make([]byte, 96)
	fp6, fp4 := layout.Float6E2M3, layout.Float4E2M1
	cases := []struct {
		name    string
		l       layout.Layout
		dt      layout.DType
		shape   []int64
		strides []int64
		flags   dlpack.Flags
	}{
		{"fp6 packed rows", mustLayout(layout.New([]int64{4, 2}, []int64{4, 1}, 3)), fp6, []int64{4, 8}, []int64{16, 1}, 0},
		{"fp6 packed transposed", mustLayout(layout.New([]int64{2, 4}, []int64{1, 2}, 3)), fp6, []int64{8, 4}, []int64{1, 8}, 0},
		{"fp6 padded", mustLayout(layout.New([]int64{3, 4}, []int64{1, 3}, 1)), fp6, []int64{3, 4}, []int64{1, 3}, dlpack.FlagIsSubbyteTypePadded},
		{"fp4 packed", mustLayout(layout.New([]int64{3, 5}, []int64{5, 1}, 1)), fp4, []int64{3, 10}, []int64{10, 1}, 0},
		{"fp4 one group", mustLayout(layout.New([]int64{1}, []int64{7}, 1)), fp4, []int64{2}, []int64{1}, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h, err := FromHost(buf, mustLayout(layout.Dense([]int64{96}, 1, layout.C)))
			if err != nil {
				t.Fatal(err)
			}
			v, err := h.View(c.l, c.dt)
			if err != nil {
				t.Fatal(err)
			}
			m, err := v.ToDLPack(dlpack.StreamNoSync)
			if err != nil {
				t.Fatal(err)
			}
			dt := m.DLTensor
			if got, want := unsafe.Slice(dt.Shape, dt.NDim), c.shape; !slices.Equal(got, want) || !slices.Equal(unsafe.Slice(dt.Strides, dt.NDim), c.strides) || m.Flags != c.flags {
				t.Errorf("exported %v:%v flags %#x, want %v:%v %#x", got, unsafe.Slice(dt.Strides, dt.NDim), m.Flags, want, c.strides, c.flags)
			}
			w, err := FromDLPack(m)
			if err != nil {
				t.Fatal(err)
			}
			if !w.Layout().Equal(c.l) && !(c.name == "fp4 one group") || w.DType() != c.dt || w.Ptr() != v.Ptr() {
				t.Errorf("imported back as %v, want %v", w, v)
			}
			w.Close()
		})
	}
	h, _ := FromHost(buf, mustLayout(layout.Dense([]int64{96}, 1, layout.C)))
	bad, err := h.View(mustLayout(layout.New([]int64{2, 2}, []int64{2, 6}, 3)), fp6)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bad.ToDLPack(dlpack.StreamNoSync); !errors.Is(err, ErrDType) {
		t.Errorf("fp6 groups with no dim of stride 1: %v", err)
	}
}

// TestToDLPackErrors: a nil view, a closed one, a view of a closed buffer,
// a bad stream value and a producer stream of another device are refused.
func TestToDLPackErrors(t *testing.T) {
	live := dlpack.LiveExports()
	v, err := FromHost(make([]int32, 4), mustLayout(layout.Dense([]int64{4}, 4, layout.C)))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []int64{0, -2, -1 << 63} {
		if _, err := v.ToDLPack(s); !errors.Is(err, dlpack.ErrStream) {
			t.Errorf("stream %d: %v", s, err)
		}
	}
	if _, err := (*StridedMemoryView)(nil).ToDLPack(-1); !errors.Is(err, ErrNilView) {
		t.Errorf("nil view: %v", err)
	}
	closed, _ := FromHost(make([]int32, 4), v.Layout())
	closed.owner = &owner{}
	closed.Close()
	if _, err := closed.ToDLPack(-1); !errors.Is(err, ErrClosed) {
		t.Errorf("closed view: %v", err)
	}
	d0, d1 := new(cuda.Device), new(cuda.Device)
	dv := fakeView(t, cuda.MemoryDevice, d0, 0x10000, v.Layout(), layout.Int32)
	if _, err := dv.ToDLPack(-1, ProducerStream(d1.LegacyStream())); !errors.Is(err, ErrDevice) {
		t.Errorf("producer stream of another device: %v", err)
	}
	if n := dlpack.LiveExports(); n != live {
		t.Errorf("%d live exports after refusals, want %d", n, live)
	}
	// A view that owns a tensor already given back cannot be exported.
	c := stridedCases[0]
	data := c.data()
	var cnt counter
	w, err := FromDLPack(produce(t, c, data, 0, false, &cnt))
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	if _, err := w.ToDLPack(-1); !errors.Is(err, ErrClosed) {
		t.Errorf("closed DLPack view: %v", err)
	}
}

// TestToDLPackHoldsOwner: the export of a view that owns a DLPack tensor
// keeps the tensor until both the view is closed and the export deleted,
// in either order, and the tensor's deleter runs once.
func TestToDLPackHoldsOwner(t *testing.T) {
	c := stridedCases[3]
	for _, closeFirst := range []bool{true, false} {
		data := c.data()
		var cnt counter
		v, err := FromDLPack(produce(t, c, data, 0, true, &cnt))
		if err != nil {
			t.Fatal(err)
		}
		s, err := v.Slice(layout.Span(0, 2), layout.All())
		if err != nil {
			t.Fatal(err)
		}
		m1, err := s.ToDLPack(-1)
		if err != nil {
			t.Fatal(err)
		}
		m2, err := v.ToDLPack(-1)
		if err != nil {
			t.Fatal(err)
		}
		if closeFirst {
			v.Close()
		}
		dlpack.CallDeleter(m1)
		if n := cnt.n.Load(); n != 0 {
			t.Fatalf("tensor released with an export alive (close first %v)", closeFirst)
		}
		w, err := FromDLPack(m2)
		if err != nil {
			t.Fatal(err)
		}
		if got := contents(t, w); !slices.Equal(got, c.want()) {
			t.Errorf("export of the view reads %v", got)
		}
		w.Close()
		if n := cnt.n.Load(); n != map[bool]int32{true: 1, false: 0}[closeFirst] {
			t.Fatalf("tensor released %d times after the exports (close first %v)", n, closeFirst)
		}
		v.Close()
		if n := cnt.n.Load(); n != 1 {
			t.Fatalf("tensor released %d times in all, want 1", n)
		}
	}
}

// TestDLPackConcurrent exports one imported tensor from many goroutines
// while another closes the view, and checks the deleter runs exactly once,
// after the last holder (run it with -race).
func TestDLPackConcurrent(t *testing.T) {
	c := stridedCases[4]
	live := dlpack.LiveExports()
	for range 20 {
		data := c.data()
		var cnt counter
		v, err := FromDLPack(produce(t, c, data, 0, false, &cnt))
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		var exported atomic.Int32
		for g := range 8 {
			wg.Go(func() {
				for range 20 {
					m, err := v.ToDLPack(-1)
					if err != nil {
						if !errors.Is(err, ErrClosed) {
							t.Error(err)
						}
						return
					}
					exported.Add(1)
					if g%2 == 0 {
						w, err := FromDLPack(m)
						if err != nil {
							t.Error(err)
							return
						}
						w.Close()
					} else {
						dlpack.CallDeleter(m)
					}
				}
			})
		}
		wg.Go(func() { v.Close() })
		wg.Wait()
		if n := cnt.n.Load(); n != 1 {
			t.Fatalf("deleter ran %d times after %d exports, want 1", n, exported.Load())
		}
	}
	if n := dlpack.LiveExports(); n != live {
		t.Errorf("%d live exports, want %d", n, live)
	}
}

// TestFromDLPackAllocs: importing a tensor of a recently seen layout
// allocates once (the view with its owner).
func TestFromDLPackAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("-race: sync.Pool drops items at random, so allocation counts mean nothing")
	}
	m, _ := benchTensor()
	if a := testing.AllocsPerRun(200, func() {
		v, err := FromDLPack(&m)
		if err != nil {
			t.Fatal(err)
		}
		v.Close()
	}); a > 3 {
		t.Errorf("FromDLPack and Close allocate %v times, want at most 3 (the view, and the cleanup's two)", a)
	}
}

// benchTensor is a 4-d strided float32 host tensor of a DLPack 1.3
// producer, in Go memory, with no deleter: a[::2].transpose(0, 3, 2, 1) of
// a C-order 16×64×32×16 array a, 256 bytes into it.
func benchTensor() (dlpack.DLManagedTensorVersioned, []float32) {
	data := make([]float32, 16*64*32*16+64)
	shape := []int64{8, 16, 32, 64}
	strides := []int64{2 * 64 * 32 * 16, 1, 16, 32 * 16}
	return dlpack.DLManagedTensorVersioned{Version: dlpack.Version, DLTensor: dlpack.DLTensor{
		Data: uintptr(unsafe.Pointer(&data[0])), Device: dlpack.DLDevice{DeviceType: dlpack.KDLCPU}, NDim: 4,
		DType: dlpack.DLDataType{Code: layout.KDLFloat, Bits: 32, Lanes: 1}, Shape: &shape[0], Strides: &strides[0],
		ByteOffset: 256,
	}}, data
}

// BenchmarkFromDLPack imports a 4-d strided host tensor into a view and
// closes the view, as a program exchanging tensors of the same shapes step
// after step does. Bytes per operation are the metadata read (the struct,
// shape and strides), so MB/s is the rate tensors are taken in.
func BenchmarkFromDLPack(b *testing.B) {
	m, data := benchTensor()
	b.SetBytes(int64(unsafe.Sizeof(m)) + 2*4*8)
	b.ReportAllocs()
	for b.Loop() {
		v, err := FromDLPack(&m)
		if err != nil {
			b.Fatal(err)
		}
		v.Close()
	}
	_ = data[0]
}

// BenchmarkToDLPack exports a 4-d strided host view and deletes the export.
func BenchmarkToDLPack(b *testing.B) {
	m, data := benchTensor()
	v, err := FromDLTensor(&m.DLTensor, dlpack.Producer{Versioned: true, Version: m.Version})
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(unsafe.Sizeof(m)) + 2*4*8)
	b.ReportAllocs()
	for b.Loop() {
		e, err := v.ToDLPack(dlpack.StreamNoSync)
		if err != nil {
			b.Fatal(err)
		}
		dlpack.CallDeleter(e)
	}
	_ = data[0]
}

// TestDLPackRoundTripRandom hands random views of Go memory (every kind of
// internal/pairgen's sources: permutations, slices with steps, flips,
// broadcasts, item sizes 1 to 16) through ToDLPack and FromDLPack and
// checks that the view taken back reads exactly what the original reads,
// and that every export is given back.
func TestDLPackRoundTripRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	live := dlpack.LiveExports()
	n := 300
	if testing.Short() {
		n = 60
	}
	for range n {
		c := pairgen.Random(r, 16<<10)
		buf := make([]byte, c.SrcBuf)
		pairgen.Fill(r, buf)
		v, err := FromHost(buf[c.SrcBase:], c.Src)
		if err != nil {
			t.Fatal(err)
		}
		m, err := v.ToDLPack(dlpack.StreamNoSync)
		if err != nil {
			t.Fatalf("%v: %v", c, err)
		}
		w, err := FromDLPack(m)
		if err != nil {
			t.Fatalf("%v: %v", c, err)
		}
		if w.Ptr() != v.Ptr() || !w.Layout().Equal(v.Layout()) || w.DType() != v.DType() {
			t.Fatalf("%v: %v came back as %v", c, v, w)
		}
		dense := mustLayout(layout.Dense(c.Src.Shape(), c.Src.Itemsize(), layout.C))
		want, got := make([]byte, dense.RequiredSizeInBytes()), make([]byte, dense.RequiredSizeInBytes())
		for _, x := range []struct {
			out []byte
			v   *StridedMemoryView
		}{{want, v}, {got, w}} {
			d, err := FromHost(x.out, dense)
			if err != nil {
				t.Fatal(err)
			}
			if d, err = d.View(dense, x.v.DType()); err != nil {
				t.Fatal(err)
			}
			if err := d.CopyFrom(x.v, nil); err != nil {
				t.Fatalf("%v: %v", c, err)
			}
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("%v: the view taken back reads other bytes", c)
		}
		w.Close()
	}
	if k := dlpack.LiveExports(); k != live {
		t.Errorf("%d live exports, want %d", k, live)
	}
}
