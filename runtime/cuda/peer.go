package cuda

import (
	"fmt"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"
)

// errPeerAlreadyEnabled is CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED: the
// access asked for is there, which is all EnablePeerAccess promises.
const errPeerAlreadyEnabled = 704

// peers records, per ordered device pair, that peer access was enabled.
var peers sync.Map // [2]*Device → struct{}

// CanAccessPeer reports whether kernels and copies on d can address p's
// memory directly (over NVLink or PCIe) once EnablePeerAccess(p) is called
// (cuDeviceCanAccessPeer). A device and itself: true.
func (d *Device) CanAccessPeer(p *Device) (bool, error) {
	if err := d.peerArgs("CanAccessPeer", p); err != nil || d == p {
		return err == nil, err
	}
	var can int32
	r, _, _ := purego.SyscallN(drv.cuDeviceCanAccessPeer, uintptr(unsafe.Pointer(&can)), uintptr(d.handle), uintptr(p.handle))
	if err := check("cuDeviceCanAccessPeer", r); err != nil {
		return false, err
	}
	return can != 0, nil
}

// EnablePeerAccess lets work queued on d address p's memory
// (cuCtxEnablePeerAccess in d's primary context, and access to p's default
// memory pool, which Alloc draws from), once per ordered pair and process:
// later calls return at once. It fails with ErrNotSupported where
// the pair has no peer path (see CanAccessPeer). Access is one way: work on
// p reaching d's memory needs p.EnablePeerAccess(d).
func (d *Device) EnablePeerAccess(p *Device) error {
	if err := d.peerArgs("EnablePeerAccess", p); err != nil || d == p {
		return err
	}
	key := [2]*Device{d, p}
	if _, ok := peers.Load(key); ok {
		return nil
	}
	can, err := d.CanAccessPeer(p)
	if err != nil {
		return err
	}
	if !can {
		return fmt.Errorf("cuda: %v cannot access %v: %w", d, p, ErrNotSupported)
	}
	err = d.call("cuCtxEnablePeerAccess", drv.cuCtxEnablePeerAccess, p.ctx, 0)
	if e, ok := err.(*Error); ok && e.Code == errPeerAlreadyEnabled {
		err = nil
	}
	if err == nil {
		err = d.poolAccess(p)
	}
	if err == nil {
		peers.Store(key, struct{}{})
	}
	return err
}

// memAccessDesc is CUmemAccessDesc: a location (CU_MEM_LOCATION_TYPE_DEVICE,
// the device ordinal) and its access flags.
type memAccessDesc struct {
	locType, id, flags int32
}

// poolAccess lets d read and write what p's memory pools allocate
// (cuMemPoolSetAccess): its default pool (Alloc) and its pool of
// temporaries (AllocTemp, made here if need be). Peer access of contexts
// does not reach stream-ordered allocations; without it a kernel of d
// faults on them, and a copy between them is staged by the driver at a
// fraction of the link's bandwidth.
func (d *Device) poolAccess(p *Device) error {
	if !p.memPools || drv.cuMemPoolSetAccess == 0 {
		return nil
	}
	var pools [2]uintptr
	if drv.cuDeviceGetDefaultMemPool != 0 {
		if err := p.call("cuDeviceGetDefaultMemPool", drv.cuDeviceGetDefaultMemPool, uintptr(unsafe.Pointer(&pools[0])), uintptr(p.handle)); err != nil {
			return err
		}
	}
	var err error
	if pools[1], err = p.tempPool(); err != nil {
		return err
	}
	desc := &memAccessDesc{locType: 1, id: int32(d.ordinal), flags: 3} // device; read and write
	for _, pool := range pools {
		if pool == 0 {
			continue
		}
		if err := p.call("cuMemPoolSetAccess", drv.cuMemPoolSetAccess, pool, uintptr(unsafe.Pointer(desc)), 1); err != nil {
			return err
		}
	}
	return nil
}

// MemcpyPeerAsync queues a copy of n bytes from src in srcDev's memory to
// dst in d's memory on stream s (cuMemcpyPeerAsync): over the peer link
// where there is one, else staged by the driver. The baseline that
// cross-device copies are measured against.
func (d *Device) MemcpyPeerAsync(dst DevicePtr, src DevicePtr, srcDev *Device, n int, s *Stream) error {
	if err := d.peerArgs("MemcpyPeerAsync", srcDev); err != nil {
		return err
	}
	if err := d.checkCount("MemcpyPeerAsync", n); err != nil {
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
	return d.call("cuMemcpyPeerAsync", drv.cuMemcpyPeerAsync, uintptr(dst), d.ctx, uintptr(src), srcDev.ctx, uintptr(n), h)
}

// peerArgs checks d and p for method, and that the driver has the peer
// entry points.
func (d *Device) peerArgs(method string, p *Device) error {
	if err := d.valid(method); err != nil {
		return err
	}
	if err := p.valid(method); err != nil {
		return fmt.Errorf("cuda: Device.%s: peer: %w", method, err)
	}
	if drv.cuDeviceCanAccessPeer == 0 || drv.cuCtxEnablePeerAccess == 0 || drv.cuMemcpyPeerAsync == 0 {
		return fmt.Errorf("cuda: Device.%s: %s has no peer entry points: %w", method, drv.path, ErrNotSupported)
	}
	return nil
}
