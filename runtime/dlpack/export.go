package dlpack

import (
	"fmt"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"
	"github.com/stridekit/stridekit/layout"
)

// ExportRequest describes a tensor to hand to a DLPack consumer with Export
// or ExportLegacy.
type ExportRequest struct {
	// Data is the address of the element at index 0 (device, pinned,
	// managed or host memory, as Device says). It may be 0 only when the
	// tensor has no elements.
	Data uintptr
	// Device is where Data lives; CheckDevice must accept it.
	Device DLDevice
	// DType is the element type; DataTypeOf must accept it.
	DType layout.DType
	// Shape holds the extents, in elements.
	Shape []int64
	// Strides holds the strides in elements of DType, as DLPack counts
	// them (not bytes, and not packed groups); nil means dense C order.
	// Whatever is given, the exported tensor carries explicit strides.
	Strides []int64
	// Flags are the DLPack flags to publish (Export only; see
	// ExportLegacy). FlagIsSubbyteTypePadded says fp4/fp6 elements occupy
	// a byte each.
	Flags Flags
	// Release, if not nil, is run exactly once, when the consumer calls
	// the tensor's deleter: it lets go of whatever keeps Data alive. It
	// runs on the consumer's thread, inside the deleter, and must not
	// panic.
	Release func()
}

// Sizes of the C structs (x86-64 and arm64, LP64).
const (
	sizeofVersioned = unsafe.Sizeof(DLManagedTensorVersioned{})
	sizeofLegacy    = unsafe.Sizeof(DLManagedTensor{})
	maxNDim         = 1<<31 - 1
)

// exports is the registry of live exports: for each handle (the
// manager_ctx of an exported tensor) the release function and the address
// of the tensor's struct. Handles count up from 1 and are never reused.
var exports struct {
	mu   sync.Mutex
	next uintptr
	live map[uintptr]exportEntry
}

type exportEntry struct {
	release func()
	addr    uintptr // the DLManagedTensorVersioned or DLManagedTensor
}

// deleters holds the two C-callable deleters, made once per process:
// purego can make only a bounded number of callbacks, so each export
// reuses them and finds its state through manager_ctx.
var deleters struct {
	once              sync.Once
	err               error
	versioned, legacy uintptr
}

func loadDeleters() error {
	deleters.once.Do(func() {
		defer func() {
			if r := recover(); r != nil {
				deleters.err = fmt.Errorf("%w: purego.NewCallback: %v", ErrCallback, r)
			}
		}()
		deleters.versioned = purego.NewCallback(deleteVersioned)
		deleters.legacy = purego.NewCallback(deleteLegacy)
	})
	return deleters.err
}

// Export builds a DLManagedTensorVersioned (DLPack 1.3) for the tensor r
// describes, for a consumer that calls its deleter exactly once when done.
//
// The struct and its shape and strides arrays live in one block of C heap
// memory (libc malloc), which the Go garbage collector neither moves nor
// frees: C code may keep the pointer as long as it likes, on any thread. The
// tensor always has explicit strides, in elements; Data is r.Data with
// ByteOffset 0, or NULL for a tensor without elements, as DLPack asks.
// ManagerCtx is an integer handle into a registry holding r.Release (never a
// Go pointer), and Deleter is a C function pointer made once per process
// with purego.NewCallback.
//
// The deleter removes the handle from the registry, clears the tensor's
// Deleter and ManagerCtx fields, runs Release and frees the block. A second
// call with the same tensor does nothing: the handle it then reads (0, or
// whatever the C allocator left in freed memory) is not in the registry, or
// is registered for another address. Like any use of freed memory this holds
// only until the allocator hands the block out again; callers must not rely
// on it beyond catching a double release.
//
// Errors: the checks of CheckDevice and DataTypeOf; ErrFlags for flag bits
// DLPack 1.3 does not define; ErrNDim for more than 2³¹-1 dims; ErrStrides
// when len(r.Strides) ≠ len(r.Shape); ErrShape for a negative extent; the
// errors of LayoutOf (a packed fp4/fp6 tensor must be expressible in whole
// bytes, as Import requires); ErrData for Data 0 with elements; ErrOverflow
// for addresses past either end of the address space; ErrLibc,
// ErrCallback and ErrOutOfMemory when the memory or the deleter cannot be
// had. On error r.Release is not run.
func Export(r ExportRequest) (*DLManagedTensorVersioned, error) {
	if r.Flags&^knownFlags != 0 {
		return nil, fmt.Errorf("%w: flags %#x: bits %#x are not DLPack %v flags", ErrFlags, uint64(r.Flags), uint64(r.Flags&^knownFlags), version())
	}
	t, strides, err := prepare(r)
	if err != nil {
		return nil, err
	}
	p, err := allocTensor(sizeofVersioned, len(r.Shape))
	if err != nil {
		return nil, err
	}
	m := (*DLManagedTensorVersioned)(p)
	*m = DLManagedTensorVersioned{Version: version(), Deleter: deleters.versioned, Flags: r.Flags, DLTensor: t}
	fillArrays(&m.DLTensor, unsafe.Add(p, sizeofVersioned), r.Shape, strides)
	m.ManagerCtx = register(r.Release, uintptr(p))
	return m, nil
}

// ExportLegacy is Export for a consumer that only takes the legacy
// DLManagedTensor (DLPack before 1.0): same memory, registry and release,
// with its own C deleter. The legacy struct has no flags, so a request
// with FlagReadOnly (the consumer would think it may write) or
// FlagIsSubbyteTypePadded (it would read the elements as packed) is an
// ErrFlags error; FlagIsCopied, which only grants the consumer more, is
// dropped. A second deleter call is harmless as for Export.
func ExportLegacy(r ExportRequest) (*DLManagedTensor, error) {
	if bad := r.Flags &^ FlagIsCopied; bad != 0 {
		return nil, fmt.Errorf("%w: flags %#x cannot be carried by a legacy DLManagedTensor, which has no flags", ErrFlags, uint64(bad))
	}
	t, strides, err := prepare(r)
	if err != nil {
		return nil, err
	}
	p, err := allocTensor(sizeofLegacy, len(r.Shape))
	if err != nil {
		return nil, err
	}
	m := (*DLManagedTensor)(p)
	*m = DLManagedTensor{DLTensor: t, Deleter: deleters.legacy}
	fillArrays(&m.DLTensor, unsafe.Add(p, sizeofLegacy), r.Shape, strides)
	m.ManagerCtx = register(r.Release, uintptr(p))
	return m, nil
}

// prepare validates r and returns the DLTensor it describes (without shape
// and strides) and its strides in elements.
func prepare(r ExportRequest) (DLTensor, []int64, error) {
	if err := CheckDevice(r.Device); err != nil {
		return DLTensor{}, nil, err
	}
	dt, err := DataTypeOf(r.DType)
	if err != nil {
		return DLTensor{}, nil, err
	}
	n := len(r.Shape)
	if err := checkNDim(n); err != nil {
		return DLTensor{}, nil, err
	}
	if r.Strides != nil && len(r.Strides) != n {
		return DLTensor{}, nil, fmt.Errorf("%w: %d strides %v for %d dims of shape %v", ErrStrides, len(r.Strides), r.Strides, n, r.Shape)
	}
	for i, e := range r.Shape {
		if e < 0 {
			return DLTensor{}, nil, fmt.Errorf("%w: shape[%d] = %d is negative", ErrShape, i, e)
		}
	}
	l, err := LayoutOf(r.Shape, r.Strides, r.DType, r.Flags)
	if err != nil {
		return DLTensor{}, nil, err
	}
	if _, err := address(r.Data, 0, l, l.Volume() == 0); err != nil {
		return DLTensor{}, nil, err
	}
	strides := r.Strides
	if strides == nil {
		// Dense C strides in elements: those of the same shape with
		// one-byte items.
		el, err := layout.New(r.Shape, nil, 1)
		if err != nil {
			return DLTensor{}, nil, fmt.Errorf("%w: dense strides of shape %v: %w", ErrOverflow, r.Shape, err)
		}
		strides = el.Strides()
	}
	data := r.Data
	if l.Volume() == 0 {
		data = 0
	}
	return DLTensor{Data: data, Device: r.Device, NDim: int32(n), DType: dt}, strides, nil
}

// checkNDim refuses more dims than DLTensor.ndim, an int32, can hold.
func checkNDim(n int) error {
	if n > maxNDim {
		return fmt.Errorf("%w: %d dims: DLTensor.ndim holds at most %d", ErrNDim, n, maxNDim)
	}
	return nil
}

// allocTensor mallocs a block for a struct of size head followed by the
// shape and strides arrays of n dims.
func allocTensor(head uintptr, n int) (unsafe.Pointer, error) {
	if err := loadDeleters(); err != nil {
		return nil, err
	}
	// n ≤ 2³¹-1, so the size fits a 64-bit uintptr.
	return cMalloc(head + 2*uintptr(n)*8)
}

// fillArrays copies shape and strides to arr (room for both) and points t
// at them; for 0 dims both stay NULL.
func fillArrays(t *DLTensor, arr unsafe.Pointer, shape, strides []int64) {
	n := len(shape)
	if n == 0 {
		return
	}
	sh := unsafe.Slice((*int64)(arr), 2*n)
	copy(sh[:n], shape)
	copy(sh[n:], strides)
	t.Shape = &sh[0]
	t.Strides = &sh[n]
}

// register records an export and returns its handle.
func register(release func(), addr uintptr) uintptr {
	exports.mu.Lock()
	defer exports.mu.Unlock()
	if exports.live == nil {
		exports.live = make(map[uintptr]exportEntry)
	}
	exports.next++
	exports.live[exports.next] = exportEntry{release: release, addr: addr}
	return exports.next
}

// unregister removes the export with handle h whose struct is at addr and
// returns it; ok is false when there is none (a second deleter call).
func unregister(h, addr uintptr) (e exportEntry, ok bool) {
	exports.mu.Lock()
	defer exports.mu.Unlock()
	e, ok = exports.live[h]
	if !ok || e.addr != addr {
		return exportEntry{}, false
	}
	delete(exports.live, h)
	return e, true
}

// LiveExports returns the number of tensors exported by Export and
// ExportLegacy whose deleter has not run yet. Tests use it to check that
// every export is released.
func LiveExports() int {
	exports.mu.Lock()
	defer exports.mu.Unlock()
	return len(exports.live)
}

// deleteVersioned is the deleter of tensors made by Export.
func deleteVersioned(m *DLManagedTensorVersioned) {
	if m == nil {
		return
	}
	e, ok := unregister(m.ManagerCtx, uintptr(unsafe.Pointer(m)))
	if !ok {
		return
	}
	m.Deleter, m.ManagerCtx = 0, 0
	finish(e, unsafe.Pointer(m))
}

// deleteLegacy is the deleter of tensors made by ExportLegacy.
func deleteLegacy(m *DLManagedTensor) {
	if m == nil {
		return
	}
	e, ok := unregister(m.ManagerCtx, uintptr(unsafe.Pointer(m)))
	if !ok {
		return
	}
	m.Deleter, m.ManagerCtx = 0, 0
	finish(e, unsafe.Pointer(m))
}

// finish runs an export's release and frees its block, even if release
// panics.
func finish(e exportEntry, p unsafe.Pointer) {
	defer cFree(p)
	if e.release != nil {
		e.release()
	}
}

// CallDeleter calls the deleter of a versioned tensor the caller received,
// which releases the tensor: m must not be used afterwards. It does nothing
// when m is nil or m.Deleter is 0 (DLPack allows a producer to give no
// deleter). It reads only m.Deleter, which every DLPack major version keeps
// in place, so it is the way to give back a tensor that ImportVersioned
// refused.
func CallDeleter(m *DLManagedTensorVersioned) {
	if m == nil || m.Deleter == 0 {
		return
	}
	call1(m.Deleter, uintptr(unsafe.Pointer(m)))
}

// CallLegacyDeleter is CallDeleter for a legacy DLManagedTensor.
func CallLegacyDeleter(m *DLManagedTensor) {
	if m == nil || m.Deleter == 0 {
		return
	}
	call1(m.Deleter, uintptr(unsafe.Pointer(m)))
}

// args1 holds argument arrays of one value for call1: purego.SyscallN's
// variadic arguments escape, so a call with a fresh slice allocates.
var args1 = sync.Pool{New: func() any { return new([1]uintptr) }}

// call1 calls the C function fn with one argument, allocating nothing.
func call1(fn, arg uintptr) {
	a := args1.Get().(*[1]uintptr)
	a[0] = arg
	purego.SyscallN(fn, a[:]...)
	a[0] = 0
	args1.Put(a)
}
