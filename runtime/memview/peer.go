package memview

import (
	"errors"
	"fmt"
	"sync"

	"github.com/stridekit/stridekit/kernels"
	"github.com/stridekit/stridekit/layout"
	"github.com/stridekit/stridekit/runtime/cuda"
)

// How a copy between views on two devices of one host moves (PathPeer):
//
//   - With peer access (NVLink or PCIe), one kernel on the device of the
//     copy's stream reads the source and writes the destination, one side
//     of it remote: a stream of the source's device pushes (reads local,
//     writes remote), one of the destination's pulls. Peer access is
//     enabled once per device pair, at bind time.
//   - Without it, the source is packed into its compact image on its own
//     device (no kernel when the source is that image already), the image
//     crosses by cuMemcpyPeerAsync, and a kernel on the destination's
//     device unpacks it (none when the destination is the image).
//
// Work on the device the copy's stream is not on goes to that device's
// side stream, ordered after the copy's stream by events and the copy's
// stream after it, so the copy is ordered on the caller's stream as any
// other; PeerStream orders a stream of the other device as well.

// PeerStream orders a copy between views on two devices (PathPeer) on o,
// a stream of the device the copy's stream is not on, as well: the copy
// starts after the work queued on o so far (the source's producer, say)
// and work queued on o later starts after the copy. Other copies ignore
// it.
func PeerStream(o *cuda.Stream) CopyOption { return func(c *copyConfig) { c.peer = o } }

// execDevice returns the device a copy on path p runs its kernel on: for
// a peer copy the device of s when it is one of the two views' (else the
// source's: a push), otherwise the device the views share.
func execDevice(dst, src *StridedMemoryView, p Path, s *cuda.Stream) *cuda.Device {
	if p == PathPeer {
		if s != nil && s.Device() == dst.dev {
			return dst.dev
		}
		return src.dev
	}
	if dst.dev != nil {
		return dst.dev
	}
	return src.dev
}

// peerStage is how a peer copy without peer access moves: the compact
// image of the source, the kernel that packs it on the source's device
// (unless the source is the image) and b.k unpacking it on the
// destination's (unless the destination is the image).
type peerStage struct {
	pack                     kernels.Bound
	span                     int64
	packDirect, unpackDirect bool
}

// forceStaged makes bindPeer stage even where peer access exists (tests).
var forceStaged bool

// bindPeer binds the copy src → dst between two devices (see above).
func (b *binding) bindPeer(dst, src *StridedMemoryView) error {
	dev, other := b.key.dev, b.key.peer
	b.k = &b.kb
	err := errPeerStaged
	if !forceStaged {
		err = dev.EnablePeerAccess(other)
	}
	switch {
	case err == nil:
		return kernels.BindInto(b.k, dev, dst.l, src.l, int(b.key.dstAlign), int(b.key.srcAlign))
	case !errors.Is(err, cuda.ErrNotSupported):
		return err
	}
	c, err := compact(src.l)
	if err != nil {
		return err
	}
	st := &peerStage{span: c.RequiredSizeInBytes()}
	if err := kernels.BindInto(&st.pack, src.dev, c, src.l, layout.MaxVectorBytes, int(b.key.srcAlign)); err != nil {
		return err
	}
	if err := kernels.BindInto(b.k, dst.dev, dst.l, c, int(b.key.dstAlign), layout.MaxVectorBytes); err != nil {
		return err
	}
	st.packDirect = whole(&st.pack.Plan, st.span, false)
	st.unpackDirect = whole(&b.k.Plan, st.span, true)
	b.stg = st
	return nil
}

// errPeerStaged stands for "no peer access" when forceStaged is set.
var errPeerStaged = fmt.Errorf("memview: staged peer copy forced: %w", cuda.ErrNotSupported)

// whole reports whether plan p is a memcpy of a whole image of span bytes
// starting at the image view's lowest byte (its src side when toView, else
// its dst side): the image is then the view's own bytes.
func whole(p *layout.Plan, span int64, toView bool) bool {
	off := p.DstOffset
	if toView {
		off = p.SrcOffset
	}
	return p.Sig.Class == layout.ClassMemcpy && off == 0 && p.Bytes == span
}

// checkPeerStreams checks the streams of a peer copy: s on one of the two
// devices, and PeerStream's, if given, on the other.
func checkPeerStreams(dst, src *StridedMemoryView, b *binding, s *cuda.Stream, cfg copyConfig) error {
	if err := checkStream(s, b.key.dev); err != nil {
		return fmt.Errorf("%w (a copy from %v to %v runs on a stream of either)", err, src.dev, dst.dev)
	}
	if o := cfg.peer; o != nil && o.Device() != b.key.peer {
		return fmt.Errorf("%w: PeerStream of %v for a copy on %v between %v and %v", ErrDevice, o.Device(), s.Device(), src.dev, dst.dev)
	}
	return nil
}

// peerCopy queues the peer copy bound by b on s (see above).
func peerCopy(dst, src *StridedMemoryView, b *binding, s *cuda.Stream, cfg copyConfig) error {
	if cfg.peer != nil {
		if err := join(s, cfg.peer); err != nil {
			return err
		}
	}
	var err error
	if b.stg == nil {
		err = b.k.Enqueue(s, cuda.DevicePtr(dst.low), cuda.DevicePtr(src.low))
	} else {
		err = peerStaged(dst, src, b, s, cfg)
	}
	if err == nil && cfg.peer != nil {
		err = join(cfg.peer, s)
	}
	if err == nil && cfg.blocking > 0 {
		err = s.Synchronize()
	}
	return incomplete(err)
}

// peerStaged queues the staged peer copy: pack on the source's stream ss,
// move and unpack on the destination's stream ds (each s where s is that
// device's, else its side stream), s last waiting for both.
func peerStaged(dst, src *StridedMemoryView, b *binding, s *cuda.Stream, cfg copyConfig) error {
	st := b.stg
	ss, err := follow(src.dev, s)
	if err != nil {
		return err
	}
	img := cuda.DevicePtr(src.low) + cuda.DevicePtr(st.pack.Plan.SrcOffset)
	var tmp *cuda.Buffer
	if !st.packDirect {
		if tmp, err = allocDevice(cfg, src.dev, int(st.span), ss); err != nil {
			return err
		}
		img = tmp.Ptr()
		if err = st.pack.Enqueue(ss, img, cuda.DevicePtr(src.low)); err != nil {
			return errors.Join(err, tmp.Close())
		}
	}
	ds, err := follow(dst.dev, s)
	if err == nil {
		err = join(ds, ss) // after the pack
	}
	if err == nil {
		err = moveUnpack(dst, b, ds, img, src.dev, cfg)
	}
	if tmp != nil {
		err = errors.Join(err, join(ss, ds), tmp.Close()) // freed after the move
	}
	if err == nil && ds != s {
		err = join(s, ds)
	}
	return err
}

// moveUnpack queues, on ds (the destination device's), the move of the
// image at img on srcDev into the destination device and its unpacking
// into dst.
func moveUnpack(dst *StridedMemoryView, b *binding, ds *cuda.Stream, img cuda.DevicePtr, srcDev *cuda.Device, cfg copyConfig) error {
	st, dev := b.stg, dst.dev
	if st.unpackDirect {
		to := cuda.DevicePtr(dst.low) + cuda.DevicePtr(b.k.Plan.DstOffset)
		return dev.MemcpyPeerAsync(to, img, srcDev, int(st.span), ds)
	}
	tmp, err := allocDevice(cfg, dev, int(st.span), ds)
	if err != nil {
		return err
	}
	err = dev.MemcpyPeerAsync(tmp.Ptr(), img, srcDev, int(st.span), ds)
	if err == nil {
		err = b.k.Enqueue(ds, cuda.DevicePtr(dst.low), tmp.Ptr())
	}
	return errors.Join(err, tmp.Close())
}

// follow returns a stream of dev whose next work starts after the work
// queued so far on s: s itself when it is dev's, else dev's side stream,
// made to wait for s.
func follow(dev *cuda.Device, s *cuda.Stream) (*cuda.Stream, error) {
	if s.Device() == dev {
		return s, nil
	}
	o, err := sideStream(dev)
	if err == nil {
		err = join(o, s)
	}
	return o, err
}

// join makes work queued on s later start after the work queued on o so
// far (nothing when they are one stream).
func join(s, o *cuda.Stream) error {
	if s == o {
		return nil
	}
	e, err := getEvent(o.Device())
	if err != nil {
		return err
	}
	if err = e.Record(o); err == nil {
		err = s.WaitEvent(e)
	}
	putEvent(o.Device(), e)
	return err
}

// side holds, per device, the stream peer copies queue their work on that
// device on when the copy's stream is the other device's, and a free list
// of events that order it.
var side sync.Map // *cuda.Device → *sideState

type sideState struct {
	once   sync.Once
	s      *cuda.Stream
	err    error
	events chan *cuda.Event
}

func sideOf(dev *cuda.Device) *sideState {
	if v, ok := side.Load(dev); ok {
		return v.(*sideState)
	}
	v, _ := side.LoadOrStore(dev, &sideState{events: make(chan *cuda.Event, 64)})
	return v.(*sideState)
}

// sideStream returns dev's side stream, made at the first call.
func sideStream(dev *cuda.Device) (*cuda.Stream, error) {
	st := sideOf(dev)
	st.once.Do(func() { st.s, st.err = dev.NewStream(true) })
	return st.s, st.err
}

// getEvent returns an event of dev without timing, from its free list or
// new. An event may be recorded again once a wait on it is queued: the
// wait keeps the work the event captured then.
func getEvent(dev *cuda.Device) (*cuda.Event, error) {
	select {
	case e := <-sideOf(dev).events:
		return e, nil
	default:
		return dev.NewEvent(false)
	}
}

// putEvent gives e back to dev's free list, or closes it when the list is
// full.
func putEvent(dev *cuda.Device, e *cuda.Event) {
	select {
	case sideOf(dev).events <- e:
	default:
		e.Close()
	}
}
