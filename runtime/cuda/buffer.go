package cuda

import (
	"fmt"
	"runtime"
	"unsafe"

	"github.com/ebitengine/purego"
)

// DevicePtr is an address in CUDA's unified address space: device, managed
// or page-locked host memory (a CUdeviceptr).
type DevicePtr uintptr

// MemoryKind says what memory a pointer points to, as the driver reports it.
type MemoryKind int

const (
	// MemoryPageable is ordinary host memory the driver knows nothing of.
	MemoryPageable MemoryKind = iota
	// MemoryHost is page-locked host memory, allocated by CUDA (AllocHost)
	// or registered with it.
	MemoryHost
	// MemoryDevice is device memory.
	MemoryDevice
	// MemoryManaged is managed (unified) memory, migrating between host and
	// device.
	MemoryManaged
)

func (k MemoryKind) String() string {
	switch k {
	case MemoryPageable:
		return "pageable"
	case MemoryHost:
		return "host"
	case MemoryDevice:
		return "device"
	case MemoryManaged:
		return "managed"
	}
	return fmt.Sprintf("MemoryKind(%d)", int(k))
}

// HostAccessible reports whether the CPU may read and write the memory.
func (k MemoryKind) HostAccessible() bool { return k != MemoryDevice }

// PointerInfo is what the driver knows of a pointer.
type PointerInfo struct {
	Kind MemoryKind
	// Device is the ordinal of the device the memory belongs to. For
	// page-locked host memory it is the driver's value, read as a signed int:
	// driver 580 reports the allocating device's ordinal, older drivers -2
	// (CU_DEVICE_INVALID, never 4294967294). For pageable memory it is -1.
	Device int
	// RangeStart and RangeSize delimit the allocation holding the pointer
	// (zero for pageable memory).
	RangeStart DevicePtr
	RangeSize  int
}

// Pointer attribute codes (CUpointer_attribute).
const (
	ptrAttrMemoryType    = 2
	ptrAttrIsManaged     = 8
	ptrAttrDeviceOrdinal = 9
	ptrAttrRangeStart    = 11
	ptrAttrRangeSize     = 12
)

type ptrAttrBlock struct {
	attrs [5]int32
	slots [5]uint64
	data  [5]uintptr
}

// PointerAttributes asks the driver, in one cuPointerGetAttributes call, what
// ptr points to and on which device.
func PointerAttributes(ptr uintptr) (PointerInfo, error) {
	if err := loadDriver(); err != nil {
		return PointerInfo{}, err
	}
	b := new(ptrAttrBlock)
	b.attrs = [5]int32{ptrAttrMemoryType, ptrAttrIsManaged, ptrAttrDeviceOrdinal, ptrAttrRangeStart, ptrAttrRangeSize}
	for i := range b.data {
		b.data[i] = uintptr(unsafe.Pointer(&b.slots[i]))
	}
	r, _, _ := purego.SyscallN(drv.cuPointerGetAttributes, uintptr(len(b.attrs)),
		uintptr(unsafe.Pointer(&b.attrs[0])), uintptr(unsafe.Pointer(&b.data[0])), ptr)
	runtime.KeepAlive(b)
	if err := check("cuPointerGetAttributes", r); err != nil {
		return PointerInfo{}, err
	}
	info := PointerInfo{
		Device:     int(int32(uint32(b.slots[2]))), // -2 must stay -2, not 4294967294
		RangeStart: DevicePtr(b.slots[3]),
		RangeSize:  int(b.slots[4]),
	}
	switch {
	case uint32(b.slots[1]) != 0:
		info.Kind = MemoryManaged
	case uint32(b.slots[0]) == 2: // CU_MEMORYTYPE_DEVICE
		info.Kind = MemoryDevice
	case uint32(b.slots[0]) == 1: // CU_MEMORYTYPE_HOST
		info.Kind = MemoryHost
	default:
		info.Kind = MemoryPageable
		info.Device = -1
	}
	return info, nil
}

// Buffer is a range of memory known to CUDA: allocated here (device, pinned
// host or managed) or wrapped with FromHandle. Close frees what was
// allocated here; it is idempotent, and any use after it returns ErrClosed.
// Its methods are safe for concurrent use, Close included: a copy in
// progress finishes before the memory is freed.
type Buffer struct {
	ptr    DevicePtr
	size   int
	kind   MemoryKind
	dev    *Device
	stream *Stream // stream of a stream-ordered allocation
	async  bool
	free   func(*Buffer) error // nil for wrapped memory
	owner  any                 // guarded by g.mu
	g      guard
}

// Alloc allocates size bytes of device memory. Where the device supports
// memory pools the allocation is stream-ordered on s (cuMemAllocAsync; nil s:
// the legacy default stream): use it on s, or after synchronising with s,
// and Close frees it in the same order on s. Otherwise it is cuMemAlloc_v2.
func (d *Device) Alloc(size int, s *Stream) (*Buffer, error) {
	if err := d.valid("Alloc"); err != nil {
		return nil, err
	}
	if size < 0 {
		return nil, fmt.Errorf("cuda: Alloc(%d): %w", size, ErrInvalidValue)
	}
	b := &Buffer{size: size, kind: MemoryDevice, dev: d, stream: s}
	if size == 0 {
		return b, nil
	}
	if d.memPools {
		h, err := s.acquire()
		if err != nil {
			return nil, err
		}
		err = d.call("cuMemAllocAsync", drv.cuMemAllocAsync, uintptr(unsafe.Pointer(&b.ptr)), uintptr(size), h)
		s.release()
		if err != nil {
			return nil, err
		}
		b.async = true
		b.free = freeAsync
		return b, nil
	}
	if err := d.call("cuMemAlloc_v2", drv.cuMemAlloc, uintptr(unsafe.Pointer(&b.ptr)), uintptr(size)); err != nil {
		return nil, err
	}
	b.free = func(b *Buffer) error { return b.dev.call("cuMemFree_v2", drv.cuMemFree, uintptr(b.ptr)) }
	return b, nil
}

// freeAsync frees a stream-ordered allocation on its stream, or on the
// legacy default stream if that one is closed.
func freeAsync(b *Buffer) error {
	h, err := b.stream.acquire()
	if err != nil {
		return b.dev.call("cuMemFreeAsync", drv.cuMemFreeAsync, uintptr(b.ptr), 0)
	}
	defer b.stream.release()
	return b.dev.call("cuMemFreeAsync", drv.cuMemFreeAsync, uintptr(b.ptr), h)
}

// AllocHost allocates size bytes of page-locked host memory, mapped into
// the device's address space and usable from every context
// (cuMemHostAlloc with PORTABLE|DEVICEMAP). Async copies need such memory.
func (d *Device) AllocHost(size int) (*Buffer, error) {
	if err := d.valid("AllocHost"); err != nil {
		return nil, err
	}
	if size <= 0 {
		return nil, fmt.Errorf("cuda: AllocHost(%d): %w", size, ErrInvalidValue)
	}
	b := &Buffer{size: size, kind: MemoryHost, dev: d}
	var p uintptr
	if err := d.call("cuMemHostAlloc", drv.cuMemHostAlloc, uintptr(unsafe.Pointer(&p)), uintptr(size), 0x1|0x2); err != nil {
		return nil, err
	}
	b.ptr = DevicePtr(p)
	b.free = func(b *Buffer) error { return b.dev.call("cuMemFreeHost", drv.cuMemFreeHost, uintptr(b.ptr)) }
	return b, nil
}

// AllocManaged allocates size bytes of managed memory, accessible from the
// host and every device (cuMemAllocManaged, CU_MEM_ATTACH_GLOBAL).
func (d *Device) AllocManaged(size int) (*Buffer, error) {
	if err := d.valid("AllocManaged"); err != nil {
		return nil, err
	}
	if size <= 0 {
		return nil, fmt.Errorf("cuda: AllocManaged(%d): %w", size, ErrInvalidValue)
	}
	if !d.managed {
		return nil, fmt.Errorf("cuda: AllocManaged on %v: %w", d, ErrNotSupported)
	}
	b := &Buffer{size: size, kind: MemoryManaged, dev: d}
	if err := d.call("cuMemAllocManaged", drv.cuMemAllocManaged, uintptr(unsafe.Pointer(&b.ptr)), uintptr(size), 0x1); err != nil {
		return nil, err
	}
	b.free = func(b *Buffer) error { return b.dev.call("cuMemFree_v2", drv.cuMemFree, uintptr(b.ptr)) }
	return b, nil
}

// FromHandle wraps size bytes of existing memory at ptr, asking the driver
// (PointerAttributes) what it is and on which device. owner, if not nil, is
// kept reachable until Close: pass whatever frees the memory when collected.
// Close frees nothing. Pageable host memory is accepted (Kind
// MemoryPageable, Device nil), as is page-locked host memory the driver
// names no device for; such a buffer has no device to copy with, so
// CopyFromHost and CopyToHost refuse it: use Bytes.
func FromHandle(ptr uintptr, size int, owner any) (*Buffer, error) {
	if size < 0 {
		return nil, fmt.Errorf("cuda: FromHandle size %d: %w", size, ErrInvalidValue)
	}
	info, err := PointerAttributes(ptr)
	if err != nil {
		return nil, err
	}
	if info.RangeSize > 0 && (ptr < uintptr(info.RangeStart) || ptr+uintptr(size) > uintptr(info.RangeStart)+uintptr(info.RangeSize)) {
		return nil, fmt.Errorf("cuda: FromHandle: %d bytes at %#x overrun the allocation [%#x, +%d): %w",
			size, ptr, info.RangeStart, info.RangeSize, ErrInvalidValue)
	}
	b := &Buffer{ptr: DevicePtr(ptr), size: size, kind: info.Kind, owner: owner}
	if info.Device >= 0 {
		if b.dev, err = GetDevice(info.Device); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// Ptr returns the buffer's address (0 after Close, and for a nil Buffer).
func (b *Buffer) Ptr() DevicePtr {
	if b == nil || b.g.closed.Load() {
		return 0
	}
	return b.ptr
}

// Size returns the buffer's size in bytes (0 for a nil Buffer).
func (b *Buffer) Size() int {
	if b == nil {
		return 0
	}
	return b.size
}

// Kind returns what memory the buffer is (MemoryPageable for a nil Buffer,
// which is what the zero Buffer claims).
func (b *Buffer) Kind() MemoryKind {
	if b == nil {
		return MemoryPageable
	}
	return b.kind
}

// Device returns the buffer's device: the one it was allocated on, or for
// wrapped memory the one the driver named (nil for host memory it names
// none for, and for a nil Buffer).
func (b *Buffer) Device() *Device {
	if b == nil {
		return nil
	}
	return b.dev
}

// Owner returns the owner given to FromHandle (nil after Close).
func (b *Buffer) Owner() any {
	if b == nil {
		return nil
	}
	b.g.mu.RLock()
	defer b.g.mu.RUnlock()
	return b.owner
}

// Bytes returns the buffer as a byte slice, for host-accessible memory
// (pinned, managed, pageable). The slice is valid until Close. For managed
// memory, synchronise with the device before touching it.
func (b *Buffer) Bytes() ([]byte, error) {
	if b == nil {
		return nil, errZero("Buffer", "Bytes", "Device.Alloc or FromHandle")
	}
	if b.g.closed.Load() {
		return nil, errClosedBuffer
	}
	if !b.kind.HostAccessible() {
		return nil, fmt.Errorf("cuda: Bytes of %v memory: %w", b.kind, ErrNotSupported)
	}
	if b.size == 0 {
		return nil, nil
	}
	p := uintptr(b.ptr)
	return unsafe.Slice((*byte)(*(*unsafe.Pointer)(unsafe.Pointer(&p))), b.size), nil
}

// Close frees memory allocated here (stream-ordered memory on its stream,
// or on the legacy default stream if that one is closed) once the copies in
// progress have returned, and drops the owner of wrapped memory. Idempotent.
func (b *Buffer) Close() error {
	if b == nil {
		return nil
	}
	return b.g.close(func() error {
		b.owner = nil
		if b.free == nil || b.ptr == 0 {
			return nil
		}
		return b.free(b)
	})
}

// Acquire holds the buffer open until Release: Close waits for it. A
// caller that queues work on the buffer's memory through its address (a
// kernel launch) holds it meanwhile, so the memory cannot be freed under
// the call. It fails with ErrClosed on a closed buffer and does nothing on
// a nil one. Every successful Acquire needs one Release; a goroutine must
// not Acquire a buffer it already holds (a waiting Close would block it).
func (b *Buffer) Acquire() error {
	if b == nil {
		return nil
	}
	if !b.g.acquire() {
		return errClosedBuffer
	}
	return nil
}

// Release ends a hold begun by a successful Acquire (nothing on a nil
// Buffer).
func (b *Buffer) Release() {
	if b != nil {
		b.g.release()
	}
}

// Closed reports whether Close has been called on the buffer (true for a
// nil Buffer, which holds nothing).
func (b *Buffer) Closed() bool { return b == nil || b.g.closed.Load() }

// CopyFromHost copies src into the start of the buffer, synchronously: when
// it returns, the bytes are in device memory, so work queued afterwards on
// any stream sees them. (cuMemcpyHtoD alone returns once pageable memory has
// been staged, before its DMA completes; CopyFromHost then waits for the
// legacy default stream, which carries that DMA.)
func (b *Buffer) CopyFromHost(src []byte) error {
	d, err := b.device("CopyFromHost")
	if err != nil {
		return err
	}
	if len(src) > b.size {
		return fmt.Errorf("cuda: CopyFromHost: %d bytes into %d: %w", len(src), b.size, ErrInvalidValue)
	}
	if !b.g.acquire() {
		return errClosedBuffer
	}
	defer b.g.release()
	if err := d.CopyHtoD(b.ptr, src); err != nil {
		return err
	}
	return d.LegacyStream().Synchronize()
}

// CopyToHost copies the start of the buffer into dst, synchronously.
func (b *Buffer) CopyToHost(dst []byte) error {
	d, err := b.device("CopyToHost")
	if err != nil {
		return err
	}
	if len(dst) > b.size {
		return fmt.Errorf("cuda: CopyToHost: %d bytes from %d: %w", len(dst), b.size, ErrInvalidValue)
	}
	if !b.g.acquire() {
		return errClosedBuffer
	}
	defer b.g.release()
	return d.CopyDtoH(dst, b.ptr)
}

// device returns the device whose context method's driver call runs in, or
// an error naming the buffer's kind when it has none (host memory the
// driver names no device for, a nil or zero Buffer).
func (b *Buffer) device(method string) (*Device, error) {
	if b == nil {
		return nil, errZero("Buffer", method, "Device.Alloc or FromHandle")
	}
	if b.dev == nil {
		return nil, fmt.Errorf("cuda: Buffer.%s: %v buffer of %d bytes at %#x has no device to copy with (use Bytes for host memory): %w",
			method, b.kind, b.size, uintptr(b.ptr), ErrInvalidValue)
	}
	return b.dev, nil
}

// CopyHtoD copies src from host memory to dst, synchronously (cuMemcpyHtoD_v2).
func (d *Device) CopyHtoD(dst DevicePtr, src []byte) error {
	if err := d.valid("CopyHtoD"); err != nil || len(src) == 0 {
		return err
	}
	return d.call("cuMemcpyHtoD_v2", drv.cuMemcpyHtoD, uintptr(dst), uintptr(unsafe.Pointer(&src[0])), uintptr(len(src)))
}

// CopyDtoH copies from src into host memory dst, synchronously (cuMemcpyDtoH_v2).
func (d *Device) CopyDtoH(dst []byte, src DevicePtr) error {
	if err := d.valid("CopyDtoH"); err != nil || len(dst) == 0 {
		return err
	}
	return d.call("cuMemcpyDtoH_v2", drv.cuMemcpyDtoH, uintptr(unsafe.Pointer(&dst[0])), uintptr(src), uintptr(len(dst)))
}

// CopyDtoD copies n bytes between device memory, synchronously with respect
// to the host (cuMemcpyDtoD_v2).
func (d *Device) CopyDtoD(dst, src DevicePtr, n int) error {
	if err := d.checkCount("CopyDtoD", n); err != nil || n == 0 {
		return err
	}
	return d.call("cuMemcpyDtoD_v2", drv.cuMemcpyDtoD, uintptr(dst), uintptr(src), uintptr(n))
}

// Memcpy copies n bytes between any two unified addresses (device, managed
// or page-locked host), synchronously (cuMemcpy).
func (d *Device) Memcpy(dst, src DevicePtr, n int) error {
	if err := d.checkCount("Memcpy", n); err != nil || n == 0 {
		return err
	}
	return d.call("cuMemcpy", drv.cuMemcpy, uintptr(dst), uintptr(src), uintptr(n))
}

// CopyHtoDAsync queues a copy of n bytes from page-locked host memory src to
// dst on stream s (nil: legacy default).
func (d *Device) CopyHtoDAsync(dst, src DevicePtr, n int, s *Stream) error {
	return d.async("CopyHtoDAsync", "cuMemcpyHtoDAsync_v2", drv.cuMemcpyHtoDAsync, uintptr(dst), uintptr(src), n, s)
}

// CopyDtoHAsync queues a copy of n bytes from src to page-locked host memory
// dst on stream s (nil: legacy default).
func (d *Device) CopyDtoHAsync(dst, src DevicePtr, n int, s *Stream) error {
	return d.async("CopyDtoHAsync", "cuMemcpyDtoHAsync_v2", drv.cuMemcpyDtoHAsync, uintptr(dst), uintptr(src), n, s)
}

// CopyDtoDAsync queues a copy of n bytes between device memory on stream s
// (nil: legacy default).
func (d *Device) CopyDtoDAsync(dst, src DevicePtr, n int, s *Stream) error {
	return d.async("CopyDtoDAsync", "cuMemcpyDtoDAsync_v2", drv.cuMemcpyDtoDAsync, uintptr(dst), uintptr(src), n, s)
}

// MemcpyAsync queues a copy of n bytes between any two unified addresses on
// stream s (nil: legacy default) (cuMemcpyAsync).
func (d *Device) MemcpyAsync(dst, src DevicePtr, n int, s *Stream) error {
	return d.async("MemcpyAsync", "cuMemcpyAsync", drv.cuMemcpyAsync, uintptr(dst), uintptr(src), n, s)
}

// MemsetAsync queues setting n bytes at dst to v on stream s (nil: legacy
// default).
func (d *Device) MemsetAsync(dst DevicePtr, v byte, n int, s *Stream) error {
	return d.async("MemsetAsync", "cuMemsetD8Async", drv.cuMemsetD8Async, uintptr(dst), uintptr(v), n, s)
}

// checkCount checks the device and a byte count n for method.
func (d *Device) checkCount(method string, n int) error {
	if err := d.valid(method); err != nil {
		return err
	}
	if n < 0 {
		return fmt.Errorf("cuda: Device.%s: n = %d: %w", method, n, ErrInvalidValue)
	}
	return nil
}

// async makes the stream-ordered call fn(a, b, n, stream) for method,
// holding s open for the call. A count of 0 checks the arguments and queues
// nothing.
func (d *Device) async(method, name string, fn, a, b uintptr, n int, s *Stream) error {
	if err := d.checkCount(method, n); err != nil {
		return err
	}
	h, err := s.acquire()
	if err != nil || n == 0 {
		if err == nil {
			s.release()
		}
		return err
	}
	defer s.release()
	return d.call(name, fn, a, b, uintptr(n), h)
}
