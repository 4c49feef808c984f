package nccl

import (
	"context"
	"fmt"
	"math"

	"github.com/ebitengine/purego"
	"github.com/stridekit/stridekit/layout"
	"github.com/stridekit/stridekit/runtime/cuda"
	"github.com/stridekit/stridekit/runtime/dist"
	"github.com/stridekit/stridekit/runtime/memview"
)

// Alloc returns n bytes of new device memory of the communicator's device
// as a contiguous 1-D uint8 view (dist.Transport's exchange buffer). The
// memory is allocated stream-ordered on s where the device has memory
// pools (nil s: the legacy default stream; see cuda.Device.Alloc) and is
// not zeroed. The view owns it: closing the view (or any view derived from
// it) frees it, in stream order on s. A negative n, or one more than the process can address, is
// an ErrBuffer error; a stream of another device ErrStream; a closed
// communicator ErrClosed.
func (c *Comm) Alloc(n int64, s *cuda.Stream) (*memview.StridedMemoryView, error) {
	if c == nil {
		return nil, fmt.Errorf("%w: Alloc on a nil communicator", ErrNil)
	}
	if n < 0 || uint64(n) > math.MaxInt {
		return nil, fmt.Errorf("%w: Alloc(%d) on rank %d", ErrBuffer, n, c.rank)
	}
	if s != nil && s.Device() != c.dev {
		return nil, fmt.Errorf("%w: Alloc on rank %d: stream of %v, communicator on %v", ErrStream, c.rank, s.Device(), c.dev)
	}
	c.mu.Lock()
	closed := c.closed
	c.mu.Unlock()
	if closed {
		return nil, fmt.Errorf("%w: Alloc(%d) on rank %d", ErrClosed, n, c.rank)
	}
	buf, err := c.dev.Alloc(int(n), s)
	if err == nil && s == nil {
		// Stream-ordered on the legacy stream, which non-blocking streams
		// do not wait for: let it land before any stream uses it.
		err = c.dev.LegacyStream().Synchronize()
	}
	var v *memview.StridedMemoryView
	var l layout.Layout
	if err == nil {
		l, err = layout.Dense([]int64{n}, 1, layout.C)
	}
	if err == nil {
		v, err = memview.FromOwnedBuffer(buf, l, layout.Uint8)
	}
	if err != nil {
		if buf != nil {
			buf.Close()
		}
		return nil, fmt.Errorf("nccl: Alloc(%d) on rank %d: %w", n, c.rank, err)
	}
	return v, nil
}

// AllToAll sends, for every rank q, the bytes sendSeg[q] of send to q and
// receives from q the bytes recvSeg[q] of recv, as one NCCL group of
// ncclSend and ncclRecv (the zero-length segments left out) on stream s,
// with the device's context current. It returns once the exchange is
// queued on s: use the buffers after s reaches that point (WaitStream
// waits for it on the host, bounded by a context; an event or a later
// kernel on s orders other work after it).
//
// What rank p sends rank q must be as long as what q expects from p
// (dist's plans are); NCCL, not this package, sees a mismatch, as an error
// or a hang. ctx bounds the wait for the other ranks inside NCCL (for a
// non-blocking communicator, the connection to new peers and the group's
// launch): at its end the communicator is aborted and the error wraps
// ErrTimeout and ctx's error. A nil ctx never ends.
//
// Arguments are checked before NCCL is called: send and recv must be
// contiguous 1-D byte views of device memory on the communicator's device
// (Alloc makes them) that share no memory, recv writable (else ErrBuffer,
// ErrNil for a nil view); there must be Size() segments of each kind, each
// inside its buffer (else ErrSegment); s must be a stream of the device
// (else ErrStream: NCCL work needs an explicit stream).
func (c *Comm) AllToAll(ctx context.Context, send, recv *memview.StridedMemoryView, sendSeg, recvSeg []dist.Segment, s *cuda.Stream) error {
	if c == nil {
		return fmt.Errorf("%w: AllToAll on a nil communicator", ErrNil)
	}
	if err := checkExchange(c.rank, c.size, c.dev, send, recv, sendSeg, recvSeg); err != nil {
		return err
	}
	if err := c.checkStream("AllToAll", s); err != nil {
		return err
	}
	return c.exchange(ctx, send.Ptr(), recv.Ptr(), sendSeg, recvSeg, s.Handle())
}

// AllToAllBytes is NCCL's own all-to-all of bytesPerPeer bytes per pair
// of ranks, as nccl-tests' alltoall runs it: one group of ncclSend of
// send+q·bytesPerPeer to q and ncclRecv of recv+q·bytesPerPeer from q, for
// every q. It is the baseline to measure AllToAll of the same bytes
// against. The pointers are device memory of the communicator's device,
// Size()·bytesPerPeer bytes each, which this does not check. ctx, s and
// the return are as for AllToAll; a negative or overflowing size is an
// ErrSegment error, a 0 pointer ErrBuffer.
func (c *Comm) AllToAllBytes(ctx context.Context, send, recv cuda.DevicePtr, bytesPerPeer int64, s *cuda.Stream) error {
	if c == nil {
		return fmt.Errorf("%w: AllToAllBytes on a nil communicator", ErrNil)
	}
	segs, err := equalSegments(c.size, bytesPerPeer)
	if err != nil {
		return fmt.Errorf("%w: rank %d: %v", ErrSegment, c.rank, err)
	}
	if bytesPerPeer > 0 && (send == 0 || recv == 0) {
		return fmt.Errorf("%w: rank %d: AllToAllBytes from %#x to %#x", ErrBuffer, c.rank, send, recv)
	}
	if err := c.checkStream("AllToAllBytes", s); err != nil {
		return err
	}
	return c.exchange(ctx, uintptr(send), uintptr(recv), segs, segs, s.Handle())
}

// equalSegments returns the segments of an all-to-all of n bytes per
// rank among size ranks: rank q's at q·n.
func equalSegments(size int, n int64) ([]dist.Segment, error) {
	if n < 0 || (size > 0 && n > math.MaxInt64/int64(size)) {
		return nil, fmt.Errorf("%d bytes per rank for %d ranks", n, size)
	}
	segs := make([]dist.Segment, size)
	for q := range segs {
		segs[q] = dist.Segment{Off: int64(q) * n, Len: n}
	}
	return segs, nil
}

// exchange makes one group of sends and receives (see AllToAll) once the
// arguments are checked: from and into device addresses, on CUstream
// stream.
func (c *Comm) exchange(ctx context.Context, send, recv uintptr, sendSeg, recvSeg []dist.Segment, stream uintptr) error {
	if ctx == nil {
		ctx = context.Background()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.usable(); err != nil {
		return err
	}
	h := c.h
	return c.run(ctx, "ncclGroupEnd", func() outcome {
		var o outcome
		o.err = c.do(func() error {
			o.call, o.code = c.lib.groupSendRecv(h, send, recv, sendSeg, recvSeg, stream)
			return nil
		})
		return o
	})
}

// groupSendRecv queues, between ncclGroupStart and ncclGroupEnd, an
// ncclSend of every non-empty send segment and an ncclRecv of every
// non-empty receive segment, peer by peer, on the calling thread. The
// group is always ended, even after a failed call inside it (NCCL's group
// state is per thread, and the thread goes back to Go's pool). It returns
// the first call that failed and its code, or ncclGroupEnd's.
func (l *library) groupSendRecv(h, send, recv uintptr, sendSeg, recvSeg []dist.Segment, stream uintptr) (string, int) {
	r, _, _ := purego.SyscallN(l.groupStart)
	if code := int(int32(r)); code != ncclSuccess {
		return "ncclGroupStart", code
	}
	failed, fcode := "", ncclSuccess
	for q := range sendSeg {
		if sg := sendSeg[q]; sg.Len > 0 {
			r, _, _ = purego.SyscallN(l.send, send+uintptr(sg.Off), uintptr(sg.Len), ncclUint8, uintptr(q), h, stream)
			if code := int(int32(r)); code != ncclSuccess && code != ncclInProgress {
				failed, fcode = fmt.Sprintf("ncclSend to rank %d", q), code
				break
			}
		}
		if sg := recvSeg[q]; sg.Len > 0 {
			r, _, _ = purego.SyscallN(l.recv, recv+uintptr(sg.Off), uintptr(sg.Len), ncclUint8, uintptr(q), h, stream)
			if code := int(int32(r)); code != ncclSuccess && code != ncclInProgress {
				failed, fcode = fmt.Sprintf("ncclRecv from rank %d", q), code
				break
			}
		}
	}
	r, _, _ = purego.SyscallN(l.groupEnd)
	if failed != "" {
		return failed, fcode
	}
	return "ncclGroupEnd", int(int32(r))
}

// WaitStream waits on the host until the work queued so far on s (the
// exchanges AllToAll queued there, say) is done, watching the
// communicator for asynchronous errors meanwhile (a peer that failed:
// ncclRemoteError, …). If one comes, or ctx ends first, the communicator
// is aborted, which makes NCCL's kernels on the GPU give up, and the error
// matches the *Error, or ErrTimeout and ctx's error. So a peer that dies
// mid-exchange gives an error, not a hang. A nil ctx never ends; s must be
// a stream of the communicator's device.
func (c *Comm) WaitStream(ctx context.Context, s *cuda.Stream) error {
	if c == nil {
		return fmt.Errorf("%w: WaitStream on a nil communicator", ErrNil)
	}
	if err := c.checkStream("WaitStream", s); err != nil {
		return err
	}
	if ctx == nil {
		ctx = context.Background()
	}
	ev, err := c.dev.NewEvent(false)
	if err != nil {
		return fmt.Errorf("nccl: WaitStream on rank %d: %w", c.rank, err)
	}
	defer ev.Close()
	if err := ev.Record(s); err != nil {
		return fmt.Errorf("nccl: WaitStream on rank %d: %w", c.rank, err)
	}
	for i := 0; ; i++ {
		done, err := ev.Done()
		if err != nil {
			return fmt.Errorf("nccl: WaitStream on rank %d: %w", c.rank, err)
		}
		if err := c.healthy(); err != nil || done {
			return err
		}
		if err := c.pause(ctx, i, "the stream's work"); err != nil {
			c.mu.Lock()
			defer c.mu.Unlock()
			return c.fail(err)
		}
	}
}

// healthy returns nil while the communicator works and has no
// asynchronous error; an error found aborts it.
func (c *Comm) healthy() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.usable(); err != nil {
		return err
	}
	state, err := c.asyncState()
	if err != nil {
		return c.fail(err)
	}
	if state != ncclSuccess && state != ncclInProgress {
		return c.fail(c.lib.newError("ncclCommGetAsyncError", state, c.h))
	}
	return nil
}

// checkStream reports whether s is a stream of the communicator's device.
func (c *Comm) checkStream(method string, s *cuda.Stream) error {
	if s == nil {
		return fmt.Errorf("%w: %s on rank %d: nil stream (NCCL work needs an explicit stream)", ErrStream, method, c.rank)
	}
	if s.Device() != c.dev {
		return fmt.Errorf("%w: %s on rank %d: stream of %v, communicator on %v", ErrStream, method, c.rank, s.Device(), c.dev)
	}
	return nil
}

// checkExchange checks the arguments of AllToAll on rank rank of size,
// whose device is dev.
func checkExchange(rank, size int, dev *cuda.Device, send, recv *memview.StridedMemoryView, sendSeg, recvSeg []dist.Segment) error {
	if send == nil || recv == nil {
		return fmt.Errorf("%w: rank %d: send %v, receive %v", ErrNil, rank, send, recv)
	}
	if len(sendSeg) != size || len(recvSeg) != size {
		return fmt.Errorf("%w: rank %d: %d send and %d receive segments for %d ranks", ErrSegment, rank, len(sendSeg), len(recvSeg), size)
	}
	for _, b := range []struct {
		what string
		v    *memview.StridedMemoryView
	}{{"send", send}, {"receive", recv}} {
		if err := checkBuffer(b.v, dev); err != nil {
			return fmt.Errorf("%w: rank %d: %s buffer %v: %v", ErrBuffer, rank, b.what, b.v, err)
		}
	}
	if recv.ReadOnly() {
		return fmt.Errorf("%w: rank %d: receive buffer %v is read-only", ErrBuffer, rank, recv)
	}
	ns, nr := send.Shape()[0], recv.Shape()[0]
	if ns > 0 && nr > 0 && send.Ptr() < recv.Ptr()+uintptr(nr) && recv.Ptr() < send.Ptr()+uintptr(ns) {
		return fmt.Errorf("%w: rank %d: send %v and receive %v share memory", ErrBuffer, rank, send, recv)
	}
	if err := checkSegments(sendSeg, ns); err != nil {
		return fmt.Errorf("%w: rank %d: send %v", ErrSegment, rank, err)
	}
	if err := checkSegments(recvSeg, nr); err != nil {
		return fmt.Errorf("%w: rank %d: receive %v", ErrSegment, rank, err)
	}
	return nil
}

// checkBuffer reports whether v is a contiguous 1-D view of bytes in
// device memory of dev.
func checkBuffer(v *memview.StridedMemoryView, dev *cuda.Device) error {
	l := v.Layout()
	if l.NDim() != 1 || l.Itemsize() != 1 || (l.Shape()[0] > 1 && l.Strides()[0] != 1) {
		return fmt.Errorf("not a contiguous 1-D view of bytes")
	}
	if v.Kind() != cuda.MemoryDevice {
		return fmt.Errorf("%v memory, NCCL exchanges device memory", v.Kind())
	}
	if v.Device() != dev {
		return fmt.Errorf("on %v, the communicator on %v", v.Device(), dev)
	}
	return nil
}

// checkSegments reports whether every segment lies in a buffer of size
// bytes.
func checkSegments(segs []dist.Segment, size int64) error {
	for q, sg := range segs {
		if sg.Off < 0 || sg.Len < 0 || sg.Off > size || sg.Len > size-sg.Off {
			return fmt.Errorf("segment %+v of rank %d outside the buffer's %d bytes", sg, q, size)
		}
	}
	return nil
}
