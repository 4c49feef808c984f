package cuda

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
	"unsafe"

	"github.com/ebitengine/purego"
)

// TestCloseRacesUse runs, against the fake driver, goroutines that use a
// stream, an event, a buffer and a module's function while others Close
// them. Every call must return nil or ErrClosed, and the driver must never
// see a handle used after (or while) it is destroyed, nor destroyed twice.
// The fake driver yields in each context switch, between the closed check
// and the call, where an unguarded Close slips in. Run it under -race too.
func TestCloseRacesUse(t *testing.T) {
	layout := ParamsOf(8, 4)
	f, d := installFakeDriver(t, map[string][]Param{"k": layout})
	f.slow.Store(true)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(max(4, runtime.NumCPU())))
	const rounds, users, ops = 100, 4, 30
	var unexpected []error
	var mu sync.Mutex
	report := func(what string, err error) {
		if err != nil && !errors.Is(err, ErrClosed) {
			mu.Lock()
			unexpected = append(unexpected, fmt.Errorf("%s: %w", what, err))
			mu.Unlock()
		}
	}
	for round := range rounds {
		s, err1 := d.NewStream(round%2 == 0)
		e, err2 := d.NewEvent(true)
		b, err3 := d.Alloc(64, s)
		m, err4 := d.LoadModule([]byte("\x7fELF fake"))
		if err := errors.Join(err1, err2, err3, err4); err != nil {
			t.Fatal(err)
		}
		fn, err := m.Function("k")
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for u := range users {
			wg.Go(func() {
				ptr, n := uint64(1), int32(2)
				host := make([]byte, 8)
				for i := range ops {
					switch (u + i) % 10 {
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
						_, err := ElapsedTime(e, e)
						report("ElapsedTime", err)
					case 6:
						report("Buffer.CopyFromHost", b.CopyFromHost(host))
					case 7:
						report("Buffer.CopyToHost", b.CopyToHost(host))
					case 8:
						report("Launch", Launch(fn, Dim3{1, 1, 1}, Dim3{32, 1, 1}, 0, s, unsafe.Pointer(&ptr), unsafe.Pointer(&n)))
					case 9:
						report("MemsetAsync", d.MemsetAsync(b.Ptr(), 0, 8, s))
					}
				}
			})
		}
		closers := []func() error{s.Close, e.Close, b.Close, m.Close}
		rand.Shuffle(len(closers), func(i, j int) { closers[i], closers[j] = closers[j], closers[i] })
		for c := range 2 { // two goroutines close everything, concurrently
			wg.Go(func() {
				for range (round + c) % 4 {
					runtime.Gosched()
				}
				for _, close := range closers {
					report("Close", close())
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
	f.check(t)
	f.mu.Lock()
	defer f.mu.Unlock()
	for h, kind := range f.live {
		if kind != "function" {
			t.Errorf("%s %#x never destroyed", kind, h)
		}
	}
}

// TestLaunchAllocatesNothing: Launch's steady path, module and stream
// guards included, allocates nothing. The context switch and the launch
// itself go to a libc function that takes no arguments and returns 0, so
// only Launch's own allocations are counted.
func TestLaunchAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool drops items at random under -race")
	}
	layout := ParamsOf(8, 4, 256)
	_, d := installFakeDriver(t, map[string][]Param{"k": layout})
	fn, err := loadFake(t, d).FunctionWithParams("k", layout)
	if err != nil {
		t.Fatal(err)
	}
	s, err := d.NewStream(true)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	libc, err := purego.Dlopen("libc.so.6", purego.RTLD_NOW|purego.RTLD_GLOBAL)
	if err != nil {
		t.Fatal(err)
	}
	noop, err := purego.Dlsym(libc, "sched_yield")
	if err != nil {
		t.Fatal(err)
	}
	drv.cuLaunchKernel, drv.cuCtxSetCurrent = noop, noop // restored by installFakeDriver's cleanup
	ptr, n := uint64(1), int32(2)
	var args [256]byte
	for _, stream := range []*Stream{s, nil, d.LegacyStream()} {
		allocs := testing.AllocsPerRun(1000, func() {
			if err := Launch(fn, Dim3{1, 1, 1}, Dim3{32, 1, 1}, 0, stream, unsafe.Pointer(&ptr), unsafe.Pointer(&n), unsafe.Pointer(&args)); err != nil {
				t.Fatal(err)
			}
		})
		if allocs != 0 {
			t.Errorf("Launch on stream %#x: %v allocations per call, want 0", stream.Handle(), allocs)
		}
	}
}
