package dlpack_test

import (
	"encoding/binary"
	"testing"

	"github.com/stridekit/stridekit/internal/testenv"
	"github.com/stridekit/stridekit/layout"
	"github.com/stridekit/stridekit/runtime/cuda"
	"github.com/stridekit/stridekit/runtime/dlpack"
)

// TestGPUStreamValue checks the stream values of real streams: the driver's
// special handles for the default streams, the CUstream for a created one,
// and that ParseCUDAStream gives each handle back.
func TestGPUStreamValue(t *testing.T) {
	dev := testenv.NeedGPU(t)
	s := testenv.NewStream(t, dev)
	for _, c := range []struct {
		s    *cuda.Stream
		want int64
		kind dlpack.StreamKind
	}{
		{dev.LegacyStream(), dlpack.StreamLegacy, dlpack.SyncLegacy},
		{dev.PerThreadStream(), dlpack.StreamPerThread, dlpack.SyncPerThread},
		{s, int64(s.Handle()), dlpack.SyncHandle},
	} {
		v := dlpack.CUDAStreamValue(c.s)
		if v != c.want {
			t.Errorf("CUDAStreamValue = %d, want %d", v, c.want)
		}
		r, err := dlpack.ParseCUDAStream(v)
		if err != nil || r.Kind != c.kind || r.Handle != c.s.Handle() {
			t.Errorf("ParseCUDAStream(%d) = %+v, %v; want kind %v handle %#x", v, r, err, c.kind, c.s.Handle())
		}
		if got := r.Stream(dev); got == nil || got.Handle() != c.s.Handle() || got.Device() != dev {
			t.Errorf("stream of %d: %v, want handle %#x on %v", v, got, c.s.Handle(), dev)
		} else if err := got.Synchronize(); err != nil {
			t.Errorf("stream of %d: Synchronize: %v", v, err)
		}
	}
	if s.Handle() <= 2 {
		t.Errorf("a created stream's handle %#x collides with a special value", s.Handle())
	}
}

// TestGPUExportImport exports a flipped, sliced view of device, pinned and
// managed memory whose release closes the buffer, imports it back, reads
// elements through the description with the driver, and releases it.
func TestGPUExportImport(t *testing.T) {
	dev := testenv.NeedGPU(t)
	const rows, cols = 6, 8
	host := make([]byte, rows*cols*4)
	for f := range rows * cols {
		binary.LittleEndian.PutUint32(host[4*f:], uint32(1000+f))
	}
	for _, c := range []struct {
		name  string
		alloc func() (*cuda.Buffer, error)
		want  dlpack.DLDevice
	}{
		{"device", func() (*cuda.Buffer, error) { return dev.Alloc(len(host), nil) },
			dlpack.DLDevice{DeviceType: dlpack.KDLCUDA, DeviceID: int32(dev.Ordinal())}},
		{"pinned", func() (*cuda.Buffer, error) { return dev.AllocHost(len(host)) }, dlpack.DLDevice{DeviceType: dlpack.KDLCUDAHost}},
		{"managed", func() (*cuda.Buffer, error) { return dev.AllocManaged(len(host)) }, dlpack.DLDevice{DeviceType: dlpack.KDLCUDAManaged}},
	} {
		t.Run(c.name, func(t *testing.T) {
			buf, err := c.alloc()
			if err != nil {
				t.Fatal(err)
			}
			defer buf.Close()
			if err := dev.CopyHtoD(buf.Ptr(), host); err != nil {
				t.Fatal(err)
			}
			d, err := dlpack.DeviceOf(buf.Kind(), dev.Ordinal())
			if err != nil || d != c.want {
				t.Fatalf("DeviceOf(%v) = %+v, %v; want %+v", buf.Kind(), d, err, c.want)
			}
			// a[::-2, 1::3]: rows 5, 3, 1; columns 1, 4, 7.
			off := uintptr((5*cols + 1) * 4)
			m, err := dlpack.Export(dlpack.ExportRequest{Data: uintptr(buf.Ptr()) + off, Device: d, DType: layout.Int32,
				Shape: []int64{3, 3}, Strides: []int64{-2 * cols, 3}, Release: func() { buf.Close() }})
			if err != nil {
				t.Fatal(err)
			}
			desc, err := dlpack.ImportVersioned(m)
			if err != nil {
				t.Fatal(err)
			}
			if desc.Device != c.want || desc.Layout.String() != "(3,3):(-16,3)x4" {
				t.Errorf("imported %v on %+v", desc.Layout, desc.Device)
			}
			st := desc.Layout.Strides()
			for i := range int64(3) {
				for j := range int64(3) {
					var v [4]byte
					at := int64(desc.Ptr) + 4*(i*st[0]+j*st[1])
					if err := dev.CopyDtoH(v[:], cuda.DevicePtr(at)); err != nil {
						t.Fatal(err)
					}
					want := 1000 + (5-2*i)*cols + 1 + 3*j
					if got := int64(binary.LittleEndian.Uint32(v[:])); got != want {
						t.Errorf("element (%d,%d) = %d, want %d", i, j, got, want)
					}
				}
			}
			dlpack.CallDeleter(m)
			if buf.Ptr() != 0 {
				t.Error("the deleter did not close the buffer")
			}
			checkNoLiveExports(t)
		})
	}
}
