package memview

import (
	"fmt"

	"github.com/stridekit/stridekit/kernels"
	"github.com/stridekit/stridekit/runtime/cuda"
)

// BoundCopy is a copy from one view into another, bound once: the path,
// the plan, the loaded kernel and its packed arguments are derived when it
// is made (Bind), so Copy only queues the work. It is for copies repeated
// in a loop (a data loader, an inference server), as a cuFFT or cuTENSOR
// plan is: CopyFrom keeps bindings of its own in a bounded cache and costs
// a lookup more per copy; a BoundCopy costs none.
//
// A BoundCopy is immutable and safe for concurrent use. Rebind makes one
// for other views laid out the same (same layouts, dtype, memory kinds,
// device and pointer alignment), sharing the binding: only the pointers
// change.
type BoundCopy struct {
	dst, src *StridedMemoryView
	path     Path
	b        *binding
}

// Bind binds the copy of src into dst: dst.CopyFrom(src, …) made ready to
// run. A copy between two devices of 1 MiB or more runs its kernel on the
// device its layouts suit (see CopyFrom); a smaller one is bound to run on
// the source's device, and Copy on a stream of the destination's device
// binds, once, the copy run there as well. It fails as CopyFrom would on views that cannot be copied (checks
// that need a stream aside, which Copy makes).
func Bind(dst, src *StridedMemoryView) (*BoundCopy, error) {
	if err := checkCopy(dst, src); err != nil {
		return nil, err
	}
	path, b, err := bindingOf(dst, src, nil)
	if err != nil {
		return nil, fmt.Errorf("memview: bind %v → %v: %w", src, dst, err)
	}
	return &BoundCopy{dst: dst, src: src, path: path, b: b}, nil
}

// Copy copies the bound src view into the bound dst view on stream s, as
// dst.CopyFrom(src, s, opts...) does (the same paths, options and errors),
// without planning or looking anything up. A closed view or buffer fails
// with ErrClosed.
func (c *BoundCopy) Copy(s *cuda.Stream, opts ...CopyOption) error {
	var cfg copyConfig
	if len(opts) > 0 {
		cfg = applyOptions(opts)
	}
	b := c.b
	if err := streamFits(c.dst, c.src, s); err != nil {
		return fmt.Errorf("memview: copy %v → %v: %w", c.src, c.dst, err)
	}
	if c.path == PathPeer && execDevice(c.dst, c.src, PathPeer, s) != b.key.dev {
		var err error // a small copy runs on s's device: its binding
		if _, b, err = bindingOf(c.dst, c.src, s); err != nil {
			return fmt.Errorf("memview: copy %v → %v: %w", c.src, c.dst, err)
		}
	}
	if b != nil {
		b.again()
	}
	if err := run(c.dst, c.src, c.path, b, s, cfg); err != nil {
		return fmt.Errorf("memview: copy %v → %v: %w", c.src, c.dst, err)
	}
	return nil
}

// Rebind returns the bound copy of src into dst, sharing c's binding: dst
// and src must be laid out as c's views are (layouts, dtype, memory kinds
// and device) and their lowest bytes aligned at least as c's were (for the
// alignment up to 16 bytes; and overlapping, or not, as c's views). Views
// that differ otherwise need Bind.
func (c *BoundCopy) Rebind(dst, src *StridedMemoryView) (*BoundCopy, error) {
	if err := checkCopy(dst, src); err != nil {
		return nil, err
	}
	path, err := route(dst, src)
	if err == nil && !c.fits(dst, src, path) {
		err = fmt.Errorf("%w: %v → %v is not laid out, placed or aligned as %v → %v", errUnbound, src, dst, c.src, c.dst)
	}
	if err != nil {
		return nil, fmt.Errorf("memview: rebind %v → %v: %w", src, dst, err)
	}
	return &BoundCopy{dst: dst, src: src, path: path, b: c.b}, nil
}

// fits reports whether c's binding serves a copy from src into dst on
// path: the same layouts, dtype, devices and memory kinds, and lowest bytes
// aligned at least as the binding's device copy assumes.
func (c *BoundCopy) fits(dst, src *StridedMemoryView, path Path) bool {
	if path != c.path || dst.dt != c.dst.dt || !dst.l.Equal(c.dst.l) || !src.l.Equal(c.src.l) ||
		dst.dev != c.dst.dev || src.dev != c.src.dev || dst.kind != c.dst.kind || src.kind != c.src.kind {
		return false
	}
	if c.b == nil {
		return true // host or self: nothing bound
	}
	da, sa := aligns(dst, src, path)
	return da >= int(c.b.key.dstAlign) && sa >= int(c.b.key.srcAlign)
}

// Explain reports the bound copy (see StridedMemoryView.Explain).
func (c *BoundCopy) Explain() CopyPlan {
	if c.b == nil {
		cp, _ := c.dst.Explain(c.src) // host or self: nothing bound, nothing to fail
		return cp
	}
	cp := explain(c.path, c.b)
	cp.Snapshot = overlaps(c.dst, c.src)
	return cp
}

// Kernel returns the device launch of the copy (its plan, kernel, packed
// arguments and launch configuration), or nil for copies without one
// (host to host, a view onto itself). stridebench launches it bare to
// measure the driver's floor under the copy.
func (c *BoundCopy) Kernel() *kernels.Bound {
	if c.b == nil {
		return nil
	}
	return c.b.k
}

// Specialise switches the copy, and every copy of views laid out and
// aligned as these (they share the bound launch), to a kernel compiled for
// this copy's plan alone (each of a staged peer copy's kernels to its
// own), waiting for the compile (kernels.Bound.Specialise): for a program
// that knows a pair will be copied many times and wants the faster kernel
// from the start, whatever the tuning table says. Copies
// that launch no kernel have nothing to specialise (nil). It fails, and the
// copy keeps its generic kernel, when the process's limit of specialised
// kernels is reached (kernels.ErrSpecialiseLimit) or the compile fails.
func (c *BoundCopy) Specialise() error {
	return c.specialise(false)
}

// Settle waits until the copy runs the kernels a repeated copy settles on:
// it compiles now the specialised kernels that the tuning table says pay
// (gen.Knobs.SpecialisesPlan), which CopyFrom's second copy would queue for the
// background compiler. For benchmarks, and for programs that warm up
// before a loop whose first copies must already run at full speed.
// Failures are Specialise's.
func (c *BoundCopy) Settle() error {
	return c.specialise(true)
}

// specialise is Specialise (every kernel) or Settle (tuned only).
func (c *BoundCopy) specialise(tuned bool) error {
	if c.b == nil || c.b.k == nil {
		return nil
	}
	c.b.asked.Store(true)
	if err := c.b.specialise(tuned, true); err != nil {
		return fmt.Errorf("memview: specialise %v → %v: %w", c.src, c.dst, err)
	}
	return nil
}
