package jit

import (
	"fmt"
	"sync"
	"unsafe"

	"github.com/stridekit/stridekit/gen"
	"github.com/stridekit/stridekit/layout"
	"github.com/stridekit/stridekit/runtime/cuda"
)

// argsPool holds argument buffers for Launch (gen.ArgsSize of the largest
// kernel is under 4 KiB).
var argsPool = sync.Pool{New: func() any { b := make([]byte, 4096); return &b }}

// Launch launches fn, a kernel rendered from p.Sig with knobs k, copying
// src to dst as plan p says: it packs the argument block (gen.Pack) into a
// pooled buffer and calls cuda.Launch with the views' lowest bytes moved by
// the plan's offsets. It allocates nothing. Every generated kernel launches
// through it: rendered ones directly, stridegen's stubs after checking the
// plan's signature.
func Launch(fn cuda.Function, stream *cuda.Stream, dst, src cuda.DevicePtr, p *layout.Plan, k gen.Knobs) error {
	sm := 0
	if c := p.Sig.Class; (c == layout.ClassContiguous || c == layout.ClassBoxTile) && fn.Device() != nil {
		sm = fn.Device().SMCount()
	}
	bp := argsPool.Get().(*[]byte)
	defer argsPool.Put(bp)
	n := gen.ArgsSize(p.Sig)
	if n > len(*bp) {
		return fmt.Errorf("%w: argument block of %d bytes", gen.ErrPlan, n)
	}
	buf := (*bp)[:n]
	l, err := gen.Pack(p.Sig, k, p, sm, buf)
	if err != nil {
		return err
	}
	d := dst + cuda.DevicePtr(p.DstOffset)
	s := src + cuda.DevicePtr(p.SrcOffset)
	return cuda.Launch(fn, l.Grid, l.Block, l.Shared, stream, unsafe.Pointer(&d), unsafe.Pointer(&s), unsafe.Pointer(&buf[0]))
}
