package kernels

import (
	"fmt"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/stridekit/stridekit/gen"
	"github.com/stridekit/stridekit/kernels/jit"
	"github.com/stridekit/stridekit/layout"
	"github.com/stridekit/stridekit/runtime/cuda"
)

// Bound is a device copy between two layouts, derived once: what Bind
// computed from the layouts, the pointers' alignment and the device, so
// that Enqueue only queues the work. It is safe for concurrent use; any
// number of copies between views of these layouts (and at least these
// alignments) on this device may enqueue it, each with its own pointers.
// Its fields do not change; the kernel it launches may, once, from the
// generic kernel to one specialised to its plan (Specialise), which copies
// the same bytes with the same launch and arguments.
type Bound struct {
	// Plan is the copy's plan: its signature names the kernel.
	Plan layout.Plan
	// DstAlign and SrcAlign are the alignments of the lowest bytes the plan
	// was made for (16 means 16 or more).
	DstAlign, SrcAlign int
	// Kernel is the kernel's name ("" for ClassNone and ClassMemcpy, which
	// launch none).
	Kernel string
	// Knobs are the launch knobs the kernel was rendered and packed with.
	Knobs gen.Knobs
	// Launch is the grid, block and dynamic shared memory of the launch.
	Launch gen.Launch
	// Args is the packed argument block (gen.Pack).
	Args []byte

	fn   atomic.Pointer[cuda.Function] // the kernel Enqueue launches: loaded on first use, then maybe the specialised one
	spec atomic.Pointer[string]        // the specialised kernel's name, once fn is that kernel
	dev  *cuda.Device
}

// scratchPlans holds the plans BindInto plans in before it keeps the
// result in a slab of its exact size (settle): reused, their slices have
// grown to the ranks planned so far, so planning allocates nothing.
var scratchPlans = sync.Pool{New: func() any { return new(layout.Plan) }}

// slabWords returns the size, in int64, of the slab that holds plan p's
// slices and, when p launches a kernel, its argument block (gen.ArgsSize).
func slabWords(p *layout.Plan) int {
	w := p.PlanWords()
	if c := p.Sig.Class; c != layout.ClassNone && c != layout.ClassMemcpy {
		w += (gen.ArgsSize(p.Sig) + 7) / 8
	}
	return w
}

// settle sets b.Plan to plan p, made in scratch memory, with its slices
// at the start of slab (at least slabWords(p) words), and returns the rest
// of the slab, room for the argument block.
func (b *Bound) settle(p *layout.Plan, slab []int64) []byte {
	sl := p.CloneInto(&b.Plan, slab)
	if len(sl) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&sl[0])), 8*len(sl))
}

// Bind plans the copy of every element of a src view of layout src into a
// dst view of layout dst on dev, for views whose lowest bytes are aligned
// to dstAlign and srcAlign (PtrAlign of the real pointers), picks the
// kernel the plan names (jit.For: a registered one, else one rendered with
// dev's tuning) and packs its arguments. The kernel is loaded (compiled on
// first use, through jit.Default) by the first Enqueue or Function, so
// binding needs no GPU work and describing a copy (memview's Explain)
// compiles nothing. It fails as layout.PlanCopy does, or when no kernel
// exists for the plan.
func Bind(dev *cuda.Device, dst, src layout.Layout, dstAlign, srcAlign int) (*Bound, error) {
	b := new(Bound)
	if err := BindInto(b, dev, dst, src, dstAlign, srcAlign); err != nil {
		return nil, err
	}
	return b, nil
}

// BindInto is Bind into b, a zero Bound of the caller's (one allocation
// fewer for callers that keep a Bound inside a value of their own), with
// the plan options that opts set besides (Gather, say).
func BindInto(b *Bound, dev *cuda.Device, dst, src layout.Layout, dstAlign, srcAlign int, opts ...PlanOption) error {
	_, err := BindAlloc(func(words int) (*Bound, []int64) { return b, make([]int64, words) }, dev, dst, src, dstAlign, srcAlign, opts...)
	return err
}

// BindAlloc is BindInto into the zero Bound that alloc returns once the
// copy is planned, with a zeroed slab of at least words int64s that the
// Bound keeps its plan's slices and argument block in: a caller that keeps
// the Bound inside a value of its own may allocate the value and the slab
// together (one allocation, where BindInto makes the slab apart). alloc is
// called once, with 0 words where the planning fails.
func BindAlloc(alloc func(words int) (*Bound, []int64), dev *cuda.Device, dst, src layout.Layout, dstAlign, srcAlign int, opts ...PlanOption) (*Bound, error) {
	opt := planOptions(dev, dstAlign, srcAlign, dst.Itemsize())
	if len(opts) > 0 {
		opt = withOptions(opt, opts) // apart, so that opt stays on the stack
	}
	// Plan in scratch memory, then keep the plan and the argument block in
	// one slab of their size.
	p := scratchPlans.Get().(*layout.Plan)
	err := layout.PlanCopyInto(p, dst, src, opt)
	var b *Bound
	var args []byte
	if err == nil {
		var slab []int64
		b, slab = alloc(slabWords(p))
		args = b.settle(p, slab)
	} else {
		b, _ = alloc(0)
		b.Plan = layout.Plan{Sig: p.Sig} // PlanCopyInto's empty plan
	}
	scratchPlans.Put(p)
	b.DstAlign, b.SrcAlign, b.dev = dstAlign, srcAlign, dev
	if err != nil {
		return b, err
	}
	return b, b.kernel(dev, args)
}

// kernel finds the kernel of b's plan on dev (none for ClassNone and
// ClassMemcpy) and packs its arguments into args where they fit.
func (b *Bound) kernel(dev *cuda.Device, args []byte) error {
	if dev == nil {
		return fmt.Errorf("kernels: Bind on a nil device: %w", cuda.ErrInvalidValue)
	}
	if c := b.Plan.Sig.Class; c == layout.ClassNone || c == layout.ClassMemcpy {
		return nil
	}
	if fn, k, ok := jit.Default.Loaded(dev, b.Plan.Sig); ok {
		b.fn.Store(fn) // the usual case: a new pair of a loaded kernel
		return b.pack(dev, k.Name, k.Knobs, args)
	}
	k, err := jit.For(b.Plan.Sig, dev.Arch())
	if err != nil {
		return err
	}
	return b.pack(dev, k.Name, k.Knobs, args)
}

// withOptions returns opt with opts applied.
func withOptions(opt layout.PlanOptions, opts []PlanOption) layout.PlanOptions {
	for _, o := range opts {
		o(&opt)
	}
	return opt
}

// BindPlan binds plan p to a kernel the caller loaded itself: fn, named
// name, rendered with knobs k for p's signature (the tuner's candidates).
func BindPlan(p *layout.Plan, fn cuda.Function, name string, k gen.Knobs) (*Bound, error) {
	b := &Bound{Plan: *p, DstAlign: 16, SrcAlign: 16, dev: fn.Device()}
	b.fn.Store(&fn)
	return b, b.pack(fn.Device(), name, k, nil)
}

// pack fills the kernel's part of b for a kernel named name, rendered with
// knobs k, on dev, packing the arguments into buf when it has room (else
// into a new slice).
func (b *Bound) pack(dev *cuda.Device, name string, k gen.Knobs, buf []byte) error {
	sm := 0
	if b.Plan.Sig.Class == layout.ClassBoxTile {
		sm = dev.SMCount()
	}
	b.Kernel, b.Knobs = name, k
	size := gen.ArgsSize(b.Plan.Sig)
	if len(buf) < size {
		buf = make([]byte, size)
	}
	b.Args = buf[:size:size]
	l, err := gen.Pack(b.Plan.Sig, k, &b.Plan, sm, b.Args)
	b.Launch = l
	return err
}

// Enqueue queues the copy on stream s (nil: the legacy default stream)
// between views whose lowest bytes are dst and src, aligned at least as
// Bind was told (the plan's offsets are added here). It returns once the
// work is queued and allocates nothing.
func (b *Bound) Enqueue(s *cuda.Stream, dst, src cuda.DevicePtr) error {
	d := dst + cuda.DevicePtr(b.Plan.DstOffset)
	sp := src + cuda.DevicePtr(b.Plan.SrcOffset)
	switch b.Plan.Sig.Class {
	case layout.ClassNone:
		return nil
	case layout.ClassMemcpy:
		return b.dev.MemcpyAsync(d, sp, int(b.Plan.Bytes), s)
	}
	fn := b.fn.Load()
	if fn == nil {
		f, err := b.Function()
		if err != nil {
			return err
		}
		fn = &f
	}
	l := &b.Launch
	return cuda.Launch(*fn, cuda.Dim3(l.Grid), cuda.Dim3(l.Block), l.Shared, s, unsafe.Pointer(&d), unsafe.Pointer(&sp), unsafe.Pointer(&b.Args[0]))
}

// Function returns the kernel, loading it on first use (the zero Function
// for ClassNone and ClassMemcpy, which launch none): with Args and Launch,
// what a bare cuLaunchKernel of the copy needs (stridebench's launch
// floor).
func (b *Bound) Function() (cuda.Function, error) {
	if fn := b.fn.Load(); fn != nil || b.Kernel == "" {
		if fn == nil {
			return cuda.Function{}, nil
		}
		return *fn, nil
	}
	fn, k, err := jit.Default.Kernel(b.dev, b.Plan.Sig)
	if err != nil {
		return cuda.Function{}, err
	}
	if k.Name != b.Kernel || k.Knobs != b.Knobs {
		return cuda.Function{}, fmt.Errorf("kernels: %v: bound to %s, the cache serves %s: %w", b.Plan.Sig, b.Kernel, k.Name, gen.ErrPlan)
	}
	if !b.fn.CompareAndSwap(nil, &fn) {
		return *b.fn.Load(), nil // specialised meanwhile
	}
	return fn, nil
}

// Device returns the device the copy was bound on.
func (b *Bound) Device() *cuda.Device { return b.dev }
