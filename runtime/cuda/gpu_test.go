package cuda

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"
	"testing"
	"unsafe"
)

func TestDeviceQuery(t *testing.T) {
	d := needGPU(t)
	major, minor := d.ComputeCapability()
	v, _ := DriverVersion()
	t.Logf("%v: cc %d.%d, %d SMs, %d MiB, smem %d/%d optin, %d threads/block, pools %v, driver %d",
		d, major, minor, d.SMCount(), d.TotalMemory()>>20, d.MaxSharedMemoryPerBlock(),
		d.MaxSharedMemoryPerBlockOptin(), d.MaxThreadsPerBlock(), d.MemoryPoolsSupported(), v)
	if d.Name() == "" || major < 3 || d.SMCount() <= 0 || d.TotalMemory() <= 0 || d.MaxThreadsPerBlock() < 512 ||
		d.MaxSharedMemoryPerBlock() < 16<<10 || d.MaxSharedMemoryPerBlockOptin() < d.MaxSharedMemoryPerBlock() {
		t.Errorf("implausible properties: %+v", d)
	}
	d2, _ := GetDevice(0)
	if d2 != d {
		t.Error("GetDevice(0) returned a new *Device")
	}
	n, _ := DeviceCount()
	if _, err := GetDevice(n); !errors.Is(err, ErrInvalidDevice) {
		t.Errorf("GetDevice(%d) = %v, want ErrInvalidDevice", n, err)
	}
}

func TestAllocKindsAndPointerAttributes(t *testing.T) {
	d := needGPU(t)
	s, err := d.NewStream(false)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const n = 1 << 20
	dev, err := d.Alloc(n, s)
	if err != nil {
		t.Fatal(err)
	}
	host, err := d.AllocHost(n)
	if err != nil {
		t.Fatal(err)
	}
	man, err := d.AllocManaged(n)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Synchronize(); err != nil {
		t.Fatal(err)
	}
	pageable := make([]byte, 4096)
	for _, c := range []struct {
		name string
		ptr  uintptr
		kind MemoryKind
		dev  int
	}{
		{"device", uintptr(dev.Ptr()) + 100, MemoryDevice, 0},
		{"pinned", uintptr(host.Ptr()), MemoryHost, -3}, // -3: 0 or negative (driver 580 says 0, older ones -2)
		{"managed", uintptr(man.Ptr()), MemoryManaged, 0},
		{"pageable", uintptr(unsafe.Pointer(&pageable[0])), MemoryPageable, -1},
	} {
		info, err := PointerAttributes(c.ptr)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		t.Logf("%s: %+v", c.name, info)
		if info.Kind != c.kind {
			t.Errorf("%s: kind %v, want %v", c.name, info.Kind, c.kind)
		}
		if c.dev >= 0 && info.Device != c.dev || c.dev == -1 && info.Device != -1 || c.dev == -3 && info.Device > 0 {
			t.Errorf("%s: device %d, want %d", c.name, info.Device, c.dev)
		}
	}
	runtime.KeepAlive(pageable)
	// FromHandle: keeps the owner until Close; refuses to overrun the allocation.
	w, err := FromHandle(uintptr(dev.Ptr())+4096, n-4096, dev)
	if err != nil {
		t.Fatal(err)
	}
	if w.Kind() != MemoryDevice || w.Device() != d || w.Owner() != dev {
		t.Errorf("FromHandle: kind %v dev %v owner %v", w.Kind(), w.Device(), w.Owner())
	}
	if _, err := FromHandle(uintptr(dev.Ptr())+4096, n, nil); !errors.Is(err, ErrInvalidValue) {
		t.Errorf("overrunning FromHandle: %v", err)
	}
	w.Close()
	if w.Owner() != nil || w.Ptr() != 0 {
		t.Error("Close kept the owner or the pointer")
	}
	b, err := host.Bytes()
	if err != nil || len(b) != n {
		t.Fatalf("pinned Bytes: %d, %v", len(b), err)
	}
	b[n-1] = 7
	if _, err := dev.Bytes(); !errors.Is(err, ErrNotSupported) {
		t.Errorf("device Bytes: %v", err)
	}
	for _, b := range []*Buffer{dev, host, man} {
		if err := b.Close(); err != nil {
			t.Errorf("%v Close: %v", b.Kind(), err)
		}
		if err := b.Close(); err != nil {
			t.Errorf("second Close: %v", err)
		}
		if err := b.CopyFromHost([]byte{1}); !errors.Is(err, ErrClosed) {
			t.Errorf("use after Close: %v", err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Synchronize(); !errors.Is(err, ErrClosed) {
		t.Errorf("Synchronize of closed stream: %v", err)
	}
}

func TestMemcpyRoundTrip(t *testing.T) {
	d := needGPU(t)
	const n = 3<<20 + 5
	src := make([]byte, n)
	for i := range src {
		src[i] = byte(i*7 + i>>8)
	}
	a, err := d.Alloc(n, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := d.Alloc(n, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := a.CopyFromHost(src); err != nil {
		t.Fatal(err)
	}
	if err := d.CopyDtoD(b.Ptr(), a.Ptr(), n); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, n)
	if err := b.CopyToHost(got); err != nil {
		t.Fatal(err)
	}
	if string(got) != string(src) {
		t.Fatal("sync round trip differs")
	}
	// Async, through pinned memory, on a non-blocking stream.
	s, _ := d.NewStream(true)
	defer s.Close()
	pin, err := d.AllocHost(n)
	if err != nil {
		t.Fatal(err)
	}
	defer pin.Close()
	pb, _ := pin.Bytes()
	copy(pb, src)
	c, err := d.Alloc(n, s)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	steps := []error{
		d.CopyHtoDAsync(c.Ptr(), pin.Ptr(), n, s),
		d.MemsetAsync(pin.Ptr(), 0, n, s),
		d.CopyDtoDAsync(b.Ptr(), c.Ptr(), n, s),
		d.MemsetAsync(c.Ptr(), 0, n, s),
		d.MemcpyAsync(c.Ptr(), b.Ptr(), n, s),
		d.CopyDtoHAsync(pin.Ptr(), c.Ptr(), n, s),
		s.Synchronize(),
	}
	if err := errors.Join(steps...); err != nil {
		t.Fatal(err)
	}
	if string(pb) != string(src) {
		t.Fatal("async round trip differs")
	}
	if err := d.Memcpy(pin.Ptr(), a.Ptr(), 16); err != nil {
		t.Fatal(err)
	}
}

// loadAddOne compiles addOne for the device and returns its function.
func loadAddOne(t testing.TB, d *Device) Function {
	t.Helper()
	needNVRTC(t)
	arch := min(d.Arch(), highestArch(t))
	img, _, err := NVRTCCompile(addOne, "add_one.cu", []string{fmt.Sprintf("--gpu-architecture=sm_%d", arch)}, true)
	if err != nil {
		t.Fatal(err)
	}
	m, err := d.LoadModule(img)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	fn, err := m.Function("add_one")
	if err != nil {
		t.Fatal(err)
	}
	if err := fn.SetMaxDynamicSharedMemory(64 << 10); err != nil {
		t.Fatal(err)
	}
	return fn
}

func floats(b []byte) []float32 {
	f := make([]float32, len(b)/4)
	for i := range f {
		f[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return f
}

func TestLaunchAndEvents(t *testing.T) {
	d := needGPU(t)
	fn := loadAddOne(t, d)
	if fn.NumParams() != 2 || fn.Device() != d || fn.Name() != "add_one" {
		t.Fatalf("function: %d params, device %v", fn.NumParams(), fn.Device())
	}
	const n = 1000
	buf, err := d.Alloc(4*n, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer buf.Close()
	host := make([]byte, 4*n)
	for i := 0; i < n; i++ {
		binary.LittleEndian.PutUint32(host[4*i:], math.Float32bits(float32(i)))
	}
	if err := buf.CopyFromHost(host); err != nil {
		t.Fatal(err)
	}
	s, _ := d.NewStream(false)
	defer s.Close()
	start, _ := d.NewEvent(true)
	end, _ := d.NewEvent(true)
	defer start.Close()
	defer end.Close()
	ptr, count := buf.Ptr(), int32(n)
	if err := start.Record(s); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := Launch(fn, Dim3{(n + 255) / 256, 1, 1}, Dim3{256, 1, 1}, 0, s, unsafe.Pointer(&ptr), unsafe.Pointer(&count)); err != nil {
			t.Fatal(err)
		}
	}
	if err := end.Record(s); err != nil {
		t.Fatal(err)
	}
	if err := end.Synchronize(); err != nil {
		t.Fatal(err)
	}
	if done, err := end.Done(); !done || err != nil {
		t.Errorf("Done = %v, %v", done, err)
	}
	el, err := ElapsedTime(start, end)
	if err != nil || el < 0 {
		t.Fatalf("elapsed %v, %v", el, err)
	}
	t.Logf("3 launches: %v", el)
	if err := buf.CopyToHost(host); err != nil {
		t.Fatal(err)
	}
	for i, v := range floats(host) {
		if v != float32(i)+3 {
			t.Fatalf("x[%d] = %v, want %v", i, v, float32(i)+3)
		}
	}
	// Errors: wrong arity, too much shared memory, closed stream.
	if err := Launch(fn, Dim3{1, 1, 1}, Dim3{1, 1, 1}, 0, nil, unsafe.Pointer(&ptr)); !errors.Is(err, ErrInvalidValue) {
		t.Errorf("1 arg for 2: %v", err)
	}
	err = Launch(fn, Dim3{1, 1, 1}, Dim3{1, 1, 1}, 1<<30, nil, unsafe.Pointer(&ptr), unsafe.Pointer(&count))
	var ce *Error
	if !errors.As(err, &ce) || ce.Call != "cuLaunchKernel" || ce.Name == "" {
		t.Errorf("huge shared memory: %v", err)
	} else {
		t.Logf("expected error: %v", err)
	}
	// Waits between streams.
	s2, _ := d.NewStream(true)
	defer s2.Close()
	if err := Launch(fn, Dim3{(n + 255) / 256, 1, 1}, Dim3{256, 1, 1}, 0, s, unsafe.Pointer(&ptr), unsafe.Pointer(&count)); err != nil {
		t.Fatal(err)
	}
	ev, _ := d.NewEvent(false)
	defer ev.Close()
	if err := errors.Join(ev.Record(s), s2.WaitEvent(ev), d.CopyDtoHAsync(0, 0, 0, s2), s2.Synchronize()); err != nil {
		t.Fatal(err)
	}
	if err := Launch(fn, Dim3{1, 1, 1}, Dim3{1, 1, 1}, 0, d.LegacyStream(), unsafe.Pointer(&ptr), unsafe.Pointer(&count)); err != nil {
		t.Fatal(err)
	}
	if err := Launch(fn, Dim3{1, 1, 1}, Dim3{1, 1, 1}, 0, d.PerThreadStream(), unsafe.Pointer(&ptr), unsafe.Pointer(&count)); err != nil {
		t.Fatal(err)
	}
	if err := d.Synchronize(); err != nil {
		t.Fatal(err)
	}
	s2.Close()
	if err := Launch(fn, Dim3{1, 1, 1}, Dim3{1, 1, 1}, 0, s2, unsafe.Pointer(&ptr), unsafe.Pointer(&count)); !errors.Is(err, ErrClosed) {
		t.Errorf("launch on closed stream: %v", err)
	}
}

// TestConcurrentGoroutines runs 64 goroutines (GOMAXPROCS ≥ 4), each with
// its own stream and buffer, launching, copying and synchronising at once;
// with a context set only once, goroutines moving between threads would get
// CUDA_ERROR_INVALID_CONTEXT. Run it under -race.
func TestConcurrentGoroutines(t *testing.T) {
	d := needGPU(t)
	fn := loadAddOne(t, d)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(max(4, runtime.NumCPU())))
	const goroutines, rounds, n = 64, 20, 4096
	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	for g := range goroutines {
		wg.Go(func() {
			errs <- func() error {
				s, err := d.NewStream(g%2 == 0)
				if err != nil {
					return err
				}
				defer s.Close()
				buf, err := d.Alloc(4*n, s)
				if err != nil {
					return err
				}
				defer buf.Close()
				if err := d.MemsetAsync(buf.Ptr(), 0, 4*n, s); err != nil {
					return err
				}
				ptr, count := buf.Ptr(), int32(n)
				for r := range rounds {
					if err := Launch(fn, Dim3{n / 256, 1, 1}, Dim3{256, 1, 1}, 0, s, unsafe.Pointer(&ptr), unsafe.Pointer(&count)); err != nil {
						return fmt.Errorf("goroutine %d round %d: %w", g, r, err)
					}
					if r%5 == 4 {
						runtime.Gosched()
						if err := s.Synchronize(); err != nil {
							return err
						}
					}
				}
				host := make([]byte, 4*n)
				if err := s.Synchronize(); err != nil {
					return err
				}
				if err := buf.CopyToHost(host); err != nil {
					return err
				}
				for i, v := range floats(host) {
					if v != rounds {
						return fmt.Errorf("goroutine %d: x[%d] = %v, want %d", g, i, v, rounds)
					}
				}
				return nil
			}()
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}

// TestFunctionWithParams launches add_one with the layout given by hand,
// which must equal the one the driver reports.
func TestFunctionWithParams(t *testing.T) {
	d := needGPU(t)
	fn := loadAddOne(t, d)
	layout := ParamsOf(8, 4) // float* x, int n
	if !slices.Equal(fn.Params(), layout) {
		t.Fatalf("driver's layout %v, ParamsOf(8, 4) = %v", fn.Params(), layout)
	}
	m := fn.info.mod
	given, err := m.FunctionWithParams("add_one", layout)
	if err != nil {
		t.Fatal(err)
	}
	if given.Handle() != fn.Handle() || given.NumParams() != 2 {
		t.Errorf("FunctionWithParams: handle %#x (want %#x), %d params", given.Handle(), fn.Handle(), given.NumParams())
	}
	const n = 300
	buf, err := d.Alloc(4*n, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer buf.Close()
	host := make([]byte, 4*n)
	if err := buf.CopyFromHost(host); err != nil {
		t.Fatal(err)
	}
	ptr, count := buf.Ptr(), int32(n)
	if err := Launch(given, Dim3{(n + 127) / 128, 1, 1}, Dim3{128, 1, 1}, 0, nil, unsafe.Pointer(&ptr), unsafe.Pointer(&count)); err != nil {
		t.Fatal(err)
	}
	if err := buf.CopyToHost(host); err != nil {
		t.Fatal(err)
	}
	for i, v := range floats(host) {
		if v != 1 {
			t.Fatalf("x[%d] = %v, want 1", i, v)
		}
	}
	if _, err := m.FunctionWithParams("no_such_kernel", layout); !errors.Is(err, ErrNotFound) {
		t.Errorf("missing kernel: %v", err)
	}
}

// TestCloseWhileInUse runs goroutines that use streams, events, buffers and
// a module's function on the GPU while others Close them: every call must
// return nil or ErrClosed, and the device must be healthy afterwards. Run
// it under -race. Kernels write only to a buffer no goroutine closes, so a
// Close never frees memory a queued kernel still writes.
func TestCloseWhileInUse(t *testing.T) {
	d := needGPU(t)
	needNVRTC(t)
	img, _, err := NVRTCCompile(addOne, "add_one.cu", []string{fmt.Sprintf("--gpu-architecture=sm_%d", min(d.Arch(), highestArch(t)))}, true)
	if err != nil {
		t.Fatal(err)
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(max(4, runtime.NumCPU())))
	const rounds, users, ops, n = 40, 8, 40, 256
	target, err := d.Alloc(4*n, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer target.Close()
	var mu sync.Mutex
	var unexpected []error
	report := func(what string, err error) {
		if err != nil && !errors.Is(err, ErrClosed) {
			mu.Lock()
			unexpected = append(unexpected, fmt.Errorf("%s: %w", what, err))
			mu.Unlock()
		}
	}
	for round := range rounds {
		s, err1 := d.NewStream(round%2 == 0)
		e, err2 := d.NewEvent(false)
		b, err3 := d.Alloc(4*n, nil)
		m, err4 := d.LoadModule(img)
		if err := errors.Join(err1, err2, err3, err4); err != nil {
			t.Fatal(err)
		}
		fn, err := m.FunctionWithParams("add_one", ParamsOf(8, 4))
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for u := range users {
			wg.Go(func() {
				ptr, count := target.Ptr(), int32(n)
				host := make([]byte, 4*n)
				for i := range ops {
					switch (u + i) % 8 {
					case 0:
						report("Stream.Synchronize", s.Synchronize())
					case 1:
						report("Event.Record", e.Record(s))
					case 2:
						report("Stream.WaitEvent", s.WaitEvent(e))
					case 3:
						report("Event.Synchronize", e.Synchronize())
					case 4:
						_, err := e.Done()
						report("Event.Done", err)
					case 5:
						report("Buffer.CopyFromHost", b.CopyFromHost(host))
					case 6:
						report("Buffer.CopyToHost", b.CopyToHost(host))
					case 7:
						report("Launch", Launch(fn, Dim3{1, 1, 1}, Dim3{n, 1, 1}, 0, s, unsafe.Pointer(&ptr), unsafe.Pointer(&count)))
					}
				}
			})
		}
		closers := []func() error{s.Close, e.Close, b.Close, m.Close}
		for c := range 2 { // two goroutines close everything, concurrently
			wg.Go(func() {
				for range (round + c) % 5 {
					runtime.Gosched()
				}
				for i := range closers {
					report("Close", closers[(i+c+round)%len(closers)]())
				}
			})
		}
		wg.Wait()
	}
	for i, err := range unexpected {
		if i == 10 {
			t.Errorf("... and %d more", len(unexpected)-10)
			break
		}
		t.Errorf("want nil or ErrClosed: %v", err)
	}
	if err := d.Synchronize(); err != nil {
		t.Fatalf("device after the races: %v", err)
	}
}

// TestLaunchAllocatesNothingGPU checks on a real driver that Launch's
// steady path allocates nothing (the CPU version, against a stand-in
// driver, is TestLaunchAllocatesNothing).
func TestLaunchAllocatesNothingGPU(t *testing.T) {
	d := needGPU(t)
	if raceEnabled {
		t.Skip("sync.Pool drops items at random under -race")
	}
	fn := loadAddOne(t, d)
	buf, err := d.Alloc(4*256, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer buf.Close()
	s, err := d.NewStream(true)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ptr, count := buf.Ptr(), int32(256)
	allocs := testing.AllocsPerRun(200, func() {
		if err := Launch(fn, Dim3{1, 1, 1}, Dim3{256, 1, 1}, 0, s, unsafe.Pointer(&ptr), unsafe.Pointer(&count)); err != nil {
			t.Fatal(err)
		}
	})
	if err := s.Synchronize(); err != nil {
		t.Fatal(err)
	}
	if allocs != 0 {
		t.Errorf("Launch: %v allocations per call, want 0", allocs)
	}
}

// BenchmarkLaunch measures the host cost of Launch on the steady path; it
// synchronises every 256 launches so the queue never fills.
func BenchmarkLaunch(b *testing.B) {
	d := needGPU(b)
	fn := loadAddOne(b, d)
	buf, err := d.Alloc(4*256, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer buf.Close()
	s, _ := d.NewStream(true)
	defer s.Close()
	ptr, count := buf.Ptr(), int32(256)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if err := Launch(fn, Dim3{1, 1, 1}, Dim3{256, 1, 1}, 0, s, unsafe.Pointer(&ptr), unsafe.Pointer(&count)); err != nil {
			b.Fatal(err)
		}
		if i%256 == 255 {
			b.StopTimer()
			s.Synchronize()
			b.StartTimer()
		}
	}
	b.StopTimer()
	s.Synchronize()
}

// BenchmarkRawLaunch is the floor: cuLaunchKernel alone with a prepared
// parameter block, no context switch, no copies. Launch's own cost is the
// difference from BenchmarkLaunch.
func BenchmarkRawLaunch(b *testing.B) {
	d := needGPU(b)
	fn := loadAddOne(b, d)
	buf, _ := d.Alloc(4*256, nil)
	defer buf.Close()
	s, _ := d.NewStream(true)
	defer s.Close()
	blk := new(launchBlock)
	ptr, count := buf.Ptr(), int32(256)
	*(*DevicePtr)(unsafe.Pointer(&blk.data[0])) = ptr
	*(*int32)(unsafe.Pointer(&blk.data[8])) = count
	blk.ptrs[0], blk.ptrs[1] = unsafe.Pointer(&blk.data[0]), unsafe.Pointer(&blk.data[8])
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	d.enter()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		callRaw(fn.h, s.h, blk)
		if i%256 == 255 {
			b.StopTimer()
			s.Synchronize()
			d.enter()
			b.StartTimer()
		}
	}
	b.StopTimer()
	s.Synchronize()
}

// BenchmarkCtxSetCurrent is the cost of the context switch every call makes.
func BenchmarkCtxSetCurrent(b *testing.B) {
	d := needGPU(b)
	b.ReportAllocs()
	for b.Loop() {
		d.enter()
		runtime.UnlockOSThread()
	}
}
