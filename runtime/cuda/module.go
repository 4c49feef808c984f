package cuda

import (
	"bytes"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/ebitengine/purego"
)

// Module is a loaded CUBIN, fatbin or PTX image in a device's primary
// context (cuModuleLoadData). Close unloads it; its Functions must not be
// launched after that.
type Module struct {
	dev    *Device
	h      uintptr // CUmodule
	mu     sync.Mutex
	closed atomic.Bool
}

// LoadModule loads an image: CUBIN (ELF), fatbin, or PTX text (which the
// driver compiles; a missing terminating NUL is added).
func (d *Device) LoadModule(image []byte) (*Module, error) {
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

// Device returns the module's device.
func (m *Module) Device() *Device { return m.dev }

// Function returns the kernel name (an extern "C" __global__ function) of
// the module, with its parameter layout read from the driver.
func (m *Module) Function(name string) (Function, error) {
	if m.closed.Load() {
		return Function{}, ErrClosed
	}
	cname := cString(name)
	var h uintptr
	err := m.dev.call("cuModuleGetFunction", drv.cuModuleGetFunction, uintptr(unsafe.Pointer(&h)), m.h, uintptr(unsafe.Pointer(&cname[0])))
	runtime.KeepAlive(cname)
	if err != nil {
		return Function{}, fmt.Errorf("%w (kernel %q)", err, name)
	}
	f := Function{h: h, dev: m.dev, info: &funcInfo{name: name}}
	f.info.err = f.readParams()
	return f, nil
}

// Close unloads the module. Idempotent.
func (m *Module) Close() error {
	if m == nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed.Swap(true) {
		return nil
	}
	return m.dev.call("cuModuleUnload", drv.cuModuleUnload, m.h)
}

// Dim3 is a grid or block size.
type Dim3 struct{ X, Y, Z uint32 }

// Function is a kernel of a loaded Module: its CUfunction and the device
// (primary context) it belongs to. The zero Function is invalid.
type Function struct {
	h    uintptr // CUfunction
	dev  *Device
	info *funcInfo
}

type paramSlot struct{ off, size uint32 }

type funcInfo struct {
	name   string
	params []paramSlot
	total  int   // bytes of the parameter buffer
	err    error // why the parameter layout is unknown
}

func (f *Function) readParams() error {
	if drv.cuFuncGetParamInfo == 0 {
		return fmt.Errorf("cuda: kernel %s: driver lacks cuFuncGetParamInfo (CUDA 12.4), which Launch needs: %w", f.info.name, ErrNotSupported)
	}
	var off, size uintptr
	// With cuFuncGetParamCount the loop stops at the last parameter; older
	// drivers are probed until cuFuncGetParamInfo answers
	// CUDA_ERROR_INVALID_VALUE (which memory checkers report as an API error).
	n := uintptr(maxParamProbe)
	if drv.cuFuncGetParamCount != 0 {
		var c uintptr
		if r, _, _ := purego.SyscallN(drv.cuFuncGetParamCount, f.h, uintptr(unsafe.Pointer(&c))); r == 0 {
			n = min(c, n)
		}
	}
	for i := 0; i < int(n); i++ {
		r, _, _ := purego.SyscallN(drv.cuFuncGetParamInfo, f.h, uintptr(i), uintptr(unsafe.Pointer(&off)), uintptr(unsafe.Pointer(&size)))
		if r != 0 {
			break
		}
		f.info.params = append(f.info.params, paramSlot{uint32(off), uint32(size)})
		f.info.total = max(f.info.total, int(off+size))
	}
	return nil
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
// tell).
func (f Function) NumParams() int {
	if f.info == nil || f.info.err != nil {
		return -1
	}
	return len(f.info.params)
}

// SetMaxDynamicSharedMemory allows launches of f with up to bytes of dynamic
// shared memory (CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES); needed
// above 48 KiB, up to Device.MaxSharedMemoryPerBlockOptin less static use.
func (f Function) SetMaxDynamicSharedMemory(bytes int) error {
	if f.dev == nil {
		return fmt.Errorf("cuda: zero Function: %w", ErrInvalidValue)
	}
	return f.dev.call("cuFuncSetAttribute", drv.cuFuncSetAttribute, f.h, 8, uintptr(bytes))
}

// Limits of the pooled launch block; larger launches take a slow path that
// allocates.
const (
	maxLaunchParams = 256
	maxLaunchBytes  = 4096
	// maxParamProbe bounds the probing of parameters on drivers without
	// cuFuncGetParamCount: CUDA allows 32764 bytes of parameters, so at most
	// that many one-byte parameters.
	maxParamProbe = 32764
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
// 256 parameters and 4 KiB of them.
func Launch(fn Function, grid, block Dim3, sharedMem int, stream *Stream, args ...unsafe.Pointer) error {
	info := fn.info
	if info == nil {
		return fmt.Errorf("cuda: Launch of zero Function: %w", ErrInvalidValue)
	}
	if info.err != nil {
		return info.err
	}
	if len(args) != len(info.params) {
		return fmt.Errorf("cuda: Launch %s: %d args for %d parameters: %w", info.name, len(args), len(info.params), ErrInvalidValue)
	}
	var h uintptr
	if stream != nil {
		if stream.closed.Load() {
			return ErrClosed
		}
		h = stream.h
	}
	var blk *launchBlock
	if info.total <= maxLaunchBytes && len(info.params) <= maxLaunchParams {
		blk = launchPool.Get().(*launchBlock)
	} else {
		return launchLarge(fn, grid, block, sharedMem, h, args)
	}
	for i, p := range info.params {
		copy(blk.data[p.off:p.off+p.size], unsafe.Slice((*byte)(args[i]), p.size))
		blk.ptrs[i] = unsafe.Pointer(&blk.data[p.off])
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
	data := make([]byte, info.total)
	ptrs := make([]unsafe.Pointer, len(info.params)+1)
	for i, p := range info.params {
		copy(data[p.off:p.off+p.size], unsafe.Slice((*byte)(args[i]), p.size))
		ptrs[i] = unsafe.Pointer(&data[p.off])
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
