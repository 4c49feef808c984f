package dlpack_test

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/stridekit/stridekit/layout"
	"github.com/stridekit/stridekit/runtime/dlpack"
)

// tensor is a DLTensor under construction in Go memory, for Import tests
// that need no C: Import reads the struct, shape and strides but never the
// data.
type tensor struct {
	t       dlpack.DLTensor
	shape   []int64
	strides []int64
}

// newTensor returns a host tensor of dtype dt at address data with the given
// shape and strides (nil strides: NULL).
func newTensor(data uintptr, dt dlpack.DLDataType, shape, strides []int64) *tensor {
	x := &tensor{shape: slices.Clone(shape), strides: slices.Clone(strides)}
	x.t = dlpack.DLTensor{
		Data:   data,
		Device: dlpack.DLDevice{DeviceType: dlpack.KDLCPU},
		NDim:   int32(len(shape)),
		DType:  dt,
	}
	if len(x.shape) > 0 {
		x.t.Shape = &x.shape[0]
	}
	if len(x.strides) > 0 {
		x.t.Strides = &x.strides[0]
	}
	return x
}

var (
	f32  = dlpack.DLDataType{Code: layout.KDLFloat, Bits: 32, Lanes: 1}
	i32  = dlpack.DLDataType{Code: layout.KDLInt, Bits: 32, Lanes: 1}
	fp4  = dlpack.DLDataType{Code: layout.KDLFloat4E2M1FN, Bits: 4, Lanes: 1}
	fp6  = dlpack.DLDataType{Code: layout.KDLFloat6E2M3FN, Bits: 6, Lanes: 1}
	v13  = dlpack.Producer{Versioned: true, Version: dlpack.Version}
	v11  = dlpack.Producer{Versioned: true, Version: dlpack.DLPackVersion{Major: 1, Minor: 1}}
	v12  = dlpack.Producer{Versioned: true, Version: dlpack.DLPackVersion{Major: 1, Minor: 2}}
	base = uintptr(0x7f0000001000)
)

func TestImportValid(t *testing.T) {
	for _, c := range []struct {
		name     string
		x        *tensor
		p        dlpack.Producer
		ptr      uintptr
		want     string // layout
		dtype    layout.DType
		readOnly bool
	}{
		{"c-order", newTensor(base, f32, []int64{2, 3}, []int64{3, 1}), v13, base, "(2,3):(3,1)x4", layout.Float32, false},
		{"transposed", newTensor(base, f32, []int64{3, 2}, []int64{1, 3}), v13, base, "(3,2):(1,3)x4", layout.Float32, false},
		{"byte-offset", func() *tensor {
			x := newTensor(base, i32, []int64{2, 2}, []int64{16, 3})
			x.t.ByteOffset = 40
			return x
		}(), v13, base + 40, "(2,2):(16,3)x4", layout.Int32, false},
		{"flipped", func() *tensor {
			x := newTensor(base, i32, []int64{5, 4}, []int64{-4, 1})
			x.t.ByteOffset = 64
			return x
		}(), v13, base + 64, "(5,4):(-4,1)x4", layout.Int32, false},
		{"read-only", newTensor(base, f32, []int64{4}, []int64{1}),
			dlpack.Producer{Versioned: true, Version: dlpack.Version, Flags: dlpack.FlagReadOnly}, base, "(4):(1)x4", layout.Float32, true},
		{"null-strides-1.1", newTensor(base, f32, []int64{2, 3, 4}, nil), v11, base, "(2,3,4):(12,4,1)x4", layout.Float32, false},
		{"null-strides-legacy", newTensor(base, f32, []int64{2, 3}, nil), dlpack.Producer{}, base, "(2,3):(3,1)x4", layout.Float32, false},
		{"scalar", newTensor(base, f32, nil, nil), v13, base, "():()x4", layout.Float32, false},
		{"empty-null-data", newTensor(0, f32, []int64{0, 3}, []int64{3, 1}), v13, 0, "(0,3):(3,1)x4", layout.Float32, false},
		{"future-minor", newTensor(base, f32, []int64{2}, []int64{1}),
			dlpack.Producer{Versioned: true, Version: dlpack.DLPackVersion{Major: 1, Minor: 9}}, base, "(2):(1)x4", layout.Float32, false},
		{"broadcast", newTensor(base, f32, []int64{3, 4}, []int64{0, 1}), v13, base, "(3,4):(0,1)x4", layout.Float32, false},
		{"fp4-packed", newTensor(base, fp4, []int64{3, 8}, []int64{8, 1}), v13, base, "(3,4):(4,1)x1", layout.Float4E2M1, false},
		{"fp6-packed", newTensor(base, fp6, []int64{2, 8}, []int64{8, 1}), v13, base, "(2,2):(2,1)x3", layout.Float6E2M3, false},
		{"fp4-padded", newTensor(base, fp4, []int64{3, 7}, []int64{7, 1}),
			dlpack.Producer{Versioned: true, Version: dlpack.Version, Flags: dlpack.FlagIsSubbyteTypePadded}, base, "(3,7):(7,1)x1", layout.Float4E2M1, false},
		{"opaque", newTensor(base, dlpack.DLDataType{Code: layout.KDLOpaqueHandle, Bits: 96, Lanes: 1}, []int64{2}, []int64{1}), v13, base, "(2):(1)x12", mustOpaque(12), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			d, err := dlpack.Import(&c.x.t, c.p)
			if err != nil {
				t.Fatal(err)
			}
			if d.Ptr != c.ptr {
				t.Errorf("Ptr = %#x, want %#x", d.Ptr, c.ptr)
			}
			if got := d.Layout.String(); got != c.want {
				t.Errorf("Layout = %s, want %s", got, c.want)
			}
			if d.DType != c.dtype {
				t.Errorf("DType = %v, want %v", d.DType, c.dtype)
			}
			if d.ReadOnly != c.readOnly || d.Flags != c.p.Flags {
				t.Errorf("ReadOnly, Flags = %v, %v; want %v, %v", d.ReadOnly, d.Flags, c.readOnly, c.p.Flags)
			}
			if d.Device != c.x.t.Device {
				t.Errorf("Device = %+v, want %+v", d.Device, c.x.t.Device)
			}
		})
	}
}

// TestImportKeepsNothing checks that the description does not alias the
// producer's shape and strides arrays, which die with the tensor.
func TestImportKeepsNothing(t *testing.T) {
	x := newTensor(base, f32, []int64{2, 3}, []int64{3, 1})
	d, err := dlpack.Import(&x.t, v13)
	if err != nil {
		t.Fatal(err)
	}
	x.shape[0], x.strides[0] = 99, 77
	if got := d.Layout.String(); got != "(2,3):(3,1)x4" {
		t.Errorf("layout changed with the producer's arrays: %s", got)
	}
}

func TestImportErrors(t *testing.T) {
	maxAddr := ^uintptr(0)
	for _, c := range []struct {
		name string
		x    *tensor
		p    dlpack.Producer
		errs []error
		msg  string // a part of the message
	}{
		{"major-0", newTensor(base, f32, []int64{2}, []int64{1}),
			dlpack.Producer{Versioned: true, Version: dlpack.DLPackVersion{Major: 0, Minor: 8}}, []error{dlpack.ErrVersion}, "0.8"},
		{"major-2", newTensor(base, f32, []int64{2}, []int64{1}),
			dlpack.Producer{Versioned: true, Version: dlpack.DLPackVersion{Major: 2, Minor: 0}}, []error{dlpack.ErrVersion}, "2.0"},
		{"device-rocm", func() *tensor {
			x := newTensor(base, f32, []int64{2}, []int64{1})
			x.t.Device.DeviceType = dlpack.KDLROCM
			return x
		}(), v13, []error{dlpack.ErrUnsupportedDevice}, "device_type 10 (kDLROCM)"},
		{"device-unknown", func() *tensor {
			x := newTensor(base, f32, []int64{2}, []int64{1})
			x.t.Device.DeviceType = 99
			return x
		}(), v13, []error{dlpack.ErrUnsupportedDevice}, "device_type 99 (DLDeviceType(99))"},
		{"device-id", func() *tensor {
			x := newTensor(base, f32, []int64{2}, []int64{1})
			x.t.Device = dlpack.DLDevice{DeviceType: dlpack.KDLCUDA, DeviceID: -1}
			return x
		}(), v13, []error{dlpack.ErrDeviceID}, "device_id -1"},
		{"lanes", newTensor(base, dlpack.DLDataType{Code: layout.KDLFloat, Bits: 32, Lanes: 4}, []int64{2}, []int64{1}),
			v13, []error{dlpack.ErrDType}, "float32x4"},
		{"lanes-0", newTensor(base, dlpack.DLDataType{Code: layout.KDLFloat, Bits: 32, Lanes: 0}, []int64{2}, []int64{1}),
			v13, []error{dlpack.ErrDType}, "lanes 0"},
		{"code", newTensor(base, dlpack.DLDataType{Code: 18, Bits: 8, Lanes: 1}, []int64{2}, []int64{1}),
			v13, []error{dlpack.ErrDType, layout.ErrDType}, "code 18"},
		{"bits", newTensor(base, dlpack.DLDataType{Code: layout.KDLFloat, Bits: 8, Lanes: 1}, []int64{2}, []int64{1}),
			v13, []error{dlpack.ErrDType, layout.ErrDType}, "bits 8"},
		{"fp4-bits", newTensor(base, dlpack.DLDataType{Code: layout.KDLFloat4E2M1FN, Bits: 8, Lanes: 1}, []int64{2}, []int64{1}),
			v13, []error{dlpack.ErrDType}, "code 17, bits 8"},
		{"ndim", func() *tensor {
			x := newTensor(base, f32, []int64{2}, []int64{1})
			x.t.NDim = -1
			return x
		}(), v13, []error{dlpack.ErrNDim}, "ndim = -1"},
		{"null-shape", func() *tensor {
			x := newTensor(base, f32, []int64{2, 2}, []int64{2, 1})
			x.t.Shape = nil
			return x
		}(), v13, []error{dlpack.ErrShape}, "shape is NULL with ndim = 2"},
		{"negative-extent", newTensor(base, f32, []int64{2, -3}, []int64{3, 1}), v13, []error{dlpack.ErrShape}, "shape[1] = -3"},
		{"null-strides-1.2", newTensor(base, f32, []int64{2, 3}, nil), v12, []error{dlpack.ErrStrides}, "DLPack 1.2 producer"},
		{"null-strides-1.3", newTensor(base, f32, []int64{2, 3}, nil), v13, []error{dlpack.ErrStrides}, "strides is NULL with ndim = 2"},
		{"fp4-odd", newTensor(base, fp4, []int64{3, 7}, []int64{7, 1}), v13, []error{dlpack.ErrSubByte, layout.ErrDType}, "extent 7"},
		{"fp4-no-unit-stride", newTensor(base, fp4, []int64{4}, []int64{2}), v13, []error{dlpack.ErrSubByte, layout.ErrDType}, "no dim with stride 1"},
		{"fp6-row-inside-group", newTensor(base, fp6, []int64{2, 4}, []int64{6, 1}), v13, []error{dlpack.ErrSubByte, layout.ErrDType}, "stride 6 of dim 0"},
		{"null-data", newTensor(0, f32, []int64{2}, []int64{1}), v13, []error{dlpack.ErrData}, "data is NULL for a tensor of 2 elements"},
		{"byte-offset-wraps", func() *tensor {
			x := newTensor(maxAddr-8, f32, []int64{1}, []int64{1})
			x.t.ByteOffset = 16
			return x
		}(), v13, []error{dlpack.ErrOverflow}, "byte_offset 16"},
		{"offsets-overflow", newTensor(base, f32, []int64{1 << 62}, []int64{4}), v13, []error{dlpack.ErrOverflow, layout.ErrOverflow}, ""},
		{"stride-bytes-overflow", newTensor(base, f32, []int64{2}, []int64{math.MaxInt64 / 2}), v13, []error{dlpack.ErrOverflow, layout.ErrOverflow}, ""},
		{"below-address-0", newTensor(16, i32, []int64{10}, []int64{-1}), v13, []error{dlpack.ErrOverflow}, "36 bytes below"},
		{"past-address-end", newTensor(maxAddr-8, i32, []int64{4}, []int64{1}), v13, []error{dlpack.ErrOverflow}, "past the end"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := dlpack.Import(&c.x.t, c.p)
			if err == nil {
				t.Fatal("Import succeeded")
			}
			for _, e := range c.errs {
				if !errors.Is(err, e) {
					t.Errorf("error %q is not %v", err, e)
				}
			}
			if !strings.Contains(err.Error(), c.msg) {
				t.Errorf("error %q does not contain %q", err, c.msg)
			}
		})
	}
}

func TestImportNil(t *testing.T) {
	if _, err := dlpack.Import(nil, v13); !errors.Is(err, dlpack.ErrNilTensor) {
		t.Errorf("Import(nil) error %v", err)
	}
	if _, err := dlpack.ImportVersioned(nil); !errors.Is(err, dlpack.ErrNilTensor) {
		t.Errorf("ImportVersioned(nil) error %v", err)
	}
	if _, err := dlpack.ImportLegacy(nil); !errors.Is(err, dlpack.ErrNilTensor) {
		t.Errorf("ImportLegacy(nil) error %v", err)
	}
}

// TestImportVersionedReadsVersion checks that ImportVersioned takes the
// version and flags from the struct: NULL strides are C order from a 1.1
// producer and an error from a 1.3 one, and the read-only flag comes
// through.
func TestImportVersionedReadsVersion(t *testing.T) {
	x := newTensor(base, f32, []int64{2, 3}, nil)
	m := dlpack.DLManagedTensorVersioned{Version: dlpack.DLPackVersion{Major: 1, Minor: 1}, Flags: dlpack.FlagReadOnly, DLTensor: x.t}
	d, err := dlpack.ImportVersioned(&m)
	if err != nil {
		t.Fatal(err)
	}
	if d.Layout.String() != "(2,3):(3,1)x4" || !d.ReadOnly {
		t.Errorf("got %v read-only %v", d.Layout, d.ReadOnly)
	}
	m.Version = dlpack.Version
	if _, err := dlpack.ImportVersioned(&m); !errors.Is(err, dlpack.ErrStrides) {
		t.Errorf("1.3 with NULL strides: error %v", err)
	}
	m.Version = dlpack.DLPackVersion{Major: 2}
	m.DLTensor.NDim = -5 // must not be looked at
	if _, err := dlpack.ImportVersioned(&m); !errors.Is(err, dlpack.ErrVersion) {
		t.Errorf("2.0: error %v", err)
	}
	l := dlpack.DLManagedTensor{DLTensor: x.t}
	if d, err := dlpack.ImportLegacy(&l); err != nil || d.Layout.String() != "(2,3):(3,1)x4" || d.ReadOnly {
		t.Errorf("legacy: %v, %v", d, err)
	}
}
