package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/stridekit/stridekit/kernels"
	"github.com/stridekit/stridekit/layout"
	"github.com/stridekit/stridekit/runtime/cuda"
	"github.com/stridekit/stridekit/runtime/memview"
)

// This file is the GPU backend: device arrays, the correctness copy, CUDA
// event timings of the stridekit copy and of cuMemcpyDtoD, and for small
// cases the host-side latency next to bare kernel launches.

// attrL2CacheSize is CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, in bytes.
const attrL2CacheSize = 38

// Array pairs: a case whose arrays together take less than l2Rotation times
// the L2 size is timed over enough pairs to cover that, so a copy finds
// little of its data in L2 (left there by the copies before it) and reads
// from and writes to DRAM as a large one does; at most maxPairs pairs.
const (
	l2Rotation = 4
	maxPairs   = 1 << 16
)

// gpuBackend runs cases on one GPU, on one non-blocking stream.
type gpuBackend struct {
	dev    *cuda.Device
	st     *cuda.Stream
	e0, e1 *cuda.Event
	l2     int64
	inf    deviceInfo
}

// newGPUBackend opens device ordinal.
func newGPUBackend(ordinal int) (*gpuBackend, error) {
	dev, err := cuda.GetDevice(ordinal)
	if err != nil {
		return nil, err
	}
	g := &gpuBackend{dev: dev}
	if g.st, err = dev.NewStream(true); err != nil {
		return nil, err
	}
	if g.e0, err = dev.NewEvent(true); err != nil {
		g.close()
		return nil, err
	}
	if g.e1, err = dev.NewEvent(true); err != nil {
		g.close()
		return nil, err
	}
	l2, err := dev.Attribute(attrL2CacheSize)
	if err != nil {
		g.close()
		return nil, fmt.Errorf("L2 cache size: %w", err)
	}
	g.l2 = int64(l2)
	g.inf = deviceInfo{
		Kind: "gpu", Name: dev.Name(), Arch: dev.Arch(), SMs: dev.SMCount(), L2Bytes: l2,
		Timing: "CUDA events on one stream",
	}
	g.inf.addVersions()
	return g, nil
}

func (g *gpuBackend) info() deviceInfo { return g.inf }

// planOptions are those memview plans with for views whose lowest bytes lie
// b.DstStart and b.SrcStart bytes into bufAlign-aligned arrays.
func (g *gpuBackend) planOptions(b *built) layout.PlanOptions {
	return kernels.PlanOptions(g.dev, cuda.DevicePtr(bufAlign+b.DstStart), cuda.DevicePtr(bufAlign+b.SrcStart), b.Item)
}

func (g *gpuBackend) close() error {
	var errs []error
	for _, e := range []*cuda.Event{g.e0, g.e1} {
		if e != nil {
			errs = append(errs, e.Close())
		}
	}
	if g.st != nil {
		errs = append(errs, g.st.Close())
	}
	return errors.Join(errs...)
}

func roundUp(n, a int64) int64 { return (n + a - 1) / a * a }

// pairCount returns how many array pairs a case with arrays of touched
// bytes in all is timed over on a GPU with l2 bytes of L2.
func pairCount(touched, l2 int64) int {
	if l2 <= 0 || touched <= 0 || touched >= l2Rotation*l2 {
		return 1
	}
	return int(min(maxPairs, (l2Rotation*l2+touched-1)/touched))
}

func (g *gpuBackend) setup(b *built) (instance, error) {
	srcRegion := roundUp(max(b.SrcBytes, b.Moved), bufAlign) // memcpy reads Moved bytes
	dstRegion := roundUp(b.DstBytes, bufAlign)
	n := pairCount(b.SrcBytes+b.DstBytes, g.l2)
	size := int64(n) * (srcRegion + dstRegion)
	buf, err := g.dev.Alloc(int(size), g.st)
	if err != nil {
		return nil, fmt.Errorf("%d pairs of %d bytes: %w", n, srcRegion+dstRegion, err)
	}
	in := &gpuInstance{g: g, b: b, buf: buf, n: n, srcRegion: srcRegion, pairBytes: srcRegion + dstRegion}
	if err := g.dev.MemsetAsync(buf.Ptr(), 0, int(size), g.st); err != nil {
		in.close()
		return nil, err
	}
	if err := g.st.Synchronize(); err != nil {
		in.close()
		return nil, err
	}
	whole, err := deviceViews(buf)
	if err != nil {
		in.close()
		return nil, err
	}
	in.copies = make([]func(*cuda.Stream) error, n)
	for i := range n {
		s := int64(i)*in.pairBytes + b.SrcOff*int64(b.Item) // index 0 of each view, from buf's start
		d := int64(i)*in.pairBytes + srcRegion + b.DstOff*int64(b.Item)
		if i == 0 {
			// Only pair 0's copy is explained: the pairs differ by whole
			// bufAlign multiples, so their plans are the same.
			pc, err := prepareViews(whole, d, b.Dst, whole, s, b.Src, b.Case.DType)
			if err != nil {
				in.close()
				return nil, err
			}
			in.copies[i] = pc.run
			in.floor = pc.floor
			in.bound = pc.bound
			in.plan = pc.plan
			continue
		}
		dst, src, err := placeViews(whole, d, b.Dst, whole, s, b.Src, b.Case.DType)
		if err != nil {
			in.close()
			return nil, err
		}
		in.copies[i] = copyFunc(dst, src)
	}
	return in, nil
}

// gpuInstance is one case on the GPU: n pairs of arrays in one allocation,
// pair i at i·pairBytes, its src array first.
type gpuInstance struct {
	g         *gpuBackend
	b         *built
	buf       *cuda.Buffer
	n         int
	srcRegion int64
	pairBytes int64
	copies    []func(*cuda.Stream) error // the stridekit copy of each pair
	plan      memview.CopyPlan           // Explain of pair 0's copy
	floor     func(*cuda.Stream) error   // bare launch of pair 0's kernel
	bound     *memview.BoundCopy         // pair 0's copy, held
	next      int                        // the pair the next timed copy uses
}

func (in *gpuInstance) copyPlan() memview.CopyPlan { return in.plan }

func (in *gpuInstance) specialise() (bool, bool, error) { return specialiseBound(in.bound) }

func (in *gpuInstance) srcArray(i int) cuda.DevicePtr {
	return in.buf.Ptr() + cuda.DevicePtr(int64(i)*in.pairBytes)
}

func (in *gpuInstance) dstArray(i int) cuda.DevicePtr {
	return in.srcArray(i) + cuda.DevicePtr(in.srcRegion)
}

func (in *gpuInstance) pairs() int { return in.n }

func (in *gpuInstance) close() error {
	err := in.buf.Close()
	if serr := in.g.st.Synchronize(); err == nil {
		err = serr
	}
	return err
}

func (in *gpuInstance) upload(src []byte) error {
	if err := in.g.dev.CopyHtoD(in.srcArray(0), src); err != nil {
		return err
	}
	// A copy from pageable memory may still be in flight when CopyHtoD
	// returns, and the stream does not wait for the legacy stream.
	return in.g.dev.Synchronize()
}

func (in *gpuInstance) poison() error {
	if err := in.g.dev.MemsetAsync(in.dstArray(0), poisonByte, int(in.b.DstBytes), in.g.st); err != nil {
		return err
	}
	return in.g.st.Synchronize()
}

func (in *gpuInstance) copyOnce() error {
	if err := in.copies[0](in.g.st); err != nil {
		return err
	}
	return in.g.st.Synchronize()
}

func (in *gpuInstance) readDst(off int64, p []byte) error {
	if off < 0 || off+int64(len(p)) > in.b.DstBytes {
		return fmt.Errorf("read of %d bytes at %d past the %d-byte dst array", len(p), off, in.b.DstBytes)
	}
	return in.g.dev.CopyDtoH(p, in.dstArray(0)+cuda.DevicePtr(off))
}

// events times n operations between two events on the stream; op(i) runs
// operation i on pair i mod n.
func (in *gpuInstance) events(n int, op func(pair int) error) (time.Duration, error) {
	g := in.g
	if err := g.e0.Record(g.st); err != nil {
		return 0, err
	}
	for range n {
		if err := op(in.next); err != nil {
			return 0, err
		}
		in.next = (in.next + 1) % in.n
	}
	if err := g.e1.Record(g.st); err != nil {
		return 0, err
	}
	if err := g.e1.Synchronize(); err != nil {
		return 0, err
	}
	return cuda.ElapsedTime(g.e0, g.e1)
}

func (in *gpuInstance) timeCopy(reps, warmup int) (timing, error) {
	return measure(reps, warmup, func(n int) (time.Duration, error) {
		return in.events(n, func(i int) error { return in.copies[i](in.g.st) })
	})
}

// timeMemcpy times cuMemcpyDtoDAsync of the bytes the copy writes, over
// the same pairs, on the same stream.
func (in *gpuInstance) timeMemcpy(reps, warmup int) (timing, error) {
	m := int(in.b.Moved)
	return measure(reps, warmup, func(n int) (time.Duration, error) {
		return in.events(n, func(i int) error {
			return in.g.dev.CopyDtoDAsync(in.dstArray(i), in.srcArray(i), m, in.g.st)
		})
	})
}

// latency measures, on pair 0, the host time per stridekit copy over iters
// back-to-back copies synchronised at the end, and the same for bare
// launches of the plan's kernel with its arguments packed once (or bare
// cuMemcpyAsync calls for a memcpy plan): the floor the driver sets.
func (in *gpuInstance) latency(iters int) (latencies, error) {
	st := in.g.st
	hostLoop := func(op func() error) (float64, error) {
		for range 10 { // warm-up
			if err := op(); err != nil {
				return 0, err
			}
		}
		if err := st.Synchronize(); err != nil {
			return 0, err
		}
		t0 := time.Now()
		for range iters {
			if err := op(); err != nil {
				return 0, err
			}
		}
		if err := st.Synchronize(); err != nil {
			return 0, err
		}
		return time.Since(t0).Seconds() / float64(iters), nil
	}
	var l latencies
	var err error
	if l.Host, err = hostLoop(func() error { return in.copies[0](st) }); err != nil {
		return l, err
	}
	l.Floor, err = hostLoop(func() error { return in.floor(st) })
	return l, err
}
