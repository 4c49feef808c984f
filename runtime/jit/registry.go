package jit

import (
	"fmt"
	"sort"
	"sync"

	"github.com/stridekit/stridekit/layout"
	"github.com/stridekit/stridekit/runtime/cuda"
)

// LaunchFunc launches a kernel loaded from a Kernel's source on stream,
// copying src to dst as plan p says. Generated stubs implement it.
type LaunchFunc func(fn cuda.Function, stream *cuda.Stream, dst, src cuda.DevicePtr, p *layout.Plan) error

// Kernel is a generated kernel: the signature it serves, its CUDA C source,
// optional ahead-of-time CUBIN images, and its launch stub.
type Kernel struct {
	Sig    layout.Signature
	Name   string            // kernel function name in Source (extern "C")
	Source string            // complete CUDA C source
	Cubin  map[string][]byte // optional AOT images by arch, e.g. "sm_90"
	Launch LaunchFunc
}

var registry struct {
	mu sync.RWMutex
	m  map[layout.Signature]Kernel
}

// Register adds k to the registry, for Lookup and Cache.Kernel. It is safe
// to call from init and concurrently. A later registration of the same
// signature replaces the earlier one: package init order runs importers
// after what they import, so a downstream package's kernels override
// stridekit's defaults. Register panics on a kernel no one could use (an
// invalid signature, no name, no source and no CUBIN, or no Launch): those
// are bugs of the generator, found at init.
func Register(k Kernel) {
	if err := k.Sig.Validate(); err != nil {
		panic(fmt.Sprintf("jit.Register: %v", err))
	}
	if k.Name == "" || (k.Source == "" && len(k.Cubin) == 0) || k.Launch == nil {
		panic(fmt.Sprintf("jit.Register(%v): kernel needs a Name, a Source or Cubin, and a Launch", k.Sig))
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
