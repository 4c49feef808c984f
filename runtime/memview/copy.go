package memview

import (
	"errors"
	"fmt"

	"github.com/stridekit/stridekit/kernels"
	"github.com/stridekit/stridekit/layout"
	"github.com/stridekit/stridekit/runtime/cuda"
	"github.com/stridekit/stridekit/runtime/hostcopy"
)

// CopyOption configures one copy.
type CopyOption func(*copyConfig)

type copyConfig struct {
	alloc    Allocator
	peer     *cuda.Stream // PeerStream's
	blocking int8         // 0: the path's default; 1: wait; -1: return once queued
}

// Blocking sets whether the copy returns only when the data has arrived
// (true) or once the work is queued on the stream (false). By default a
// device-to-device copy returns once queued and a copy to or from host
// memory returns when the data has arrived, as cuda.core documents.
// Blocking(false) on a host transfer is honoured when the host side is
// pinned memory and gap-free (moved by one DMA): the host memory must then
// stay untouched until the stream reaches the copy. Copies that stage
// through pinned buffers (pageable host memory, host views with gaps or
// broadcast dims) gather and scatter on the CPU and so always return when
// done; host-to-host copies run on the CPU and always block.
func Blocking(b bool) CopyOption {
	return func(c *copyConfig) {
		c.blocking = -1
		if b {
			c.blocking = 1
		}
	}
}

// WithAllocator makes the copy take its temporaries (device buffers, and
// pinned staging buffers for host transfers) from a instead of the default
// (cuda.Device.Alloc, stream-ordered where the device has memory pools, and
// a process-wide pool of pinned staging buffers).
func WithAllocator(a Allocator) CopyOption { return func(c *copyConfig) { c.alloc = a } }

// Allocator provides a copy's temporaries. Buffers are given back with
// Close: device buffers right after the work that uses them is queued on s
// (so they must be stream-ordered on s, or the allocator must delay their
// reuse), staging buffers once the copy is done with them.
type Allocator interface {
	// AllocDevice returns size bytes of device memory on dev usable on s,
	// aligned to 16 bytes at least.
	AllocDevice(dev *cuda.Device, size int, s *cuda.Stream) (*cuda.Buffer, error)
	// AllocHost returns size bytes of pinned host memory for dev's copies.
	AllocHost(dev *cuda.Device, size int) (*cuda.Buffer, error)
}

// CopyFrom copies every element of src into the element of v at the same
// index: v ← src. src must have v's shape or broadcast to it (NumPy's
// rules), and the same dtype (there are no conversions). Either view may be
// on the host (pageable or pinned) or on a device; device memory involved
// needs a stream of that device, on which the work is queued (host-to-host
// copies run on the CPU and take a nil stream; given one, they first wait
// for it). See Blocking for when it returns.
//
// It fails, with v unchanged, when v is read-only (ErrReadOnly), the
// dtypes differ (ErrDType), the shapes do not broadcast (layout.ErrShape),
// v's elements overlap (layout.ErrOverlappingDst), the views are on two
// devices of no one host (ErrDevice), a view or its buffer is closed (ErrClosed), or a
// needed stream is nil or of another device (ErrNilStream, ErrDevice);
// every error names both views. When src and v share memory, the result is
// that of copying from a snapshot of src (src is staged through a
// temporary); copying a view onto itself does nothing. A failure after data
// started moving wraps ErrIncomplete.
func (v *StridedMemoryView) CopyFrom(src *StridedMemoryView, s *cuda.Stream, opts ...CopyOption) error {
	if err := checkCopy(v, src); err != nil {
		return err
	}
	if err := streamFits(v, src, s); err != nil {
		return fmt.Errorf("memview: copy %v → %v: %w", src, v, err)
	}
	var cfg copyConfig
	if len(opts) > 0 {
		cfg = applyOptions(opts) // apart, so that cfg stays on the stack
	}
	path, b, err := bindingOf(v, src, s)
	if err == nil {
		err = run(v, src, path, b, s, cfg)
	}
	if err != nil {
		return fmt.Errorf("memview: copy %v → %v: %w", src, v, err)
	}
	return nil
}

// bindingOf returns the path of a copy from src into dst on stream s and,
// for the paths that move data through a device, its binding (cached: see
// bindingFor). s matters only to a peer copy, whose kernel runs on s's
// device (nil: the source's).
func bindingOf(dst, src *StridedMemoryView, s *cuda.Stream) (Path, *binding, error) {
	path, err := route(dst, src)
	if err != nil || path == PathHost || path == PathSelf {
		return path, nil, err
	}
	da, sa := aligns(dst, src, path)
	b, err := bindingFor(dst, src, path, da, sa, execDevice(dst, src, path, s))
	return path, b, err
}

// aligns returns the alignments of the lowest bytes the device copy of a
// copy from src into dst on path runs between: the views' own, or 16 for
// a device temporary (the host view's image, or a snapshot of an
// overlapping src), which allocDevice guarantees.
func aligns(dst, src *StridedMemoryView, path Path) (int, int) {
	switch path {
	case PathDevice, PathPeer:
		if overlaps(dst, src) {
			return kernels.PtrAlign(dst.low), layout.MaxVectorBytes
		}
		return kernels.PtrAlign(dst.low), kernels.PtrAlign(src.low)
	case PathHostToDevice:
		return kernels.PtrAlign(dst.low), layout.MaxVectorBytes
	}
	return layout.MaxVectorBytes, kernels.PtrAlign(src.low)
}

// run performs the copy from src into dst on path with binding b (nil for
// PathHost and PathSelf), holding both views' buffers while it queues work
// on them.
func run(dst, src *StridedMemoryView, path Path, b *binding, s *cuda.Stream, cfg copyConfig) error {
	switch path {
	case PathSelf:
		return checkStream(s, dst.dev)
	case PathHost:
	case PathPeer:
		if err := checkPeerStreams(dst, src, s, cfg); err != nil {
			return err
		}
	default:
		if err := checkStream(s, b.key.dev); err != nil {
			return err
		}
	}
	if err := acquire(dst, src); err != nil {
		return err
	}
	defer release(dst, src)
	switch path {
	case PathHost:
		return hostToHost(dst, src, s)
	case PathDevice:
		return deviceToDevice(dst, src, b, s, cfg)
	case PathHostToDevice:
		return hostToDevice(dst, src, b, s, cfg)
	case PathPeer:
		return peerCopy(dst, src, b, s, cfg)
	}
	return deviceToHost(dst, src, b, s, cfg)
}

func applyOptions(opts []CopyOption) copyConfig {
	c := new(copyConfig)
	for _, o := range opts {
		if o != nil {
			o(c)
		}
	}
	return *c
}

// CopyTo copies v into dst: dst.CopyFrom(v, s, opts...).
func (v *StridedMemoryView) CopyTo(dst *StridedMemoryView, s *cuda.Stream, opts ...CopyOption) error {
	if dst == nil {
		return fmt.Errorf("%w: CopyTo a nil view", ErrNilView)
	}
	return dst.CopyFrom(v, s, opts...)
}

// route returns the path of a copy from src into dst, by where the two
// views live: the one rule CopyFrom and Explain share.
func route(dst, src *StridedMemoryView) (Path, error) {
	dd, sd := dst.onDevice(), src.onDevice()
	switch {
	case !dd && !sd:
		return PathHost, nil
	case dd && sd && dst.dev != src.dev:
		return PathPeer, nil
	case dd && sd && dst.ptr == src.ptr && dst.l.Equal(src.l):
		return PathSelf, nil
	case dd && sd:
		return PathDevice, nil
	case dd:
		return PathHostToDevice, nil
	}
	return PathDeviceToHost, nil
}

// onDevice reports whether the view's memory is served by device kernels:
// device and managed memory. Host memory, pinned included, is moved by DMA
// and the CPU.
func (v *StridedMemoryView) onDevice() bool {
	return v.kind == cuda.MemoryDevice || v.kind == cuda.MemoryManaged
}

// checkCopy checks what involves both views; everything else was checked
// when they were made.
func checkCopy(dst, src *StridedMemoryView) error {
	switch {
	case dst == nil || src == nil:
		return fmt.Errorf("%w: copy %v → %v", ErrNilView, src, dst)
	case dst.closed():
		return fmt.Errorf("memview: copy %v → %v: dst: %w", src, dst, ErrClosed)
	case src.closed():
		return fmt.Errorf("memview: copy %v → %v: src: %w", src, dst, ErrClosed)
	case dst.readOnly:
		return fmt.Errorf("memview: copy %v → %v: %w", src, dst, ErrReadOnly)
	case dst.dt != src.dt:
		return fmt.Errorf("memview: copy %v → %v: %w: %v into %v", src, dst, ErrDType, src.dt, dst.dt)
	case !dst.unique:
		return fmt.Errorf("memview: copy %v → %v: %w: dst has two indices at one element", src, dst, layout.ErrOverlappingDst)
	}
	return nil
}

// streamFits checks, before anything is bound, that a copy involving
// device memory has a stream, and that one between two devices has a
// stream of either (binding it enables peer access between them).
func streamFits(dst, src *StridedMemoryView, s *cuda.Stream) error {
	dd, sd := dst.onDevice(), src.onDevice()
	switch {
	case s == nil && (dd || sd):
		dev := dst.dev
		if !dd {
			dev = src.dev
		}
		return checkStream(nil, dev)
	case dd && sd && dst.dev != src.dev && s.Device() != dst.dev && s.Device() != src.dev:
		return fmt.Errorf("%w: stream of %v for a copy from %v to %v (a stream of either runs it)", ErrDevice, s.Device(), src.dev, dst.dev)
	}
	return nil
}

// checkStream checks that s is a stream of dev.
func checkStream(s *cuda.Stream, dev *cuda.Device) error {
	if s == nil {
		return fmt.Errorf("%w: a copy involving %v memory needs one of its streams", ErrNilStream, dev)
	}
	if s.Device() != dev {
		return fmt.Errorf("%w: stream of %v for memory on %v", ErrDevice, s.Device(), dev)
	}
	return nil
}

// overlaps reports whether the spans of two views share a byte.
func overlaps(a, b *StridedMemoryView) bool {
	return a.span > 0 && b.span > 0 && a.low < b.low+uintptr(b.span) && b.low < a.low+uintptr(a.span)
}

// Overlaps reports whether the byte spans of v and o share a byte (the
// bytes from each view's lowest to its highest, gaps included): what a
// caller that runs work on both at once, as resharding does, must know.
// (Addresses are unified: views of two devices share none.)
func (v *StridedMemoryView) Overlaps(o *StridedMemoryView) bool {
	return v != nil && o != nil && overlaps(v, o)
}

// deviceToDevice queues the device copy b.k from src into dst, after a
// snapshot of src's span into a temporary when the views overlap.
func deviceToDevice(dst, src *StridedMemoryView, b *binding, s *cuda.Stream, cfg copyConfig) error {
	srcLow := cuda.DevicePtr(src.low)
	if overlaps(dst, src) {
		tmp, err := allocDevice(cfg, b.key.dev, int(src.span), s)
		if err != nil {
			return err
		}
		defer tmp.Close()
		if err := b.key.dev.MemcpyAsync(tmp.Ptr(), srcLow, int(src.span), s); err != nil {
			return err
		}
		srcLow = tmp.Ptr()
	}
	if err := b.k.Enqueue(s, cuda.DevicePtr(dst.low), srcLow); err != nil {
		return err
	}
	if cfg.blocking > 0 {
		return incomplete(s.Synchronize())
	}
	return nil
}

func hostToHost(dst, src *StridedMemoryView, s *cuda.Stream) error {
	if s != nil {
		// Pinned memory may have copies queued on s: run after them.
		if err := s.Synchronize(); err != nil {
			return err
		}
	}
	return hostcopy.Copy(dst.hostBytes(), dst.l, src.hostBytes(), src.l)
}

// allocTemp is allocDevice for temporaries as large as a copy's data
// (the peer pipeline's images): without the copy's Allocator, from the
// device's pool of temporaries (cuda.Device.AllocTemp), which keeps their
// memory mapped from one synchronisation to the next.
func allocTemp(cfg copyConfig, dev *cuda.Device, size int, s *cuda.Stream) (*cuda.Buffer, error) {
	if cfg.alloc == nil {
		return dev.AllocTemp(max(size, 1), s)
	}
	return allocDevice(cfg, dev, size, s)
}

// allocDevice returns a device temporary of size bytes, aligned to 16
// bytes at least (the device copies of a binding are planned with that
// alignment for temporaries): from the copy's Allocator if it has one,
// else dev.Alloc (256-byte aligned). A buffer the allocator gets wrong is
// closed and reported.
func allocDevice(cfg copyConfig, dev *cuda.Device, size int, s *cuda.Stream) (*cuda.Buffer, error) {
	size = max(size, 1)
	if cfg.alloc == nil {
		return dev.Alloc(size, s)
	}
	b, err := cfg.alloc.AllocDevice(dev, size, s)
	if err == nil && (b == nil || b.Size() < size || b.Kind() != cuda.MemoryDevice && b.Kind() != cuda.MemoryManaged ||
		b.Device() != dev || kernels.PtrAlign(uintptr(b.Ptr())) < layout.MaxVectorBytes) {
		err = fmt.Errorf("memview: allocator gave %v for %d bytes of 16-byte aligned device memory on %v: %w", b, size, dev, cuda.ErrInvalidValue)
		if b != nil {
			b.Close()
		}
		return nil, err
	}
	return b, err
}

// incomplete marks err as a failure after data started moving.
func incomplete(err error) error {
	if err == nil || errors.Is(err, ErrIncomplete) {
		return err
	}
	return fmt.Errorf("%w: %w", ErrIncomplete, err)
}
