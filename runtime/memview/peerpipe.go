package memview

import (
	"errors"
	"fmt"
	"slices"

	"github.com/stridekit/stridekit/kernels"
	"github.com/stridekit/stridekit/layout"
	"github.com/stridekit/stridekit/runtime/cuda"
)

// The staged peer pipeline. The copy's image C holds its elements dense
// (the source's broadcast dims at stride 0, each distinct element once):
// laid out as the source where the source is gap-free, as the destination
// where it is and the source broadcasts nothing, else in the source's
// memory order (gradedCuts picks by the model of peersched.go). C is cut
// into chunks along its outermost dim, each chunk a contiguous block of C
// and a sub-view of both views. Each chunk goes through three stages:
// packed from the source into C on the source's device (no kernel when
// the source is C itself), moved by cuMemcpyPeerAsync into C's copy on the
// destination's device, and unpacked from there into the destination (no
// kernel when the destination is C). The stages run on three streams (the
// source device's kernels, its copies, the destination device's kernels),
// ordered per chunk by events, so that chunk k+1 can cross the link while
// chunk k is unpacked and chunk k+2 packed. The chunks grow from a small
// first one where there is a pack and shrink to a small last one where
// there is an unpack (peersched.go): what overlaps nothing is then small.
// The images are whole (not rings): the copy takes up to its bytes again
// on each device, for the length of the copy, from the devices' pools of
// temporaries (cuda.Device.AllocTemp), which keep them mapped from one
// copy to the next.

// pipeChunks is about how many chunks a copy is cut into where the
// schedule is not graded (no image has a dim of two indices to cut along;
// tests without local copy rates): enough that the first pack and the
// last unpack, which overlap nothing, are a small part of the whole, few
// enough that the host queues the work faster than the link moves it.
const pipeChunks = 8

// peerPipe is a staged peer copy, bound.
type peerPipe struct {
	span   int64 // bytes of C
	chunks []pipeChunk
	// pack and unpack are the kernels of each chunk shape (chunks of one
	// extent per dim share one), the first chunk's at [0].
	pack, unpack             []kernels.Bound
	packDirect, unpackDirect bool // C is the source's / destination's own bytes
}

// pipeChunk is one chunk: the byte offsets of its lowest byte from the
// source's lowest byte, the destination's and C's start; its bytes; and
// the index of its shape.
type pipeChunk struct {
	src, dst, img, bytes int64
	shape                int
}

// newPeerPipe binds the staged copy src → dst, whose lowest bytes are
// aligned to dstAlign and srcAlign, cut as g (nil: pipeGeometry's cut for
// the devices' local copy rates).
func newPeerPipe(dst, src *StridedMemoryView, dstAlign, srcAlign int, g *pipeGeom) (*peerPipe, error) {
	if g == nil {
		var err error
		if g, err = peerGeometry(dst, src, dstAlign, srcAlign); err != nil {
			return nil, err
		}
	}
	pp := &peerPipe{span: g.span, chunks: g.chunks, packDirect: g.packDirect, unpackDirect: g.unpackDirect}
	pp.pack, pp.unpack = make([]kernels.Bound, len(g.first)), make([]kernels.Bound, len(g.first))
	for k, subs := range g.first {
		if err := pp.bindShape(k, subs, src.dev, dst.dev, g.aligns); err != nil {
			return nil, err
		}
	}
	return pp, nil
}

// peerGeometry is pipeGeometry for the views' devices: chunks of
// $STRIDEKIT_PEER_CHUNK bytes where it is set, else the schedule fitted
// to the local copy rates of the two devices (localRate).
func peerGeometry(dst, src *StridedMemoryView, dstAlign, srcAlign int) (*pipeGeom, error) {
	if pipeTargetErr != nil {
		return nil, pipeTargetErr
	}
	rate := func(onSrc bool, d, s layout.Layout) float64 {
		if onSrc {
			return localRate(src.dev, d, s)
		}
		return localRate(dst.dev, d, s)
	}
	return pipeGeometry(dst.l, src.l, dstAlign, srcAlign, pipeTarget, rate)
}

// pipeGeom is the geometry of a staged copy: C's size, the chunks, the
// sub-layouts (as chunkOf returns them) of the first chunk of each shape,
// whether C is either view's own bytes, and the alignment every chunk's
// lowest bytes keep (the same order).
type pipeGeom struct {
	span                     int64
	chunks                   []pipeChunk
	first                    [][4]layout.Layout
	packDirect, unpackDirect bool
	aligns                   [3]int
}

// rateFunc returns the bytes a second a local copy src → dst moves on the
// source's device (onSrc) or the destination's.
type rateFunc func(onSrc bool, dst, src layout.Layout) float64

// pipeGeometry cuts the copy sl → dl (lowest bytes aligned to dstAlign and
// srcAlign) into chunks: of about target bytes when target > 0; else by
// the schedule of the image C that the model (pipeModel, with local copy
// rates from rate) expects fastest, where C has an outermost dim of two
// indices or more to cut (gradedCuts); else of about 1/pipeChunks of C,
// 4 MiB at least.
func pipeGeometry(dl, sl layout.Layout, dstAlign, srcAlign int, target int64, rate rateFunc) (*pipeGeom, error) {
	sl, err := sl.BroadcastTo(dl.Shape()...) // the same lowest byte
	if err != nil {
		return nil, err
	}
	c, err := compact(sl)
	if err != nil {
		return nil, err
	}
	g := &pipeGeom{span: c.RequiredSizeInBytes()}
	var all [][]layout.Range
	if target <= 0 && rate != nil {
		c, all = gradedCuts(dl, sl, g.span, rate)
	}
	if all == nil {
		if target <= 0 {
			target = max(g.span/pipeChunks, 4<<20)
		}
		if c, err = compactOuter(sl, pipeOuter(dl, sl, g.span, target)); err != nil {
			return nil, err
		}
		all = cutsOf(c, target).all()
	}
	g.packDirect, g.unpackDirect = c.Equal(sl), c.Equal(dl)
	return g, g.cut([3]layout.Layout{sl, dl, c}, all, [3]int{srcAlign, dstAlign, layout.MaxVectorBytes})
}

// cut fills g's chunks, shapes and alignments from the chunks' ranges of
// views (source, destination, C), whose lowest bytes are aligned to
// aligns.
func (g *pipeGeom) cut(views [3]layout.Layout, all [][]layout.Range, aligns [3]int) error {
	g.aligns = aligns
	shapes := map[string]int{}
	for _, ranges := range all {
		ch, subs, err := chunkOf(views, ranges)
		if err != nil {
			return err
		}
		key := fmt.Sprint(subs[3].Shape())
		k, ok := shapes[key]
		if !ok {
			k = len(g.first)
			shapes[key] = k
			g.first = append(g.first, subs)
		}
		ch.shape = k
		for i, off := range [3]int64{ch.src, ch.dst, ch.img} {
			g.aligns[i] = alignAt(g.aligns[i], off)
		}
		g.chunks = append(g.chunks, ch)
	}
	return nil
}

// pipeRunBytes is the run, in bytes, from which pipeOuter counts a
// view's runs as long enough: a box tile moves runs of 128 bytes and more
// at its full speed.
const pipeRunBytes = 512

// pipeOuter returns the dim to cut a staged copy's chunks along, the one
// C is laid out with outermost (compactOuter): among the dims of more than
// one index that the source does not broadcast, the one whose chunks of
// about target bytes (C is span bytes) leave both views the longest
// innermost runs (runBytes, counted up to pipeRunBytes); among equals the
// source's outermost. Cutting along the source's outermost dim alone can
// leave the destination runs of a few elements: in a full reversal it is
// the destination's innermost dim. It returns -1 when no dim has two
// indices.
func pipeOuter(dl, sl layout.Layout, span, target int64) int {
	shape, ss := sl.Shape(), sl.Strides()
	best, most := -1, int64(-1)
	for _, d := range sl.StrideOrder() {
		if shape[d] <= 1 || ss[d] == 0 {
			continue
		}
		r := min(shape[d], max(1, target/max(span/shape[d], 1)))
		if run := min(runBytes(sl, d, r), runBytes(dl, d, r), pipeRunBytes); run > most {
			best, most = d, run
		}
	}
	return best
}

// runBytes returns the bytes of l's innermost contiguous run (dims of one
// index and broadcast dims aside) where dim d keeps r of its indices.
func runBytes(l layout.Layout, d int, r int64) int64 {
	shape, st := l.Shape(), l.Strides()
	ord := l.StrideOrder()
	run := int64(1)
	for i := len(ord) - 1; i >= 0; i-- {
		k := ord[i]
		if shape[k] == 1 || st[k] == 0 {
			continue
		}
		if abs(st[k]) != run {
			break
		}
		if k == d {
			run *= r
			break
		}
		run *= shape[k]
	}
	return run * int64(l.Itemsize())
}

// bindShape binds the pack and unpack kernels of chunk shape k, whose
// sub-layouts are subs (see chunkOf), for lowest bytes aligned to aligns
// (source, destination, C).
func (pp *peerPipe) bindShape(k int, subs [4]layout.Layout, sdev, ddev *cuda.Device, aligns [3]int) error {
	if !pp.packDirect {
		if err := kernels.BindInto(&pp.pack[k], sdev, subs[1], subs[0], aligns[2], aligns[0]); err != nil {
			return err
		}
	}
	return kernels.BindInto(&pp.unpack[k], ddev, subs[2], subs[3], aligns[1], aligns[2])
}

// alignAt returns the alignment of a pointer aligned to a plus off bytes.
func alignAt(a int, off int64) int {
	for a > 1 && off%int64(a) != 0 {
		a /= 2
	}
	return a
}

// chunkOf returns the chunk of views (source, destination, C) selected by
// ranges, and its sub-layouts: the source's and C's with the source's
// broadcast dims cut to their index 0 (what the pack copies: C holds each
// distinct element once), the destination's, and C's whole (what the
// unpack reads).
func chunkOf(views [3]layout.Layout, ranges []layout.Range) (pipeChunk, [4]layout.Layout, error) {
	var subs [4]layout.Layout
	var offs [3]int64
	packed := slices.Clone(ranges)
	for d, st := range views[0].Strides() {
		if st == 0 {
			packed[d] = layout.Span(0, 1)
		}
	}
	for i, l := range []layout.Layout{views[0], views[2], views[1], views[2]} {
		r := ranges
		if i < 2 {
			r = packed
		}
		sub, o, err := l.Slice(r...)
		if err != nil {
			return pipeChunk{}, subs, err
		}
		subs[i] = sub
		if i < 3 {
			offs[[3]int{0, 2, 1}[i]] = (o + sub.MinOffset() - l.MinOffset()) * int64(l.Itemsize())
		}
	}
	return pipeChunk{src: offs[0], dst: offs[1], img: offs[2], bytes: subs[1].RequiredSizeInBytes()}, subs, nil
}

// cuts says how C is cut: every index of the outer dims (in C's memory
// order) apart, the split dim in runs of run indices, the inner dims
// whole.
type cuts struct {
	shape []int64
	outer []int // dims taken one index at a time, outermost first
	split int   // the dim cut into runs (-1: none, one chunk)
	run   int64
}

// cutsOf cuts C into chunks of at most about target bytes: down C's dims
// from the outermost (broadcast and extent-1 dims skipped), each dim whose
// one index still holds more than target bytes is taken one index at a
// time, and the first whose index holds at most target is cut into runs.
func cutsOf(c layout.Layout, target int64) cuts {
	ct := cuts{shape: c.Shape(), split: -1}
	per := c.RequiredSizeInBytes()
	if per <= target {
		return ct
	}
	for _, d := range c.StrideOrder() {
		e := ct.shape[d]
		if e <= 1 || c.Strides()[d] == 0 {
			continue
		}
		per /= e
		if per <= target {
			ct.split, ct.run = d, max(1, target/max(per, 1))
			return ct
		}
		ct.outer = append(ct.outer, d)
	}
	return ct
}

// all returns the ranges of every chunk, in C's memory order.
func (ct cuts) all() [][]layout.Range {
	base := make([]layout.Range, len(ct.shape))
	for i := range base {
		base[i] = layout.All()
	}
	out := [][]layout.Range{}
	var rec func(k int)
	rec = func(k int) {
		if k < len(ct.outer) {
			for i := range ct.shape[ct.outer[k]] {
				base[ct.outer[k]] = layout.Span(i, i+1)
				rec(k + 1)
			}
			return
		}
		if ct.split < 0 {
			out = append(out, append([]layout.Range(nil), base...))
			return
		}
		for a := int64(0); a < ct.shape[ct.split]; a += ct.run {
			base[ct.split] = layout.Span(a, min(a+ct.run, ct.shape[ct.split]))
			out = append(out, append([]layout.Range(nil), base...))
		}
	}
	rec(0)
	return out
}

// run queues the pipeline for src → dst, ordered after the work on s and
// s after it.
func (pp *peerPipe) run(dst, src *StridedMemoryView, s *cuda.Stream, cfg copyConfig) error {
	ss, cs, ds, err := pipeStreams(src.dev, dst.dev, s)
	if err != nil {
		return err
	}
	var simg, dimg *cuda.Buffer
	if !pp.packDirect {
		if simg, err = allocTemp(cfg, src.dev, int(pp.span), ss); err != nil {
			return err
		}
	}
	if !pp.unpackDirect {
		if dimg, err = allocTemp(cfg, dst.dev, int(pp.span), ds); err == nil {
			err = join(cs, ds) // the copies write it
		}
		if err != nil {
			return errors.Join(err, closeAfter(simg, ss, ss))
		}
	}
	err = pp.chunksOn(dst, src, [3]*cuda.Stream{ss, cs, ds}, simg, dimg)
	err = errors.Join(err, closeAfter(simg, ss, cs), closeAfter(dimg, ds, ds))
	for _, o := range []*cuda.Stream{ss, cs, ds} {
		if err == nil {
			err = join(s, o)
		}
	}
	return err
}

// chunksOn queues every chunk's stages on st (source kernels, copies,
// destination kernels) between the views and the images simg and dimg
// (nil where the view is the image).
func (pp *peerPipe) chunksOn(dst, src *StridedMemoryView, st [3]*cuda.Stream, simg, dimg *cuda.Buffer) error {
	for _, ch := range pp.chunks {
		from := cuda.DevicePtr(src.low) + cuda.DevicePtr(ch.src)
		if simg != nil {
			at := simg.Ptr() + cuda.DevicePtr(ch.img)
			if err := pp.pack[ch.shape].Enqueue(st[0], at, from); err != nil {
				return err
			}
			if err := join(st[1], st[0]); err != nil {
				return err
			}
			from = at
		}
		to := cuda.DevicePtr(dst.low) + cuda.DevicePtr(ch.dst)
		if dimg != nil {
			to = dimg.Ptr() + cuda.DevicePtr(ch.img)
		}
		if err := dst.dev.MemcpyPeerAsync(to, from, src.dev, int(ch.bytes), st[1]); err != nil {
			return err
		}
		if dimg != nil {
			if err := join(st[2], st[1]); err != nil {
				return err
			}
			if err := pp.unpack[ch.shape].Enqueue(st[2], cuda.DevicePtr(dst.low)+cuda.DevicePtr(ch.dst), to); err != nil {
				return err
			}
		}
	}
	return nil
}

// closeAfter frees b (allocated on the stream at) once the work queued so
// far on last is done: at waits for last, then b's stream-ordered free is
// queued on at. Nothing for a nil b.
func closeAfter(b *cuda.Buffer, at, last *cuda.Stream) error {
	if b == nil {
		return nil
	}
	return errors.Join(join(at, last), b.Close())
}

// pipeStreams returns the pipeline's streams: the source device's kernels,
// the copies (a stream of the source's device: its copy engines push the
// chunks, as cuMemcpyPeer does) and the destination device's kernels. s
// serves whichever of the two kernel streams is of its device; the others
// are side streams ordered after s.
func pipeStreams(sdev, ddev *cuda.Device, s *cuda.Stream) (ss, cs, ds *cuda.Stream, err error) {
	if ss, err = follow(sdev, s); err != nil {
		return
	}
	if ds, err = follow(ddev, s); err != nil {
		return
	}
	if cs, err = sideStream(sdev, 1); err == nil {
		err = join(cs, s)
	}
	return
}
