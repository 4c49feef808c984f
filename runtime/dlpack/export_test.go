package dlpack_test

import (
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"unsafe"

	"github.com/ebitengine/purego"
	"pgregory.net/rapid"

	"github.com/stridekit/stridekit/layout"
	"github.com/stridekit/stridekit/runtime/dlpack"
)

// counter is a release function that counts its calls.
type counter struct{ n atomic.Int32 }

func (c *counter) release() { c.n.Add(1) }

// arrays returns the shape and strides a DLTensor points to (nil where
// NULL).
func arrays(t *dlpack.DLTensor) (shape, strides []int64) {
	if t.Shape != nil {
		shape = slices.Clone(unsafe.Slice(t.Shape, t.NDim))
	}
	if t.Strides != nil {
		strides = slices.Clone(unsafe.Slice(t.Strides, t.NDim))
	}
	return shape, strides
}

// checkNoLiveExports fails t if an export of the test was not released.
func checkNoLiveExports(t *testing.T) {
	t.Helper()
	if n := dlpack.LiveExports(); n != 0 {
		t.Errorf("LiveExports() = %d after every deleter ran, want 0", n)
	}
}

func TestExport(t *testing.T) {
	host := dlpack.DLDevice{DeviceType: dlpack.KDLCPU}
	for _, c := range []struct {
		name        string
		r           dlpack.ExportRequest
		wantStrides []int64
		wantData    uintptr
		wantLayout  string
	}{
		{"strided", dlpack.ExportRequest{Data: base, Device: host, DType: layout.Float32, Shape: []int64{4, 3}, Strides: []int64{1, 4}},
			[]int64{1, 4}, base, "(4,3):(1,4)x4"},
		{"c-order-explicit", dlpack.ExportRequest{Data: base, Device: host, DType: layout.Int16, Shape: []int64{2, 3, 4}},
			[]int64{12, 4, 1}, base, "(2,3,4):(12,4,1)x2"},
		{"flipped", dlpack.ExportRequest{Data: base + 64, Device: host, DType: layout.Int32, Shape: []int64{5, 4}, Strides: []int64{-4, 1}},
			[]int64{-4, 1}, base + 64, "(5,4):(-4,1)x4"},
		{"read-only-cuda", dlpack.ExportRequest{Data: base, Device: dlpack.DLDevice{DeviceType: dlpack.KDLCUDA, DeviceID: 1},
			DType: layout.BFloat16, Shape: []int64{8}, Strides: []int64{2}, Flags: dlpack.FlagReadOnly},
			[]int64{2}, base, "(8):(2)x2"},
		{"fp4-packed", dlpack.ExportRequest{Data: base, Device: host, DType: layout.Float4E2M1, Shape: []int64{3, 4}, Strides: []int64{8, 1}},
			[]int64{8, 1}, base, "(3,2):(4,1)x1"},
		{"fp4-padded", dlpack.ExportRequest{Data: base, Device: host, DType: layout.Float4E2M1, Shape: []int64{3, 5},
			Flags: dlpack.FlagIsSubbyteTypePadded}, []int64{5, 1}, base, "(3,5):(5,1)x1"},
		{"empty", dlpack.ExportRequest{Data: base, Device: host, DType: layout.Float64, Shape: []int64{3, 0}},
			[]int64{1, 1}, 0, "(3,0):(1,1)x8"},
		{"scalar", dlpack.ExportRequest{Data: base, Device: host, DType: layout.Complex64},
			nil, base, "():()x8"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var cnt counter
			c.r.Release = cnt.release
			m, err := dlpack.Export(c.r)
			if err != nil {
				t.Fatal(err)
			}
			if m.Version != dlpack.Version || m.Flags != c.r.Flags || m.Deleter == 0 || m.ManagerCtx == 0 {
				t.Errorf("version %v flags %v deleter %#x ctx %#x", m.Version, m.Flags, m.Deleter, m.ManagerCtx)
			}
			tt := &m.DLTensor
			shape, strides := arrays(tt)
			if int(tt.NDim) != len(c.r.Shape) || !slices.Equal(shape, c.r.Shape) || !slices.Equal(strides, c.wantStrides) {
				t.Errorf("ndim %d shape %v strides %v; want %d %v %v", tt.NDim, shape, strides, len(c.r.Shape), c.r.Shape, c.wantStrides)
			}
			if len(c.r.Shape) > 0 && (tt.Shape == nil || tt.Strides == nil) {
				t.Errorf("shape or strides NULL with ndim %d", tt.NDim)
			}
			if tt.Data != c.wantData || tt.ByteOffset != 0 || tt.Device != c.r.Device {
				t.Errorf("data %#x offset %d device %+v", tt.Data, tt.ByteOffset, tt.Device)
			}
			if want, _ := dlpack.DataTypeOf(c.r.DType); tt.DType != want {
				t.Errorf("dtype %+v, want %+v", tt.DType, want)
			}
			if dlpack.LiveExports() != 1 {
				t.Errorf("LiveExports() = %d with one export alive", dlpack.LiveExports())
			}
			d, err := dlpack.ImportVersioned(m)
			if err != nil {
				t.Fatalf("importing the export: %v", err)
			}
			if d.Layout.String() != c.wantLayout || d.DType != c.r.DType || d.Ptr != c.wantData || d.ReadOnly != c.r.Flags.Has(dlpack.FlagReadOnly) {
				t.Errorf("imported %v %v at %#x read-only %v", d.Layout, d.DType, d.Ptr, d.ReadOnly)
			}
			if cnt.n.Load() != 0 {
				t.Errorf("release ran before the deleter")
			}
			dlpack.CallDeleter(m)
			if cnt.n.Load() != 1 {
				t.Errorf("release ran %d times, want 1", cnt.n.Load())
			}
			checkNoLiveExports(t)
		})
	}
}

func TestExportErrors(t *testing.T) {
	host := dlpack.DLDevice{DeviceType: dlpack.KDLCPU}
	vec, _ := layout.ParseDType("float32x4")
	for _, c := range []struct {
		name string
		r    dlpack.ExportRequest
		errs []error
		msg  string
	}{
		{"unknown-flag", dlpack.ExportRequest{Data: base, Device: host, DType: layout.Float32, Flags: 1 << 7}, []error{dlpack.ErrFlags}, "0x80"},
		{"device", dlpack.ExportRequest{Data: base, Device: dlpack.DLDevice{DeviceType: dlpack.KDLMetal}, DType: layout.Float32},
			[]error{dlpack.ErrUnsupportedDevice}, "device_type 8 (kDLMetal)"},
		{"device-id", dlpack.ExportRequest{Data: base, Device: dlpack.DLDevice{DeviceType: dlpack.KDLCUDA, DeviceID: -1}, DType: layout.Float32},
			[]error{dlpack.ErrDeviceID}, "-1"},
		{"zero-dtype", dlpack.ExportRequest{Data: base, Device: host}, []error{dlpack.ErrDType}, "invalid"},
		{"vector-dtype", dlpack.ExportRequest{Data: base, Device: host, DType: vec}, []error{dlpack.ErrDType}, "float32x4"},
		{"big-opaque", dlpack.ExportRequest{Data: base, Device: host, DType: mustOpaque(40)}, []error{dlpack.ErrDType}, "opaque40"},
		{"stride-count", dlpack.ExportRequest{Data: base, Device: host, DType: layout.Float32, Shape: []int64{2, 2}, Strides: []int64{1}},
			[]error{dlpack.ErrStrides}, "1 strides"},
		{"negative-extent", dlpack.ExportRequest{Data: base, Device: host, DType: layout.Float32, Shape: []int64{2, -1}},
			[]error{dlpack.ErrShape}, "shape[1] = -1"},
		{"fp4-odd", dlpack.ExportRequest{Data: base, Device: host, DType: layout.Float4E2M1, Shape: []int64{3}},
			[]error{dlpack.ErrSubByte, layout.ErrDType}, "extent 3"},
		{"null-data", dlpack.ExportRequest{Device: host, DType: layout.Float32, Shape: []int64{3}}, []error{dlpack.ErrData}, "NULL"},
		{"overflow", dlpack.ExportRequest{Data: base, Device: host, DType: layout.Float32, Shape: []int64{1 << 62}},
			[]error{dlpack.ErrOverflow, layout.ErrOverflow}, ""},
		{"past-address-end", dlpack.ExportRequest{Data: ^uintptr(0) - 4, Device: host, DType: layout.Float32, Shape: []int64{4}},
			[]error{dlpack.ErrOverflow}, "past the end"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var cnt counter
			c.r.Release = cnt.release
			for _, export := range []func(dlpack.ExportRequest) error{
				func(r dlpack.ExportRequest) error { _, err := dlpack.Export(r); return err },
				func(r dlpack.ExportRequest) error { _, err := dlpack.ExportLegacy(r); return err },
			} {
				err := export(c.r)
				if err == nil {
					t.Fatal("export succeeded")
				}
				for _, e := range c.errs {
					if !errors.Is(err, e) {
						t.Errorf("error %q is not %v", err, e)
					}
				}
				if !strings.Contains(err.Error(), c.msg) {
					t.Errorf("error %q does not contain %q", err, c.msg)
				}
			}
			if cnt.n.Load() != 0 {
				t.Errorf("release ran on a failed export")
			}
			checkNoLiveExports(t)
		})
	}
}

func TestExportLegacyFlags(t *testing.T) {
	r := dlpack.ExportRequest{Data: base, Device: dlpack.DLDevice{DeviceType: dlpack.KDLCPU}, DType: layout.Float32, Shape: []int64{2}}
	for _, f := range []dlpack.Flags{dlpack.FlagReadOnly, dlpack.FlagIsSubbyteTypePadded, 1 << 9} {
		r.Flags = f
		if _, err := dlpack.ExportLegacy(r); !errors.Is(err, dlpack.ErrFlags) {
			t.Errorf("flags %#x: error %v, want ErrFlags", uint64(f), err)
		}
	}
	var cnt counter
	r.Flags, r.Release = dlpack.FlagIsCopied, cnt.release
	m, err := dlpack.ExportLegacy(r)
	if err != nil {
		t.Fatal(err)
	}
	d, err := dlpack.ImportLegacy(m)
	if err != nil || d.Layout.String() != "(2):(1)x4" || d.Ptr != base {
		t.Errorf("import of legacy export: %v %#x, %v", d.Layout, d.Ptr, err)
	}
	dlpack.CallLegacyDeleter(m)
	if cnt.n.Load() != 1 {
		t.Errorf("release ran %d times, want 1", cnt.n.Load())
	}
	checkNoLiveExports(t)
}

// TestDeleterTwice calls an exported tensor's deleter a second time with
// the same (now freed) tensor, as a buggy consumer might: release must run
// once and nothing else happen.
func TestDeleterTwice(t *testing.T) {
	var cnt counter
	r := dlpack.ExportRequest{Data: base, Device: dlpack.DLDevice{DeviceType: dlpack.KDLCPU}, DType: layout.Uint8,
		Shape: []int64{16}, Release: cnt.release}
	m, err := dlpack.Export(r)
	if err != nil {
		t.Fatal(err)
	}
	fn, p := m.Deleter, uintptr(unsafe.Pointer(m))
	purego.SyscallN(fn, p)
	purego.SyscallN(fn, p)
	if cnt.n.Load() != 1 {
		t.Errorf("versioned: release ran %d times, want 1", cnt.n.Load())
	}
	l, err := dlpack.ExportLegacy(r)
	if err != nil {
		t.Fatal(err)
	}
	fn, p = l.Deleter, uintptr(unsafe.Pointer(l))
	purego.SyscallN(fn, p)
	purego.SyscallN(fn, p)
	if cnt.n.Load() != 2 {
		t.Errorf("legacy: release ran %d times in all, want 2", cnt.n.Load())
	}
	checkNoLiveExports(t)
}

func TestCallDeleterNil(t *testing.T) {
	dlpack.CallDeleter(nil)
	dlpack.CallLegacyDeleter(nil)
	dlpack.CallDeleter(&dlpack.DLManagedTensorVersioned{})
	dlpack.CallLegacyDeleter(&dlpack.DLManagedTensor{})
}

// TestExportConcurrent exports and releases from many goroutines at once.
func TestExportConcurrent(t *testing.T) {
	const goroutines, each = 8, 200
	var cnt counter
	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				r := dlpack.ExportRequest{Data: base, Device: dlpack.DLDevice{DeviceType: dlpack.KDLCPU}, DType: layout.Float32,
					Shape: []int64{int64(g + 1), int64(i + 1)}, Release: cnt.release}
				m, err := dlpack.Export(r)
				if err != nil {
					errs <- err
					return
				}
				if d, err := dlpack.ImportVersioned(m); err != nil || d.Layout.Shape()[1] != int64(i+1) {
					errs <- errors.Join(errors.New("import of export"), err)
				}
				dlpack.CallDeleter(m)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if got := cnt.n.Load(); got != goroutines*each {
		t.Errorf("release ran %d times, want %d", got, goroutines*each)
	}
	checkNoLiveExports(t)
}

// TestExportImportProperty exports random tensors and imports them back:
// Export succeeds exactly when LayoutOf does (for a non-NULL data pointer),
// and the import describes the same layout, dtype and address.
func TestExportImportProperty(t *testing.T) {
	dtypes := []layout.DType{layout.Int8, layout.Float16, layout.Float32, layout.Complex128, layout.Bool,
		layout.Float8E4M3, layout.Float4E2M1, layout.Float6E2M3, mustOpaque(3)}
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(0, 4).Draw(t, "ndim")
		shape := rapid.SliceOfN(rapid.Int64Range(0, 6), n, n).Draw(t, "shape")
		var strides []int64
		if rapid.Bool().Draw(t, "explicit") {
			strides = rapid.SliceOfN(rapid.Int64Range(-12, 12), n, n).Draw(t, "strides")
		}
		dt := rapid.SampledFrom(dtypes).Draw(t, "dtype")
		flags := dlpack.Flags(rapid.IntRange(0, 7).Draw(t, "flags"))
		var cnt counter
		r := dlpack.ExportRequest{Data: base, Device: dlpack.DLDevice{DeviceType: dlpack.KDLCUDAManaged}, DType: dt,
			Shape: shape, Strides: strides, Flags: flags, Release: cnt.release}
		want, lerr := dlpack.LayoutOf(shape, strides, dt, flags)
		m, err := dlpack.Export(r)
		if (err == nil) != (lerr == nil) {
			t.Fatalf("Export error %v, LayoutOf error %v", err, lerr)
		}
		if err != nil {
			return
		}
		d, err := dlpack.ImportVersioned(m)
		if err != nil {
			t.Fatalf("import: %v", err)
		}
		wantPtr := base
		if want.Volume() == 0 {
			wantPtr = 0
		}
		if d.Layout.String() != want.String() || d.DType != dt || d.Ptr != wantPtr || d.Flags != flags {
			t.Fatalf("imported %v %v at %#x flags %v; want %v %v at %#x flags %v", d.Layout, d.DType, d.Ptr, d.Flags, want, dt, wantPtr, flags)
		}
		gotShape, gotStrides := arrays(&m.DLTensor)
		if n > 0 && (!slices.Equal(gotShape, shape) || strides != nil && !slices.Equal(gotStrides, strides)) {
			t.Fatalf("exported shape %v strides %v; want %v %v", gotShape, gotStrides, shape, strides)
		}
		dlpack.CallDeleter(m)
		if cnt.n.Load() != 1 || dlpack.LiveExports() != 0 {
			t.Fatalf("release ran %d times, %d exports live", cnt.n.Load(), dlpack.LiveExports())
		}
	})
}
