package cuda

import (
	"fmt"
	"os"
	"strconv"
	"sync"
	"unsafe"
)

// tempPool is a device's memory pool for temporaries (AllocTemp).
type tempPool struct {
	once sync.Once
	h    uintptr // CUmemoryPool; 0 where the device has no pools
	err  error
}

// DefaultTempKeep is how many bytes of freed temporaries a device's pool
// of temporaries keeps reserved by default ($STRIDEKIT_TEMP_KEEP sets
// another number of bytes).
const DefaultTempKeep = 1 << 30

// memPoolAttrReleaseThreshold is CU_MEMPOOL_ATTR_RELEASE_THRESHOLD.
const memPoolAttrReleaseThreshold = 4

// AllocTemp is Alloc for temporaries that a program makes and frees again
// and again (a copy's staging images): stream-ordered on s, from a pool of
// the device's own that keeps up to DefaultTempKeep bytes of freed memory
// reserved. The device's default pool, which Alloc draws from, releases
// all freed memory at every synchronisation (its release threshold is 0),
// so a temporary allocated after each synchronisation is mapped anew each
// time, which for hundreds of MiB costs about as much as a copy of them.
// Where the device has no memory pools it is Alloc.
func (d *Device) AllocTemp(size int, s *Stream) (*Buffer, error) {
	if err := d.valid("AllocTemp"); err != nil {
		return nil, err
	}
	pool, err := d.tempPool()
	if err != nil {
		return nil, err
	}
	if pool == 0 || size <= 0 {
		return d.Alloc(size, s)
	}
	b := &Buffer{size: size, kind: MemoryDevice, dev: d, stream: s}
	h, err := s.acquire()
	if err != nil {
		return nil, err
	}
	err = d.call("cuMemAllocFromPoolAsync", drv.cuMemAllocFromPoolAsync, uintptr(unsafe.Pointer(&b.ptr)), uintptr(size), pool, h)
	s.release()
	if err != nil {
		return nil, err
	}
	b.async, b.free = true, freeAsync
	return b, nil
}

// tempPool returns the device's pool of temporaries, made at the first
// call (0 where the device or driver has no memory pools).
func (d *Device) tempPool() (uintptr, error) {
	t := &d.temp
	t.once.Do(func() {
		if !d.memPools || drv.cuMemPoolCreate == 0 || drv.cuMemPoolSetAttribute == 0 || drv.cuMemAllocFromPoolAsync == 0 {
			return
		}
		// CUmemPoolProps: pinned device memory of this device, the rest
		// zero (the struct has grown over CUDA versions; zeros are its
		// defaults in every one).
		props := new([128]byte)
		*(*int32)(unsafe.Pointer(&props[0])) = 1 // CU_MEM_ALLOCATION_TYPE_PINNED
		*(*int32)(unsafe.Pointer(&props[8])) = 1 // CU_MEM_LOCATION_TYPE_DEVICE
		*(*int32)(unsafe.Pointer(&props[12])) = int32(d.ordinal)
		var h uintptr
		if t.err = d.call("cuMemPoolCreate", drv.cuMemPoolCreate, uintptr(unsafe.Pointer(&h)), uintptr(unsafe.Pointer(props))); t.err != nil {
			return
		}
		keep := new(uint64)
		*keep, t.err = tempKeep(os.Getenv)
		if t.err == nil {
			t.err = d.call("cuMemPoolSetAttribute", drv.cuMemPoolSetAttribute, h, memPoolAttrReleaseThreshold, uintptr(unsafe.Pointer(keep)))
		}
		t.h = h
	})
	return t.h, t.err
}

// tempKeep returns the release threshold of the pools of temporaries:
// $STRIDEKIT_TEMP_KEEP bytes, else DefaultTempKeep.
func tempKeep(getenv func(string) string) (uint64, error) {
	v := getenv("STRIDEKIT_TEMP_KEEP")
	if v == "" {
		return DefaultTempKeep, nil
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("cuda: STRIDEKIT_TEMP_KEEP=%q: not a number of bytes: %w", v, ErrInvalidValue)
	}
	return n, nil
}
