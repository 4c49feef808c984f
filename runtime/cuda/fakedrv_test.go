package cuda

import (
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"unsafe"

	"github.com/ebitengine/purego"
	"github.com/stridekit/stridekit/internal/dlib"
)

// fakeDriver stands in for libcuda in tests that need no GPU: its entry
// points are Go functions made C-callable with purego.NewCallback and put in
// drv's slots, so the package's own calls (purego.SyscallN) reach them. It
// keeps the set of live handles and records every call on a destroyed or
// unknown handle, which is how the tests see a use racing a Close.
type fakeDriver struct {
	mu         sync.Mutex
	live       map[uintptr]string // handle → kind ("stream", "event", "module", "function", "memory")
	next       uintptr
	violations []string

	kernels   map[string][]Param // the kernels every loaded module holds, with their layout
	funcs     map[uintptr]string // function handle → kernel name
	funcOwner map[uintptr]uintptr

	paramCountErr  uintptr // returned by cuFuncGetParamCount when not 0
	paramInfoErr   uintptr // returned by cuFuncGetParamInfo at index paramInfoErrAt
	paramInfoErrAt int

	paramCountCalls, paramInfoCalls, paramInfoPastEnd atomic.Int64
	launches                                          atomic.Int64

	slow     atomic.Bool // yield in cuCtxSetCurrent, widening the window between a check and a call
	launched [][]byte    // the parameter values of the last launch, per parameter
}

// fake is the driver the callbacks serve; set by installFakeDriver.
var fake atomic.Pointer[fakeDriver]

// fakeEntry is one callback and the drv slot it fills.
type fakeEntry struct {
	slot *uintptr
	fn   uintptr
}

var (
	fakeOnce    sync.Once
	fakeEntries []fakeEntry
)

// makeFakeEntries builds the callbacks once per process (purego keeps at
// most about 2000 and never frees them).
func makeFakeEntries() {
	f := func() *fakeDriver { return fake.Load() }
	d := &drv
	add := func(slot *uintptr, fn any) {
		fakeEntries = append(fakeEntries, fakeEntry{slot, purego.NewCallback(fn)})
	}
	add(&d.cuCtxSetCurrent, func(ctx uintptr) uintptr {
		if f().slow.Load() {
			runtime.Gosched()
		}
		return 0
	})
	add(&d.cuModuleLoadData, func(p *uintptr, image uintptr) uintptr { *p = f().create("module"); return 0 })
	add(&d.cuModuleUnload, func(h uintptr) uintptr { return f().destroy(h, "module") })
	add(&d.cuModuleGetFunction, func(p *uintptr, m uintptr, name *byte) uintptr {
		return f().getFunction(p, m, dlib.GoString(uintptr(unsafe.Pointer(name))))
	})
	add(&d.cuFuncGetParamCount, func(fn uintptr, n *uintptr) uintptr { return f().paramCount(fn, n) })
	add(&d.cuFuncGetParamInfo, func(fn, i uintptr, off, size *uintptr) uintptr { return f().paramInfo(fn, i, off, size) })
	add(&d.cuFuncSetAttribute, func(fn, attr, v uintptr) uintptr { return f().useFunction(fn, "cuFuncSetAttribute") })
	add(&d.cuLaunchKernel, func(fn, gx, gy, gz, bx, by, bz, smem, stream uintptr, params *unsafe.Pointer, extra uintptr) uintptr {
		return f().launch(fn, stream, params)
	})
	add(&d.cuStreamCreate, func(p *uintptr, flags uintptr) uintptr { *p = f().create("stream"); return 0 })
	add(&d.cuStreamDestroy, func(h uintptr) uintptr { return f().destroy(h, "stream") })
	add(&d.cuStreamSynchronize, func(h uintptr) uintptr { return f().useStream(h, "cuStreamSynchronize") })
	add(&d.cuStreamWaitEvent, func(s, e, flags uintptr) uintptr {
		return f().useStream(s, "cuStreamWaitEvent") | f().use(e, "event", "cuStreamWaitEvent")
	})
	add(&d.cuEventCreate, func(p *uintptr, flags uintptr) uintptr { *p = f().create("event"); return 0 })
	add(&d.cuEventDestroy, func(h uintptr) uintptr { return f().destroy(h, "event") })
	add(&d.cuEventRecord, func(e, s uintptr) uintptr {
		return f().use(e, "event", "cuEventRecord") | f().useStream(s, "cuEventRecord")
	})
	add(&d.cuEventSynchronize, func(e uintptr) uintptr { return f().use(e, "event", "cuEventSynchronize") })
	add(&d.cuEventQuery, func(e uintptr) uintptr { return f().use(e, "event", "cuEventQuery") })
	add(&d.cuEventElapsedTime, func(ms *float32, a, b uintptr) uintptr {
		*ms = 1.5
		return f().use(a, "event", "cuEventElapsedTime") | f().use(b, "event", "cuEventElapsedTime")
	})
	add(&d.cuMemAlloc, func(p *uintptr, size uintptr) uintptr { *p = f().create("memory"); return 0 })
	add(&d.cuMemFree, func(p uintptr) uintptr { return f().destroy(p, "memory") })
	add(&d.cuMemcpyHtoD, func(dst, src, n uintptr) uintptr { return f().use(dst, "memory", "cuMemcpyHtoD") })
	add(&d.cuMemcpyDtoH, func(dst, src, n uintptr) uintptr { return f().use(src, "memory", "cuMemcpyDtoH") })
	add(&d.cuMemsetD8Async, func(dst, v, n, s uintptr) uintptr { return f().useStream(s, "cuMemsetD8Async") })
}

// installFakeDriver puts a fresh fake driver in drv for the length of the
// test, and returns it with a Device of its own. The error-name lookups are
// emptied, so errors are named CUDA_ERROR_<code>. Tests using it must not
// run in parallel.
func installFakeDriver(t testing.TB, kernels map[string][]Param) (*fakeDriver, *Device) {
	t.Helper()
	fakeOnce.Do(makeFakeEntries)
	saved := map[*uintptr]uintptr{}
	for _, s := range driverSymbols() {
		saved[s.p] = *s.p
		*s.p = 0 // a call this fake does not serve panics in SyscallN: the test fails loudly
	}
	for _, e := range fakeEntries {
		*e.slot = e.fn
	}
	f := &fakeDriver{
		live: map[uintptr]string{}, next: 0x10000, kernels: kernels,
		funcs: map[uintptr]string{}, funcOwner: map[uintptr]uintptr{}, paramInfoErrAt: -1,
	}
	fake.Store(f)
	t.Cleanup(func() {
		for p, v := range saved {
			*p = v
		}
		fake.Store(nil)
	})
	d := &Device{ordinal: 0, ctx: 0xc7, ctxArg: []uintptr{0xc7}, name: "fake", major: 9, minor: 0}
	return f, d
}

func (f *fakeDriver) create(kind string) uintptr {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.next += 0x100
	f.live[f.next] = kind
	return f.next
}

func (f *fakeDriver) destroy(h uintptr, kind string) uintptr {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.live[h] != kind {
		f.violations = append(f.violations, fmt.Sprintf("destroy of %s %#x, which is not live", kind, h))
		return 400 // CUDA_ERROR_INVALID_HANDLE
	}
	delete(f.live, h)
	return 0
}

// use checks that h is a live handle of kind; a use of anything else is
// recorded as a violation.
func (f *fakeDriver) use(h uintptr, kind, call string) uintptr {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.live[h] != kind {
		f.violations = append(f.violations, fmt.Sprintf("%s on %s %#x, which is not live", call, kind, h))
		return 400
	}
	return 0
}

func (f *fakeDriver) useStream(h uintptr, call string) uintptr {
	if h <= streamPerThread { // the default streams
		return 0
	}
	return f.use(h, "stream", call)
}

func (f *fakeDriver) getFunction(p *uintptr, m uintptr, name string) uintptr {
	if r := f.use(m, "module", "cuModuleGetFunction"); r != 0 {
		return r
	}
	if _, ok := f.kernels[name]; !ok {
		return 500 // CUDA_ERROR_NOT_FOUND
	}
	h := f.create("function")
	f.mu.Lock()
	f.funcs[h], f.funcOwner[h] = name, m
	f.mu.Unlock()
	*p = h
	return 0
}

// useFunction checks that fn's module is still loaded.
func (f *fakeDriver) useFunction(fn uintptr, call string) uintptr {
	f.mu.Lock()
	m := f.funcOwner[fn]
	f.mu.Unlock()
	return f.use(m, "module", call)
}

func (f *fakeDriver) layout(fn uintptr) []Param {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.kernels[f.funcs[fn]]
}

func (f *fakeDriver) paramCount(fn uintptr, n *uintptr) uintptr {
	f.paramCountCalls.Add(1)
	if f.paramCountErr != 0 {
		return f.paramCountErr
	}
	*n = uintptr(len(f.layout(fn)))
	return 0
}

func (f *fakeDriver) paramInfo(fn, i uintptr, off, size *uintptr) uintptr {
	f.paramInfoCalls.Add(1)
	if int(i) == f.paramInfoErrAt {
		return f.paramInfoErr
	}
	params := f.layout(fn)
	if int(i) >= len(params) {
		f.paramInfoPastEnd.Add(1)
		return cudaErrorInvalidValue
	}
	*off, *size = uintptr(params[i].Offset), uintptr(params[i].Size)
	return 0
}

func (f *fakeDriver) launch(fn, stream uintptr, params *unsafe.Pointer) uintptr {
	f.launches.Add(1)
	if r := f.useFunction(fn, "cuLaunchKernel") | f.useStream(stream, "cuLaunchKernel"); r != 0 {
		return r
	}
	layout := f.layout(fn)
	ptrs := unsafe.Slice(params, len(layout))
	vals := make([][]byte, len(layout))
	for i, p := range layout {
		vals[i] = slices.Clone(unsafe.Slice((*byte)(ptrs[i]), p.Size))
	}
	f.mu.Lock()
	f.launched = vals
	f.mu.Unlock()
	return 0
}

// check fails t for every violation recorded so far.
func (f *fakeDriver) check(t testing.TB) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, v := range f.violations {
		if i == 10 {
			t.Errorf("... and %d more", len(f.violations)-10)
			break
		}
		t.Error(v)
	}
}
