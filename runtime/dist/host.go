package dist

import (
	"context"
	"fmt"
	"math"
	"runtime/debug"
	"sync"

	"github.com/stridekit/stridekit/layout"
	"github.com/stridekit/stridekit/runtime/cuda"
	"github.com/stridekit/stridekit/runtime/memview"
)

// MaxHostRanks is the most ranks NewHostGroup makes: a host group is for
// tests and single-machine programs, one goroutine per rank.
const MaxHostRanks = 1 << 16

// HostTransport is one rank of a host group (NewHostGroup): a Transport
// whose ranks are goroutines of one process exchanging through host
// memory. An exchange is a rendezvous: each rank publishes its send buffer
// and segments, all ranks meet, each copies what it receives out of the
// others' send buffers (memview copies on the CPU), and all meet again
// before returning, so no send buffer is written while another rank still
// reads it.
//
// A rank that never arrives breaks the group: the ranks waiting for it
// return, once their context ends, an error wrapping ErrTimeout and the
// context's error; Abort and Close break it at once (ErrAborted). From
// then on every exchange of every rank fails with that error, so no
// exchange happens in part. Its methods are safe for concurrent use; one
// rank's exchanges take turns, as the collective calls they are.
type HostTransport struct {
	g    *hostGroup
	rank int
	busy chan struct{} // holds a token while the rank exchanges
}

// hostGroup is what the ranks of a host group share.
type hostGroup struct {
	n       int
	dead    chan struct{} // closed when the group breaks
	mu      sync.Mutex
	drained sync.Cond     // on mu: copiers dropped to 0
	err     error         // why the group broke, nil while it works
	phase   chan struct{} // closed when all ranks reach the current barrier
	arrived int           // ranks at the current barrier
	copiers int           // ranks copying out of the others' send buffers
	slots   []hostSlot    // each rank's published exchange
}

// hostSlot is one rank's side of the current exchange, published for the
// others.
type hostSlot struct {
	send             *memview.StridedMemoryView
	sendSeg, recvSeg []Segment
	refused          error // the rank's own arguments were refused
}

// NewHostGroup returns the n ranks of a new host group, rank r at index r,
// for n goroutines of this process to use (one each). n must be in
// [1, MaxHostRanks]; else it is an ErrMesh error.
func NewHostGroup(n int) ([]Transport, error) {
	if n < 1 || n > MaxHostRanks {
		return nil, fmt.Errorf("%w: host group of %d ranks, want 1 to %d", ErrMesh, n, MaxHostRanks)
	}
	g := &hostGroup{n: n, dead: make(chan struct{}), phase: make(chan struct{}), slots: make([]hostSlot, n)}
	g.drained.L = &g.mu
	ts := make([]Transport, n)
	for r := range ts {
		ts[r] = &HostTransport{g: g, rank: r, busy: make(chan struct{}, 1)}
	}
	return ts, nil
}

// Rank returns this member's rank.
func (h *HostTransport) Rank() int { return h.rank }

// Size returns the number of ranks in the group.
func (h *HostTransport) Size() int { return h.g.n }

// Alloc returns n bytes of new, zeroed Go memory as a contiguous 1-D uint8
// view; s is not used. A negative n, or one more than the process can
// address, is an ErrBuffer error.
func (h *HostTransport) Alloc(n int64, s *cuda.Stream) (*memview.StridedMemoryView, error) {
	l, err := layout.New([]int64{n}, nil, 1)
	if err != nil {
		return nil, fmt.Errorf("%w: Alloc(%d) on host rank %d: %w", ErrBuffer, n, h.rank, err)
	}
	b, err := hostBytes(n)
	if err != nil {
		return nil, fmt.Errorf("dist: Alloc on host rank %d: %w", h.rank, err)
	}
	return memview.FromHost(b, l)
}

// maxHostBytes is the most bytes hostBytes allocates whatever the memory:
// what an int counts, and below the largest allocation Go makes (2⁴⁸
// bytes on 64-bit platforms), beyond which make panics.
const maxHostBytes = min(math.MaxInt, 1<<47)

// hostBytes returns n zeroed bytes of Go memory, or an error wrapping
// ErrBuffer and memview.ErrTooLarge when n is more than Go allocates at
// once or more than the Go memory limit (GOMEMLIMIT).
func hostBytes(n int64) ([]byte, error) {
	if n < 0 || uint64(n) > maxHostBytes || n > debug.SetMemoryLimit(-1) {
		return nil, fmt.Errorf("%w: %w: %d bytes of host memory", ErrBuffer, memview.ErrTooLarge, n)
	}
	return make([]byte, n), nil
}

// AllToAll exchanges segments with every rank of the group (see
// Transport): it returns when this rank has received everything and every
// rank has finished reading this rank's send buffer. send and recv must be
// views of host memory from Alloc, apart; a copy out of pinned memory
// waits for s first (memview's host copies), else s is not used. Bad
// arguments on one rank fail the exchange on every rank (that rank with
// ErrSegment, ErrBuffer or ErrNil, the others with ErrSegment), and a
// segment length a sender and its receiver disagree on fails it on those
// two (ErrSegment), nothing copied into their receive buffers; the ranks
// still meet, so none waits in vain, and the group goes on working. A nil
// ctx waits forever.
func (h *HostTransport) AllToAll(ctx context.Context, send, recv *memview.StridedMemoryView, sendSeg, recvSeg []Segment, s *cuda.Stream) error {
	if ctx == nil {
		ctx = context.Background()
	}
	select {
	case h.busy <- struct{}{}:
		defer func() { <-h.busy }()
	case <-ctx.Done():
		return fmt.Errorf("%w: rank %d gave up waiting for its exchange in progress: %w", ErrTimeout, h.rank, ctx.Err())
	}
	g := h.g
	refused := checkExchange(h.rank, g.n, send, recv, sendSeg, recvSeg)
	sl := hostSlot{send: send, refused: refused}
	if refused == nil {
		sl.sendSeg, sl.recvSeg = append([]Segment(nil), sendSeg...), append([]Segment(nil), recvSeg...)
	}
	if err := g.barrier(ctx, h.rank, "to start an exchange", &sl); err != nil {
		return err
	}
	err := refused
	if err == nil {
		err = g.receive(h.rank, recv, sendSeg, recvSeg, s)
	}
	if berr := g.barrier(ctx, h.rank, "to end an exchange", nil); berr != nil {
		g.drain()
		return berr
	}
	return err
}

// Abort breaks the group, as a rank that dies would: every rank's
// exchange in progress or to come fails with an error wrapping ErrAborted
// (and cause, when not nil). A group already broken stays broken for its
// first reason.
func (h *HostTransport) Abort(cause error) {
	if cause == nil {
		h.g.breakWith(fmt.Errorf("%w: rank %d aborted", ErrAborted, h.rank))
		return
	}
	h.g.breakWith(fmt.Errorf("%w: rank %d aborted: %w", ErrAborted, h.rank, cause))
}

// Close leaves the group, which breaks it: exchanges fail from then on
// with an error wrapping ErrAborted and ErrClosed. Close the ranks once
// done with them; it frees nothing the garbage collector would not.
// Idempotent.
func (h *HostTransport) Close() error {
	h.g.breakWith(fmt.Errorf("%w: rank %d closed its transport: %w", ErrAborted, h.rank, ErrClosed))
	return nil
}

// checkExchange checks one rank's arguments of AllToAll.
func checkExchange(rank, n int, send, recv *memview.StridedMemoryView, sendSeg, recvSeg []Segment) error {
	if len(sendSeg) != n || len(recvSeg) != n {
		return fmt.Errorf("%w: rank %d: %d send and %d receive segments for %d ranks", ErrSegment, rank, len(sendSeg), len(recvSeg), n)
	}
	if send == nil || recv == nil {
		return fmt.Errorf("%w: rank %d: send %v, receive %v", ErrNil, rank, send, recv)
	}
	for _, v := range []*memview.StridedMemoryView{send, recv} {
		if err := checkBuffer(v, 0); err != nil {
			return fmt.Errorf("rank %d: %w", rank, err)
		}
		if k := v.Kind(); k != cuda.MemoryPageable && k != cuda.MemoryHost {
			return fmt.Errorf("%w: rank %d: %v is %v memory, a host group exchanges host memory", ErrBuffer, rank, v, k)
		}
	}
	ns, nr := send.Shape()[0], recv.Shape()[0]
	if ns > 0 && nr > 0 && send.Ptr() < recv.Ptr()+uintptr(nr) && recv.Ptr() < send.Ptr()+uintptr(ns) {
		return fmt.Errorf("%w: rank %d: send %v and receive %v share memory", ErrBuffer, rank, send, recv)
	}
	if recv.ReadOnly() {
		return fmt.Errorf("%w: rank %d: receive buffer %v is read-only", ErrBuffer, rank, recv)
	}
	for q := range n {
		if err := checkSegment(sendSeg[q], ns); err != nil {
			return fmt.Errorf("%w: rank %d: send segment for rank %d: %w", ErrSegment, rank, q, err)
		}
		if err := checkSegment(recvSeg[q], nr); err != nil {
			return fmt.Errorf("%w: rank %d: receive segment from rank %d: %w", ErrSegment, rank, q, err)
		}
	}
	return nil
}

// checkSegment reports whether seg lies in a buffer of size bytes.
func checkSegment(seg Segment, size int64) error {
	if seg.Off < 0 || seg.Len < 0 || seg.Off > size || seg.Len > size-seg.Off {
		return fmt.Errorf("%+v outside the buffer's %d bytes", seg, size)
	}
	return nil
}

// barrier waits until all ranks reach it (publishing sl, when not nil, as
// the rank's side of the exchange), or the group breaks, or ctx ends; in
// the last case it breaks the group. It returns nil once all arrived, else
// why the group broke.
func (g *hostGroup) barrier(ctx context.Context, rank int, what string, sl *hostSlot) error {
	g.mu.Lock()
	if g.err != nil {
		defer g.mu.Unlock()
		return g.err
	}
	if sl != nil {
		g.slots[rank] = *sl
	}
	ch := g.phase
	if g.arrived++; g.arrived == g.n {
		g.arrived = 0
		g.phase = make(chan struct{})
		close(ch)
		g.mu.Unlock()
		return nil
	}
	g.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-g.dead:
	case <-ctx.Done():
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	select {
	case <-ch: // all arrived after all
		return nil
	default:
	}
	if g.err == nil {
		g.err = fmt.Errorf("%w: rank %d gave up waiting %s with %d of %d ranks there: %w", ErrTimeout, rank, what, g.arrived, g.n, ctx.Err())
		close(g.dead)
	}
	return g.err
}

// breakWith breaks the group for reason err, unless it is broken already.
func (g *hostGroup) breakWith(err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.err == nil {
		g.err = err
		close(g.dead)
	}
}

// receive copies into recv, for every rank q, q's segment for rank me out
// of q's send buffer, once it has checked that every rank's arguments were
// accepted and that each pair agrees on its lengths. It runs between the
// two barriers of an exchange, when the slots are stable.
func (g *hostGroup) receive(me int, recv *memview.StridedMemoryView, sendSeg, recvSeg []Segment, s *cuda.Stream) error {
	for q, sl := range g.slots {
		if sl.refused != nil {
			return fmt.Errorf("%w: rank %d: the exchange failed on rank %d: %w", ErrSegment, me, q, sl.refused)
		}
	}
	for q, sl := range g.slots {
		if from, want := sl.sendSeg[me].Len, recvSeg[q].Len; from != want {
			return fmt.Errorf("%w: rank %d sends %d bytes to rank %d, which expects %d", ErrSegment, q, from, me, want)
		}
		if to, want := sendSeg[q].Len, sl.recvSeg[me].Len; to != want {
			return fmt.Errorf("%w: rank %d sends %d bytes to rank %d, which expects %d", ErrSegment, me, to, q, want)
		}
	}
	if err := g.startCopy(); err != nil {
		return err
	}
	defer g.endCopy()
	for q, sl := range g.slots {
		in, out := recvSeg[q], sl.sendSeg[me]
		if in.Len == 0 {
			continue
		}
		dst, err := recv.Slice(layout.Span(in.Off, in.Off+in.Len))
		if err != nil {
			return err
		}
		src, err := sl.send.Slice(layout.Span(out.Off, out.Off+out.Len))
		if err != nil {
			return err
		}
		if err := dst.CopyFrom(src, s); err != nil {
			return fmt.Errorf("dist: rank %d receiving from rank %d: %w", me, q, err)
		}
	}
	return nil
}

// startCopy registers a rank about to read the others' send buffers,
// unless the group is broken (a rank that left may reuse its buffer).
func (g *hostGroup) startCopy() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.err != nil {
		return g.err
	}
	g.copiers++
	return nil
}

// endCopy ends what startCopy began.
func (g *hostGroup) endCopy() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.copiers--; g.copiers == 0 {
		g.drained.Broadcast()
	}
}

// drain waits until no rank reads the others' send buffers: a rank that
// leaves an exchange early (the group broke at its end) may then reuse
// its own. The copies it waits for take no waiting on other ranks, so it
// is brief.
func (g *hostGroup) drain() {
	g.mu.Lock()
	defer g.mu.Unlock()
	for g.copiers > 0 {
		g.drained.Wait()
	}
}
