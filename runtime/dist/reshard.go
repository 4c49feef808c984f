package dist

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/stridekit/stridekit/layout"
	"github.com/stridekit/stridekit/runtime/cuda"
	"github.com/stridekit/stridekit/runtime/memview"
)

// SegmentAlign is the alignment, in bytes, of every segment a Reshard
// packs into its exchange buffers, so that the copies into and out of them
// may use the widest vector accesses (layout.MaxVectorBytes).
const SegmentAlign = layout.MaxVectorBytes

// Reshard moves a distributed tensor from one sharding to another, on one
// rank of a group: every rank builds its own (NewReshard) and calls Run,
// which is collective (every rank of the group calls it, as often as the
// others). It is planned once: the boxes exchanged with each peer, the
// exchange buffers and the bound copies that pack and unpack them, so Run
// only copies and exchanges. A Reshard is safe for concurrent use; Runs of
// one Reshard take turns.
//
// Where the source is replicated (a mesh axis splits no dim), several
// ranks hold each box a destination rank q needs; exactly one sends it,
// chosen by a rule that depends only on the source sharding, the box's
// block and q, so that every rank computes the same choice: q itself when
// q holds a replica (the box is copied locally, nothing moves), else the
// replica whose index along the replicated axes (its coordinates on them
// as a mixed-radix number) is q's index along the replicated axes plus
// q's index along the split axes, modulo the number of replicas. So a
// fully replicated source resharded to any split moves nothing between
// ranks,
// and destinations that differ on a mesh axis tend to read from different
// replicas. Every destination replica receives its own copy.
type Reshard struct {
	mu         sync.Mutex
	t          Transport
	dst, src   *DistView
	plan       Plan
	send, recv *memview.StridedMemoryView
	sendSeg    []Segment
	recvSeg    []Segment
	pack       []*memview.BoundCopy // src box → send segment, as plan.Sends
	unpack     []*memview.BoundCopy // recv segment → dst box, as plan.Recvs
	keep       *memview.BoundCopy   // src box → dst box, nil when none
	fork       *fork                // where keep runs beside the exchange
	// ownSend and ownRecv say whether send and recv are the reshard's own
	// buffers (from the transport) or views of the local parts' memory.
	ownSend, ownRecv bool
	closed           bool
}

// NewReshard plans, for this rank (t.Rank()), the move of the tensor src
// holds into dst's sharding: src and dst are this rank's parts of the same
// tensor (same global shape and dtype) under two shardings, whose meshes
// may differ in shape but both have t.Size() ranks. It computes the
// intersections of this rank's source block with every rank's destination
// block and the other way round, choosing for each destination box one
// source replica when src is replicated (see Reshard), allocates the
// exchange buffers from t (on the nil stream) and binds the copies. It
// talks to no other rank.
//
// It fails with ErrNil for a nil argument, ErrShape or ErrDType when src
// and dst are not views of one tensor, ErrMesh when their meshes do not
// have t.Size() ranks, ErrRank when t, src and dst are not of one rank,
// memview.ErrReadOnly when dst's local view is read-only, and with the
// errors of t.Alloc and memview.Bind (a destination whose elements overlap,
// views on two devices, …).
func NewReshard(t Transport, dst, src *DistView) (*Reshard, error) {
	if err := checkReshard(t, dst, src); err != nil {
		return nil, err
	}
	p, err := plan(t.Rank(), dst.sh, src.sh, int64(src.dt.Itemsize()))
	if err != nil {
		return nil, fmt.Errorf("dist: reshard on rank %d: %w", t.Rank(), err)
	}
	r := &Reshard{t: t, dst: dst, src: src, plan: p}
	if err := r.build(); err != nil {
		r.Close()
		return nil, fmt.Errorf("dist: reshard %v → %v on rank %d: %w", src.sh, dst.sh, t.Rank(), err)
	}
	return r, nil
}

// checkReshard checks that dst and src are this rank's views of one
// tensor on t's group.
func checkReshard(t Transport, dst, src *DistView) error {
	switch {
	case t == nil || dst == nil || src == nil || dst.local == nil || src.local == nil:
		return fmt.Errorf("%w: NewReshard(transport %v, dst %v, src %v)", ErrNil, t, dst, src)
	case !slices.Equal(dst.sh.shape, src.sh.shape):
		return fmt.Errorf("%w: dst has global shape %v, src %v", ErrShape, dst.sh.shape, src.sh.shape)
	case dst.dt != src.dt:
		return fmt.Errorf("%w: dst is of %v, src of %v", ErrDType, dst.dt, src.dt)
	case dst.sh.mesh.Size() != t.Size() || src.sh.mesh.Size() != t.Size():
		return fmt.Errorf("%w: dst on %v (%d ranks), src on %v (%d ranks), the group has %d ranks",
			ErrMesh, dst.sh.mesh, dst.sh.mesh.Size(), src.sh.mesh, src.sh.mesh.Size(), t.Size())
	case dst.rank != t.Rank() || src.rank != t.Rank():
		return fmt.Errorf("%w: dst is rank %d's view, src rank %d's, the transport is rank %d's", ErrRank, dst.rank, src.rank, t.Rank())
	case dst.local.ReadOnly():
		return fmt.Errorf("dist: dst's local view %v: %w", dst.local, memview.ErrReadOnly)
	}
	return nil
}

// build lays the segments out, allocates the buffers and binds the copies.
func (r *Reshard) build() error {
	var err error
	if r.send, r.sendSeg, r.pack, r.ownSend, err = r.side(r.src, r.plan.Sends, false); err != nil {
		return err
	}
	if r.recv, r.recvSeg, r.unpack, r.ownRecv, err = r.side(r.dst, r.plan.Recvs, true); err != nil {
		return err
	}
	if r.plan.KeepBytes > 0 {
		if r.keep, err = r.bindKeep(); err != nil {
			return fmt.Errorf("keep %v: %w", r.plan.Keep, err)
		}
	}
	return nil
}

// side returns the exchange buffer of one side of the reshard (the sends
// from src when in is false, the receives into dst when in is true), its
// segments, the copies that pack or unpack them, and whether the buffer is
// the reshard's own. Where every box of ts lies in the local view as its
// segment holds it (dense in C order) and the two local views share no
// byte, the buffer is the local view's own memory and nothing is copied
// (direct); else one from the transport, its segments back to back.
func (r *Reshard) side(dv *DistView, ts []Transfer, in bool) (*memview.StridedMemoryView, []Segment, []*memview.BoundCopy, bool, error) {
	buf, segs, err := r.direct(dv, ts)
	if err != nil || buf != nil {
		return buf, segs, nil, false, err
	}
	segs, size, err := segments(r.t.Size(), ts)
	if err == nil {
		buf, err = r.alloc(size)
	}
	if err != nil {
		return nil, nil, nil, false, err
	}
	what := map[bool]string{false: "pack %v for rank %d: %w", true: "unpack %v from rank %d: %w"}[in]
	copies := make([]*memview.BoundCopy, 0, len(ts))
	for _, t := range ts {
		c, err := r.bindSegment(buf, segs[t.Peer].Off, t.Box, in)
		if err != nil {
			return buf, nil, nil, true, fmt.Errorf(what, t.Box, t.Peer, err)
		}
		copies = append(copies, c)
	}
	return buf, segs, copies, true, nil
}

// direct returns a 1-D uint8 view of dv's local memory and the segments of
// the boxes ts in it, when every box lies there dense in C order (as a
// segment holds it) and the local views of the reshard share no byte (the
// exchange then reads or writes them while the kept box is copied); else
// nil.
func (r *Reshard) direct(dv *DistView, ts []Transfer) (*memview.StridedMemoryView, []Segment, error) {
	if len(ts) == 0 || r.src.local.Overlaps(r.dst.local) {
		return nil, nil, nil
	}
	l := dv.local.Layout()
	item := int64(l.Itemsize())
	segs := make([]Segment, r.t.Size())
	for _, t := range ts {
		sub, off, err := l.Slice(t.Box.within(dv.block)...)
		if err != nil {
			return nil, nil, err
		}
		if !sub.IsContiguousC() || sub.MinOffset() != 0 {
			return nil, nil, nil
		}
		segs[t.Peer] = Segment{Off: (off - l.MinOffset()) * item, Len: t.Bytes}
	}
	u8, err := layout.Dense([]int64{l.RequiredSizeInBytes()}, 1, layout.C)
	if err != nil {
		return nil, nil, err
	}
	v, err := dv.local.ViewAt(l.MinOffset()*item, u8, layout.Uint8)
	return v, segs, err
}

// segments lays out one segment per transfer, by peer, each at a multiple
// of SegmentAlign, and returns them (zero-length for the other ranks) and
// the buffer size they need.
func segments(n int, ts []Transfer) ([]Segment, int64, error) {
	seg := make([]Segment, n)
	var off int64
	for _, t := range ts {
		seg[t.Peer] = Segment{Off: off, Len: t.Bytes}
		end, ok := add64(off, t.Bytes)
		if ok {
			end, ok = add64(end, SegmentAlign-1)
		}
		if !ok {
			return nil, 0, fmt.Errorf("%w: exchange buffer of more than 2⁶³ bytes", ErrShape)
		}
		off = end / SegmentAlign * SegmentAlign
	}
	return seg, off, nil
}

// alloc returns an exchange buffer of at least n bytes (one at least, so
// that every transport can hand one out), checked to be what Alloc
// promises.
func (r *Reshard) alloc(n int64) (*memview.StridedMemoryView, error) {
	n = max(n, 1)
	v, err := r.t.Alloc(n, nil)
	if err != nil {
		return nil, fmt.Errorf("dist: alloc %d bytes: %w", n, err)
	}
	if err := checkBuffer(v, n); err != nil {
		v.Close()
		return nil, err
	}
	return v, nil
}

// checkBuffer reports whether v is a contiguous 1-D view of at least n
// bytes.
func checkBuffer(v *memview.StridedMemoryView, n int64) error {
	if v == nil {
		return fmt.Errorf("%w: nil view for %d bytes", ErrBuffer, n)
	}
	l := v.Layout()
	if l.NDim() != 1 || l.Itemsize() != 1 || l.Shape()[0] < n || (l.Shape()[0] > 1 && l.Strides()[0] != 1) {
		return fmt.Errorf("%w: %v for %d bytes: want a contiguous 1-D view of bytes", ErrBuffer, v, n)
	}
	return nil
}

// bindSegment binds the copy between box of the local view (src's when
// out is false, dst's when in) and its packed image, dense in C order, at
// byte off of buf.
func (r *Reshard) bindSegment(buf *memview.StridedMemoryView, off int64, box Block, in bool) (*memview.BoundCopy, error) {
	l, err := r.src.dt.Layout(box.Shape(), nil)
	if err != nil {
		return nil, err
	}
	img, err := buf.ViewAt(off, l, r.src.dt)
	if err != nil {
		return nil, err
	}
	if in {
		part, err := r.dst.local.Slice(box.within(r.dst.block)...)
		if err != nil {
			return nil, err
		}
		return memview.Bind(part, img)
	}
	part, err := r.src.local.Slice(box.within(r.src.block)...)
	if err != nil {
		return nil, err
	}
	return memview.Bind(img, part)
}

// bindKeep binds the copy of the box the rank keeps, local to local.
func (r *Reshard) bindKeep() (*memview.BoundCopy, error) {
	box := r.plan.Keep
	from, err := r.src.local.Slice(box.within(r.src.block)...)
	if err != nil {
		return nil, err
	}
	to, err := r.dst.local.Slice(box.within(r.dst.block)...)
	if err != nil {
		return nil, err
	}
	return memview.Bind(to, from)
}

// Run reshards: it packs every box this rank sends into its segment of the
// send buffer, copies the box it keeps from the local source view into the
// local destination view, exchanges the segments with all ranks in one
// Transport.AllToAll, and unpacks every box received into the local
// destination view. src is read completely before dst is written (the kept
// box's copy reads its source as it was, as memview's copies do), so the
// two local views may share memory.
//
// The copies and the exchange run on stream s, as memview's CopyFrom and
// the transport run them: nil for host memory; for device memory, Run
// returns once the work is queued on s. ctx bounds the wait for the other
// ranks (see Transport). An error of one rank leaves the others to theirs
// (a transport error, or ctx's end), and dst partly written.
func (r *Reshard) Run(ctx context.Context, s *cuda.Stream) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return fmt.Errorf("dist: run of a closed reshard on rank %d: %w", r.plan.Rank, ErrClosed)
	}
	side, err := r.forkKeep(s)
	if err != nil {
		return fmt.Errorf("dist: reshard on rank %d: keep %v: %w", r.plan.Rank, r.plan.Keep, err)
	}
	for i, c := range r.pack {
		if err := c.Copy(s); err != nil {
			t := r.plan.Sends[i]
			return fmt.Errorf("dist: reshard on rank %d: pack %v for rank %d: %w", r.plan.Rank, t.Box, t.Peer, err)
		}
	}
	if r.keep != nil && side == nil {
		if err := r.keep.Copy(s); err != nil {
			return fmt.Errorf("dist: reshard on rank %d: keep %v: %w", r.plan.Rank, r.plan.Keep, err)
		}
	}
	if err := r.t.AllToAll(ctx, r.send, r.recv, r.sendSeg, r.recvSeg, s); err != nil {
		return fmt.Errorf("dist: reshard on rank %d: exchange: %w", r.plan.Rank, err)
	}
	for i, c := range r.unpack {
		if err := c.Copy(s); err != nil {
			t := r.plan.Recvs[i]
			return fmt.Errorf("dist: reshard on rank %d: unpack %v from rank %d: %w", r.plan.Rank, t.Box, t.Peer, err)
		}
	}
	if side != nil {
		return r.fork.join(s)
	}
	return nil
}

// Settle compiles, and waits for, the specialised kernels that this
// rank's copies settle on after a few Runs (memview.BoundCopy.Settle):
// for benchmarks, and for programs whose first Runs must already run at
// full speed. It fails with ErrClosed after Close, else as Settle does.
func (r *Reshard) Settle() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return fmt.Errorf("dist: settle: %w", ErrClosed)
	}
	for _, c := range append(append(slices.Clone(r.pack), r.unpack...), r.keep) {
		if c == nil {
			continue
		}
		if err := c.Settle(); err != nil {
			return fmt.Errorf("dist: settle: %w", err)
		}
	}
	return nil
}

// Plan returns what Run does on this rank (a copy).
func (r *Reshard) Plan() Plan { return r.plan.clone() }

// Buffers returns the sizes in bytes of the send and receive buffers the
// reshard holds: one byte at least each, or 0 for a side that exchanges
// straight from or into the local part's memory (every box of that side
// lies there dense in C order, as rows of a row-major part do).
func (r *Reshard) Buffers() (send, recv int64) {
	if r.ownSend {
		send = r.send.Shape()[0]
	}
	if r.ownRecv {
		recv = r.recv.Shape()[0]
	}
	return send, recv
}

// String describes the reshard and its plan.
func (r *Reshard) String() string {
	return fmt.Sprintf("reshard %v %v → %v\n%v", r.src.dt, r.src.sh, r.dst.sh, r.plan)
}

// Close releases the exchange buffers (closing the views Alloc gave: a
// transport whose views own their memory frees it then) and makes later
// Runs fail with ErrClosed. With a device transport, call it once s has
// done the last Run's work. It waits for a Run in progress; idempotent.
func (r *Reshard) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil
	}
	r.closed = true
	var errs []error
	if r.fork != nil {
		errs = append(errs, r.fork.close())
	}
	for i, v := range []*memview.StridedMemoryView{r.send, r.recv} {
		if v != nil && [2]bool{r.ownSend, r.ownRecv}[i] {
			errs = append(errs, v.Close())
		}
	}
	return errors.Join(errs...)
}
