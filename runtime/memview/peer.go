package memview

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"

	"github.com/stridekit/stridekit/gen"
	"github.com/stridekit/stridekit/kernels"
	"github.com/stridekit/stridekit/layout"
	"github.com/stridekit/stridekit/runtime/cuda"
)

// How a copy between views on two devices of one host moves (PathPeer):
//
//   - With peer access (NVLink or PCIe), a copy is one kernel (or
//     cuMemcpyAsync) reading the source and writing the destination, one
//     side of it remote. A copy under peerPolicyMin runs on the device of
//     the copy's stream; a larger one where its layouts suit (peerSide):
//     pulled by the destination's device from a source that fills its
//     span, pushed by the source's from one with gaps, and pushed too
//     where the plan writes whole lines (pushPays). Peer access is enabled
//     once per device pair, at bind time.
//   - Copies of pipeMin bytes and more whose kernel crosses the link
//     badly (stagePays), and every copy without peer access, run the
//     staged pipeline (peerpipe.go): chunks packed on the source's
//     device, moved by cuMemcpyPeerAsync, unpacked on the destination's,
//     the three stages of successive chunks overlapping. Only dense chunks
//     cross the link; the permutations run at local bandwidth.
//
// Work on the device the copy's stream is not on goes to that device's
// side streams, ordered after the copy's stream by events and the copy's
// stream after it, so the copy is ordered on the caller's stream as any
// other; PeerStream orders a stream of the other device as well.

// PeerStream orders a copy between views on two devices (PathPeer) on o,
// a stream of the device the copy's stream is not on, as well: the copy
// starts after the work queued on o so far (the source's producer, say)
// and work queued on o later starts after the copy. Other copies ignore
// it.
func PeerStream(o *cuda.Stream) CopyOption { return func(c *copyConfig) { c.peer = o } }

// execDevice returns the device a copy on path p runs its kernel on: for
// a peer copy of peerPolicyMin bytes or more the device peerSide picks;
// for a smaller one the device of s when it is one of the two views'
// (else the source's); for other copies the device the views share.
func execDevice(dst, src *StridedMemoryView, p Path, s *cuda.Stream) *cuda.Device {
	if p == PathPeer {
		if dst.span >= peerPolicyMin {
			return peerSide(dst, src)
		}
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

// peerPolicyMin is the size of a destination from which a copy between two
// devices runs its kernel on the device peerSide picks, whatever the
// device of the copy's stream (the other device's work is ordered by
// events, a few microseconds); a smaller copy, whose time is mostly its
// launch's, runs on the stream's device.
var peerPolicyMin int64 = 1 << 20

// peerSide returns the device a large peer copy's kernel runs on: the
// destination's (a pull: the reads cross the link, the writes stay local)
// when the source fills its span, the source's (a push: only the bytes the
// copy needs are read, locally) when it has gaps or broadcasts. On two
// NVLinked H100s box tiles ran 1.3–2 times faster pulled and strided
// sources twice as fast pushed (docs/design.md, "Copies between GPUs").
func peerSide(dst, src *StridedMemoryView) *cuda.Device {
	if src.dense {
		return dst.dev
	}
	return src.dev
}

// forceStaged makes bindPeer stage even where peer access exists (tests),
// and pipeTarget, when set, is the chunk size of staged copies in bytes
// ($STRIDEKIT_PEER_CHUNK; tests set it too), pipeTargetErr the error of a
// malformed $STRIDEKIT_PEER_CHUNK, which staged copies return.
var (
	forceStaged               bool
	pipeTarget, pipeTargetErr = chunkBytes(os.Getenv("STRIDEKIT_PEER_CHUNK"))
)

// chunkBytes parses $STRIDEKIT_PEER_CHUNK: "" for the default (0), else a
// positive number of bytes.
func chunkBytes(v string) (int64, error) {
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("memview: STRIDEKIT_PEER_CHUNK=%q: not a positive number of bytes: %w", v, cuda.ErrInvalidValue)
	}
	return n, nil
}

// pipeMode is $STRIDEKIT_PEER_PIPE: "1" stages every peer copy of pipeMin
// bytes or more that needs a kernel, "0" none where there is peer access,
// anything else those stagePays picks.
var pipeMode = os.Getenv("STRIDEKIT_PEER_PIPE")

// stagePays reports whether a peer copy with peer access, planned as p
// and pushed (run by the source's device) or not, is staged rather than
// run as one kernel across the link. On two NVLinked H100s (26 cases,
// docs/design.md, "Copies between GPUs") the pipeline ran at 80–90% of
// cuMemcpyPeer where such a kernel ran at 63–75%: box tiles of items under
// 4 bytes (a 2-byte transpose, NCHW↔NHWC, an RGB transpose, random u8
// permutations), and a pushed elementwise copy whose destination rows
// are not whole 128-byte lines (a ::3 slice), so that its remote writes
// cover lines in part. Elsewhere the kernel was faster, by up to 20
// points on 64 MiB random permutations of larger items.
func stagePays(p *layout.Plan, push bool) bool {
	switch {
	case pipeMode == "1" || pipeMode == "0":
		return pipeMode == "1" && p.Bytes >= pipeMin && p.Sig.Class != layout.ClassMemcpy && p.Sig.Class != layout.ClassNone
	case p.Bytes < pipeMin:
		return false
	case p.Sig.Class == layout.ClassBoxTile:
		return p.Sig.Itemsize < 4
	case p.Sig.Class == layout.ClassElementwise:
		nd := len(p.Shape)
		return push && nd >= 2 && (p.Shape[nd-1]*int64(p.Sig.Itemsize))%128 != 0
	}
	return false
}

// pipeMin is the size from which a peer copy with peer access is staged
// through the pipeline rather than run as one kernel reaching across the
// link: below it the pipeline's extra launches and events cost more than
// its overlap wins.
const pipeMin = 8 << 20

// bindPeer binds the copy src → dst between two devices (see above): one
// kernel across the link where there is peer access, unless stagePays;
// else the staged pipeline (peerpipe.go).
func (b *binding) bindPeer(dst, src *StridedMemoryView) error {
	dev, other := b.key.dev, b.key.peer
	b.k = &b.kb
	var g *pipeGeom
	err := errPeerStaged
	if !forceStaged {
		err = dev.EnablePeerAccess(other)
	}
	if err != nil && !errors.Is(err, cuda.ErrNotSupported) {
		return err
	}
	if err == nil {
		err = kernels.BindInto(b.k, dev, dst.l, src.l, int(b.key.dstAlign), int(b.key.srcAlign), peerElemRuns)
		if err == nil && dst.span >= peerPolicyMin {
			err = b.choosePush(dst, src)
		}
		if err != nil {
			return err
		}
		if g, err = b.stageOrNot(dst, src); g == nil || err != nil {
			return err
		}
		// The pipeline's copies run on the source's device and write
		// the destination's temporaries: both ways, as the kernel's
		// device may be either.
		if err = other.EnablePeerAccess(dev); err != nil && !errors.Is(err, cuda.ErrNotSupported) {
			return err
		}
	}
	pp, err := newPeerPipe(dst, src, int(b.key.dstAlign), int(b.key.srcAlign), g)
	if err != nil {
		return err
	}
	b.stg = pp
	b.k = &pp.unpack[0]
	if pp.unpackDirect && !pp.packDirect {
		b.k = &pp.pack[0] // the kernel is the pack, on the source's device
	}
	return nil
}

// stageOrNot returns the geometry of the staged pipeline (peerGeometry)
// where the copy bound in b is to be staged (stagePays), else nil.
func (b *binding) stageOrNot(dst, src *StridedMemoryView) (*pipeGeom, error) {
	if !stagePays(&b.k.Plan, b.key.push) {
		return nil, nil
	}
	return peerGeometry(dst, src, int(b.key.dstAlign), int(b.key.srcAlign))
}

// choosePush rebinds a large peer copy, bound where peerSide put it, to be
// pushed by the source's device where that pays: as a gather in the
// destination's order where gatherPays, else as the same plan where
// pushPays.
func (b *binding) choosePush(dst, src *StridedMemoryView) error {
	switch {
	case gatherBy(gatherMode, &b.k.Plan, src.dev.Arch(), func(p *layout.Plan, arch int) bool { return gatherPays(p, arch, src.dev.MemoryBandwidth()) }):
		return b.rebindOn(src.dev, dst, src, kernels.Gather)
	case !b.key.push && pushPays(&b.k.Plan):
		return b.rebindOn(src.dev, dst, src, peerElemRuns)
	}
	return nil
}

// peerElemRunBytes is the elementwise bound (layout.PlanOptions.ElemRunBytes)
// of a kernel across the link: the bound at which the rules above were
// measured on two GPUs, where the planner's own, larger one was measured
// on one.
const peerElemRunBytes = 64

// peerElemRuns plans a copy across the link with peerElemRunBytes (a
// kernels.PlanOption).
func peerElemRuns(o *layout.PlanOptions) { o.ElemRunBytes = peerElemRunBytes }

// gatherPays reports whether a large peer copy planned as p (an
// elementwise copy, a tile or a box tile) runs faster as a gather pushed by
// the source's device (layout.ClassGather): every line of the remote
// destination written whole, the source read scattered but locally, where
// the scattered reads cost the source's memory system less than the link
// time. Each element read fetches a 32-byte sector; neighbours in the
// source's innermost dim share it, d elements apart in the destination.
//   - Items of 16 bytes always pay.
//   - Items of 4 and 8 bytes pay while d·32 bytes of sectors fit a slice
//     of L2 (4 MiB) until their neighbours reuse them, and beyond that on
//     a compute capability 9.x device whose memory moves at least
//     gatherScatterBandwidth bytes a second (dram; an H200, not an H100):
//     their sectors, 8 or 4 times the link's bytes, come from memory.
//   - Items of 1 and 2 bytes (32 or 16 times the link's bytes in sectors)
//     pay when the runs are common to both views and at least 16 bytes.
//   - Items of 2 bytes that the gather kernel on a device of compute
//     capability arch writes in words (wordGather) pay while d items hold
//     at most gatherWordReuse bytes: a word's items are read with one
//     unravelling of the indices, and neighbours that near share their
//     sectors from L1.
//   - Items of 1 to 8 bytes whose runs are short (shortRuns) and not
//     common to both views pay while d is at most 2^15 (1-byte items,
//     which fetch 32 sectors a line) or 2^18: runs of a few sectors leave
//     the plan's kernel partial lines on the link, so the gather can
//     afford more misses.
//   - Items of other sizes (loads split in pieces) never.
//
// The first three were fitted on two NVLinked H100s to 52 cases (50 picked
// right), the fifth on 64 more, the fourth on the word gathers' run, and
// the reads beyond L2 on the faster memory on two NVLinked H200s
// (docs/design.md, "Copies between GPUs").
func gatherPays(p *layout.Plan, arch int, dram int64) bool {
	if !gatherable(p) {
		return false
	}
	item := int64(p.Sig.Itemsize)
	k := innermost(p.SrcStrides)
	d := abs(p.DstStrides[k])
	switch {
	case item&(item-1) != 0:
		return false
	case item >= 16:
		return true
	case d > 1 && shortRuns(p) && d <= gatherShortReuse(item):
		return true
	case item >= 4:
		return d <= gatherReuseBytes/32 || (arch/10 == 9 && dram >= gatherScatterBandwidth)
	case item == 2 && d*item <= gatherWordReuse && wordGather(p, arch):
		return true
	}
	return d == 1 && p.Shape[k]*item >= 16
}

// gatherWordReuse is the most bytes d items of 2 bytes may hold for
// gatherPays to gather them in words. On two NVLinked H100s (stridebench
// peer, named cases and seed 1051) NCHW→NHWC f16 (d·2 = 430 bytes) ran 26
// points faster one way plus both ways gathered in words of 16 bytes; the
// f16 transpose and NHWC→NCHW f16 (32 KiB and 22 KiB) lost 32-34 points.
// The RGB u8 transpose (d = 1) gathered 21 points faster in words of 4
// bytes but 18-24 slower in the words of 16 bytes that 1-byte gathers use,
// so 1-byte items keep the other clauses.
const gatherWordReuse = 2 << 10

// wordGather reports whether the gather kernel on a device of compute
// capability arch would write the copy planned as p in words
// (gen.GatherWords): the plan as a gather has the same canonical form.
func wordGather(p *layout.Plan, arch int) bool {
	g := *p
	g.Sig.Class, g.Sig.Fast, g.Sig.Vec, g.Tile = layout.ClassGather, 0, 1, nil
	return gen.GatherWords(gen.KnobsFor(g.Sig, arch), &g) > 1
}

// gatherShortReuse is the farthest apart in the destination, in items,
// that gatherPays lets neighbours in the source be for a copy of short runs
// of items of item bytes. Fitted on two NVLinked H100s: a 1-byte copy
// 40850 apart gained both ways and lost 2 points one way, one 62624 apart
// lost 40 points; a 2-byte copy 181350 apart gained 14 one way and 37 both
// ways, a 4-byte one 169344 apart 21 and 28, one 1873872 apart lost 5.
func gatherShortReuse(item int64) int64 {
	if item == 1 {
		return 1 << 15
	}
	return 1 << 18
}

// shortRuns reports whether the shorter of the two views' innermost dims
// of plan p is at most gatherShortRun bytes long: the plan's kernel moves
// runs of a few sectors at best.
func shortRuns(p *layout.Plan) bool {
	ks, kd := innermost(p.SrcStrides), innermost(p.DstStrides)
	return min(p.Shape[ks], p.Shape[kd])*int64(p.Sig.Itemsize) <= gatherShortRun
}

// gatherShortRun is the longest run, in bytes, that shortRuns calls short.
const gatherShortRun = 128

// innermost returns the dim of least |stride| in strides.
func innermost(strides []int64) int {
	k := 0
	for j, s := range strides {
		if abs(s) < abs(strides[k]) {
			k = j
		}
	}
	return k
}

// gatherable reports whether a copy planned as p could run as a gather:
// an elementwise copy, a tile or a box tile.
func gatherable(p *layout.Plan) bool {
	switch p.Sig.Class {
	case layout.ClassElementwise, layout.ClassTile, layout.ClassBoxTile:
		return true
	}
	return false
}

// gatherMode is $STRIDEKIT_PEER_GATHER, gatherBy's mode for gatherPays
// (large peer copies): for measuring the rule (stridebench peer).
var gatherMode = os.Getenv("STRIDEKIT_PEER_GATHER")

// gatherReuseBytes is the most bytes of source sectors a gather may fetch
// before their neighbours reuse them (gatherPays).
const gatherReuseBytes = 4 << 20

// gatherScatterBandwidth is the least memory bandwidth, in bytes a second,
// with which gatherPays gathers 4- and 8-byte items whose sectors L2 does
// not keep until their reuse. On two NVLinked H100s (3.35 TB/s) the 4-D
// f32 reversal ran at 60% of cuMemcpyPeer gathered against 77% as a box
// tile; on two H200s (4.8 TB/s) at 84% against 77% one way and 82%
// against 65% both ways, and four random 4- and 8-byte permutations 90-92%
// against 76-85% (docs/design.md, "Copies between GPUs"). 8-byte items were
// not timed beyond L2 on H100s, so they keep the L2 bound there.
const gatherScatterBandwidth = 4e12

// pushPays reports whether a peer copy planned as p, pulled by the
// rule of peerSide (its source fills its span), runs faster pushed: tile
// transposes and elementwise copies of 16-byte accesses write the remote
// side in whole lines. On two NVLinked H100s (docs/design.md, "Copies
// between GPUs") pushing them ran one way within 4 points of pulling
// (-3.7 to +5.4) and both ways at once 5–18 points faster: pulls put their
// read requests on the link that carries the other direction's data.
func pushPays(p *layout.Plan) bool {
	switch p.Sig.Class {
	case layout.ClassTile:
		return true
	case layout.ClassElementwise:
		return int(p.Sig.Itemsize)*int(p.Sig.Vec) >= 16
	}
	return false
}

// rebindOn binds b's kernel again, to run on o (either of the two devices)
// with o's peer access to the other enabled, planned with opts besides.
// Without that access it keeps b as it is.
func (b *binding) rebindOn(o *cuda.Device, dst, src *StridedMemoryView, opts ...kernels.PlanOption) error {
	to := b.key.peer
	if o == to {
		to = b.key.dev
	}
	if err := o.EnablePeerAccess(to); err != nil {
		if errors.Is(err, cuda.ErrNotSupported) {
			return nil
		}
		return err
	}
	b.kb = kernels.Bound{}
	return kernels.BindInto(b.k, o, dst.l, src.l, int(b.key.dstAlign), int(b.key.srcAlign), opts...)
}

// errPeerStaged stands for "no peer access" when forceStaged is set.
var errPeerStaged = fmt.Errorf("memview: staged peer copy forced: %w", cuda.ErrNotSupported)

// checkPeerStreams checks PeerStream's stream, if given, of a peer copy on
// s: it must be of the device s is not of (s itself was checked by
// streamFits, before the copy was bound).
func checkPeerStreams(dst, src *StridedMemoryView, s *cuda.Stream, cfg copyConfig) error {
	other := dst.dev
	if s.Device() == dst.dev {
		other = src.dev
	}
	if o := cfg.peer; o != nil && o.Device() != other {
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
		err = enqueueOn(b, dst, src, s)
	} else {
		err = b.stg.run(dst, src, s, cfg)
	}
	if err == nil && cfg.peer != nil {
		err = join(cfg.peer, s)
	}
	if err == nil && cfg.blocking > 0 {
		err = s.Synchronize()
	}
	return incomplete(err)
}

// enqueueOn queues the kernel of b for a copy ordered on s: on s where s
// is of the device the kernel was bound on, else on that device's side
// stream between two events.
func enqueueOn(b *binding, dst, src *StridedMemoryView, s *cuda.Stream) error {
	es, err := follow(b.k.Device(), s)
	if err == nil {
		err = b.k.Enqueue(es, cuda.DevicePtr(dst.low), cuda.DevicePtr(src.low))
	}
	if err == nil && es != s {
		err = join(s, es)
	}
	return err
}

// follow returns a stream of dev whose next work starts after the work
// queued so far on s: s itself when it is dev's, else dev's side stream,
// made to wait for s.
func follow(dev *cuda.Device, s *cuda.Stream) (*cuda.Stream, error) {
	if s.Device() == dev {
		return s, nil
	}
	o, err := sideStream(dev, 0)
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

// side holds, per device, the streams peer copies queue their work on that
// device on when the copy's stream is another (kernels on the first, the
// pipeline's peer memcpys on the second, so they overlap), and a free list
// of events that order them.
var side sync.Map // *cuda.Device → *sideState

type sideState struct {
	once   [2]sync.Once
	s      [2]*cuda.Stream
	err    [2]error
	events chan *cuda.Event
}

func sideOf(dev *cuda.Device) *sideState {
	if v, ok := side.Load(dev); ok {
		return v.(*sideState)
	}
	v, _ := side.LoadOrStore(dev, &sideState{events: make(chan *cuda.Event, 64)})
	return v.(*sideState)
}

// sideStream returns dev's side stream i (0: kernels, 1: copies), made at
// the first call.
func sideStream(dev *cuda.Device, i int) (*cuda.Stream, error) {
	st := sideOf(dev)
	st.once[i].Do(func() { st.s[i], st.err[i] = dev.NewStream(true) })
	return st.s[i], st.err[i]
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
