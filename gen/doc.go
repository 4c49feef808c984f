// Package gen turns a copy kernel's signature (layout.Signature: class,
// canonical rank, element size, vector width, index width) into what it
// takes to run the kernel: its CUDA C source, and for each plan its packed
// argument block and launch configuration. It is pure Go and touches no GPU.
//
// # Sources
//
// Source(sig, knobs) renders the CUDA C of one kernel from the templates of
// package templates (one per class: elem, tile, btile, bcast, fill): one
// extern "C" kernel named Name(sig), so a profiler trace says which kernel
// ran. The same signature and knobs always give the same bytes, so cache
// keys are stable, and sources of several kernels concatenate into one
// translation unit. Only the signature and the knobs are compiled in:
// extents, strides, offsets and tiles are kernel arguments, so a few kernels
// serve every layout of a class. Check says whether a signature has a kernel;
// DefaultSet lists the signatures CI compiles with NVRTC (no source is
// committed: any signature is rendered on first use). FormatVersion is part
// of every source and of the files stridegen writes, so a change of format
// breaks stale generated files at compile time.
//
// The templates are executed without package text/template's executor,
// whose reflect-based method calls would keep every exported method of a
// program alive (over a megabyte): render.go executes the subset of the
// template language the kernel templates use, on text/template's parser,
// reading the data through a switch. A test renders every default signature
// and random ones with both executors and requires the same bytes.
//
// # Argument blocks
//
// Each class's argument block, struct A of the kernel, is described once, in
// args.go: its fields' names, C types and counts (a scalar, a fixed array, or
// one entry per canonical dim). The struct's declaration in every source is
// written from that description, with compile-time checks of each field's
// offset and of the size (ArgsSize), and Pack writes the block through a
// writer that checks every field against the same description (ErrArgs), so
// the packer and the kernel cannot disagree on a field's place.
//
// # Packing
//
// Pack(sig, knobs, plan, smCount, buf) writes the argument block of a plan
// (layout.PlanCopy's output) for sig's kernel into buf and returns its grid,
// block and dynamic shared memory (Launch); it allocates nothing. Magic gives
// the fast-division constants the kernels unravel indices with.
//
// # Tuning
//
// The knobs of a kernel (Knobs: threads per block, rows per thread, tile
// bytes, lanes per run, …) come from one table, tuning.txt, embedded, keyed by
// architecture, class, element size and vector width; the file documents
// each knob. KnobsFor(sig, arch) looks a kernel's knobs up; $STRIDEKIT_TUNING
// names a table file to read instead, $STRIDEKIT_KNOBS overrides knobs for
// experiments, and Override sets them for the tuner.
//
// # Users
//
// kernels/jit renders the kernel of a signature that stridegen did not
// register (jit.For), and compiles it with NVRTC when a device first needs
// it (jit.Cache); package kernels packs its
// arguments when it binds a copy (kernels.Bind). cmd/stridegen, through
// gen/writer, writes sources ahead of time; `stridebench tune` searches the
// knobs and rewrites tuning.txt; internal/cudaemu runs the rendered kernels
// on the CPU in tests. Users of stridekit do not call it: runtime/memview
// reaches it through package kernels.
package gen
