package jit

import (
	"fmt"
	"sort"
	"sync"

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
}

// Lookup returns the kernel registered for sig.
func Lookup(sig layout.Signature) (Kernel, bool) {
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

type renderKey struct {
	sig   layout.Signature
	knobs gen.Knobs
}

// rendered holds the kernels For rendered, by signature and knobs: a typed
// map, since a sync.Map's interface keys cost the first copy of a new pair
// an allocation and a generic hash of the whole key.
var rendered struct {
	mu sync.RWMutex
	m  map[renderKey]Kernel
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
	key := renderKey{sig, kn}
	rendered.mu.RLock()
	k, ok := rendered.m[key]
	rendered.mu.RUnlock()
	if ok {
		return k, nil
	}
	src, err := gen.Source(sig, kn)
	if err != nil {
		return Kernel{}, fmt.Errorf("%w for %v: %w", ErrNoKernel, sig, err)
	}
	rendered.mu.Lock()
	defer rendered.mu.Unlock()
	if k, ok := rendered.m[key]; ok {
		return k, nil
	}
	if rendered.m == nil {
		rendered.m = map[renderKey]Kernel{}
	}
	k = Kernel{Sig: sig, Name: gen.Name(sig), Source: src, Knobs: kn}
	rendered.m[key] = k
	return k, nil
}
