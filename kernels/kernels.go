// Package kernels holds stridekit's default copy kernels, generated ahead of
// time by stridegen from default.sigs and committed (kernels_gen.go), and
// For, which finds the kernel of any signature: a registered one first, else
// one generated at run time.
//
// The default set (gen.DefaultSet, written out in default.sigs) covers every
// class that has a kernel, itemsizes 1, 2, 4, 8 and 16, canonical ranks 1–6
// and both index widths; gen.DefaultSet's doc says how it is pruned. A
// signature outside it (rank 7 and up, odd itemsizes such as 3, 6 or 12,
// in-between vector widths) is rendered by package gen on first use and
// launched through the generic launcher, which packs the same argument
// block as the generated stubs (a test checks they agree byte for byte).
//
// Regenerate after changing gen, the templates or the set:
//
//	go generate ./kernels
//
// CI regenerates and fails when the committed files differ.
package kernels

//go:generate go run ../cmd/stridegen -sigfile default.sigs -o kernels_gen.go

import (
	"sync"
	"unsafe"

	"github.com/stridekit/stridekit/gen"
	"github.com/stridekit/stridekit/layout"
	"github.com/stridekit/stridekit/runtime/cuda"
	"github.com/stridekit/stridekit/runtime/jit"
)

var (
	runtimeMu sync.Mutex
	generated = map[layout.Signature]jit.Kernel{}
)

// For returns the kernel for sig: the one registered with jit.Register (the
// default set of this package, or a downstream package's stridegen output),
// else a kernel rendered now by gen with the generic launcher (cached, so a
// signature is rendered once per process; jit.Cache compiles it once per
// device and keeps it on disk). It fails for a signature no kernel exists for
// (ClassNone, ClassMemcpy, invalid ones).
func For(sig layout.Signature) (jit.Kernel, error) {
	if k, ok := jit.Lookup(sig); ok {
		return k, nil
	}
	runtimeMu.Lock()
	defer runtimeMu.Unlock()
	if k, ok := generated[sig]; ok {
		return k, nil
	}
	src, err := gen.Source(sig)
	if err != nil {
		return jit.Kernel{}, err
	}
	k := jit.Kernel{Sig: sig, Name: gen.Name(sig), Source: src, Launch: GenericLaunch(sig)}
	generated[sig] = k
	return k, nil
}

// Generated reports whether For rendered sig's kernel at run time, outside
// the registry.
func Generated(sig layout.Signature) bool {
	runtimeMu.Lock()
	defer runtimeMu.Unlock()
	_, ok := generated[sig]
	return ok
}

// argsPool holds argument buffers of the generic launcher (gen.ArgsSize of
// the largest rank is below 4 KiB).
var argsPool = sync.Pool{New: func() any { b := make([]byte, gen.ArgsSize(gen.MaxNDim)); return &b }}

// GenericLaunch returns a launcher for kernels of sig built from gen.Pack: it
// packs the argument block into a byte buffer and launches through
// cuda.Launch, exactly as the generated stubs do with typed structs.
func GenericLaunch(sig layout.Signature) jit.LaunchFunc {
	return func(fn cuda.Function, stream *cuda.Stream, dst, src cuda.DevicePtr, p *layout.Plan) error {
		sm := 0
		if sig.Class == layout.ClassContiguous {
			sm = fn.Device().SMCount()
		}
		bp := argsPool.Get().(*[]byte)
		defer argsPool.Put(bp)
		buf := (*bp)[:gen.ArgsSize(int(sig.NDim))]
		g, b, err := gen.Pack(sig, p, sm, buf)
		if err != nil {
			return err
		}
		d := dst + cuda.DevicePtr(p.DstOffset)
		s := src + cuda.DevicePtr(p.SrcOffset)
		return cuda.Launch(fn, cuda.Dim3{X: g[0], Y: g[1], Z: g[2]}, cuda.Dim3{X: b[0], Y: b[1], Z: b[2]}, 0, stream,
			unsafe.Pointer(&d), unsafe.Pointer(&s), unsafe.Pointer(&buf[0]))
	}
}
