package memview

import (
	"fmt"

	"github.com/stridekit/stridekit/kernels"
	"github.com/stridekit/stridekit/layout"
	"github.com/stridekit/stridekit/runtime/cuda"
)

// Path is the way CopyFrom moves data between two views.
type Path uint8

// The paths, by where the two views live (see the package doc).
const (
	// PathHost: both views in host memory; runtime/hostcopy on the CPU.
	PathHost Path = iota
	// PathDevice: both views in device (or managed) memory of one device.
	PathDevice
	// PathHostToDevice: host view to device view.
	PathHostToDevice
	// PathDeviceToHost: device view to host view.
	PathDeviceToHost
	// PathSelf: the views are the same view; nothing to do.
	PathSelf
)

func (p Path) String() string {
	switch p {
	case PathHost:
		return "host"
	case PathDevice:
		return "device"
	case PathHostToDevice:
		return "host→device"
	case PathDeviceToHost:
		return "device→host"
	case PathSelf:
		return "self"
	}
	return fmt.Sprintf("Path(%d)", uint8(p))
}

// CopyPlan says how CopyFrom would copy one pair of views.
type CopyPlan struct {
	Path Path
	// Plan is the copy the work is planned as: for PathHost the CPU copy,
	// for the others the device copy (PathHostToDevice and PathDeviceToHost:
	// between the host view's compact image and the device view). Its
	// signature names the kernel; its element size and vector width show
	// what the pointers' real alignment allowed.
	Plan layout.Plan
	// DstAlign and SrcAlign are the alignments of the two lowest bytes the
	// plan was made with (16 means 16 or more).
	DstAlign, SrcAlign int
	// Staged reports a host transfer through pinned staging buffers (else
	// one DMA, between pinned gap-free host memory and the image).
	Staged bool
	// Temporary reports a device temporary for the host view's image (else
	// the image is the device view's own bytes, no kernel runs).
	Temporary bool
	// Snapshot reports that the views overlap: src is staged first.
	Snapshot bool
}

// Explain returns how v.CopyFrom(src, …) would copy, without copying: the
// path, the plan, the alignments used and the staging. It fails as CopyFrom
// would on views that cannot be copied (checks that need a stream aside).
func (v *StridedMemoryView) Explain(src *StridedMemoryView) (CopyPlan, error) {
	var cp CopyPlan
	if err := checkCopy(v, src); err != nil {
		return cp, err
	}
	path, err := route(v, src)
	cp.Path = path
	switch {
	case err != nil:
	case path == PathSelf:
		return cp, nil
	case path == PathHost:
		cp.DstAlign, cp.SrcAlign = kernels.PtrAlign(v.low), kernels.PtrAlign(src.low)
		err = layout.PlanCopyInto(&cp.Plan, v.l, src.l, layout.PlanOptions{DstAlign: cp.DstAlign, SrcAlign: cp.SrcAlign})
	case path == PathDevice:
		cp.Snapshot = overlaps(v, src)
		srcLow := cuda.DevicePtr(src.low)
		if cp.Snapshot {
			srcLow = 256
		}
		opt := kernels.PlanOptions(v.dev, cuda.DevicePtr(v.low), srcLow, v.l.Itemsize())
		cp.DstAlign, cp.SrcAlign = opt.DstAlign, opt.SrcAlign
		err = layout.PlanCopyInto(&cp.Plan, v.l, src.l, opt)
	case path == PathHostToDevice:
		var h hostPlan
		h, err = planHostToDevice(v, src, &cp.Plan)
		cp.Staged, cp.Temporary = !h.oneDMA, !h.toView
		cp.DstAlign, cp.SrcAlign = kernels.PtrAlign(v.low), 16
	default:
		var h hostPlan
		h, err = planDeviceToHost(v, src, &cp.Plan)
		cp.Staged, cp.Temporary = !h.oneDMA, !h.toView
		cp.DstAlign, cp.SrcAlign = 16, kernels.PtrAlign(src.low)
	}
	if err != nil {
		return CopyPlan{}, fmt.Errorf("memview: copy %v → %v: %w", src, v, err)
	}
	return cp, nil
}
