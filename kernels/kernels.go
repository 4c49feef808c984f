// Package kernels is stridekit's one dispatch path for device copies: Launch
// takes a plan (layout.PlanCopy) and runs it on a stream, as nothing
// (ClassNone), one cuMemcpyAsync (ClassMemcpy), or a copy kernel (every other
// class): the one registered for the plan's signature by a stridegen stub,
// else one rendered by package gen at run time with the device's tuning, and
// compiled once per device and once per machine (runtime/jit's caches).
// runtime/memview calls it; nothing else launches copies.
//
// No kernel source is committed: the default set (gen.DefaultSet) is a list
// of signatures that CI compiles with NVRTC, and any signature, in the set
// or not, is rendered from the templates on first use. Downstream packages
// that want typed stubs or ahead-of-time CUBIN generate them with
// cmd/stridegen.
package kernels

import (
	"fmt"
	"sync/atomic"

	"github.com/stridekit/stridekit/gen"
	"github.com/stridekit/stridekit/layout"
	"github.com/stridekit/stridekit/runtime/cuda"
	"github.com/stridekit/stridekit/runtime/jit"
)

// Launch queues plan p on stream s of device dev (nil s: the legacy default
// stream). dst and src are the lowest bytes of the two views (the pointer
// convention of package layout); the plan's offsets are added here. It
// returns once the work is queued. A cached kernel costs one lock-free
// lookup and cuLaunchKernel, and allocates nothing.
func Launch(dev *cuda.Device, s *cuda.Stream, dst, src cuda.DevicePtr, p *layout.Plan) error {
	switch p.Sig.Class {
	case layout.ClassNone:
		return nil
	case layout.ClassMemcpy:
		if dev == nil {
			return fmt.Errorf("kernels: Launch on a nil device: %w", cuda.ErrInvalidValue)
		}
		return dev.MemcpyAsync(dst+cuda.DevicePtr(p.DstOffset), src+cuda.DevicePtr(p.SrcOffset), int(p.Bytes), s)
	}
	fn, k, err := jit.Default.Kernel(dev, p.Sig)
	if err != nil {
		return err
	}
	return k.Launch(fn, s, dst, src, p)
}

// PlanOptions returns the planner options for copies on dev between views
// whose lowest bytes are dst and src: the real alignment of both pointers
// (never assumed), and the box-tile size of dev's tuning for items of
// itemsize bytes.
func PlanOptions(dev *cuda.Device, dst, src cuda.DevicePtr, itemsize int) layout.PlanOptions {
	arch := 0
	if dev != nil {
		arch = dev.Arch()
	}
	return layout.PlanOptions{DstAlign: PtrAlign(uintptr(dst)), SrcAlign: PtrAlign(uintptr(src)), TileBytes: tileBytes(arch, itemsize)}
}

// ResetTuning forgets the box-tile sizes looked up so far, so that plans
// made after a gen.Override see it (the tuner calls it).
func ResetTuning() {
	for a := range tileCache {
		for i := range tileCache[a] {
			tileCache[a][i].Store(0)
		}
	}
}

// tileCache memoises the box-tile size by architecture (below 128) and
// item size (1..16): KnobsFor walks the tuning table, too slow for every
// copy. 0 means not yet looked up.
var tileCache [128][layout.MaxVectorBytes + 1]atomic.Int32

func tileBytes(arch, item int) int {
	item = min(max(item, 1), layout.MaxVectorBytes)
	if arch < 0 || arch >= len(tileCache) {
		return gen.KnobsFor(layout.Signature{Class: layout.ClassBoxTile, Itemsize: uint8(item), Vec: 1}, arch).TileBytes
	}
	c := &tileCache[arch][item]
	if v := c.Load(); v != 0 {
		return int(v)
	}
	v := gen.KnobsFor(layout.Signature{Class: layout.ClassBoxTile, Itemsize: uint8(item), Vec: 1}, arch).TileBytes
	c.Store(int32(v))
	return v
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
