package main

import (
	"fmt"
	"runtime"
	"time"

	"github.com/stridekit/stridekit/kernels"
	"github.com/stridekit/stridekit/layout"
	"github.com/stridekit/stridekit/runtime/memview"
)

// This file is the -device cpu backend: the whole pipeline on the host,
// with wall-clock timing, so the harness can be tested end to end without
// a GPU. The copy is memview's, between host views (memview.FromHost and
// ViewAt, as on the GPU): CopyFrom's host path, which runs
// runtime/hostcopy.

// hostCopyFunc copies a src view into a dst view on the host, with
// hostcopy.Copy's contract.
type hostCopyFunc func(dst []byte, dl layout.Layout, src []byte, sl layout.Layout) error

// cpuBackend runs cases on the host.
type cpuBackend struct {
	// copy, when set, replaces memview's copy (tests put a faulty copy
	// here); nil times dst.CopyFrom(src, nil) on host views.
	copy hostCopyFunc
}

func newCPUBackend() *cpuBackend { return &cpuBackend{} }

func (c *cpuBackend) info() deviceInfo {
	return deviceInfo{
		Kind:   "cpu",
		Name:   fmt.Sprintf("%s/%s, %d threads", runtime.GOOS, runtime.GOARCH, runtime.GOMAXPROCS(0)),
		Timing: "wall clock (runtime/memview between host views: runtime/hostcopy)",
	}
}

func (c *cpuBackend) close() error { return nil }

// planOptions gives the alignments of the views' lowest bytes in arrays
// aligned to bufAlign, as hostcopy.Copy finds them in Go's large
// allocations.
func (c *cpuBackend) planOptions(b *built) layout.PlanOptions {
	return layout.PlanOptions{DstAlign: kernels.PtrAlign(uintptr(b.DstStart)), SrcAlign: kernels.PtrAlign(uintptr(b.SrcStart))}
}

func (c *cpuBackend) setup(b *built) (instance, error) {
	in := &cpuInstance{
		b:    b,
		cp:   c.copy,
		src:  make([]byte, max(b.SrcBytes, b.Moved)), // memcpy reads Moved bytes
		dst:  make([]byte, b.DstBytes),
		sEnd: b.SrcStart + b.Src.RequiredSizeInBytes(),
		dEnd: b.DstStart + b.Dst.RequiredSizeInBytes(),
	}
	sw, err := hostView(in.src)
	if err != nil {
		return nil, err
	}
	dw, err := hostView(in.dst)
	if err != nil {
		return nil, err
	}
	if in.view, err = prepareViews(dw, b.DstOff*int64(b.Item), b.Dst, sw, b.SrcOff*int64(b.Item), b.Src, b.Case.DType); err != nil {
		return nil, err
	}
	return in, nil
}

// cpuInstance is one case on the host: a single pair of arrays.
type cpuInstance struct {
	b          *built
	cp         hostCopyFunc
	view       preparedCopy // memview's copy between the two arrays
	src, dst   []byte
	sEnd, dEnd int64
}

func (c *cpuInstance) upload(src []byte) error { copy(c.src, src); return nil }
func (c *cpuInstance) poison() error           { fillBytes(c.dst, poisonByte); return nil }
func (c *cpuInstance) pairs() int              { return 1 }
func (c *cpuInstance) close() error            { return nil }

func (c *cpuInstance) copyPlan() memview.CopyPlan { return c.view.plan }

// specialise: host copies run no kernel.
func (c *cpuInstance) specialise() (bool, bool, error) { return false, false, nil }

func (c *cpuInstance) copyOnce() error {
	if c.cp == nil {
		return c.view.run(nil)
	}
	return c.cp(c.dst[c.b.DstStart:c.dEnd], c.b.Dst, c.src[c.b.SrcStart:c.sEnd], c.b.Src)
}

func (c *cpuInstance) readDst(off int64, p []byte) error {
	if off < 0 || off+int64(len(p)) > int64(len(c.dst)) {
		return fmt.Errorf("read of %d bytes at %d past the %d-byte dst array", len(p), off, len(c.dst))
	}
	copy(p, c.dst[off:])
	return nil
}

// wall times n runs of f with the wall clock.
func wall(n int, f func() error) (time.Duration, error) {
	t0 := time.Now()
	for range n {
		if err := f(); err != nil {
			return 0, err
		}
	}
	return time.Since(t0), nil
}

func (c *cpuInstance) timeCopy(reps, warmup int) (timing, error) {
	return measure(reps, warmup, func(n int) (time.Duration, error) { return wall(n, c.copyOnce) })
}

func (c *cpuInstance) timeMemcpy(reps, warmup int) (timing, error) {
	m := c.b.Moved
	return measure(reps, warmup, func(n int) (time.Duration, error) {
		return wall(n, func() error { copy(c.dst[:m], c.src[:m]); return nil })
	})
}

// latency on the host is the time per copy; there is no launch floor.
func (c *cpuInstance) latency(iters int) (latencies, error) {
	d, err := wall(iters, c.copyOnce)
	if err != nil {
		return latencies{}, err
	}
	return latencies{Host: d.Seconds() / float64(iters)}, nil
}
