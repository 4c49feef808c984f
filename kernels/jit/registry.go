package jit

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/stridekit/stridekit/gen"
	"github.com/stridekit/stridekit/layout"
	"github.com/stridekit/stridekit/runtime/cuda"
)

// Kernel is a copy kernel: the signature it serves, its CUDA C source and
// the knobs it was rendered with (which its launch configuration and
// argument block are packed with: gen.Pack), and optional ahead-of-time
// CUBIN images. Its parameters are those of every generated kernel: (dst,
// src, argument block of gen.ArgsSize(Sig)).
type Kernel struct {
	Sig    layout.Signature
	Name   string            // kernel function name in Source (extern "C")
	Source string            // complete CUDA C source
	Cubin  map[string][]byte // optional AOT images by arch, e.g. "sm_90"
	// Knobs are the launch parameters Source was rendered with.
	Knobs gen.Knobs
}

// params returns k's parameter layout.
func (k *Kernel) params() []cuda.Param {
	return cuda.ParamsOf(8, 8, gen.ArgsSize(k.Sig))
}

var registry struct {
	mu sync.RWMutex
	m  map[layout.Signature]Kernel
	n  atomic.Int32 // len(m), set under mu: Lookup skips the lock while it is 0
}

// Register adds k to the registry, for Lookup, For and Cache.Kernel. It is
// safe to call from init and concurrently. A later registration of the same
// signature replaces the earlier one: package init order runs importers
// after what they import, so a downstream package's kernels override any
// registered before. Register panics on a kernel no one could use (an
// invalid signature, no name, or neither source nor CUBIN): those
// are bugs of the generator, found at init.
func Register(k Kernel) {
	if err := k.Sig.Validate(); err != nil {
		panic(fmt.Sprintf("jit.Register: %v", err))
	}
	if k.Name == "" || (k.Source == "" && len(k.Cubin) == 0) {
		panic(fmt.Sprintf("jit.Register(%v): kernel needs a Name and a Source or Cubin", k.Sig))
	}
	registry.mu.Lock()
	defer registry.mu.Unlock()
	if registry.m == nil {
		registry.m = map[layout.Signature]Kernel{}
	}
	registry.m[k.Sig] = k
	registry.n.Store(int32(len(registry.m)))
}

// Lookup returns the kernel registered for sig.
func Lookup(sig layout.Signature) (Kernel, bool) {
	if registry.n.Load() == 0 {
		return Kernel{}, false // nothing registered: the usual case, without stubs
	}
	registry.mu.RLock()
	defer registry.mu.RUnlock()
	k, ok := registry.m[sig]
	return k, ok
}

// Kernels returns every registered kernel, ordered by signature string (for
// tools and CI that compile them all).
func Kernels() []Kernel {
	registry.mu.RLock()
	ks := make([]Kernel, 0, len(registry.m))
	for _, k := range registry.m {
		ks = append(ks, k)
	}
	registry.mu.RUnlock()
	sort.Slice(ks, func(i, j int) bool { return ks[i].Sig.String() < ks[j].Sig.String() })
	return ks
}

// rendered holds the kernels For rendered, by signature, each with the
// knobs it was rendered with (most signatures have one: their knobs differ
// only by arch, Override or $STRIDEKIT_KNOBS). It is copied on write, under
// mu, so that For reads it with one atomic load and a map read keyed by
// the 6-byte signature, then compares the knobs: a map keyed by signature
// and knobs hashed all of the knobs on every first copy of a new pair.
// Rendering a kernel costs far more than copying the map.
var rendered struct {
	mu sync.Mutex
	m  atomic.Pointer[map[layout.Signature][]Kernel]
}

// renderedFor returns the kernel For rendered for sig with knobs kn, or
// nil. It points into rendered, which is never written in place.
func renderedFor(sig layout.Signature, kn *gen.Knobs) *Kernel {
	if m := rendered.m.Load(); m != nil {
		ks := (*m)[sig]
		for i := range ks {
			if ks[i].Knobs == *kn {
				return &ks[i]
			}
		}
	}
	return nil
}

// addRendered adds k, rendered for its signature with its knobs, to
// rendered, unless another caller added one first, and returns the one
// kept.
func addRendered(k Kernel) Kernel {
	rendered.mu.Lock()
	defer rendered.mu.Unlock()
	if old := renderedFor(k.Sig, &k.Knobs); old != nil {
		return *old
	}
	m := map[layout.Signature][]Kernel{}
	if old := rendered.m.Load(); old != nil {
		m = maps.Clone(*old)
	}
	m[k.Sig] = append(slices.Clip(m[k.Sig]), k) // a new array: readers may hold the old one
	rendered.m.Store(&m)
	return k
}

// For returns the kernel for sig on a device of compute capability arch (0:
// the portable knobs): the registered one (a stridegen stub) if there is
// one, else one rendered by package gen with gen.KnobsFor(sig, arch).
// Rendering happens once per signature and knobs in a
// process; compiling, once per device through Cache, and once per machine
// through the disk cache. It fails, with an ErrNoKernel error, for a
// signature no kernel exists for (ClassNone, ClassMemcpy, invalid ones).
func For(sig layout.Signature, arch int) (Kernel, error) {
	if k, ok := Lookup(sig); ok {
		return k, nil
	}
	kn := gen.KnobsFor(sig, arch)
	if k := renderedFor(sig, &kn); k != nil {
		return *k, nil
	}
	src, err := gen.Source(sig, kn)
	if err != nil {
		return Kernel{}, fmt.Errorf("%w for %v: %w", ErrNoKernel, sig, err)
	}
	return addRendered(Kernel{Sig: sig, Name: gen.Name(sig), Source: src, Knobs: kn}), nil
}
