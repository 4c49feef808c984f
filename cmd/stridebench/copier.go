package main

import (
	"fmt"
	"unsafe"

	"github.com/stridekit/stridekit/gen"
	"github.com/stridekit/stridekit/kernels"
	"github.com/stridekit/stridekit/layout"
	"github.com/stridekit/stridekit/runtime/cuda"
	"github.com/stridekit/stridekit/runtime/jit"
	"github.com/stridekit/stridekit/runtime/memview"
)

// This file is the one place where the harness reaches into stridekit's
// copy: it times what users call, runtime/memview. For each pair of arrays
// it makes the two views once (memview.FromBuffer over the whole
// allocation, then ViewAt at each view's index 0) and times
// dst.CopyFrom(src, stream); for the first pair it also asks Explain how the
// copy runs (the signature reported is Explain's). -device cpu does the
// same with host views (memview.FromHost), so CopyFrom takes its host path
// (runtime/hostcopy). bareLaunch builds the driver-floor launch of the same
// plan.

// preparedCopy is the stridekit copy of one pair of views, ready to time.
type preparedCopy struct {
	// run queues the copy on a stream (nil for host views).
	run func(st *cuda.Stream) error
	// plan is memview's Explain of the copy: its path and the plan whose
	// signature names the kernel.
	plan memview.CopyPlan
}

// bytesLayout is the layout of n bytes, a dense 1-d array of uint8, which
// the harness views whole before placing the case's views in it.
func bytesLayout(n int64) (layout.Layout, error) {
	return layout.Dense([]int64{n}, 1, layout.C)
}

// placeViews places the dst and src views of a case in whole-array views:
// index 0 of the dst view dstAt bytes from the start of dstWhole, that of
// the src view srcAt bytes from the start of srcWhole (the two may be the
// same view).
func placeViews(dstWhole *memview.StridedMemoryView, dstAt int64, dl layout.Layout,
	srcWhole *memview.StridedMemoryView, srcAt int64, sl layout.Layout, dt layout.DType) (dst, src *memview.StridedMemoryView, err error) {
	dst, err = dstWhole.ViewAt(dstAt, dl, dt)
	if err != nil {
		return nil, nil, fmt.Errorf("dst view: %w", err)
	}
	src, err = srcWhole.ViewAt(srcAt, sl, dt)
	if err != nil {
		return nil, nil, fmt.Errorf("src view: %w", err)
	}
	return dst, src, nil
}

// copyFunc returns the copy of the src view into the dst view, queued on a
// stream (nil for host views).
func copyFunc(dst, src *memview.StridedMemoryView) func(st *cuda.Stream) error {
	return func(st *cuda.Stream) error { return dst.CopyFrom(src, st) }
}

// prepareViews places the views as placeViews does and returns the copy
// and its Explain.
func prepareViews(dstWhole *memview.StridedMemoryView, dstAt int64, dl layout.Layout,
	srcWhole *memview.StridedMemoryView, srcAt int64, sl layout.Layout, dt layout.DType) (preparedCopy, error) {
	dst, src, err := placeViews(dstWhole, dstAt, dl, srcWhole, srcAt, sl, dt)
	if err != nil {
		return preparedCopy{}, err
	}
	cp, err := dst.Explain(src)
	if err != nil {
		return preparedCopy{}, err
	}
	return preparedCopy{run: copyFunc(dst, src), plan: cp}, nil
}

// deviceViews returns the view of all of buf as bytes, in which the
// device copies' views are placed.
func deviceViews(buf *cuda.Buffer) (*memview.StridedMemoryView, error) {
	l, err := bytesLayout(int64(buf.Size()))
	if err != nil {
		return nil, err
	}
	return memview.FromBuffer(buf, l, layout.Uint8)
}

// hostView returns the view of all of b, in which a host copy's view is
// placed.
func hostView(b []byte) (*memview.StridedMemoryView, error) {
	l, err := bytesLayout(int64(len(b)))
	if err != nil {
		return nil, err
	}
	return memview.FromHost(b, l)
}

// lowest returns the lowest byte of the view l whose index 0 is at p.
func lowest(p cuda.DevicePtr, l layout.Layout) cuda.DevicePtr {
	return p + cuda.DevicePtr(l.MinOffset()*int64(l.Itemsize()))
}

// bareLaunch returns one bare launch of the copy of the src view into the
// dst view (index-0 pointers) on st: the plan made, the kernel loaded and its
// argument block packed once, so each call is one cuLaunchKernel (or one
// cuMemcpyAsync for a memcpy plan), the floor the driver sets under any
// copy entry point. A kernel with its own parameter layout (a downstream
// stub) is launched through its stub instead, with the plan made once.
func bareLaunch(dev *cuda.Device, dst cuda.DevicePtr, dl layout.Layout, src cuda.DevicePtr, sl layout.Layout, st *cuda.Stream) (func() error, error) {
	d, s := lowest(dst, dl), lowest(src, sl)
	p, err := layout.PlanCopy(dl, sl, kernels.PlanOptions(dev, d, s, dl.Itemsize()))
	if err != nil {
		return nil, err
	}
	if c := p.Sig.Class; c == layout.ClassNone || c == layout.ClassMemcpy {
		return func() error { return kernels.Launch(dev, st, d, s, &p) }, nil
	}
	fn, k, err := jit.Default.Kernel(dev, p.Sig)
	if err != nil {
		return nil, err
	}
	if k.Params != nil {
		return func() error { return k.Launch(fn, st, d, s, &p) }, nil
	}
	sm := 0
	if c := p.Sig.Class; c == layout.ClassContiguous || c == layout.ClassBoxTile {
		sm = dev.SMCount()
	}
	args := make([]byte, gen.ArgsSize(p.Sig))
	l, err := gen.Pack(p.Sig, k.Knobs, &p, sm, args)
	if err != nil {
		return nil, err
	}
	d, s = d+cuda.DevicePtr(p.DstOffset), s+cuda.DevicePtr(p.SrcOffset)
	return func() error {
		return cuda.Launch(fn, l.Grid, l.Block, l.Shared, st, unsafe.Pointer(&d), unsafe.Pointer(&s), unsafe.Pointer(&args[0]))
	}, nil
}
