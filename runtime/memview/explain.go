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
	// PathPeer: device views on two devices of one host. One kernel reads
	// or writes the other device's memory over the peer link, run by the
	// device of the copy's stream for a small copy and by the device the
	// layouts favour for a larger one; or (without peer access, and for
	// layouts one kernel moves badly over the link) the source is packed
	// on its device in chunks, moved by cuMemcpyPeerAsync and unpacked on
	// the destination's.
	PathPeer
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
	case PathPeer:
		return "peer"
	}
	return fmt.Sprintf("Path(%d)", uint8(p))
}

// CopyPlan says how CopyFrom copies one pair of views: the bound launch
// itself (see Bind), so what is explained is what runs.
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
	// Kernel is the name of the kernel launched ("" when none runs:
	// PathHost, PathSelf, or a device copy that is one memcpy or nothing):
	// the signature's generic kernel, or once it is loaded the kernel
	// specialised to this plan.
	Kernel string
	// Tier says which of the two Kernel is (kernels.TierNone when none
	// runs).
	Tier kernels.Tier
	// Grid, Block and Shared are the kernel's launch configuration (grid
	// and block sizes, bytes of dynamic shared memory), and ArgBytes the
	// size of its packed argument block.
	Grid, Block      cuda.Dim3
	Shared, ArgBytes int
	// Staged reports a host transfer through pinned staging buffers (else
	// one DMA, between pinned gap-free host memory and the image).
	Staged bool
	// Temporary reports a device temporary for the host view's image (else
	// the image is the device view's own bytes, no kernel runs).
	Temporary bool
	// Snapshot reports that the views overlap: src is copied to a
	// temporary first.
	Snapshot bool
	// Chunks is the number of chunks a staged peer copy is cut into (its
	// pipeline: pack, peer memcpy, unpack); 0 for other copies.
	Chunks int
	// Device is the device the kernel runs on (for a staged peer copy,
	// Kernel is the first chunk's unpacking kernel, on the destination's
	// device, or where the destination is the image and nothing is
	// unpacked, its packing kernel, on the source's).
	Device *cuda.Device
}

// String describes the copy in one line: path, plan and launch.
func (c CopyPlan) String() string {
	s := fmt.Sprintf("%v: %v", c.Path, c.Plan.Sig)
	if c.Path == PathHost {
		s = fmt.Sprintf("%v: runtime/hostcopy, %v plan", c.Path, c.Plan.Sig.Class)
	}
	if c.Kernel != "" {
		s += fmt.Sprintf(", %v kernel %s grid (%d,%d,%d) block (%d,%d,%d) shared %d B, args %d B",
			c.Tier, c.Kernel, c.Grid.X, c.Grid.Y, c.Grid.Z, c.Block.X, c.Block.Y, c.Block.Z, c.Shared, c.ArgBytes)
	}
	for _, f := range []struct {
		on   bool
		name string
	}{{c.Staged, "staged"}, {c.Temporary, "temporary"}, {c.Snapshot, "snapshot"}} {
		if f.on {
			s += ", " + f.name
		}
	}
	if c.Chunks > 0 {
		s += fmt.Sprintf(" in %d chunks", c.Chunks)
	}
	return s
}

// Explain returns how v.CopyFrom(src, …) copies, without copying: the path
// and the bound launch CopyFrom uses (the same binding, made and cached
// here if it does not exist yet). It fails as CopyFrom would on views that
// cannot be copied (checks that need a stream aside).
func (v *StridedMemoryView) Explain(src *StridedMemoryView) (CopyPlan, error) {
	if err := checkCopy(v, src); err != nil {
		return CopyPlan{}, err
	}
	path, b, err := bindingOf(v, src, nil)
	if err != nil {
		return CopyPlan{}, fmt.Errorf("memview: copy %v → %v: %w", src, v, err)
	}
	cp := explain(path, b)
	cp.Snapshot = path != PathSelf && overlaps(v, src)
	if path == PathHost {
		cp.DstAlign, cp.SrcAlign = kernels.PtrAlign(v.low), kernels.PtrAlign(src.low)
		err = layout.PlanCopyInto(&cp.Plan, v.l, src.l, layout.PlanOptions{DstAlign: cp.DstAlign, SrcAlign: cp.SrcAlign})
	}
	if err != nil {
		return CopyPlan{}, fmt.Errorf("memview: copy %v → %v: %w", src, v, err)
	}
	return cp, nil
}

// explain reports binding b (nil for PathHost and PathSelf).
func explain(path Path, b *binding) CopyPlan {
	cp := CopyPlan{Path: path}
	if b == nil {
		return cp
	}
	k := b.k
	cp.DstAlign, cp.SrcAlign, cp.Device = k.DstAlign, k.SrcAlign, k.Device()
	// The caller's copy: the binding's plan stays as it was made.
	k.Plan.CloneInto(&cp.Plan, make([]int64, k.Plan.PlanWords()))
	if path == PathPeer && b.stg != nil {
		cp.Staged, cp.Temporary, cp.Chunks = true, !b.stg.packDirect || !b.stg.unpackDirect, len(b.stg.chunks)
		if b.stg.unpackDirect && b.stg.packDirect {
			return cp
		}
	} else if path != PathDevice && path != PathPeer {
		cp.Staged, cp.Temporary = !b.h.oneDMA, !b.h.toView
		if b.h.toView {
			return cp // the image goes straight in or out: no kernel
		}
	}
	if k.Kernel != "" {
		cp.Kernel, cp.Tier, cp.Grid, cp.Block = k.Running(), k.Tier(), cuda.Dim3(k.Launch.Grid), cuda.Dim3(k.Launch.Block)
		cp.Shared, cp.ArgBytes = k.Launch.Shared, len(k.Args)
	}
	return cp
}
