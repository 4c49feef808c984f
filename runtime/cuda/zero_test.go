package cuda

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"unsafe"
)

// call runs f, turning a panic into a test failure named name, and returns
// f's error.
func call(t *testing.T, name string, f func() error) (err error) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Errorf("%s panicked: %v", name, r)
			err = nil
		}
	}()
	return f()
}

// wantErr checks that each named call returns an error matching target.
func wantErr(t *testing.T, target error, calls map[string]func() error) {
	t.Helper()
	for name, f := range calls {
		if err := call(t, name, f); !errors.Is(err, target) {
			t.Errorf("%s = %v, want an error matching %v", name, err, target)
		}
	}
}

// wantNil checks that each named call returns nil (and does not panic).
func wantNil(t *testing.T, calls map[string]func() error) {
	t.Helper()
	for name, f := range calls {
		if err := call(t, name, f); err != nil {
			t.Errorf("%s = %v, want nil", name, err)
		}
	}
}

// TestZeroValues calls the methods of nil pointers and zero values of every
// type: each returns an error matching ErrInvalidValue (Close returns nil,
// accessors zero values), and none reaches the driver or panics. It needs no
// GPU, and holds where a driver is loaded too.
func TestZeroValues(t *testing.T) {
	for _, d := range []*Device{nil, {}} {
		name := fmt.Sprintf("%T(%v)", d, d == nil)
		wantErr(t, ErrInvalidValue, map[string]func() error{
			name + ".Attribute":                   func() error { _, err := d.Attribute(attrMultiprocessorCount); return err },
			name + ".Synchronize":                 d.Synchronize,
			name + ".NewStream":                   func() error { _, err := d.NewStream(true); return err },
			name + ".NewEvent":                    func() error { _, err := d.NewEvent(true); return err },
			name + ".Alloc":                       func() error { _, err := d.Alloc(16, nil); return err },
			name + ".Alloc(0)":                    func() error { _, err := d.Alloc(0, nil); return err },
			name + ".AllocHost":                   func() error { _, err := d.AllocHost(16); return err },
			name + ".AllocManaged":                func() error { _, err := d.AllocManaged(16); return err },
			name + ".LoadModule":                  func() error { _, err := d.LoadModule([]byte("x")); return err },
			name + ".CopyHtoD":                    func() error { return d.CopyHtoD(0x1000, []byte{1}) },
			name + ".CopyDtoH":                    func() error { return d.CopyDtoH(make([]byte, 1), 0x1000) },
			name + ".CopyDtoD":                    func() error { return d.CopyDtoD(0x1000, 0x2000, 1) },
			name + ".Memcpy":                      func() error { return d.Memcpy(0x1000, 0x2000, 1) },
			name + ".CopyHtoDAsync":               func() error { return d.CopyHtoDAsync(0x1000, 0x2000, 1, nil) },
			name + ".CopyDtoHAsync":               func() error { return d.CopyDtoHAsync(0x1000, 0x2000, 1, nil) },
			name + ".CopyDtoDAsync":               func() error { return d.CopyDtoDAsync(0x1000, 0x2000, 1, nil) },
			name + ".MemcpyAsync":                 func() error { return d.MemcpyAsync(0x1000, 0x2000, 1, nil) },
			name + ".MemsetAsync":                 func() error { return d.MemsetAsync(0x1000, 0, 1, nil) },
			name + ".LegacyStream.Synchronize":    func() error { return d.LegacyStream().Synchronize() },
			name + ".PerThreadStream.Synchronize": func() error { return d.PerThreadStream().Synchronize() },
		})
		call(t, name+" accessors", func() error {
			major, minor := d.ComputeCapability()
			if d.Name() != "" || d.Arch() != 0 || major|minor|d.SMCount()|d.MaxThreadsPerBlock()|d.MaxSharedMemoryPerBlock()|
				d.MaxSharedMemoryPerBlockOptin() != 0 || d.TotalMemory() != 0 || d.MemoryPoolsSupported() || d.String() == "" {
				t.Errorf("%s accessors: %q %d %v", name, d.Name(), d.Arch(), d)
			}
			return nil
		})
	}
	if (*Device)(nil).Ordinal() != -1 {
		t.Error("nil Device's Ordinal is not -1")
	}

	for _, s := range []*Stream{nil, {}} {
		name := fmt.Sprintf("Stream(nil=%v)", s == nil)
		wantErr(t, ErrInvalidValue, map[string]func() error{
			name + ".Synchronize": s.Synchronize,
			name + ".WaitEvent":   func() error { return s.WaitEvent(&Event{}) },
		})
		wantNil(t, map[string]func() error{name + ".Close": s.Close})
		if s.Device() != nil || s.Handle() != 0 {
			t.Errorf("%s: device %v handle %#x", name, s.Device(), s.Handle())
		}
	}

	for _, e := range []*Event{nil, {}} {
		name := fmt.Sprintf("Event(nil=%v)", e == nil)
		wantErr(t, ErrInvalidValue, map[string]func() error{
			name + ".Record":            func() error { return e.Record(nil) },
			name + ".Synchronize":       e.Synchronize,
			name + ".Done":              func() error { _, err := e.Done(); return err },
			name + " ElapsedTime start": func() error { _, err := ElapsedTime(e, &Event{}); return err },
			name + " ElapsedTime end":   func() error { _, err := ElapsedTime(&Event{}, e); return err },
		})
		wantNil(t, map[string]func() error{name + ".Close": e.Close, name + ".Close again": e.Close})
	}

	for _, b := range []*Buffer{nil, {}} {
		name := fmt.Sprintf("Buffer(nil=%v)", b == nil)
		wantErr(t, ErrInvalidValue, map[string]func() error{
			name + ".CopyFromHost": func() error { return b.CopyFromHost([]byte{1}) },
			name + ".CopyToHost":   func() error { return b.CopyToHost(make([]byte, 1)) },
			name + ".CopyToHost 0": func() error { return b.CopyToHost(nil) },
		})
		wantNil(t, map[string]func() error{name + ".Close": b.Close})
		if b.Ptr() != 0 || b.Size() != 0 || b.Kind() != MemoryPageable || b.Device() != nil || b.Owner() != nil {
			t.Errorf("%s accessors: %v %d %v %v", name, b.Ptr(), b.Size(), b.Kind(), b.Device())
		}
	}
	if _, err := (*Buffer)(nil).Bytes(); !errors.Is(err, ErrInvalidValue) {
		t.Errorf("nil Buffer.Bytes: %v", err)
	}

	for _, m := range []*Module{nil, {}} {
		name := fmt.Sprintf("Module(nil=%v)", m == nil)
		wantErr(t, ErrInvalidValue, map[string]func() error{
			name + ".Function":           func() error { _, err := m.Function("k"); return err },
			name + ".FunctionWithParams": func() error { _, err := m.FunctionWithParams("k", ParamsOf(8)); return err },
		})
		wantNil(t, map[string]func() error{name + ".Close": m.Close})
		if m.Device() != nil {
			t.Errorf("%s.Device() = %v", name, m.Device())
		}
	}

	var fn Function
	p := uint64(0)
	wantErr(t, ErrInvalidValue, map[string]func() error{
		"zero Function Launch":                    func() error { return Launch(fn, Dim3{1, 1, 1}, Dim3{1, 1, 1}, 0, nil, unsafe.Pointer(&p)) },
		"zero Function SetMaxDynamicSharedMemory": func() error { return fn.SetMaxDynamicSharedMemory(1024) },
	})
	if fn.Name() != "" || fn.NumParams() != -1 || fn.Params() != nil || fn.Device() != nil || fn.Handle() != 0 {
		t.Error("zero Function accessors")
	}
}

var heapSink []byte

// TestBufferWithoutDevice: host memory the driver names no device for
// cannot be copied with the driver; the error names the buffer's kind and
// no device is guessed.
func TestBufferWithoutDevice(t *testing.T) {
	host := make([]byte, 64)
	heapSink = host // on the heap, where its address stays put
	for _, kind := range []MemoryKind{MemoryHost, MemoryPageable} {
		b := &Buffer{ptr: DevicePtr(unsafe.Pointer(&host[0])), size: len(host), kind: kind}
		for name, f := range map[string]func() error{
			"CopyFromHost": func() error { return b.CopyFromHost([]byte{1, 2}) },
			"CopyToHost":   func() error { return b.CopyToHost(make([]byte, 2)) },
		} {
			err := call(t, name, f)
			if !errors.Is(err, ErrInvalidValue) || !strings.Contains(err.Error(), kind.String()+" buffer") ||
				!strings.Contains(err.Error(), name) {
				t.Errorf("%v %s: %v", kind, name, err)
			}
		}
		if got, err := b.Bytes(); err != nil || len(got) != len(host) || &got[0] != &host[0] {
			t.Errorf("%v Bytes: %d bytes, %v", kind, len(got), err)
		}
	}
}

// TestNegativeCounts: byte counts below zero are refused, not converted to
// huge sizes for the driver.
func TestNegativeCounts(t *testing.T) {
	_, d := installFakeDriver(t, nil)
	wantErr(t, ErrInvalidValue, map[string]func() error{
		"CopyDtoD":      func() error { return d.CopyDtoD(0x1000, 0x2000, -1) },
		"Memcpy":        func() error { return d.Memcpy(0x1000, 0x2000, -1) },
		"CopyHtoDAsync": func() error { return d.CopyHtoDAsync(0x1000, 0x2000, -1, nil) },
		"CopyDtoHAsync": func() error { return d.CopyDtoHAsync(0x1000, 0x2000, -1, nil) },
		"CopyDtoDAsync": func() error { return d.CopyDtoDAsync(0x1000, 0x2000, -1, nil) },
		"MemcpyAsync":   func() error { return d.MemcpyAsync(0x1000, 0x2000, -1, nil) },
		"MemsetAsync":   func() error { return d.MemsetAsync(0x1000, 0, -1, nil) },
		"Alloc":         func() error { _, err := d.Alloc(-1, nil); return err },
	})
	// A zero count queues nothing, and on a closed stream still says so.
	s, err := d.NewStream(true)
	if err != nil {
		t.Fatal(err)
	}
	wantNil(t, map[string]func() error{"MemsetAsync 0": func() error { return d.MemsetAsync(0x1000, 0, 0, s) }})
	s.Close()
	wantErr(t, ErrClosed, map[string]func() error{"MemsetAsync 0 on closed": func() error { return d.MemsetAsync(0x1000, 0, 0, s) }})
}
