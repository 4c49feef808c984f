//go:build linux || darwin

package dlpack_test

import (
	"encoding/binary"
	"errors"
	"math"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"unsafe"

	"github.com/stridekit/stridekit/runtime/dlpack"
)

// guarded is memory outside the Go heap, as a C producer's would be, laid
// out as [shape page][no access][strides page][no access]: an array placed
// at the end of a page by put is followed by a page that faults when read,
// so an Import that reads one value past what the producer wrote crashes
// the test instead of reading whatever lies there.
type guarded struct {
	mu   sync.Mutex
	mem  []byte
	page int
}

var guard struct {
	once sync.Once
	g    *guarded
	err  error
}

// guardedMemory maps the guarded pages once per process.
func guardedMemory(t testing.TB) *guarded {
	t.Helper()
	guard.once.Do(func() {
		page := syscall.Getpagesize()
		mem, err := syscall.Mmap(-1, 0, 4*page, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
		if err != nil {
			guard.err = err
			return
		}
		for _, i := range []int{1, 3} {
			if err := syscall.Mprotect(mem[i*page:(i+1)*page], syscall.PROT_NONE); err != nil {
				guard.err = err
				return
			}
		}
		guard.g = &guarded{mem: mem, page: page}
	})
	if guard.err != nil {
		t.Skipf("no guarded memory: %v", guard.err)
	}
	return guard.g
}

// put writes vals at the end of region r (0: shape, 1: strides), right
// before its guard page, and returns the address of the first (of the
// guard page itself when vals is empty).
func (g *guarded) put(r int, vals []int64) *int64 {
	if len(vals) > g.page/8 {
		panic("guarded: array longer than a page")
	}
	end := (2*r + 1) * g.page
	start := end - 8*len(vals)
	for i, v := range vals {
		binary.NativeEndian.PutUint64(g.mem[start+8*i:], uint64(v))
	}
	return (*int64)(unsafe.Pointer(unsafe.SliceData(g.mem[start:])))
}

// TestImportHostileNDim hands Import tensors whose ndim is far beyond their
// shape and strides arrays (which end right before a page that faults):
// ndim over dlpack.MaxNDim must be refused with ErrNDim, naming the value,
// before either array is read; ndim = MaxNDim with arrays of that length is
// imported.
func TestImportHostileNDim(t *testing.T) {
	g := guardedMemory(t)
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, c := range []struct {
		name string
		ndim int32
		n    int // values in each array
	}{
		{"1e9-one-value", 1e9, 1},
		{"maxint32-one-value", math.MaxInt32, 1},
		{"max+1-no-values", dlpack.MaxNDim + 1, 0},
		{"max+1-max-values", dlpack.MaxNDim + 1, dlpack.MaxNDim},
		{"1000-two-values", 1000, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			vals := make([]int64, c.n)
			for i := range vals {
				vals[i] = 1
			}
			x := dlpack.DLTensor{Data: base, Device: dlpack.DLDevice{DeviceType: dlpack.KDLCPU}, NDim: c.ndim, DType: f32,
				Shape: g.put(0, vals), Strides: g.put(1, vals)}
			for _, p := range []dlpack.Producer{v13, v11, {}} {
				_, err := dlpack.Import(&x, p)
				if !errors.Is(err, dlpack.ErrNDim) {
					t.Fatalf("producer %+v: error %v, want ErrNDim", p, err)
				}
				if want := "ndim = " + strconv.Itoa(int(c.ndim)); !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not name %q", err, want)
				}
			}
			m := dlpack.DLManagedTensorVersioned{Version: dlpack.Version, DLTensor: x}
			if _, err := dlpack.ImportVersioned(&m); !errors.Is(err, dlpack.ErrNDim) {
				t.Errorf("ImportVersioned: error %v, want ErrNDim", err)
			}
			lm := dlpack.DLManagedTensor{DLTensor: x}
			lm.DLTensor.Strides = nil
			if _, err := dlpack.ImportLegacy(&lm); !errors.Is(err, dlpack.ErrNDim) {
				t.Errorf("ImportLegacy: error %v, want ErrNDim", err)
			}
		})
	}
	t.Run("max", func(t *testing.T) {
		ones := make([]int64, dlpack.MaxNDim)
		for i := range ones {
			ones[i] = 1
		}
		x := dlpack.DLTensor{Data: base, Device: dlpack.DLDevice{DeviceType: dlpack.KDLCPU}, NDim: dlpack.MaxNDim, DType: f32,
			Shape: g.put(0, ones), Strides: g.put(1, ones)}
		d, err := dlpack.Import(&x, v13)
		if err != nil {
			t.Fatal(err)
		}
		if d.Layout.NDim() != dlpack.MaxNDim || d.Layout.Volume() != 1 {
			t.Errorf("layout %v", d.Layout)
		}
		x.Strides = nil // dense C order, from a legacy producer
		if d, err := dlpack.Import(&x, dlpack.Producer{}); err != nil || d.Layout.NDim() != dlpack.MaxNDim {
			t.Errorf("NULL strides: %v, %v", d.Layout, err)
		}
	})
}

// FuzzImportHostile imports DLTensors a hostile or broken producer could
// hand over, their shape and strides in memory outside the Go heap that
// ends, right after the values the producer wrote, in a page that faults
// when read: any ndim (negative, zero, up to dlpack.MaxNDim with arrays
// that hold that many values, beyond it with arrays that hold up to four),
// extents and strides that are negative, zero or near the int64 limits,
// data and byte_offset anywhere (their sum past the end of the address
// space included), NULL arrays, any dtype, device, version and flags.
// Import must not panic or fault, must fail with an error that wraps one
// of the package's sentinels (ErrNDim whenever ndim is outside
// [0, MaxNDim]), and on success describe a layout of ndim dims whose every
// byte lies inside the address space.
func FuzzImportHostile(f *testing.F) {
	f.Add(int32(1e9), uint8(1), []byte{2, 32, 1, 1, 0x43, 0x24}, uint64(0x7f0000001000), uint64(0), []byte{})
	f.Add(int32(math.MaxInt32), uint8(0), []byte{2, 32, 1, 1, 0x43, 0x24}, uint64(0x7f0000001000), uint64(0), []byte{})
	f.Add(int32(dlpack.MaxNDim+1), uint8(4), []byte{2, 32, 1, 1, 0x43, 0x24}, uint64(0x7f0000001000), uint64(0), []byte{})
	f.Add(int32(dlpack.MaxNDim), uint8(0), []byte{0, 8, 1, 1, 0x43, 0x24}, uint64(0x7f0000001000), uint64(0), []byte{})
	f.Add(int32(-1), uint8(0), []byte{2, 32, 1, 1, 0x43, 0x24}, uint64(1), uint64(0), []byte{})
	f.Add(int32(2), uint8(0), []byte{2, 32, 1, 1, 0x43, 0x24}, uint64(0x7f0000001000), uint64(math.MaxUint64),
		[]byte{1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0})
	f.Add(int32(2), uint8(0), []byte{2, 32, 1, 1, 0x43, 0x24}, uint64(0x7f0000001000), uint64(0),
		[]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, 0, 0, 0, 0, 0, 0, 0, 0x80, 3, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f})
	f.Add(int32(3), uint8(0), []byte{2, 32, 1, 1, 0x43, 0x26}, uint64(0x7f0000001000), uint64(0), []byte{})
	f.Add(int32(1), uint8(0), []byte{17, 4, 1, 2, 0x43, 0x24}, uint64(16), uint64(0), []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, ndim int32, short uint8, hdr []byte, data, byteOffset uint64, words []byte) {
		g := guardedMemory(t)
		g.mu.Lock()
		defer g.mu.Unlock()
		var code, bits, lanes, devType, version, opts uint8
		for i, p := range []*uint8{&code, &bits, &lanes, &devType, &version, &opts} {
			if i < len(hdr) {
				*p = hdr[i]
			}
		}
		// The producer wrote n values per array: ndim of them when ndim is
		// one Import may read, a few otherwise.
		n := int(short % 5)
		if ndim >= 0 && ndim <= dlpack.MaxNDim {
			n = int(ndim)
		}
		word := func() int64 {
			if len(words) < 8 {
				return 1
			}
			v := int64(binary.LittleEndian.Uint64(words))
			words = words[8:]
			return v
		}
		shape, strides := make([]int64, n), make([]int64, n)
		for i := range n {
			shape[i], strides[i] = word(), word()
		}
		x := dlpack.DLTensor{
			Data:       uintptr(data),
			Device:     dlpack.DLDevice{DeviceType: dlpack.DLDeviceType(devType % 20), DeviceID: int32(opts>>5) - 1},
			NDim:       ndim,
			DType:      dlpack.DLDataType{Code: code % 20, Bits: bits, Lanes: uint16(lanes % 3)},
			Shape:      g.put(0, shape),
			Strides:    g.put(1, strides),
			ByteOffset: byteOffset,
		}
		if opts&1 != 0 {
			x.Strides = nil
		}
		if opts&2 != 0 {
			x.Shape = nil
		}
		p := dlpack.Producer{Versioned: opts&4 != 0, Version: dlpack.DLPackVersion{Major: uint32(version >> 6), Minor: uint32(version & 7)},
			Flags: dlpack.Flags(opts >> 3 & 7)}
		d, err := dlpack.Import(&x, p)
		if ndim < 0 || ndim > dlpack.MaxNDim {
			if err == nil {
				t.Fatalf("ndim %d imported", ndim)
			}
			deviceOK := x.Device.DeviceType.Supported() && x.Device.DeviceID >= 0
			_, dtErr := x.DType.DType()
			if (!p.Versioned || p.Version.Major == dlpack.MajorVersion) && deviceOK && dtErr == nil && !errors.Is(err, dlpack.ErrNDim) {
				t.Fatalf("ndim %d: error %v, want ErrNDim", ndim, err)
			}
		}
		if err != nil {
			for _, s := range sentinels {
				if errors.Is(err, s) {
					return
				}
			}
			t.Fatalf("error %q wraps no sentinel", err)
		}
		l := d.Layout
		if l.NDim() != int(ndim) {
			t.Fatalf("layout %v for ndim %d", l, ndim)
		}
		if d.Ptr != x.Data+uintptr(x.ByteOffset) || uint64(x.Data)+x.ByteOffset < uint64(x.Data) {
			t.Fatalf("Ptr %#x for data %#x + %d", d.Ptr, x.Data, x.ByteOffset)
		}
		if l.Volume() > 0 {
			item := uint64(l.Itemsize())
			below, above := uint64(-l.MinOffset())*item, uint64(l.MaxOffset()+1)*item
			if below > uint64(d.Ptr) || above-1 > uint64(^uintptr(0)-d.Ptr) {
				t.Fatalf("layout %v at %#x leaves the address space", l, d.Ptr)
			}
		}
	})
}
