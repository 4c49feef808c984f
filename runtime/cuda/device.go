package cuda

import (
	"fmt"
	"runtime"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"
	"github.com/stridekit/stridekit/internal/dlib"
)

// Device attribute codes (CUdevice_attribute) used here.
const (
	attrMaxThreadsPerBlock         = 1
	attrMaxSharedMemoryPerBlock    = 8
	attrMaxThreadsPerSM            = 39
	attrMaxSharedMemoryPerSM       = 81
	attrMaxBlocksPerSM             = 106
	attrReservedSharedPerBlock     = 111
	attrMultiprocessorCount        = 16
	attrUnifiedAddressing          = 41
	attrComputeCapabilityMajor     = 75
	attrComputeCapabilityMinor     = 76
	attrManagedMemory              = 83
	attrMaxSharedMemoryPerBlockOpt = 97
	attrMemoryPoolsSupported       = 115
	attrMemoryClockRate            = 36
	attrGlobalMemoryBusWidth       = 37
	attrL2CacheSize                = 38
)

// Device is one CUDA device with its primary context, retained for the life
// of the process. Devices are shared: GetDevice returns the same *Device for
// an ordinal every time. All methods are safe for concurrent use.
type Device struct {
	ordinal int
	handle  int32     // CUdevice
	ctx     uintptr   // CUcontext: the retained primary context
	ctxArg  []uintptr // {ctx}, on the heap: SyscallN's variadic arguments escape

	name                    string
	major, minor            int
	smCount                 int
	maxThreadsPerBlock      int
	totalMem                int64
	maxShared, maxSharedOpt int
	memPools, managed       bool
	temp                    tempPool // AllocTemp's pool, made at its first call
	// per multiprocessor (0 where the driver does not say): the most
	// threads, shared memory and blocks it holds at once, and the shared
	// memory the driver keeps for each block.
	smThreads, smShared, smBlocks, reservedShared int
	// the memory's peak clock in kHz and its bus width in bits (0 where the
	// driver does not say)
	memClockKHz, busBits int
	l2                   int // L2 cache bytes (0 where the driver does not say)
}

var devices struct {
	mu   sync.Mutex
	byID map[int]*Device
}

// DeviceCount returns the number of CUDA devices, or an error wrapping
// ErrNoDriver where there is no driver.
func DeviceCount() (int, error) {
	if err := loadDriver(); err != nil {
		return 0, err
	}
	var n int32
	r, _, _ := purego.SyscallN(drv.cuDeviceGetCount, uintptr(unsafe.Pointer(&n)))
	return int(n), check("cuDeviceGetCount", r)
}

// GetDevice returns device ordinal, retaining its primary context at the
// first call and querying its properties.
func GetDevice(ordinal int) (*Device, error) {
	if err := loadDriver(); err != nil {
		return nil, err
	}
	devices.mu.Lock()
	defer devices.mu.Unlock()
	if d := devices.byID[ordinal]; d != nil {
		return d, nil
	}
	n, err := DeviceCount()
	if err != nil {
		return nil, err
	}
	if ordinal < 0 || ordinal >= n {
		return nil, fmt.Errorf("cuda: device %d: %w (have %d)", ordinal, ErrInvalidDevice, n)
	}
	d := &Device{ordinal: ordinal}
	r, _, _ := purego.SyscallN(drv.cuDeviceGet, uintptr(unsafe.Pointer(&d.handle)), uintptr(ordinal))
	if err := check("cuDeviceGet", r); err != nil {
		return nil, err
	}
	var name [256]byte
	r, _, _ = purego.SyscallN(drv.cuDeviceGetName, uintptr(unsafe.Pointer(&name[0])), uintptr(len(name)), uintptr(d.handle))
	if err := check("cuDeviceGetName", r); err != nil {
		return nil, err
	}
	d.name = dlib.GoString(uintptr(unsafe.Pointer(&name[0])))
	runtime.KeepAlive(&name)
	var total uintptr
	r, _, _ = purego.SyscallN(drv.cuDeviceTotalMem, uintptr(unsafe.Pointer(&total)), uintptr(d.handle))
	if err := check("cuDeviceTotalMem_v2", r); err != nil {
		return nil, err
	}
	d.totalMem = int64(total)
	for _, a := range []struct {
		attr int
		dst  *int
	}{
		{attrComputeCapabilityMajor, &d.major},
		{attrComputeCapabilityMinor, &d.minor},
		{attrMultiprocessorCount, &d.smCount},
		{attrMaxThreadsPerBlock, &d.maxThreadsPerBlock},
		{attrMaxSharedMemoryPerBlock, &d.maxShared},
		{attrMaxSharedMemoryPerBlockOpt, &d.maxSharedOpt},
	} {
		v, err := d.attribute(a.attr)
		if err != nil {
			return nil, err
		}
		*a.dst = v
	}
	for _, a := range []struct {
		attr int
		dst  *int
	}{
		{attrMaxThreadsPerSM, &d.smThreads},
		{attrMaxSharedMemoryPerSM, &d.smShared},
		{attrMaxBlocksPerSM, &d.smBlocks},
		{attrReservedSharedPerBlock, &d.reservedShared},
		{attrMemoryClockRate, &d.memClockKHz},
		{attrGlobalMemoryBusWidth, &d.busBits},
		{attrL2CacheSize, &d.l2},
	} {
		if v, err := d.attribute(a.attr); err == nil {
			*a.dst = v
		}
	}
	if v, err := d.attribute(attrMemoryPoolsSupported); err == nil {
		d.memPools = v != 0 && drv.cuMemAllocAsync != 0 && drv.cuMemFreeAsync != 0
	}
	if v, err := d.attribute(attrManagedMemory); err == nil {
		d.managed = v != 0
	}
	r, _, _ = purego.SyscallN(drv.cuDevicePrimaryCtxRetain, uintptr(unsafe.Pointer(&d.ctx)), uintptr(d.handle))
	if err := check("cuDevicePrimaryCtxRetain", r); err != nil {
		return nil, err
	}
	d.ctxArg = []uintptr{d.ctx}
	if devices.byID == nil {
		devices.byID = map[int]*Device{}
	}
	devices.byID[ordinal] = d
	return d, nil
}

func (d *Device) attribute(attr int) (int, error) {
	var v int32
	r, _, _ := purego.SyscallN(drv.cuDeviceGetAttribute, uintptr(unsafe.Pointer(&v)), uintptr(attr), uintptr(d.handle))
	return int(v), check("cuDeviceGetAttribute", r)
}

// valid returns nil for a Device that GetDevice made, and an error naming
// method for a nil pointer or zero Device, which has no context (and maybe no
// driver) to call.
func (d *Device) valid(method string) error {
	if d == nil || d.ctxArg == nil {
		return errZero("Device", method, "GetDevice")
	}
	return nil
}

// Attribute returns a raw CUdevice_attribute value of the device.
func (d *Device) Attribute(attr int) (int, error) {
	if err := d.valid("Attribute"); err != nil {
		return 0, err
	}
	return d.attribute(attr)
}

// Ordinal returns the device's ordinal, as given to GetDevice (-1 for a nil
// Device).
func (d *Device) Ordinal() int {
	if d == nil {
		return -1
	}
	return d.ordinal
}

// Name returns the device's name, e.g. "NVIDIA H200" ("" for a nil Device).
func (d *Device) Name() string {
	if d == nil {
		return ""
	}
	return d.name
}

// ComputeCapability returns the device's compute capability, e.g. 9, 0.
func (d *Device) ComputeCapability() (major, minor int) {
	if d == nil {
		return 0, 0
	}
	return d.major, d.minor
}

// Arch returns the compute capability as one number, 10·major + minor: 90
// for sm_90.
func (d *Device) Arch() int {
	major, minor := d.ComputeCapability()
	return 10*major + minor
}

// SMCount returns the number of streaming multiprocessors.
func (d *Device) SMCount() int {
	if d == nil {
		return 0
	}
	return d.smCount
}

// MaxThreadsPerBlock returns the most threads a block may have.
func (d *Device) MaxThreadsPerBlock() int {
	if d == nil {
		return 0
	}
	return d.maxThreadsPerBlock
}

// TotalMemory returns the device's memory in bytes.
func (d *Device) TotalMemory() int64 {
	if d == nil {
		return 0
	}
	return d.totalMem
}

// ResidentBlocks returns how many blocks of threads threads, each with
// shared bytes of dynamic shared memory, one multiprocessor holds at once,
// as its thread, shared-memory and block limits allow (registers are not
// counted), or 0 where the driver did not report those limits: the
// blocks of a launch that run at once on each multiprocessor.
func (d *Device) ResidentBlocks(threads, shared int) int {
	if d == nil || d.smThreads == 0 || d.smShared == 0 || threads <= 0 || shared < 0 {
		return 0
	}
	n := min(d.smThreads/threads, d.smShared/(shared+d.reservedShared))
	if d.smBlocks > 0 {
		n = min(n, d.smBlocks)
	}
	return n
}

// MaxSharedMemoryPerBlock returns the shared memory a block gets without
// opting in, in bytes (48 KiB on current GPUs).
func (d *Device) MaxSharedMemoryPerBlock() int {
	if d == nil {
		return 0
	}
	return d.maxShared
}

// MaxSharedMemoryPerBlockOptin returns the shared memory a block may get
// after Function.SetMaxDynamicSharedMemory, in bytes.
func (d *Device) MaxSharedMemoryPerBlockOptin() int {
	if d == nil {
		return 0
	}
	return d.maxSharedOpt
}

// MemoryBandwidth returns the device memory's peak bandwidth in bytes per
// second, from its clock and bus width (two transfers a clock), or 0 where
// the driver does not report them: 3.35e12 for an H100 SXM, 4.8e12 for an
// H200. Copy rules that trade extra local reads for fewer bytes on a link
// weigh it.
func (d *Device) MemoryBandwidth() int64 {
	if d == nil {
		return 0
	}
	return 2 * int64(d.memClockKHz) * 1000 * int64(d.busBits) / 8
}

// L2Bytes returns the size of the device's L2 cache in bytes, or 0 where
// the driver does not report it: 50 MiB for an H100 SXM, 60 MiB for an
// H200. Copy rules weigh it where a kernel reads sectors it only partly
// uses and relies on L2 to keep them until their neighbours are read.
func (d *Device) L2Bytes() int64 {
	if d == nil {
		return 0
	}
	return int64(d.l2)
}

// MemoryPoolsSupported reports whether Alloc is stream-ordered
// (cuMemAllocAsync) on this device.
func (d *Device) MemoryPoolsSupported() bool { return d != nil && d.memPools }

// String names the device as "cuda:ORDINAL (NAME, sm_ARCH)".
func (d *Device) String() string {
	if d == nil {
		return "cuda:<nil>"
	}
	return fmt.Sprintf("cuda:%d (%s, sm_%d)", d.ordinal, d.name, d.Arch())
}

// enter locks the goroutine to its OS thread and makes the device's context
// current there; the caller must call runtime.UnlockOSThread after its driver
// calls, whatever enter returns. The caller has checked d with valid.
func (d *Device) enter() error {
	runtime.LockOSThread()
	r, _, _ := purego.SyscallN(drv.cuCtxSetCurrent, d.ctxArg...) // no allocation
	if r != 0 {
		return newError("cuCtxSetCurrent", r)
	}
	return nil
}

// call makes one driver call in the device's context. Pointers converted
// to uintptr in its arguments stay on the heap and alive for the call. A nil
// or zero Device is an error naming the call.
//
//go:uintptrescapes
func (d *Device) call(name string, fn uintptr, args ...uintptr) error {
	if err := d.valid(name); err != nil {
		return err
	}
	err := d.enter()
	if err == nil {
		r, _, _ := purego.SyscallN(fn, args...)
		if r != 0 {
			err = newError(name, r)
		}
	}
	runtime.UnlockOSThread()
	return err
}

// Synchronize waits for all work on the device's primary context.
func (d *Device) Synchronize() error {
	if err := d.valid("Synchronize"); err != nil {
		return err
	}
	return d.call("cuCtxSynchronize", drv.cuCtxSynchronize)
}

// Do runs f on an OS thread where the device's primary context is current,
// for calls into other CUDA libraries (NCCL, cuBLAS) that act on the
// calling thread's current device. The thread is locked to the goroutine
// for f's length only, so f must leave nothing that expects the context to
// stay current after it returns.
func (d *Device) Do(f func() error) error {
	if err := d.valid("Do"); err != nil {
		return err
	}
	defer runtime.UnlockOSThread()
	if err := d.enter(); err != nil {
		return err
	}
	return f()
}
