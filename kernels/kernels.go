// Package kernels is stridekit's one launch path for device copies: Bind
// derives, once, everything a copy between two layouts on a device needs —
// the plan (layout.PlanCopy with the pointers' real alignment and the
// device's tile size), the loaded kernel (a stridegen-registered one for
// the plan's signature, else one rendered by package gen with the device's
// tuning, compiled once per device and once per machine through
// kernels/jit's caches), the packed argument block, grid, block and shared
// memory — into a Bound, whose Enqueue only queues the work: nothing
// (ClassNone), one cuMemcpyAsync (ClassMemcpy) or one cuLaunchKernel.
// runtime/memview binds every device copy through it and keeps the Bounds
// it made, so a repeated copy re-plans nothing.
//
// No kernel source is committed: the default set (gen.DefaultSet) is a list
// of signatures that CI compiles with NVRTC, and any signature, in the set
// or not, is rendered from the templates on first use. Downstream packages
// that want ahead-of-time CUBIN generate them with cmd/stridegen.
package kernels

import (
	"sync/atomic"

	"github.com/stridekit/stridekit/gen"
	"github.com/stridekit/stridekit/layout"
	"github.com/stridekit/stridekit/runtime/cuda"
)

// PlanOptions returns the planner options for copies on dev between views
// whose lowest bytes are dst and src: the real alignment of both pointers
// (never assumed), and the box-tile size and load grain of dev's tuning for
// items of itemsize bytes.
func PlanOptions(dev *cuda.Device, dst, src cuda.DevicePtr, itemsize int) layout.PlanOptions {
	return planOptions(dev, PtrAlign(uintptr(dst)), PtrAlign(uintptr(src)), itemsize)
}

// planOptions is PlanOptions for known alignments.
func planOptions(dev *cuda.Device, dstAlign, srcAlign, itemsize int) layout.PlanOptions {
	arch := 0
	if dev != nil {
		arch = dev.Arch()
	}
	return archPlanOptions(arch, dstAlign, srcAlign, itemsize)
}

// archPlanOptions is planOptions for a device of compute capability arch
// (0: the portable tuning).
func archPlanOptions(arch, dstAlign, srcAlign, itemsize int) layout.PlanOptions {
	o := boxTuning(arch, itemsize)
	o.DstAlign, o.SrcAlign = dstAlign, srcAlign
	return o
}

// A PlanOption sets a planner option of a binding (BindInto) beyond the
// alignments and tile size it derives itself.
type PlanOption func(*layout.PlanOptions)

// Gather plans the copy as a gather in dst's order where it would need a
// kernel that reads both views in runs (layout.PlanOptions.Gather): for
// copies whose writes cost more than their reads, such as a destination
// across a peer link.
func Gather(o *layout.PlanOptions) { o.Gather = true }

// ResetTuning forgets the box-tile sizes and grains looked up so far, so that plans
// made after a gen.Override see it (the tuner calls it).
func ResetTuning() {
	for a := range tileCache {
		for i := range tileCache[a] {
			tileCache[a][i].Store(nil)
		}
	}
}

// tileCache memoises the box tile's planner knobs by architecture (below
// 128) and item size (1..16); nil means not yet looked up. KnobsFor walks
// the tuning table, too slow for every plan.
var tileCache [128][layout.MaxVectorBytes + 1]atomic.Pointer[layout.PlanOptions]

// boxTuning returns the planner's options of box tiles of item-byte
// elements on arch (gen.BoxPlanOptions), memoised.
func boxTuning(arch, item int) layout.PlanOptions {
	item = min(max(item, 1), layout.MaxVectorBytes)
	look := func() layout.PlanOptions { return gen.BoxPlanOptions(item, arch) }
	if arch < 0 || arch >= len(tileCache) {
		return look()
	}
	c := &tileCache[arch][item]
	if v := c.Load(); v != nil {
		return *v
	}
	b := look()
	c.Store(&b)
	return b
}

// PtrAlign returns the alignment of address p, at most 16 (what the planner
// can use).
func PtrAlign(p uintptr) int {
	for a := 1; a < layout.MaxVectorBytes; a *= 2 {
		if p&uintptr(a) != 0 {
			return a
		}
	}
	return layout.MaxVectorBytes
}
