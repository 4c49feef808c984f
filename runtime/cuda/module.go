package cuda

import (
	"bytes"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"
)

// Module is a loaded CUBIN, fatbin or PTX image in a device's primary
// context (cuModuleLoadData). Close unloads it once the calls in progress on
// it (Launch of its Functions included) have returned; after Close, its
// methods and the Launch of its Functions return ErrClosed.
type Module struct {
	dev *Device
	h   uintptr // CUmodule
	g   guard
}

// LoadModule loads an image: CUBIN (ELF), fatbin, or PTX text (which the
// driver compiles; a missing terminating NUL is added).
func (d *Device) LoadModule(image []byte) (*Module, error) {
	if err := d.valid("LoadModule"); err != nil {
		return nil, err
	}
	if len(image) == 0 {
		return nil, fmt.Errorf("cuda: LoadModule: empty image: %w", ErrInvalidValue)
	}
	if !bytes.HasPrefix(image, []byte("\x7fELF")) && !bytes.HasPrefix(image, []byte{0x50, 0xed, 0x55, 0xba}) &&
		image[len(image)-1] != 0 {
		image = append(image[:len(image):len(image)], 0) // PTX must be NUL-terminated
	}
	m := &Module{dev: d}
	err := d.call("cuModuleLoadData", drv.cuModuleLoadData, uintptr(unsafe.Pointer(&m.h)), uintptr(unsafe.Pointer(&image[0])))
	runtime.KeepAlive(image)
	if err != nil {
		return nil, err
	}
	return m, nil
}

// Device returns the module's device (nil for a nil Module).
func (m *Module) Device() *Device {
	if m == nil {
		return nil
	}
	return m.dev
}

// Function returns the kernel name (an extern "C" __global__ function) of
// the module, with its parameter layout read from the driver: the count
// from cuFuncGetParamCount (CUDA 12.9) and then exactly that many
// cuFuncGetParamInfo queries (CUDA 12.4). A driver with cuFuncGetParamInfo
// but without cuFuncGetParamCount is probed parameter by parameter until it
// answers CUDA_ERROR_INVALID_VALUE, one past the last; memory checkers such
// as compute-sanitizer report that answer as an API error. Any other driver
// error is returned, naming the kernel. A driver without cuFuncGetParamInfo
// gives a Function whose Launch returns ErrNotSupported. Where the caller
// knows the parameters, FunctionWithParams asks the driver nothing.
func (m *Module) Function(name string) (Function, error) {
	return m.function("Function", name, nil, false)
}

// FunctionWithParams returns kernel name with the parameter layout the
// caller knows (the code generator knows every kernel's parameters): no
// driver query of the parameters at all, so it works on drivers older than
// CUDA 12.4 and never draws API errors from memory checkers. params lists
// each parameter's byte offset in the parameter buffer and its size, in
// order; ParamsOf lays them out with C alignment. They must have sizes > 0,
// ascending offsets that do not overlap, and end by byte 32764 (CUDA's
// limit); otherwise the error wraps ErrInvalidValue and names the kernel and
// the parameter. The layout is not checked against the kernel's: a wrong one
// makes Launch pass wrong values.
func (m *Module) FunctionWithParams(name string, params []Param) (Function, error) {
	if err := checkParams(name, params); err != nil {
		return Function{}, err
	}
	return m.function("FunctionWithParams", name, params, true)
}

func (m *Module) function(method, name string, params []Param, known bool) (Function, error) {
	if m == nil || m.dev == nil {
		return Function{}, errZero("Module", method, "Device.LoadModule")
	}
	if err := m.dev.valid(method); err != nil {
		return Function{}, err
	}
	if !m.g.acquire() {
		return Function{}, errClosedModule
	}
	defer m.g.release()
	cname := cString(name)
	var h uintptr
	err := m.dev.enter()
	if err == nil {
		r, _, _ := purego.SyscallN(drv.cuModuleGetFunction, uintptr(unsafe.Pointer(&h)), m.h, uintptr(unsafe.Pointer(&cname[0])))
		if err = check("cuModuleGetFunction", r); err != nil {
			err = fmt.Errorf("%w (kernel %q)", err, name)
		}
	}
	info := &funcInfo{name: name, mod: m}
	if err == nil {
		if known {
			info.params = slices.Clone(params)
		} else {
			info.params, info.err, err = readParams(h, name)
		}
	}
	runtime.UnlockOSThread()
	runtime.KeepAlive(cname)
	if err != nil {
		return Function{}, err
	}
	for _, p := range info.params {
		info.total = max(info.total, int(p.Offset+p.Size))
	}
	return Function{h: h, dev: m.dev, info: info}, nil
}

// readParams reads kernel name's parameter layout from the driver (see
// Module.Function). notSupported is set, and err not, when the driver
// cannot tell: Launch returns it.
func readParams(h uintptr, name string) (params []Param, notSupported, err error) {
	if drv.cuFuncGetParamInfo == 0 {
		return nil, fmt.Errorf("cuda: kernel %q: driver lacks cuFuncGetParamInfo (CUDA 12.4), which Launch needs "+
			"to read the parameters (FunctionWithParams does not): %w", name, ErrNotSupported), nil
	}
	count := -1 // unknown: probe
	if drv.cuFuncGetParamCount != 0 {
		var c uintptr // size_t
		r, _, _ := purego.SyscallN(drv.cuFuncGetParamCount, h, uintptr(unsafe.Pointer(&c)))
		if r != 0 {
			return nil, nil, fmt.Errorf("cuda: kernel %q: reading the parameter count: %w", name, newError("cuFuncGetParamCount", r))
		}
		if c > maxParamBytes {
			return nil, nil, fmt.Errorf("cuda: kernel %q: driver reports %d parameters, more than %d bytes hold: %w",
				name, c, maxParamBytes, ErrInvalidValue)
		}
		count = int(c)
	}
	var off, size uintptr // size_t
	for i := 0; count < 0 || i < count; i++ {
		if i == maxParamBytes {
			return nil, nil, fmt.Errorf("cuda: kernel %q: driver reports parameters past the %d-byte limit: %w",
				name, maxParamBytes, ErrInvalidValue)
		}
		r, _, _ := purego.SyscallN(drv.cuFuncGetParamInfo, h, uintptr(i), uintptr(unsafe.Pointer(&off)), uintptr(unsafe.Pointer(&size)))
		if r != 0 {
			if count < 0 && int32(r) == cudaErrorInvalidValue {
				break // probed one past the last parameter
			}
			return nil, nil, fmt.Errorf("cuda: kernel %q: reading parameter %d: %w", name, i, newError("cuFuncGetParamInfo", r))
		}
		if off > maxParamBytes || size > maxParamBytes {
			return nil, nil, fmt.Errorf("cuda: kernel %q: driver reports parameter %d at offset %d of size %d, past the %d-byte limit: %w",
				name, i, off, size, maxParamBytes, ErrInvalidValue)
		}
		params = append(params, Param{Offset: uint32(off), Size: uint32(size)})
	}
	if err := checkParams(name, params); err != nil {
		return nil, nil, fmt.Errorf("driver's layout: %w", err)
	}
	return params, nil, nil
}

// Close unloads the module once the calls in progress on it have returned.
// Idempotent; a nil or zero Module's Close does nothing.
func (m *Module) Close() error {
	if m == nil || m.dev == nil {
		return nil
	}
	return m.g.close(func() error {
		return m.dev.call("cuModuleUnload", drv.cuModuleUnload, m.h)
	})
}

// cudaErrorInvalidValue is CUDA_ERROR_INVALID_VALUE, the answer to a query
// of a parameter past the last.
const cudaErrorInvalidValue = 1

// Param is one kernel parameter: its byte offset in the parameter buffer and
// its size in bytes, as FunctionWithParams takes them.
type Param struct{ Offset, Size uint32 }

// maxParamBytes is CUDA's limit on a kernel's parameter buffer (CUDA 12.1
// on, Volta and later; 4 KiB before).
const maxParamBytes = 32764

// ParamsOf lays out kernel parameters of the given sizes in bytes as a C
// compiler does for a __global__ function's parameter list: each at the
// next offset aligned to its size rounded up to a power of two, at most 8.
// So a generated kernel's layout is cuda.ParamsOf(8, 8, argsSize) for two
// pointers and an argument struct. A parameter whose type needs more than
// 8-byte alignment (a struct with a __align__(16) member) must be laid out
// by hand. A size ≤ 0 or over 32764 gives a Param of Size 0, and a layout
// running past 32764 bytes gives offsets beyond it; FunctionWithParams
// rejects both, naming the parameter.
func ParamsOf(sizes ...int) []Param {
	params := make([]Param, len(sizes))
	var off int64
	for i, size := range sizes {
		if size <= 0 || size > maxParamBytes {
			size = 0
		}
		align := int64(1)
		for align < int64(size) && align < 8 {
			align *= 2
		}
		off = (off + align - 1) &^ (align - 1)
		params[i] = Param{Offset: uint32(min(off, math.MaxUint32)), Size: uint32(size)}
		off = min(off+int64(size), math.MaxUint32) // no wrap past 4 GiB of parameters
	}
	return params
}

// checkParams checks a parameter layout for kernel name: sizes > 0,
// ascending non-overlapping offsets, the end within maxParamBytes.
func checkParams(name string, params []Param) error {
	end := uint64(0)
	for i, p := range params {
		switch {
		case p.Size == 0:
			return fmt.Errorf("cuda: kernel %q: params[%d] = %+v: size 0: %w", name, i, p, ErrInvalidValue)
		case uint64(p.Offset) < end:
			return fmt.Errorf("cuda: kernel %q: params[%d] = %+v starts before params[%d] = %+v ends (%d): %w",
				name, i, p, i-1, params[i-1], end, ErrInvalidValue)
		}
		end = uint64(p.Offset) + uint64(p.Size)
		if end > maxParamBytes {
			return fmt.Errorf("cuda: kernel %q: params[%d] = %+v ends at byte %d, past CUDA's %d-byte limit: %w",
				name, i, p, end, maxParamBytes, ErrInvalidValue)
		}
	}
	return nil
}

// Dim3 is a grid or block size.
type Dim3 struct{ X, Y, Z uint32 }

// Function is a kernel of a loaded Module: its CUfunction, the device
// (primary context) it belongs to and its parameter layout. The zero
// Function is invalid: its methods and Launch return ErrInvalidValue.
type Function struct {
	h    uintptr // CUfunction
	dev  *Device
	info *funcInfo
}

type funcInfo struct {
	name   string
	mod    *Module // held open (guard) for each launch
	params []Param
	total  int   // bytes of the parameter buffer
	err    error // why the parameter layout is unknown
}

// Device returns the device the function was loaded on.
func (f Function) Device() *Device { return f.dev }

// Name returns the kernel's name.
func (f Function) Name() string {
	if f.info == nil {
		return ""
	}
	return f.info.name
}

// Handle returns the CUfunction handle.
func (f Function) Handle() uintptr { return f.h }

// NumParams returns the number of kernel parameters (-1 if the driver cannot
// tell, and for the zero Function).
func (f Function) NumParams() int {
	if f.info == nil || f.info.err != nil {
		return -1
	}
	return len(f.info.params)
}

// Params returns a copy of the kernel's parameter layout, as given to
// FunctionWithParams or read from the driver (nil if unknown).
func (f Function) Params() []Param {
	if f.info == nil {
		return nil
	}
	return slices.Clone(f.info.params)
}

// SetMaxDynamicSharedMemory allows launches of f with up to bytes of dynamic
// shared memory (CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES); needed
// above 48 KiB, up to Device.MaxSharedMemoryPerBlockOptin less static use.
func (f Function) SetMaxDynamicSharedMemory(bytes int) error {
	if f.info == nil || f.dev == nil {
		return fmt.Errorf("cuda: SetMaxDynamicSharedMemory of zero Function: %w", ErrInvalidValue)
	}
	if bytes < 0 || bytes > math.MaxInt32 {
		return fmt.Errorf("cuda: SetMaxDynamicSharedMemory(%d) of %s: %w", bytes, f.info.name, ErrInvalidValue)
	}
	if !f.info.mod.g.acquire() {
		return errClosedModule
	}
	defer f.info.mod.g.release()
	return f.dev.call("cuFuncSetAttribute", drv.cuFuncSetAttribute, f.h, 8, uintptr(bytes))
}

// Limits of the pooled launch block; larger launches take a slow path that
// allocates.
const (
	maxLaunchParams = 256
	maxLaunchBytes  = 4096
)

type launchBlock struct {
	call [11]uintptr // cuLaunchKernel's arguments, here so SyscallN allocates nothing
	ptrs [maxLaunchParams]unsafe.Pointer
	data [maxLaunchBytes]byte
}

var launchPool = sync.Pool{New: func() any { return new(launchBlock) }}

// Launch launches fn on stream (nil: the legacy default stream of fn's
// device) with the given grid, block and dynamic shared memory in bytes.
// args[i] points to the value of the i-th kernel parameter, as
// cuLaunchKernel's kernelParams, and must point to exactly as many bytes as
// that parameter has. Launch copies the values before returning, so they may
// live on the caller's stack and change afterwards. It makes fn's context
// current on the calling thread, and allocates nothing for kernels of up to
// 256 parameters and 4 KiB of them. It holds fn's module and the stream open
// for the call: after the Close of either it returns ErrClosed.
func Launch(fn Function, grid, block Dim3, sharedMem int, stream *Stream, args ...unsafe.Pointer) error {
	info := fn.info
	if info == nil || fn.dev == nil {
		return errLaunchZero
	}
	if info.err != nil {
		return info.err
	}
	if len(args) != len(info.params) {
		return fmt.Errorf("cuda: Launch %s: %d args for %d parameters: %w", info.name, len(args), len(info.params), ErrInvalidValue)
	}
	for i, a := range args {
		if a == nil {
			return fmt.Errorf("cuda: Launch %s: args[%d] is nil: %w", info.name, i, ErrInvalidValue)
		}
	}
	if sharedMem < 0 || int64(sharedMem) > math.MaxUint32 {
		return fmt.Errorf("cuda: Launch %s: sharedMem = %d: %w", info.name, sharedMem, ErrInvalidValue)
	}
	if !info.mod.g.acquire() {
		return errClosedModule
	}
	h, err := stream.acquire()
	if err != nil {
		info.mod.g.release()
		return err
	}
	if info.total > maxLaunchBytes || len(info.params) > maxLaunchParams {
		err = launchLarge(fn, grid, block, sharedMem, h, args)
	} else {
		err = launchPooled(fn, grid, block, sharedMem, h, args)
	}
	stream.release()
	info.mod.g.release()
	return err
}

var errLaunchZero = fmt.Errorf("cuda: Launch of zero Function: %w", ErrInvalidValue)

// launchPooled is Launch through a pooled parameter block.
func launchPooled(fn Function, grid, block Dim3, sharedMem int, h uintptr, args []unsafe.Pointer) error {
	blk := launchPool.Get().(*launchBlock)
	for i, p := range fn.info.params {
		copy(blk.data[p.Offset:p.Offset+p.Size], unsafe.Slice((*byte)(args[i]), p.Size))
		blk.ptrs[i] = unsafe.Pointer(&blk.data[p.Offset])
	}
	err := fn.dev.enter()
	if err == nil {
		blk.call = [11]uintptr{fn.h,
			uintptr(grid.X), uintptr(grid.Y), uintptr(grid.Z),
			uintptr(block.X), uintptr(block.Y), uintptr(block.Z),
			uintptr(sharedMem), h, uintptr(unsafe.Pointer(&blk.ptrs[0])), 0}
		r, _, _ := purego.SyscallN(drv.cuLaunchKernel, blk.call[:]...)
		if r != 0 {
			err = newError("cuLaunchKernel", r)
		}
	}
	runtime.UnlockOSThread()
	runtime.KeepAlive(blk)
	launchPool.Put(blk)
	return err
}

// launchLarge is Launch for parameter buffers beyond the pooled block.
func launchLarge(fn Function, grid, block Dim3, sharedMem int, h uintptr, args []unsafe.Pointer) error {
	info := fn.info
	data := make([]byte, max(info.total, 1))
	ptrs := make([]unsafe.Pointer, len(info.params)+1)
	for i, p := range info.params {
		copy(data[p.Offset:p.Offset+p.Size], unsafe.Slice((*byte)(args[i]), p.Size))
		ptrs[i] = unsafe.Pointer(&data[p.Offset])
	}
	err := fn.dev.enter()
	if err == nil {
		r, _, _ := purego.SyscallN(drv.cuLaunchKernel, fn.h,
			uintptr(grid.X), uintptr(grid.Y), uintptr(grid.Z),
			uintptr(block.X), uintptr(block.Y), uintptr(block.Z),
			uintptr(sharedMem), h, uintptr(unsafe.Pointer(&ptrs[0])), 0)
		if r != 0 {
			err = newError("cuLaunchKernel", r)
		}
	}
	runtime.UnlockOSThread()
	runtime.KeepAlive(data)
	runtime.KeepAlive(ptrs)
	return err
}
