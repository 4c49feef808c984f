package memview

import (
	"math"

	"github.com/stridekit/stridekit/layout"
	"github.com/stridekit/stridekit/runtime/cuda"
)

// The staged pipeline's chunk schedule. Three streams overlap: the pack
// of chunk k+1, the link's copy of chunk k, the unpack of chunk k-1. What
// overlaps nothing is the first chunk's pack, the last chunk's unpack and
// a few microseconds each chunk's copy adds to the link's time. So the
// schedule grows the chunks from a small first one, by a factor the pack
// keeps ahead of (each chunk packed while the one before it crosses), up
// to a body of a few large chunks, and shrinks them again towards the
// end where there is an unpack. Equal chunks leave a whole chunk's pack
// and unpack in the open: 8 equal chunks of a 256 MiB transposed copy ran
// at 92.4% of cuMemcpyPeer on two NVLinked H200s, chunks of 1, 2, 8 and
// three of 30% of it at 96.3% (docs/design.md, "Copies between GPUs").
//
// The schedule is the best of a small family, by a model of the three
// streams (pipeModel.time) that came within a point and a half of those
// runs for one kernel side and within two and a half for two.

// pipeLink is the link bandwidth the schedule assumes, in bytes a second:
// cuMemcpyPeer between two H200s joined by NV18. A slower link (PCIe)
// makes the model's copies cheaper than they are, and the kernels'
// passes dearer: its schedules are then more cautious than they need be.
const pipeLink = 393e9

// pipePerCopy is what each chunk's cuMemcpyPeerAsync adds to the link's
// time, in seconds: 256 MiB moved in 2 to 16 copies back to back took 3.8
// to 4.6 µs a copy longer than in one (two H200s, NV18).
const pipePerCopy = 4e-6

// pipeBothSides is the link time's factor when both the source's and the
// destination's devices run a kernel beside the copies: schedules with a
// pack and an unpack ran 1.5 to 2.4 points under the model without it.
const pipeBothSides = 1.02

// pipeModel is what a schedule is fitted to: the link's bytes a second,
// what each chunk's copy adds, and the bytes of C a second the pack and
// the unpack move (0: no kernel on that side, the view is C).
type pipeModel struct {
	link, perCopy, pack, unpack float64
}

// pipeBase is the model's link and cost per copy (tests change them to
// cut small copies as the pipeline cuts large ones).
var pipeBase = pipeModel{link: pipeLink, perCopy: pipePerCopy}

// time returns the model's seconds for chunks of the given bytes, in
// order: each chunk's pack after the previous pack, its copy after its
// pack and the previous copy, its unpack after its copy and the previous
// unpack.
func (m pipeModel) time(sizes []int64) float64 {
	var tp, tc, tu float64
	link := m.link
	if m.pack > 0 && m.unpack > 0 {
		link /= pipeBothSides
	}
	for _, s := range sizes {
		b := float64(s)
		start := tc
		if m.pack > 0 {
			tp += b / m.pack
			start = max(tc, tp)
		}
		tc = start + b/link + m.perCopy
		if m.unpack > 0 {
			tu = max(tu, tc) + b/m.unpack
		}
	}
	return max(tc, tu)
}

// share is the fraction of a plain device copy's bandwidth a local copy
// planned as p reaches, roughly, from the medians of the named and random
// sweeps on an H200 (docs/benchmarks.md): the pipeline's model needs the
// order of magnitude of its passes, not their exact speed.
func share(p *layout.Plan) float64 {
	switch p.Sig.Class {
	case layout.ClassNone, layout.ClassMemcpy:
		return 1
	case layout.ClassTile, layout.ClassBroadcast, layout.ClassFill:
		return 0.9
	case layout.ClassBoxTile:
		if p.Sig.Itemsize < 4 {
			return 0.5
		}
		return 0.8
	case layout.ClassElementwise:
		return 0.8
	}
	return 0.6
}

// localRate returns the bytes a second a copy src → dst on dev moves, by
// the model of share: a plain copy reads and writes each byte, and reaches
// about 90% of the memory's peak. 0 where it cannot be planned (then the
// pipeline is not chosen by the model).
func localRate(dev *cuda.Device, dst, src layout.Layout) float64 {
	p, err := layout.PlanCopy(dst, src, layout.PlanOptions{})
	if err != nil {
		return 0
	}
	bw := float64(dev.MemoryBandwidth())
	if bw == 0 {
		bw = 2e12
	}
	return bw * 0.9 / 2 * share(&p)
}

// pipeSchedule returns the chunks, in indices of C's outermost dim (e
// indices of per bytes each), that the model m expects least regret of,
// and the model's time for them. No chunk is shorter than least indices.
// Candidates: chunks growing from head by a factor q (where m has a pack)
// and shrinking to it (where m has an unpack), around a body of 1 to
// pipeBodies equal chunks. The kernels' rates are estimates (share), and a
// schedule fitted to too fast a kernel queues most of the copy before its
// first unpack: the chosen schedule is the one whose time is least over
// the best's at the worse of the rates m gives and half of them (minimax
// regret). A 4-d u8 permutation whose unpack ran at half the rate
// estimated went from 85% of cuMemcpyPeer in 9 equal chunks to 72% in
// the schedule fitted to the estimate alone (two H100s); the regret's
// choice costs the model half a point to a point where the estimate holds.
func pipeSchedule(m pipeModel, e, per, least int64) ([]int64, float64) {
	cands := scheduleCandidates(e, least, m.pack > 0, m.unpack > 0)
	half := m
	half.pack, half.unpack = m.pack/2, m.unpack/2
	models := [2]pipeModel{m, half}
	times := make([][2]float64, len(cands))
	best := [2]float64{math.Inf(1), math.Inf(1)}
	sizes := make([]int64, 0, 64)
	for c, n := range cands {
		sizes = sizes[:0]
		for _, k := range n {
			sizes = append(sizes, k*per)
		}
		for i, mi := range models {
			times[c][i] = mi.time(sizes)
			best[i] = min(best[i], times[c][i])
		}
	}
	pick, regret := 0, math.Inf(1)
	for c, t := range times {
		if r := max(t[0]/best[0], t[1]/best[1]); r < regret {
			pick, regret = c, r
		}
	}
	return cands[pick], times[pick][0]
}

// scheduleCandidates returns pipeSchedule's candidates for a dim of e
// indices, no chunk under least: graded ones (growing where up, a pack,
// shrinking where down, an unpack), equal chunks, and one chunk.
func scheduleCandidates(e, least int64, up, down bool) [][]int64 {
	var cands [][]int64
	for _, q := range []float64{2, 3, 4} {
		for _, head := range []float64{1.0 / 16, 1.0 / 32, 1.0 / 64, 1.0 / 128} {
			for body := 1; body <= pipeBodies; body++ {
				if n := graded(e, least, q, head, body, up, down); n != nil {
					cands = append(cands, n)
				}
			}
		}
	}
	for body := 2; body <= pipeBodies; body++ {
		if n := graded(e, least, 2, 1, body, false, false); n != nil {
			cands = append(cands, n)
		}
	}
	return append(cands, []int64{e})
}

// pipeBodies is the most equal chunks a schedule's body has.
const pipeBodies = 16

// graded returns the chunks of one candidate of pipeSchedule, in indices
// (each at least least, together e), or nil where they do not fit.
func graded(e, least int64, q, head float64, body int, up, down bool) []int64 {
	ramp := []int64{}
	for f := head; f < 1/float64(body); f *= q {
		k := max(least, int64(math.Round(f*float64(e))))
		if len(ramp) > 0 && k <= ramp[len(ramp)-1] {
			continue
		}
		ramp = append(ramp, k)
	}
	var edge int64
	for _, k := range ramp {
		edge += k
	}
	sides := int64(0)
	if up {
		sides += edge
	}
	if down {
		sides += edge
	}
	rest := e - sides
	if rest < int64(body)*least {
		return nil
	}
	out := make([]int64, 0, 2*len(ramp)+body)
	if up {
		out = append(out, ramp...)
	}
	for i := range int64(body) {
		out = append(out, rest*(i+1)/int64(body)-rest*i/int64(body))
	}
	if down {
		for i := len(ramp) - 1; i >= 0; i-- {
			out = append(out, ramp[i])
		}
	}
	return out
}

// pipeMinRunBytes is the shortest run, in bytes, a graded chunk leaves a
// view that a kernel reads or writes (where the view's run is not shorter
// whole): a box tile moves runs of 128 bytes and more at its full speed,
// and the model does not see slower ones.
const pipeMinRunBytes = 128

// pipeMinRun is pipeMinRunBytes (tests lower it to cut small copies).
var pipeMinRun int64 = pipeMinRunBytes

// gradedCuts returns the image C and the chunks' ranges of the best, by
// the model, of three images: the
// source's own bytes (where it is gap-free: no pack), the destination's
// (where it is gap-free and the source broadcasts nothing: no unpack),
// and the source's order with pipeOuter's dim outermost. Each is cut
// along its outermost dim by pipeSchedule. It returns nil ranges where no
// image has such a dim of two indices or more.
func gradedCuts(dl, sl layout.Layout, span int64, rate rateFunc) (layout.Layout, [][]layout.Range) {
	var best layout.Layout
	var sched []int64
	bd, bt := -1, math.Inf(1)
	try := func(c layout.Layout, err error, d int) {
		if err != nil || d < 0 || c.Shape()[d] < 2 {
			return
		}
		m := pipeBase
		least := int64(1)
		if !c.Equal(sl) {
			m.pack = rate(true, c, sl)
			least = max(least, leastIndices(sl, d))
		}
		if !c.Equal(dl) {
			m.unpack = rate(false, dl, c)
			least = max(least, leastIndices(dl, d))
		}
		if (!c.Equal(sl) && m.pack <= 0) || (!c.Equal(dl) && m.unpack <= 0) {
			return
		}
		e := c.Shape()[d]
		if n, t := pipeSchedule(m, e, span/e, least); t < bt {
			best, sched, bd, bt = c, n, d, t
		}
	}
	if d := outermost(sl); d >= 0 {
		c, err := compactOuter(sl, d)
		try(c, err, d)
	}
	if d := outermost(dl); d >= 0 && !broadcasts(sl) {
		c, err := compactOuter(dl, d)
		try(c, err, d)
	}
	if d := pipeOuter(dl, sl, span, span/4); d >= 0 {
		c, err := compactOuter(sl, d)
		try(c, err, d)
	}
	if bd < 0 {
		return best, nil
	}
	return best, rangesAlong(best.NDim(), bd, sched)
}

// outermost returns l's outermost dim of more than one index that is not
// broadcast, or -1.
func outermost(l layout.Layout) int {
	for _, d := range l.StrideOrder() {
		if l.Shape()[d] > 1 && l.Strides()[d] != 0 {
			return d
		}
	}
	return -1
}

// broadcasts reports whether l repeats elements: a dim of more than one
// index at stride 0.
func broadcasts(l layout.Layout) bool {
	for d, st := range l.Strides() {
		if st == 0 && l.Shape()[d] > 1 {
			return true
		}
	}
	return false
}

// leastIndices returns the fewest indices of dim d a chunk may keep so
// that l's innermost run is pipeMinRun bytes, or what it is whole.
func leastIndices(l layout.Layout, d int) int64 {
	e := l.Shape()[d]
	want := min(pipeMinRun, runBytes(l, d, e))
	lo, hi := int64(1), e // runBytes grows with r: the least r reaching want
	for lo < hi {
		mid := (lo + hi) / 2
		if runBytes(l, d, mid) >= want {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo
}

// rangesAlong returns the ranges of chunks of n[0], n[1], … indices of
// dim d of an nd-dim view, the other dims whole.
func rangesAlong(nd, d int, n []int64) [][]layout.Range {
	out := make([][]layout.Range, len(n))
	a := int64(0)
	for i, k := range n {
		r := make([]layout.Range, nd)
		for j := range r {
			r[j] = layout.All()
		}
		r[d] = layout.Span(a, a+k)
		out[i], a = r, a+k
	}
	return out
}
