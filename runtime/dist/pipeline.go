package dist

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"os"
	"strconv"

	"github.com/stridekit/stridekit/runtime/cuda"
	"github.com/stridekit/stridekit/runtime/memview"
)

// A reshard in stages. Packing, exchanging and unpacking one after the
// other adds the two local copies' time to the exchange's. A Reshard on a
// device transport therefore cuts every box it moves into the same number
// of chunks along the box's first dim of more than one index (so that each
// chunk's packed image is a contiguous part of the box's segment), and runs
// chunk c's exchange while chunk c+1 is packed and chunk c-1 unpacked: the
// packs on one side stream, the exchanges on the run's stream, the unpacks
// on another side stream, ordered by events. Every rank must call the
// transport as often as the others, so the number of chunks depends only
// on what every rank knows alike: the global tensor's bytes per rank.

// reshardChunkBytes is the size per rank of the global tensor that each
// chunk of a reshard's exchange aims at, and maxReshardChunks the most
// chunks (each costs the transport a call).
const (
	reshardChunkBytes = 8 << 20
	maxReshardChunks  = 4
)

// reshardChunks returns the number of chunks a reshard of a global tensor
// of bytes bytes over ranks ranks cuts its exchange into: bytes/ranks in
// chunks of about reshardChunkBytes, at most maxReshardChunks, or what
// $STRIDEKIT_RESHARD_CHUNKS says (1 to 64; for measuring, set alike on
// every rank).
func reshardChunks(bytes int64, ranks int) int {
	if n, err := strconv.Atoi(os.Getenv("STRIDEKIT_RESHARD_CHUNKS")); err == nil && n >= 1 && n <= 64 {
		return n
	}
	per := bytes / int64(max(ranks, 1))
	return int(min(max((per+reshardChunkBytes-1)/reshardChunkBytes, 1), maxReshardChunks))
}

// tensorBytes returns the bytes of a tensor of shape in items of item
// bytes, saturating at the largest int64.
func tensorBytes(shape []int64, item int64) int64 {
	b := uint64(item)
	for _, e := range shape {
		hi, lo := bits.Mul64(b, uint64(e))
		if hi != 0 || lo > math.MaxInt64 {
			return math.MaxInt64
		}
		b = lo
	}
	return int64(b)
}

// chunkOf returns chunk c of n of box: the indices [Lo+e·c/n, Lo+e·(c+1)/n)
// of its first dim of e > 1 indices, every index of the others; and the
// byte offset and length of that chunk within the box's dense C-order
// image of bytes bytes. Chunks past the dim's extent are empty.
func chunkOf(box Block, bytes int64, c, n int) (Block, int64, int64) {
	k := 0
	for k < len(box)-1 && box[k].Len() <= 1 {
		k++
	}
	if len(box) == 0 || n <= 1 || box[k].Len() <= 1 {
		if c == 0 {
			return box, 0, bytes
		}
		return nil, 0, 0
	}
	e := box[k].Len()
	at := func(c int) int64 { return e/int64(n)*int64(c) + e%int64(n)*int64(c)/int64(n) }
	lo, hi := at(c), at(c+1)
	if hi <= lo {
		return nil, 0, 0
	}
	sub := append(Block(nil), box...)
	sub[k] = Interval{box[k].Lo + lo, box[k].Lo + hi}
	row := bytes / e // bytes per index of dim k (the dims before it hold one)
	return sub, lo * row, (hi - lo) * row
}

// stage is one chunk of a reshard: its segments of the exchange buffers,
// by peer, and the copies that pack and unpack it (none on a side whose
// buffer is the local part's memory), with the transfers they move (for
// errors).
type stage struct {
	sendSeg, recvSeg []Segment
	pack, unpack     []*memview.BoundCopy
	packT, unpackT   []Transfer
}

// buildStages cuts the reshard's exchange into n stages: the whole
// segments sendSeg and recvSeg of the send and receive buffers cut as
// chunkOf cuts their boxes, and the copies bound for each chunk.
func (r *Reshard) buildStages(n int, sendSeg, recvSeg []Segment) error {
	r.stages = make([]stage, n)
	for c := range r.stages {
		st := &r.stages[c]
		var err error
		if st.sendSeg, st.pack, st.packT, err = r.chunkSide(r.send, sendSeg, r.plan.Sends, r.ownSend, false, c, n); err != nil {
			return err
		}
		if st.recvSeg, st.unpack, st.unpackT, err = r.chunkSide(r.recv, recvSeg, r.plan.Recvs, r.ownRecv, true, c, n); err != nil {
			return err
		}
	}
	return nil
}

// chunkSide returns chunk c of n of one side of the exchange (the sends
// when in is false, the receives when in is true): each transfer's segment
// of buf cut to the chunk, and where buf is the reshard's own the copies
// that pack or unpack those chunks.
func (r *Reshard) chunkSide(buf *memview.StridedMemoryView, segs []Segment, ts []Transfer, own, in bool, c, n int) ([]Segment, []*memview.BoundCopy, []Transfer, error) {
	out := make([]Segment, len(segs))
	var copies []*memview.BoundCopy
	var moved []Transfer
	for _, t := range ts {
		box, off, size := chunkOf(t.Box, t.Bytes, c, n)
		if size == 0 {
			continue
		}
		out[t.Peer] = Segment{Off: segs[t.Peer].Off + off, Len: size}
		if !own {
			continue
		}
		cp, err := r.bindSegment(buf, out[t.Peer].Off, box, in)
		if err != nil {
			what := map[bool]string{false: "pack %v for rank %d: %w", true: "unpack %v from rank %d: %w"}[in]
			return nil, nil, nil, fmt.Errorf(what, box, t.Peer, err)
		}
		copies = append(copies, cp)
		moved = append(moved, Transfer{Peer: t.Peer, Box: box, Bytes: size})
	}
	return out, copies, moved, nil
}

// packs queues stage st's packs on s.
func (r *Reshard) packs(st *stage, s *cuda.Stream) error {
	for i, c := range st.pack {
		if err := c.Copy(s); err != nil {
			t := st.packT[i]
			return fmt.Errorf("dist: reshard on rank %d: pack %v for rank %d: %w", r.plan.Rank, t.Box, t.Peer, err)
		}
	}
	return nil
}

// unpacks queues stage st's unpacks on s.
func (r *Reshard) unpacks(st *stage, s *cuda.Stream) error {
	for i, c := range st.unpack {
		if err := c.Copy(s); err != nil {
			t := st.unpackT[i]
			return fmt.Errorf("dist: reshard on rank %d: unpack %v from rank %d: %w", r.plan.Rank, t.Box, t.Peer, err)
		}
	}
	return nil
}

// exchange runs stage st's part of the exchange on s.
func (r *Reshard) exchange(ctx context.Context, st *stage, s *cuda.Stream) error {
	if err := r.t.AllToAll(ctx, r.send, r.recv, st.sendSeg, st.recvSeg, s); err != nil {
		return fmt.Errorf("dist: reshard on rank %d: exchange: %w", r.plan.Rank, err)
	}
	return nil
}

// pipe is the side streams and events of a staged reshard on one device:
// packs run on in, unpacks on out, the exchanges on the run's stream.
type pipe struct {
	dev       *cuda.Device
	in, out   *cuda.Stream
	start     *cuda.Event   // the run's stream at the start
	packed    []*cuda.Event // on in, after each stage's packs
	exchanged []*cuda.Event // on the run's stream, after each stage's exchange
	done      *cuda.Event   // on out, after the last unpack
}

// newPipe makes the streams and events of n stages on dev.
func newPipe(dev *cuda.Device, n int) (*pipe, error) {
	p := &pipe{dev: dev}
	var err error
	if p.in, err = dev.NewStream(true); err == nil {
		p.out, err = dev.NewStream(true)
	}
	ev := func() *cuda.Event {
		if err != nil {
			return nil
		}
		var e *cuda.Event
		e, err = dev.NewEvent(false)
		return e
	}
	p.start, p.done = ev(), ev()
	for range n {
		p.packed, p.exchanged = append(p.packed, ev()), append(p.exchanged, ev())
	}
	if err != nil {
		return nil, errors.Join(err, p.close())
	}
	return p, nil
}

// runPipelined queues the stages on s and the pipe's side streams: every
// pack on in after s's earlier work, stage c's exchange on s after its
// packs, its unpacks on out after its exchange, and s after the last
// unpack.
func (r *Reshard) runPipelined(ctx context.Context, s *cuda.Stream) error {
	if r.pipe == nil || r.pipe.dev != s.Device() {
		p, err := newPipe(s.Device(), len(r.stages))
		if err != nil {
			return fmt.Errorf("dist: reshard on rank %d: %w", r.plan.Rank, err)
		}
		if r.pipe != nil {
			r.pipe.close()
		}
		r.pipe = p
	}
	p := r.pipe
	if err := after(p.in, p.start, s); err != nil {
		return err
	}
	for c := range r.stages {
		if err := r.packs(&r.stages[c], p.in); err != nil {
			return err
		}
		if err := p.packed[c].Record(p.in); err != nil {
			return err
		}
	}
	for c := range r.stages {
		if err := s.WaitEvent(p.packed[c]); err != nil {
			return err
		}
		if err := r.exchange(ctx, &r.stages[c], s); err != nil {
			return err
		}
		if err := after(p.out, p.exchanged[c], s); err != nil {
			return err
		}
		if err := r.unpacks(&r.stages[c], p.out); err != nil {
			return err
		}
	}
	return after(s, p.done, p.out)
}

// after makes stream s wait for the work queued so far on stream on,
// through event e.
func after(s *cuda.Stream, e *cuda.Event, on *cuda.Stream) error {
	if err := e.Record(on); err != nil {
		return err
	}
	return s.WaitEvent(e)
}

func (p *pipe) close() error {
	var errs []error
	for _, e := range append(append([]*cuda.Event{p.start, p.done}, p.packed...), p.exchanged...) {
		if e != nil {
			errs = append(errs, e.Close())
		}
	}
	for _, s := range []*cuda.Stream{p.in, p.out} {
		if s != nil {
			errs = append(errs, s.Close())
		}
	}
	return errors.Join(errs...)
}
