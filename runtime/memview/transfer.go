package memview

import (
	"fmt"
	"slices"
	"sync"

	"github.com/stridekit/stridekit/kernels"
	"github.com/stridekit/stridekit/layout"
	"github.com/stridekit/stridekit/runtime/cuda"
	"github.com/stridekit/stridekit/runtime/hostcopy"
)

// StageBytes is the size of one pinned staging buffer of a host transfer:
// the host gathers (or scatters) one chunk while the DMA engine moves the
// previous one.
const StageBytes = 8 << 20

// How a host transfer moves data (hostToDevice and deviceToHost):
//
//  1. The host view's compact form C: its shape, dense in the view's own
//     memory order (strides ordered as the view's, signs kept), broadcast
//     dims kept at stride 0, so C holds each distinct element once and a
//     gap-free view (a permutation or flip of a dense buffer) is C itself.
//  2. C's bytes cross the bus as one contiguous image: straight from or to
//     the host view when it is pinned and gap-free (one DMA, asynchronous);
//     else in StageBytes chunks through two pinned staging buffers, the CPU
//     gathering (runtime/hostcopy, multi-threaded) chunk k+1 while the DMA
//     engine moves chunk k.
//  3. On the device, one copy kernel permutes between C's image and the
//     device view; when the device view is C laid out the same (a memcpy
//     plan), the image goes straight into or out of it.

// compact returns the compact form of l (see above).
func compact(l layout.Layout) (layout.Layout, error) { return compactOuter(l, -1) }

// compactOuter is compact with dim outer (≥ 0) moved outermost: the other
// dims keep l's memory order inside each of its indices.
func compactOuter(l layout.Layout, outer int) (layout.Layout, error) {
	shape, st := l.Shape(), l.Strides()
	ord := l.StrideOrder() // by |stride| descending, earlier dims first among equals
	if outer >= 0 {
		i := slices.Index(ord, outer)
		ord = slices.Insert(slices.Delete(ord, i, i+1), 0, outer)
	}
	slices.Reverse(ord) // ascending, later dims first among equals
	out := make([]int64, len(shape))
	acc := int64(1)
	for _, k := range ord {
		switch {
		case shape[k] == 1:
			out[k] = st[k] // any stride addresses the one index; keep the view's
		case st[k] == 0:
			out[k] = 0
		default:
			out[k] = acc
			if st[k] < 0 {
				out[k] = -acc
			}
			acc *= shape[k]
		}
	}
	return layout.New(shape, out, l.Itemsize())
}

func abs(a int64) int64 {
	if a < 0 {
		return -a
	}
	return a
}

// piece is one chunk of a staged transfer: bytes [off, off+n) of C's image,
// and the host view's part of it (sub, whose lowest byte is hoff bytes into
// the view's span) with C's part (subC).
type piece struct {
	off, n    int64
	sub, subC layout.Layout
	hoff      int64
	direct    bool // the host bytes are the image bytes: a plain copy
}

// pieces splits a transfer of host view h (layout hl) with compact form c
// into chunks of about StageBytes: by bytes when h is c (gap-free), else by
// rows of c's slowest dim.
func pieces(hl, c layout.Layout, direct bool) ([]piece, error) {
	span := c.RequiredSizeInBytes()
	var out []piece
	if direct {
		for off := int64(0); off < span; off += StageBytes {
			out = append(out, piece{off: off, n: min(StageBytes, span-off), hoff: off, direct: true})
		}
		return out, nil
	}
	// Broadcast dims (stride 0 in both) hold one distinct element: gather
	// and scatter index 0 of them only.
	hl, c, err := dropBroadcast(hl, c)
	if err != nil {
		return nil, err
	}
	item := int64(c.Itemsize())
	st, sh := c.Strides(), c.Shape()
	kd, row := -1, int64(0)
	for k, s := range st {
		if sh[k] > 1 && abs(s) > row {
			kd, row = k, abs(s)
		}
	}
	if kd < 0 { // one element (or all broadcast): a single piece
		return []piece{{off: 0, n: span, sub: hl, subC: c}}, nil
	}
	rows := max(1, StageBytes/(row*item))
	all := make([]layout.Range, len(sh))
	for k := range all {
		all[k] = layout.All()
	}
	for r0 := int64(0); r0 < sh[kd]; r0 += rows {
		all[kd] = layout.Span(r0, min(r0+rows, sh[kd]))
		subC, offC, err := c.Slice(all...)
		if err != nil {
			return nil, err
		}
		sub, offH, err := hl.Slice(all...)
		if err != nil {
			return nil, err
		}
		out = append(out, piece{
			off:  (offC + subC.MinOffset() - c.MinOffset()) * item,
			n:    subC.RequiredSizeInBytes(),
			sub:  sub,
			subC: subC,
			hoff: (offH + sub.MinOffset() - hl.MinOffset()) * item,
		})
	}
	return out, nil
}

// dropBroadcast cuts the dims of extent > 1 and stride 0 in c (and so in
// hl, whose compact form c is) to extent 1.
func dropBroadcast(hl, c layout.Layout) (layout.Layout, layout.Layout, error) {
	st, sh := c.Strides(), c.Shape()
	rs := make([]layout.Range, len(st))
	cut := false
	for k := range rs {
		rs[k] = layout.All()
		if st[k] == 0 && sh[k] > 1 {
			rs[k], cut = layout.Span(0, 1), true
		}
	}
	if !cut {
		return hl, c, nil
	}
	h2, _, err := hl.Slice(rs...)
	if err != nil {
		return hl, c, err
	}
	c2, _, err := c.Slice(rs...)
	return h2, c2, err
}

// stager holds a staged transfer's two pinned buffers and events.
// A buffer is used from the queueing of a DMA on it until its event is
// waited for; one whose DMA may still be running (its event could not be
// recorded or waited for, and the stream could not be synchronised) is
// lost: neither reused nor freed, as the DMA engine may still write it.
type stager struct {
	dev  *cuda.Device
	s    *cuda.Stream
	cfg  copyConfig
	bufs [2]*cuda.Buffer
	ev   [2]*cuda.Event
	used [2]bool // a DMA is queued, its event recorded
	lost [2]bool // a DMA may still run, with no event to wait for
}

func newStager(dev *cuda.Device, s *cuda.Stream, cfg copyConfig, size int64) (*stager, error) {
	st := &stager{dev: dev, s: s, cfg: cfg}
	for i := range 2 {
		b, err := getPinned(cfg, dev, int(max(size, 1)))
		if err != nil {
			st.close()
			return nil, err
		}
		st.bufs[i] = b
		e, err := dev.NewEvent(false)
		if err != nil {
			st.close()
			return nil, err
		}
		st.ev[i] = e
	}
	return st, nil
}

// queued records that a DMA on buffer i was queued on the stream. When its
// event cannot be recorded, the stream is synchronised instead (the buffer
// is lost if that fails too), and the error returned.
func (st *stager) queued(i int) error {
	err := st.ev[i].Record(st.s)
	if err == nil {
		st.used[i] = true
		return nil
	}
	st.lost[i] = st.s.Synchronize() != nil
	return err
}

// wait waits until buffer i's last DMA is done; if that cannot be known,
// the buffer is lost and the error returned.
func (st *stager) wait(i int) error {
	if !st.used[i] {
		return nil
	}
	st.used[i] = false
	err := st.ev[i].Synchronize()
	if err != nil {
		st.lost[i] = st.s.Synchronize() != nil
	}
	return err
}

// close waits for both buffers and gives back those no DMA can still be
// using.
func (st *stager) close() error {
	var first error
	for i := range 2 {
		if st.ev[i] != nil {
			if err := st.wait(i); err != nil && first == nil {
				first = err
			}
			st.ev[i].Close()
		}
		if st.bufs[i] != nil && !st.lost[i] {
			putPinned(st.cfg, st.dev, st.bufs[i])
		}
	}
	return first
}

func (st *stager) bytes(i int, n int64) []byte {
	b, _ := st.bufs[i].Bytes()
	return b[:n]
}

// copyBytes copies src into dst with hostcopy's parallel memcpy.
func copyBytes(dst, src []byte) error {
	n := int64(len(src))
	l, err := layout.New([]int64{n}, nil, 1)
	if err != nil {
		return err
	}
	return hostcopy.Copy(dst, l, src, l)
}

// host is the host side of a host transfer's binding: the image's plan h
// and the pieces it stages in.
type host struct {
	h      hostPlan
	pieces []piece
}

// hostPlan is how a host transfer runs: the host view's compact form c,
// whether the host view is c itself (direct: its bytes are the image),
// whether the image goes straight into or out of the device view (no
// temporary), whether it crosses the bus as one DMA (pinned and direct),
// the image's bytes, and the largest staging piece.
type hostPlan struct {
	c         layout.Layout
	direct    bool
	toView    bool
	oneDMA    bool
	imageSpan int64
	maxPiece  int64
}

// bindHost gives b its host side and fills b.h (but toView) and b.pieces
// for host view hv: its compact form and, when the transfer stages, the
// pieces.
func (b *binding) bindHost(hv *StridedMemoryView) error {
	b.host = new(host)
	c, err := compact(hv.l)
	if err != nil {
		return err
	}
	b.h = hostPlan{c: c, direct: c.Equal(hv.l), imageSpan: c.RequiredSizeInBytes()}
	b.h.oneDMA = b.h.direct && hv.kind == cuda.MemoryHost
	if b.h.oneDMA {
		return nil
	}
	if b.pieces, err = pieces(hv.l, c, b.h.direct); err != nil {
		return err
	}
	for _, p := range b.pieces {
		b.h.maxPiece = max(b.h.maxPiece, p.n)
	}
	return nil
}

// bindUpload binds src (host) → dst (device): the image lands in a
// temporary, or in dst when the device copy would be a memcpy of the whole
// image (then no kernel runs).
func (b *binding) bindUpload(dst, src *StridedMemoryView) error {
	if err := b.bindHost(src); err != nil {
		return err
	}
	var err error
	b.k = &b.kb
	if err = kernels.BindInto(b.k, b.key.dev, dst.l, b.h.c, int(b.key.dstAlign), int(b.key.srcAlign)); err != nil {
		return err
	}
	p := &b.k.Plan
	b.h.toView = p.Sig.Class == layout.ClassMemcpy && p.SrcOffset == 0 && p.Bytes == b.h.imageSpan
	return nil
}

// bindDownload binds src (device) → dst (host), as bindUpload the other
// way.
func (b *binding) bindDownload(dst, src *StridedMemoryView) error {
	if err := b.bindHost(dst); err != nil {
		return err
	}
	var err error
	b.k = &b.kb
	if err = kernels.BindInto(b.k, b.key.dev, b.h.c, src.l, int(b.key.dstAlign), int(b.key.srcAlign)); err != nil {
		return err
	}
	p := &b.k.Plan
	b.h.toView = p.Sig.Class == layout.ClassMemcpy && p.DstOffset == 0 && p.Bytes == b.h.imageSpan
	return nil
}

func hostToDevice(dst, src *StridedMemoryView, b *binding, s *cuda.Stream, cfg copyConfig) error {
	dev, h, p := b.key.dev, &b.h, &b.k.Plan
	if p.Sig.Class == layout.ClassNone {
		return nil
	}
	var img cuda.DevicePtr
	if h.toView {
		img = cuda.DevicePtr(dst.low) + cuda.DevicePtr(p.DstOffset)
	} else {
		tmp, err := allocDevice(cfg, dev, int(h.imageSpan), s)
		if err != nil {
			return err
		}
		defer tmp.Close()
		img = tmp.Ptr()
	}
	if h.oneDMA {
		if err := dev.CopyHtoDAsync(img, cuda.DevicePtr(src.low), int(h.imageSpan), s); err != nil {
			return err
		}
	} else if err := uploadStaged(b, s, cfg, img, src); err != nil {
		return incomplete(err)
	}
	if !h.toView {
		if err := b.k.Enqueue(s, cuda.DevicePtr(dst.low), img); err != nil {
			return incomplete(err)
		}
	}
	if cfg.blocking < 0 && h.oneDMA {
		return nil
	}
	return incomplete(s.Synchronize())
}

// uploadStaged moves the compact image of host view src to img through the
// pinned staging buffers, the gather of one chunk overlapping the DMA of the
// one before.
func uploadStaged(b *binding, s *cuda.Stream, cfg copyConfig, img cuda.DevicePtr, src *StridedMemoryView) error {
	dev, ps := b.key.dev, b.pieces
	st, err := newStager(dev, s, cfg, b.h.maxPiece)
	if err != nil {
		return err
	}
	host := src.hostBytes()
	for i, p := range ps {
		k := i % 2
		if err := st.wait(k); err != nil {
			st.close()
			return err
		}
		b := st.bytes(k, p.n)
		if p.direct {
			err = copyBytes(b, host[p.hoff:p.hoff+p.n])
		} else {
			err = hostcopy.Copy(b, p.subC, host[p.hoff:p.hoff+p.sub.RequiredSizeInBytes()], p.sub)
		}
		if err == nil {
			err = dev.CopyHtoDAsync(img+cuda.DevicePtr(p.off), st.bufs[k].Ptr(), int(p.n), s)
		}
		if err == nil {
			err = st.queued(k)
		}
		if err != nil {
			st.close()
			return err
		}
	}
	return st.close()
}

func deviceToHost(dst, src *StridedMemoryView, b *binding, s *cuda.Stream, cfg copyConfig) error {
	dev, h, p := b.key.dev, &b.h, &b.k.Plan
	if p.Sig.Class == layout.ClassNone {
		return nil
	}
	var img cuda.DevicePtr
	if h.toView {
		img = cuda.DevicePtr(src.low) + cuda.DevicePtr(p.SrcOffset)
	} else {
		tmp, err := allocDevice(cfg, dev, int(h.imageSpan), s)
		if err != nil {
			return err
		}
		defer tmp.Close()
		if err := b.k.Enqueue(s, tmp.Ptr(), cuda.DevicePtr(src.low)); err != nil {
			return err
		}
		img = tmp.Ptr()
	}
	if h.oneDMA {
		if err := dev.CopyDtoHAsync(cuda.DevicePtr(dst.low), img, int(h.imageSpan), s); err != nil {
			return incomplete(err)
		}
		if cfg.blocking < 0 {
			return nil
		}
		return incomplete(s.Synchronize())
	}
	return incomplete(downloadStaged(b, s, cfg, img, dst))
}

// downloadStaged moves img, the compact image of host view dst, through the
// pinned staging buffers, the scatter of one chunk overlapping the DMA of
// the next.
func downloadStaged(b *binding, s *cuda.Stream, cfg copyConfig, img cuda.DevicePtr, dst *StridedMemoryView) error {
	dev, ps := b.key.dev, b.pieces
	st, err := newStager(dev, s, cfg, b.h.maxPiece)
	if err != nil {
		return err
	}
	host := dst.hostBytes()
	scatter := func(i int) error {
		p, k := ps[i], i%2
		if err := st.wait(k); err != nil {
			return err
		}
		b := st.bytes(k, p.n)
		if p.direct {
			return copyBytes(host[p.hoff:p.hoff+p.n], b)
		}
		return hostcopy.Copy(host[p.hoff:p.hoff+p.sub.RequiredSizeInBytes()], p.sub, b, p.subC)
	}
	for i, p := range ps {
		k := i % 2 // buffer k held piece i-2, scattered in the last trip
		err := dev.CopyDtoHAsync(st.bufs[k].Ptr(), img+cuda.DevicePtr(p.off), int(p.n), s)
		if err == nil {
			err = st.queued(k)
		}
		if err == nil && i > 0 {
			err = scatter(i - 1) // while piece i moves
		}
		if err != nil {
			st.close()
			return err
		}
	}
	if len(ps) > 0 {
		if err := scatter(len(ps) - 1); err != nil {
			st.close()
			return err
		}
	}
	return st.close()
}

// The process's pool of pinned staging buffers, per device.
var pinned struct {
	mu   sync.Mutex
	free map[*cuda.Device][]*cuda.Buffer
}

// maxPooled is how many staging buffers a device keeps between copies.
const maxPooled = 8

func getPinned(cfg copyConfig, dev *cuda.Device, size int) (*cuda.Buffer, error) {
	size = max(size, StageBytes)
	if cfg.alloc != nil {
		b, err := cfg.alloc.AllocHost(dev, size)
		if err == nil && (b == nil || b.Size() < size || b.Kind() != cuda.MemoryHost) {
			err = fmt.Errorf("memview: allocator gave %v for %d bytes of pinned memory: %w", b, size, cuda.ErrInvalidValue)
			if b != nil {
				b.Close()
			}
			return nil, err
		}
		return b, err
	}
	pinned.mu.Lock()
	fl := pinned.free[dev]
	for i, b := range fl {
		if b.Size() >= size {
			pinned.free[dev] = append(fl[:i], fl[i+1:]...)
			pinned.mu.Unlock()
			return b, nil
		}
	}
	pinned.mu.Unlock()
	return dev.AllocHost(size)
}

func putPinned(cfg copyConfig, dev *cuda.Device, b *cuda.Buffer) {
	if cfg.alloc != nil || b.Size() > 4*StageBytes {
		b.Close()
		return
	}
	pinned.mu.Lock()
	if pinned.free == nil {
		pinned.free = map[*cuda.Device][]*cuda.Buffer{}
	}
	full := len(pinned.free[dev]) >= maxPooled
	if !full {
		pinned.free[dev] = append(pinned.free[dev], b)
	}
	pinned.mu.Unlock()
	if full {
		b.Close() // outside the lock: freeing pinned memory may wait for the device
	}
}
