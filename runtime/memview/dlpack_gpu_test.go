package memview

import (
	"bytes"
	"encoding/binary"
	"slices"
	"testing"
	"unsafe"

	"github.com/stridekit/stridekit/internal/testenv"
	"github.com/stridekit/stridekit/layout"
	"github.com/stridekit/stridekit/runtime/cuda"
	"github.com/stridekit/stridekit/runtime/dlpack"
)

// gpuBase returns a buffer of the given kind on dev holding the case's base
// array (1000+f at flat index f, int32), closed at the end of the test.
func gpuBase(t *testing.T, dev *cuda.Device, kind cuda.MemoryKind, c strided) *cuda.Buffer {
	t.Helper()
	data := c.data()
	raw := unsafe.Slice((*byte)(unsafe.Pointer(&data[0])), 4*len(data))
	var b *cuda.Buffer
	var err error
	switch kind {
	case cuda.MemoryDevice:
		b, err = dev.Alloc(len(raw), nil)
		if err == nil {
			err = b.CopyFromHost(raw)
		}
	case cuda.MemoryHost:
		b, err = dev.AllocHost(len(raw))
	case cuda.MemoryManaged:
		b, err = dev.AllocManaged(len(raw))
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	if kind != cuda.MemoryDevice {
		h, err := b.Bytes()
		if err != nil {
			t.Fatal(err)
		}
		copy(h, raw)
	}
	if err := dev.Synchronize(); err != nil {
		t.Fatal(err)
	}
	return b
}

// gpuTensor exports the case's view of b as a DLPack producer on the GPU
// would: device, pinned or managed memory, element 0 at byte_offset, a
// deleter counting into cnt.
func gpuTensor(t *testing.T, dev *cuda.Device, b *cuda.Buffer, c strided, flags dlpack.Flags, cnt *counter) *dlpack.DLManagedTensorVersioned {
	t.Helper()
	where, err := dlpack.DeviceOf(b.Kind(), dev.Ordinal())
	if err != nil {
		t.Fatal(err)
	}
	m, err := dlpack.Export(dlpack.ExportRequest{Data: uintptr(b.Ptr()) + uintptr(4*c.off), Device: where, DType: layout.Int32,
		Shape: c.shape, Strides: c.strides, Flags: flags, Release: cnt.release})
	if err != nil {
		t.Fatal(err)
	}
	m.DLTensor.Data, m.DLTensor.ByteOffset = uintptr(b.Ptr()), uint64(4*c.off)
	return m
}

// gpuContents copies v into a dense Go slice on s and returns its elements.
func gpuContents(t *testing.T, v *StridedMemoryView, s *cuda.Stream) []int32 {
	t.Helper()
	l := mustLayout(layout.Dense(v.Shape(), 4, layout.C))
	out := make([]int32, l.Volume())
	d, err := FromHost(out, l)
	if err != nil {
		t.Fatal(err)
	}
	if err := v.CopyTo(d, s); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestGPUFromDLPackKinds imports strided tensors in device, pinned and
// managed memory, checks the view's memory kind and device, reads every
// element through a copy to the host, copies each device tensor into
// another imported device tensor, and checks one deleter call at Close.
func TestGPUFromDLPackKinds(t *testing.T) {
	dev := testenv.NeedGPU(t)
	testenv.NeedNVRTC(t)
	s := testenv.NewStream(t, dev)
	for _, kind := range []cuda.MemoryKind{cuda.MemoryDevice, cuda.MemoryHost, cuda.MemoryManaged} {
		for _, c := range stridedCases {
			if c.name == "empty" || c.name == "scalar" {
				continue
			}
			t.Run(kind.String()+"/"+c.name, func(t *testing.T) {
				b := gpuBase(t, dev, kind, c)
				var cnt counter
				var info ImportInfo
				v, err := FromDLPack(gpuTensor(t, dev, b, c, 0, &cnt), Report(&info))
				if err != nil {
					t.Fatal(err)
				}
				wantID := 0
				if kind == cuda.MemoryHost {
					wantID = -1 // pinned memory no device owns
				}
				if v.Kind() != kind || v.DeviceID() != wantID || !v.IsDeviceAccessible() {
					t.Errorf("view %v: kind %v device %d", v, v.Kind(), v.DeviceID())
				}
				if got := gpuContents(t, v, s); !slices.Equal(got, c.want()) {
					t.Errorf("elements %v, want %v", got, c.want())
				}
				if kind == cuda.MemoryDevice {
					// Device to device: into a transposed tensor of
					// its own buffer.
					dl := mustLayout(layout.Dense(c.shape, 4, layout.F))
					dc := strided{"dst", []int64{dl.Volume()}, c.shape, dl.Strides(), 0}
					db := gpuBase(t, dev, kind, dc)
					var dcnt counter
					w, err := FromDLPack(gpuTensor(t, dev, db, dc, 0, &dcnt), OnStream(s))
					if err != nil {
						t.Fatal(err)
					}
					if err := w.CopyFrom(v, s); err != nil {
						t.Fatal(err)
					}
					if got := gpuContents(t, w, s); !slices.Equal(got, c.want()) {
						t.Errorf("device copy %v, want %v", got, c.want())
					}
					w.Close()
					if n := dcnt.n.Load(); n != 1 {
						t.Errorf("dst deleter ran %d times", n)
					}
				}
				v.Close()
				if n := cnt.n.Load(); n != 1 {
					t.Errorf("deleter ran %d times, want 1", n)
				}
			})
		}
	}
}

// TestGPUFromDLPackCPUPinned: a kDLCPU tensor is host memory, moved as
// pageable memory whether or not something pinned it (a producer of pinned
// memory says kDLCUDAHost, which imports as pinned); both copy right.
func TestGPUFromDLPackCPUPinned(t *testing.T) {
	dev := testenv.NeedGPU(t)
	c := stridedCases[0]
	b := gpuBase(t, dev, cuda.MemoryHost, c)
	for _, pinned := range []bool{true, false} {
		data := c.data()
		addr := uintptr(unsafe.Pointer(&data[0]))
		dt := dlpack.KDLCPU
		if pinned {
			addr, dt = uintptr(b.Ptr()), dlpack.KDLCUDAHost
		}
		var cnt counter
		m, err := dlpack.Export(dlpack.ExportRequest{Data: addr, Device: dlpack.DLDevice{DeviceType: dt}, DType: layout.Int32,
			Shape: c.shape, Strides: c.strides, Release: cnt.release})
		if err != nil {
			t.Fatal(err)
		}
		v, err := FromDLPack(m)
		if err != nil {
			t.Fatal(err)
		}
		want := cuda.MemoryPageable
		if pinned {
			want = cuda.MemoryHost
		}
		if v.Kind() != want {
			t.Errorf("%v tensor: view kind %v, want %v", dt, v.Kind(), want)
		}
		if got := contents(t, v); !slices.Equal(got, c.want()) {
			t.Errorf("elements %v", got)
		}
		v.Close()
	}
}

// TestGPUFromDLPackToHost: ToHost copies a device (or managed) tensor into
// Go memory, gives the tensor back at once, and reports the copy.
func TestGPUFromDLPackToHost(t *testing.T) {
	dev := testenv.NeedGPU(t)
	testenv.NeedNVRTC(t)
	s := testenv.NewStream(t, dev)
	for _, kind := range []cuda.MemoryKind{cuda.MemoryDevice, cuda.MemoryManaged} {
		c := stridedCases[3] // flipped-sliced
		b := gpuBase(t, dev, kind, c)
		var cnt counter
		var info ImportInfo
		v, err := FromDLPack(gpuTensor(t, dev, b, c, dlpack.FlagReadOnly, &cnt), ToHost(), OnStream(s), Report(&info))
		if err != nil {
			t.Fatal(err)
		}
		if n := cnt.n.Load(); n != 1 {
			t.Errorf("%v: tensor given back %d times by the import, want 1", kind, n)
		}
		if v.Kind() != cuda.MemoryPageable || v.ReadOnly() || !v.Layout().IsContiguousC() {
			t.Errorf("%v: host copy %v", kind, v)
		}
		if !info.Copied() || !info.Flags.Has(dlpack.FlagReadOnly) || info.Device.DeviceType == dlpack.KDLCPU {
			t.Errorf("%v: report %+v", kind, info)
		}
		want := c.want()
		raw := make([]byte, 4*len(want))
		for i, w := range want {
			binary.LittleEndian.PutUint32(raw[4*i:], uint32(w))
		}
		if !bytes.Equal(info.HostCopy, raw) {
			t.Errorf("%v: host copy bytes % x, want % x", kind, info.HostCopy, raw)
		}
		if got := contents(t, v); !slices.Equal(got, want) {
			t.Errorf("%v: host copy view reads %v", kind, got)
		}
		v.Close()
		if n := cnt.n.Load(); n != 1 {
			t.Errorf("%v: deleter ran %d times, want 1", kind, n)
		}
	}
}

// busy queues about 16 GiB of memsets on s, so that work queued after it
// on s runs many milliseconds later: without the stream handshake, a
// consumer on another stream would read before it.
func busy(t *testing.T, dev *cuda.Device, s *cuda.Stream) {
	t.Helper()
	const size = 256 << 20
	big, err := dev.Alloc(size, s)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 64 {
		if err := dev.MemsetAsync(big.Ptr(), byte(i), size, s); err != nil {
			t.Fatal(err)
		}
	}
	big.Close() // freed in order on s
}

// TestGPUImportHandshake: the producer's last write to a tensor is queued
// on its stream behind long work; the import with OnStream and
// ProducerStream makes the consumer's stream wait for it, so a copy on the
// consumer's stream reads the written values.
func TestGPUImportHandshake(t *testing.T) {
	dev := testenv.NeedGPU(t)
	testenv.NeedNVRTC(t)
	p := testenv.NewStream(t, dev)
	c := testenv.NewStream(t, dev)
	tc := stridedCases[0] // transposed 4×3 of a 3×4 array
	for _, toHost := range []bool{false, true} {
		b := gpuBase(t, dev, cuda.MemoryDevice, tc)
		busy(t, dev, p)
		if err := dev.MemsetAsync(b.Ptr(), 0x11, b.Size(), p); err != nil {
			t.Fatal(err)
		}
		var cnt counter
		opts := []DLPackOption{OnStream(c), ProducerStream(p)}
		if toHost {
			opts = append(opts, ToHost())
		}
		v, err := FromDLPack(gpuTensor(t, dev, b, tc, 0, &cnt), opts...)
		if err != nil {
			t.Fatal(err)
		}
		got := gpuContents(t, v, c)
		for i, g := range got {
			if g != 0x11111111 {
				t.Fatalf("to host %v: element %d reads %#x before the producer's write: the handshake did not order it", toHost, i, g)
			}
		}
		v.Close()
		if err := p.Synchronize(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestGPUExportHandshake: ToDLPack with a consumer's stream makes the
// view's pending work, queued behind long work, visible on that stream:
// through an event with ProducerStream, by synchronising the device
// without it, and on the host for the per-thread default stream.
func TestGPUExportHandshake(t *testing.T) {
	dev := testenv.NeedGPU(t)
	testenv.NeedNVRTC(t)
	p := testenv.NewStream(t, dev)
	c := testenv.NewStream(t, dev)
	tc := stridedCases[2] // flipped
	live := dlpack.LiveExports()
	for _, cs := range []struct {
		name     string
		value    int64
		producer bool
	}{
		{"event", int64(c.Handle()), true},
		{"device sync", int64(c.Handle()), false},
		{"per-thread", dlpack.StreamPerThread, true},
		{"legacy", dlpack.StreamLegacy, true},
	} {
		b := gpuBase(t, dev, cuda.MemoryDevice, tc)
		whole, err := FromBuffer(b, mustLayout(layout.Dense(tc.base, 4, layout.C)), layout.Int32)
		if err != nil {
			t.Fatal(err)
		}
		v, err := whole.ViewAt(4*tc.off, mustLayout(layout.New(tc.shape, tc.strides, 4)), layout.Int32)
		if err != nil {
			t.Fatal(err)
		}
		busy(t, dev, p)
		if err := dev.MemsetAsync(b.Ptr(), 0x22, b.Size(), p); err != nil {
			t.Fatal(err)
		}
		var opts []DLPackOption
		if cs.producer {
			opts = append(opts, ProducerStream(p))
		}
		m, err := v.ToDLPack(cs.value, opts...)
		if err != nil {
			t.Fatal(err)
		}
		if m.DLTensor.Device != (dlpack.DLDevice{DeviceType: dlpack.KDLCUDA, DeviceID: int32(dev.Ordinal())}) || m.DLTensor.Data != v.Ptr() {
			t.Errorf("%s: exported %+v", cs.name, m.DLTensor)
		}
		// The consumer imports the tensor and copies it on the stream
		// it named: c, or for the legacy default stream that stream
		// (c is non-blocking, so nothing but the handshake orders
		// either after p; for the per-thread stream the handshake
		// waited on the host, so c is after p too).
		use := c
		if cs.value == dlpack.StreamLegacy {
			use = dev.LegacyStream()
		}
		w, err := FromDLPack(m)
		if err != nil {
			t.Fatal(err)
		}
		got := gpuContents(t, w, use)
		for i, g := range got {
			if g != 0x22222222 {
				t.Fatalf("%s: element %d reads %#x before the producer's write", cs.name, i, g)
			}
		}
		w.Close()
		if err := p.Synchronize(); err != nil {
			t.Fatal(err)
		}
	}
	if n := dlpack.LiveExports(); n != live {
		t.Errorf("%d live exports, want %d", n, live)
	}
}

// TestGPUToDLPackToHost: ToDLPack with ToHost hands over a host copy of a
// device view, as a kDLCPU tensor flagged as copied, dense in C order.
func TestGPUToDLPackToHost(t *testing.T) {
	dev := testenv.NeedGPU(t)
	testenv.NeedNVRTC(t)
	s := testenv.NewStream(t, dev)
	live := dlpack.LiveExports()
	tc := stridedCases[4] // permuted-4d
	b := gpuBase(t, dev, cuda.MemoryDevice, tc)
	whole, err := FromBuffer(b, mustLayout(layout.Dense(tc.base, 4, layout.C)), layout.Int32)
	if err != nil {
		t.Fatal(err)
	}
	v, err := whole.ViewAt(0, mustLayout(layout.New(tc.shape, tc.strides, 4)), layout.Int32)
	if err != nil {
		t.Fatal(err)
	}
	m, err := v.AsReadOnly().ToDLPack(dlpack.StreamNoSync, ToHost(), ProducerStream(s))
	if err != nil {
		t.Fatal(err)
	}
	dt := m.DLTensor
	if dt.Device != (dlpack.DLDevice{DeviceType: dlpack.KDLCPU}) || m.Flags != dlpack.FlagIsCopied {
		t.Errorf("host copy exported on %+v with flags %#x", dt.Device, m.Flags)
	}
	dl := mustLayout(layout.Dense(tc.shape, 4, layout.C))
	if !slices.Equal(unsafe.Slice(dt.Strides, dt.NDim), dl.Strides()) {
		t.Errorf("host copy strides %v, want %v", unsafe.Slice(dt.Strides, dt.NDim), dl.Strides())
	}
	addr := dt.Data // Go memory the export pins
	got := unsafe.Slice((*int32)(*(*unsafe.Pointer)(unsafe.Pointer(&addr))), dl.Volume())
	if !slices.Equal(got, tc.want()) {
		t.Errorf("host copy %v, want %v", got, tc.want())
	}
	dlpack.CallDeleter(m)
	if n := dlpack.LiveExports(); n != live {
		t.Errorf("%d live exports, want %d", n, live)
	}
}

// TestGPUToDLPackKinds: views of device, pinned and managed buffers are
// exported on kDLCUDA (with the ordinal), kDLCUDAHost and kDLCUDAManaged,
// and import back as the same kind.
func TestGPUToDLPackKinds(t *testing.T) {
	dev := testenv.NeedGPU(t)
	tc := stridedCases[1]
	for _, kind := range []cuda.MemoryKind{cuda.MemoryDevice, cuda.MemoryHost, cuda.MemoryManaged} {
		b := gpuBase(t, dev, kind, tc)
		whole, err := FromBuffer(b, mustLayout(layout.Dense(tc.base, 4, layout.C)), layout.Int32)
		if err != nil {
			t.Fatal(err)
		}
		v, err := whole.ViewAt(4*tc.off, mustLayout(layout.New(tc.shape, tc.strides, 4)), layout.Int32)
		if err != nil {
			t.Fatal(err)
		}
		m, err := v.ToDLPack(dlpack.StreamLegacy)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := dlpack.DeviceOf(kind, dev.Ordinal())
		if m.DLTensor.Device != want {
			t.Errorf("%v view exported on %+v, want %+v", kind, m.DLTensor.Device, want)
		}
		w, err := FromDLPack(m)
		if err != nil {
			t.Fatal(err)
		}
		if w.Kind() != kind || w.Ptr() != v.Ptr() || !w.Layout().Equal(v.Layout()) {
			t.Errorf("%v view imported back as %v", kind, w)
		}
		w.Close()
	}
}
