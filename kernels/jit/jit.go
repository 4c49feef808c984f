// Package jit compiles stridekit's CUDA C kernels with NVRTC, finds the
// kernel of any signature, and caches kernels: in memory per device context
// (Cache), and on disk across processes (CompileCached).
//
// Two layers, so that the first runs where there is no GPU (CI):
//
//   - Compile and CompileCached turn source into a CUBIN (or, only where no
//     CUBIN can run on the target, PTX) for a named architecture. They need
//     NVRTC and nothing else.
//   - Cache turns (device, source, kernel name, options) into a loaded
//     cuda.Function, loading an ahead-of-time CUBIN for the device's
//     architecture when the kernel carries one, else compiling through
//     CompileCached. It needs a GPU.
//
// # Finding kernels
//
// For is the one place that says which kernel serves a signature: the one
// registered for it (Register, called from the init functions stridegen
// writes) if any, else one rendered now by package gen with the device's
// tuning (gen.KnobsFor); package kernels binds and launches it. Cache.Kernel goes through
// For, so what exists does not depend on which packages a program imports.
// Kernel parameters are known from the generator (dst, src, argument block),
// so loading a kernel never probes the driver for them.
//
// # Disk cache
//
// The directory is $STRIDEKIT_CACHE_DIR, else $XDG_CACHE_HOME/stridekit,
// else ~/.cache/stridekit; STRIDEKIT_CACHE=off disables it. An entry's name
// is the sha256 of the source, the options, the target architecture and the
// NVRTC version; its header holds that key, the payload's length and its
// sha256, so a truncated, corrupted or foreign file is detected, recompiled
// and replaced, never loaded. Entries are written to a temporary file and
// renamed into place, so processes compiling the same kernel at once all
// succeed and readers never see half a file. A directory where an entry
// cannot be written (it cannot be created, is read-only or full) turns the
// disk cache off for itself for the rest of the process: compiles go on
// from NVRTC and the memory caches, CacheDir reports the cache off, and
// CacheStatus returns the error (matching ErrCacheUnusable). The package
// writes no log.
package jit

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/stridekit/stridekit/runtime/cuda"
)

// ErrArch is returned when NVRTC can produce nothing that runs on the asked
// architecture.
var ErrArch = errors.New("jit: unsupported architecture")

// Options says how to compile.
type Options struct {
	// Arch is the target compute capability as a number, 90 for sm_90. The
	// Cache fills in the device's when it is 0; Compile requires it.
	Arch int
	// Flags are extra NVRTC options, e.g. "-lineinfo". They are part of
	// the cache key.
	Flags []string
	// Name names the program in NVRTC's messages; default "kernel.cu". Not
	// part of the cache key.
	Name string
}

// Image is a compiled kernel image for cuModuleLoadData.
type Image struct {
	Data []byte
	// PTX is set when Data is PTX text (NUL-terminated) rather than CUBIN:
	// only when the target is newer than any architecture NVRTC knows and
	// of another major version.
	PTX bool
	// Arch is the architecture the image was compiled for (for PTX, the
	// virtual one: compute_<Arch>).
	Arch int
}

// Target returns what Compile produces for a device of compute capability
// arch (90 for sm_90): a CUBIN for arch itself if NVRTC knows it; for a newer
// device of the same major version, a CUBIN for the highest such
// architecture NVRTC knows (CUBIN runs on later minors); for a device of a
// newer major version, PTX for the highest architecture NVRTC knows, which
// the driver compiles on load.
func Target(arch int) (target int, ptx bool, err error) {
	archs, err := cuda.NVRTCSupportedArchs()
	if err != nil {
		return 0, false, err
	}
	if len(archs) == 0 {
		return 0, false, fmt.Errorf("%w: NVRTC lists no architectures", ErrArch)
	}
	if slices.Contains(archs, arch) {
		return arch, false, nil
	}
	best := -1
	for _, a := range archs {
		if a/10 == arch/10 && a < arch {
			best = max(best, a)
		}
	}
	if best >= 0 {
		return best, false, nil
	}
	if hi := archs[len(archs)-1]; arch > hi {
		return hi, true, nil
	}
	return 0, false, fmt.Errorf("%w: sm_%d (NVRTC knows sm_%d … sm_%d)", ErrArch, arch, archs[0], archs[len(archs)-1])
}

// targetOption is the --gpu-architecture value for a target.
func targetOption(arch int, ptx bool) string {
	if ptx {
		return fmt.Sprintf("compute_%d", arch)
	}
	return fmt.Sprintf("sm_%d", arch)
}

// Compile compiles source with NVRTC for opts.Arch (see Target for what is
// produced), without any cache. A compile error is a *cuda.NVRTCError
// (errors.Is cuda.ErrCompilation) carrying NVRTC's log.
func Compile(source string, opts Options) (Image, error) {
	if opts.Arch <= 0 {
		return Image{}, fmt.Errorf("%w: Options.Arch must be set (e.g. 90 for sm_90)", ErrArch)
	}
	arch, ptx, err := Target(opts.Arch)
	if err != nil {
		return Image{}, err
	}
	return compileFor(source, opts, arch, ptx)
}

func compileFor(source string, opts Options, arch int, ptx bool) (Image, error) {
	name := opts.Name
	if name == "" {
		name = "kernel.cu"
	}
	args := append([]string{"--gpu-architecture=" + targetOption(arch, ptx)}, opts.Flags...)
	stats.compiles.Add(1)
	data, _, err := cuda.NVRTCCompile(source, name, args, !ptx)
	if err != nil {
		return Image{}, fmt.Errorf("jit: compile %s for %s: %w", name, targetOption(arch, ptx), err)
	}
	return Image{Data: data, PTX: ptx, Arch: arch}, nil
}

// Stats counts what the caches did in this process, for tests and
// benchmarks.
type Stats struct {
	Compiles    int64 // NVRTC compilations
	DiskHits    int64 // entries read and verified
	DiskMisses  int64 // entries absent
	DiskBad     int64 // entries found truncated, corrupted or foreign (then replaced)
	DiskWrites  int64 // entries written
	MemoryHits  int64 // Cache lookups answered from memory
	ModuleLoads int64 // images loaded into a context
}

var stats struct {
	compiles, diskHits, diskMisses, diskBad, diskWrites, memHits, loads atomic.Int64
}

// ReadStats returns the counters so far.
func ReadStats() Stats {
	return Stats{
		Compiles: stats.compiles.Load(), DiskHits: stats.diskHits.Load(), DiskMisses: stats.diskMisses.Load(),
		DiskBad: stats.diskBad.Load(), DiskWrites: stats.diskWrites.Load(), MemoryHits: stats.memHits.Load(),
		ModuleLoads: stats.loads.Load(),
	}
}

func flagsKey(flags []string) string { return strings.Join(flags, "\x00") }
