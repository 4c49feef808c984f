package main

import (
	"fmt"
	"unsafe"

	"github.com/stridekit/stridekit/kernels"
	"github.com/stridekit/stridekit/layout"
	"github.com/stridekit/stridekit/runtime/cuda"
	"github.com/stridekit/stridekit/runtime/memview"
)

// This file is the one place where the harness reaches into stridekit's
// copy: it times what users call, runtime/memview. For each pair of arrays
// it makes the two views once (memview.FromBuffer over the whole
// allocation, then ViewAt at each view's index 0) and times
// dst.CopyFrom(src, stream); for the first pair it also asks Explain how the
// copy runs (the signature reported is Explain's). -device cpu does the
// same with host views (memview.FromHost), so CopyFrom takes its host path
// (runtime/hostcopy). The driver's floor under a device copy is a bare
// cuda.Launch of the kernel the library binds for the views
// (memview.Bind's Kernel), with the same packed arguments.

// preparedCopy is the stridekit copy of one pair of views, ready to time.
type preparedCopy struct {
	// run queues the copy on a stream (nil for host views).
	run func(st *cuda.Stream) error
	// plan is memview's Explain of the copy: its path and the plan whose
	// signature names the kernel.
	plan memview.CopyPlan
	// floor is a bare launch of the copy's kernel, or nil when the copy
	// launches none (host copies, memcpy plans).
	floor func(st *cuda.Stream) error
	// bound is the copy held (memview.Bind) for device copies, nil for
	// host ones: it shares the bound launch CopyFrom uses.
	bound *memview.BoundCopy
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
	pc := preparedCopy{run: copyFunc(dst, src), plan: cp}
	if dst.Kind() == cuda.MemoryDevice && src.Kind() == cuda.MemoryDevice {
		bc, err := memview.Bind(dst, src)
		if err != nil {
			return preparedCopy{}, err
		}
		if pc.floor, err = bareLaunch(bc.Kernel(), dst, src); err != nil {
			return preparedCopy{}, err
		}
		pc.bound = bc
	}
	return pc, nil
}

// bareLaunch returns one bare launch of bound device copy k between the
// two views: cuda.Launch of its kernel with its packed arguments (or, for a
// plan without a kernel, k's own Enqueue), the floor the driver sets under
// any copy entry point.
func bareLaunch(k *kernels.Bound, dst, src *memview.StridedMemoryView) (func(st *cuda.Stream) error, error) {
	d := cuda.DevicePtr(dst.Ptr()) + cuda.DevicePtr(dst.Layout().MinOffset()*int64(dst.Layout().Itemsize()))
	s := cuda.DevicePtr(src.Ptr()) + cuda.DevicePtr(src.Layout().MinOffset()*int64(src.Layout().Itemsize()))
	if k.Kernel == "" {
		return func(st *cuda.Stream) error { return k.Enqueue(st, d, s) }, nil
	}
	if _, err := k.Function(); err != nil {
		return nil, err
	}
	l := k.Launch
	d, s = d+cuda.DevicePtr(k.Plan.DstOffset), s+cuda.DevicePtr(k.Plan.SrcOffset)
	return func(st *cuda.Stream) error {
		// The kernel the copy launches now: the specialised one once it is
		// swapped in, as in the copy (Function is an atomic load).
		fn, err := k.Function()
		if err != nil {
			return err
		}
		return cuda.Launch(fn, cuda.Dim3(l.Grid), cuda.Dim3(l.Block), l.Shared, st, unsafe.Pointer(&d), unsafe.Pointer(&s), unsafe.Pointer(&k.Args[0]))
	}, nil
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

// specialiseBound switches bound copy bc (nil: a host copy) to its
// specialised kernel: the instances' specialise.
func specialiseBound(bc *memview.BoundCopy) (ok, settles bool, err error) {
	if bc == nil {
		return false, false, nil
	}
	k := bc.Kernel()
	if k == nil || k.Kernel == "" {
		return false, false, nil
	}
	return true, k.Knobs.SpecialisesPlan(&k.Plan), bc.Specialise()
}
