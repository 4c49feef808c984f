package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/stridekit/stridekit/layout"
	"github.com/stridekit/stridekit/runtime/cuda"
	"github.com/stridekit/stridekit/runtime/dist"
	"github.com/stridekit/stridekit/runtime/memview"
	"github.com/stridekit/stridekit/runtime/nccl"
)

// "stridebench reshard" measures dist.Reshard over NCCL, one goroutine
// and GPU per rank of a 1-D mesh of every GPU (-ranks), against NCCL's own
// all-to-all (grouped ncclSend/ncclRecv of equal chunks) of the same bytes:
// each rank's local bytes, in -ranks equal chunks. Each case is checked
// once (the global tensor scattered from the host, resharded, gathered
// and compared byte for byte) and timed with events on every rank's
// stream, one reshard per sample; a case's time is the slowest rank's
// median.

// reshardCase is one resharding: a global shape and dtype, the source and
// destination specs over the mesh, and the local layouts' orders.
type reshardCase struct {
	Name          string
	Shape         []int64
	DType         layout.DType
	From, To      dist.Spec
	SrcOrd, DstOr layout.Order
}

// reshardResult is one case's figures, in seconds.
type reshardResult struct {
	Name, Status, Reason string
	Bytes                int64 // the global tensor's
	Reshard, AllToAll    float64
}

// namedReshards are the named cases on a 1-D mesh: rows ↔ columns of a
// matrix, and an image batch split by batch ↔ by channel.
func namedReshards() []reshardCase {
	return []reshardCase{
		{"rows_cols_f32", []int64{8192, 8192}, layout.Float32, dist.Spec{{0}}, dist.Spec{nil, {0}}, layout.C, layout.C},
		{"cols_rows_f32", []int64{8192, 8192}, layout.Float32, dist.Spec{nil, {0}}, dist.Spec{{0}}, layout.C, layout.C},
		{"rows_cols_u8", []int64{16384, 16384}, layout.Uint8, dist.Spec{{0}}, dist.Spec{nil, {0}}, layout.C, layout.C},
		{"n_c_nchw_f16", []int64{64, 256, 64, 64}, layout.Float16, dist.Spec{{0}}, dist.Spec{nil, {0}}, layout.C, layout.C},
		{"n_c_nchw_to_nhwc_f16", []int64{64, 256, 64, 64}, layout.Float16, dist.Spec{{0}}, dist.Spec{nil, {0}}, layout.C, layout.Perm(0, 2, 3, 1)},
	}
}

// randomReshards returns n random cases of about target global bytes:
// ranks 3–5, random dtypes, source and destination split on random dims,
// local layouts in random dim orders.
func randomReshards(n int, seed uint64, target int64) []reshardCase {
	dts := []layout.DType{layout.Uint8, layout.Float16, layout.Float32, layout.Float64, layout.Complex128}
	out := make([]reshardCase, n)
	for i := range out {
		r := rand.New(rand.NewPCG(seed, uint64(i)))
		rank := 3 + r.IntN(3)
		dt := dts[r.IntN(len(dts))]
		shape := randomExtents(r, rank, float64(target/int64(dt.Itemsize())))
		// Different dims before and after: with the same one nothing
		// crosses ranks, and an all-to-all is no baseline.
		a := r.IntN(rank)
		b := (a + 1 + r.IntN(rank-1)) % rank
		from, to := make(dist.Spec, rank), make(dist.Spec, rank)
		from[a], to[b] = []int{0}, []int{0}
		out[i] = reshardCase{fmt.Sprintf("rshard-s%d-i%d", seed, i), shape, dt, from, to,
			layout.Perm(r.Perm(rank)...), layout.Perm(r.Perm(rank)...)}
	}
	return out
}

func reshardCmd(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("stridebench reshard", stderr, "usage: stridebench reshard [flags]\n\nResharding over NCCL against NCCL's all-to-all of the same bytes.\n\n", "")
	ranks := fs.Int("ranks", 2, "ranks (one GPU each, devices 0…ranks-1)")
	random := fs.Int("random", 6, "random cases to add")
	seed := fs.Uint64("seed", 1, "seed of the random cases")
	target := fs.Int64("bytes", 64<<20, "global bytes of each random case (about)")
	reps := fs.Int("reps", 20, "timed samples per figure (median)")
	if st, stop := flagsStatus(stderr, "stridebench reshard", parseArgs(fs, args)); stop {
		return st
	}
	comms, streams, err := openComms(*ranks)
	if err != nil {
		fmt.Fprintf(stderr, "stridebench reshard: %v\n", err)
		return 1
	}
	defer closeComms(comms)
	cases := append(namedReshards(), randomReshards(*random, *seed, *target)...)
	fmt.Fprintf(stdout, "reshard over NCCL %d, %d ranks on %v\n%-26s %9s %9s %9s %7s\n", ncclVersion(), *ranks, comms[0].Device(), "case", "MiB", "reshard", "alltoall", "%")
	var pct []float64
	for _, c := range cases {
		r := runReshard(comms, streams, c, *reps)
		if r.Status != statusOK {
			fmt.Fprintf(stdout, "%-26s %s: %s\n", r.Name, r.Status, r.Reason)
			continue
		}
		p := 100 * r.AllToAll / r.Reshard
		pct = append(pct, p)
		fmt.Fprintf(stdout, "%-26s %9.1f %8.3fms %8.3fms %7.1f\n", r.Name, float64(r.Bytes)/(1<<20), r.Reshard*1e3, r.AllToAll*1e3, p)
	}
	if len(pct) > 0 {
		slices.Sort(pct)
		fmt.Fprintf(stdout, "%d cases: %% of NCCL's all-to-all min %.1f median %.1f\n", len(pct), pct[0], median(pct))
	}
	return 0
}

func ncclVersion() int {
	v, _ := nccl.Version()
	return v
}

// openComms makes a communicator and a stream on each of devices 0…n-1,
// one goroutine per rank.
func openComms(n int) ([]*nccl.Comm, []*cuda.Stream, error) {
	id, err := nccl.NewUniqueID()
	if err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	comms, streams := make([]*nccl.Comm, n), make([]*cuda.Stream, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r := range n {
		wg.Go(func() {
			dev, err := cuda.GetDevice(r)
			if err == nil {
				streams[r], err = dev.NewStream(true)
			}
			if err == nil {
				comms[r], err = nccl.NewComm(ctx, dev, n, r, id)
			}
			errs[r] = err
		})
	}
	wg.Wait()
	return comms, streams, errors.Join(errs...)
}

func closeComms(cs []*nccl.Comm) {
	for _, c := range cs {
		if c != nil {
			c.Close()
		}
	}
}

// runReshard checks and times case c on every rank.
func runReshard(comms []*nccl.Comm, streams []*cuda.Stream, c reshardCase, reps int) reshardResult {
	res := reshardResult{Name: c.Name, Status: statusOK}
	n := len(comms)
	mesh, err := dist.NewMesh(n)
	var from, to dist.Sharding
	if err == nil {
		from, err = dist.NewSharding(c.Shape, mesh, c.From)
	}
	if err == nil {
		to, err = dist.NewSharding(c.Shape, mesh, c.To)
	}
	var global []byte
	var want *memview.StridedMemoryView
	if err == nil {
		global, want, err = globalTensor(c)
	}
	if err != nil {
		res.Status, res.Reason = "error", err.Error()
		return res
	}
	res.Bytes = int64(len(global))
	got := make([]byte, len(global))
	times := make([][2]float64, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r := range n {
		wg.Go(func() {
			times[r], errs[r] = reshardRank(comms[r], streams[r], c, from, to, want, got, reps)
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		res.Status, res.Reason = "error", err.Error()
		return res
	}
	if i := firstDiff(got, global); i >= 0 {
		res.Status, res.Reason = "mismatch", fmt.Sprintf("first wrong byte %d of %d", i, len(got))
		return res
	}
	for _, t := range times {
		res.Reshard, res.AllToAll = max(res.Reshard, t[0]), max(res.AllToAll, t[1])
	}
	return res
}

// globalTensor returns case c's global tensor on the host, filled with a
// pattern, and its view.
func globalTensor(c reshardCase) ([]byte, *memview.StridedMemoryView, error) {
	l, err := layout.Dense(c.Shape, c.DType.Itemsize(), layout.C)
	if err != nil {
		return nil, nil, err
	}
	b := make([]byte, l.RequiredSizeInBytes())
	fillPattern(b, caseSeed(c.Name))
	v, err := memview.FromHost(b, mustBytes(len(b)))
	if err == nil {
		v, err = v.View(l, c.DType)
	}
	return b, v, err
}

func mustBytes(n int) layout.Layout {
	l, _ := layout.Dense([]int64{int64(n)}, 1, layout.C)
	return l
}

// firstDiff returns the first index where a and b differ, or -1.
func firstDiff(a, b []byte) int {
	if bytes.Equal(a, b) {
		return -1
	}
	for i := range a {
		if a[i] != b[i] {
			return i
		}
	}
	return len(a)
}

// reshardRank is rank cm.Rank() of case c: its local views on its device,
// the check (scatter from global, reshard, gather into got) and the
// medians of the reshard and of NCCL's all-to-all of the same bytes.
func reshardRank(cm *nccl.Comm, s *cuda.Stream, c reshardCase, from, to dist.Sharding, global *memview.StridedMemoryView, got []byte, reps int) ([2]float64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	src, err := deviceDistView(cm, s, from, c.DType, c.SrcOrd)
	if err != nil {
		return [2]float64{}, err
	}
	defer src.Local().Close()
	dst, err := deviceDistView(cm, s, to, c.DType, c.DstOr)
	if err != nil {
		return [2]float64{}, err
	}
	defer dst.Local().Close()
	rs, err := dist.NewReshard(cm, dst, src)
	if err != nil {
		return [2]float64{}, err
	}
	defer rs.Close()
	whole, err := memview.FromHost(got, mustBytes(len(got)))
	if err == nil {
		whole, err = whole.View(global.Layout(), c.DType)
	}
	for _, step := range []func() error{
		func() error { return src.LoadFrom(global, s) },
		func() error { return rs.Run(ctx, s) },
		func() error { return dst.StoreTo(whole, s) },
	} {
		if err == nil {
			err = step()
		}
	}
	if err == nil {
		err = rs.Settle() // time the kernels repeated Runs settle on
	}
	if err != nil {
		return [2]float64{}, err
	}
	var t [2]float64
	wait := func() error { return cm.WaitStream(ctx, s) }
	if t[0], err = eventMedian(s, reps, func() error { return rs.Run(ctx, s) }, wait); err != nil {
		return t, err
	}
	t[1], err = allToAllMedian(ctx, cm, s, global.Layout().RequiredSizeInBytes()/int64(cm.Size()), reps)
	return t, err
}

// deviceDistView returns rank cm.Rank()'s part of sh on cm's device, laid
// out in order, in memory it owns.
func deviceDistView(cm *nccl.Comm, s *cuda.Stream, sh dist.Sharding, dt layout.DType, order layout.Order) (*dist.DistView, error) {
	l, err := sh.LocalLayout(cm.Rank(), dt, order)
	if err != nil {
		return nil, err
	}
	buf, err := cm.Device().Alloc(int(max(l.RequiredSizeInBytes(), 1)), s)
	if err != nil {
		return nil, err
	}
	v, err := memview.FromOwnedBuffer(buf, l, dt)
	if err != nil {
		buf.Close()
		return nil, err
	}
	return dist.NewDistView(sh, dt, cm.Rank(), v)
}

// eventMedian times op on s with events, one op per sample, after three
// untimed ones; wait waits for s (bounded: a rank that hangs in NCCL must
// not hang the run).
func eventMedian(s *cuda.Stream, reps int, op, wait func() error) (float64, error) {
	dev := s.Device()
	e0, err := dev.NewEvent(true)
	if err != nil {
		return 0, err
	}
	defer e0.Close()
	e1, err := dev.NewEvent(true)
	if err != nil {
		return 0, err
	}
	defer e1.Close()
	samples := make([]float64, 0, reps)
	for i := range reps + 3 {
		err := errors.Join(e0.Record(s), op(), e1.Record(s), wait(), e1.Synchronize())
		if err != nil {
			return 0, err
		}
		d, err := cuda.ElapsedTime(e0, e1)
		if err != nil {
			return 0, err
		}
		if i >= 3 {
			samples = append(samples, d.Seconds())
		}
	}
	return median(samples), nil
}

// allToAllMedian times NCCL's all-to-all of local bytes in equal chunks,
// one per rank. local must be the same on every rank (the global bytes
// over the ranks: an uneven split gives the ranks parts of different
// sizes, and NCCL's sends and receives must match in size, else they
// hang).
func allToAllMedian(ctx context.Context, cm *nccl.Comm, s *cuda.Stream, local int64, reps int) (float64, error) {
	per := local / int64(cm.Size())
	dev := cm.Device()
	send, err := dev.Alloc(int(max(per*int64(cm.Size()), 1)), s)
	if err != nil {
		return 0, err
	}
	defer send.Close()
	recv, err := dev.Alloc(int(max(per*int64(cm.Size()), 1)), s)
	if err != nil {
		return 0, err
	}
	defer recv.Close()
	return eventMedian(s, reps, func() error { return cm.AllToAllBytes(ctx, send.Ptr(), recv.Ptr(), per, s) },
		func() error { return cm.WaitStream(ctx, s) })
}
