// Package templates holds the CUDA C templates of stridekit's copy kernels,
// one per kernel class, embedded in the binary with package embed.
//
// The templates are text/template sources rendered by package gen with the
// data of one layout.Signature (gen executes them itself, on text/template's
// parser: use only fields, if/else, range, template, eq and not); gen owns
// the data, these files own the CUDA.
// Every template starts with {{template "head" .}} (common.cu.tmpl), which
// emits the shared helpers under an include guard and the per-kernel types in
// a namespace named after the kernel, so any number of rendered kernels can
// be concatenated into one translation unit (the NVRTC test does that).
//
// Files:
//
//	common.cu.tmpl  shared helpers: fast division, the vector type V, the
//	                argument block A, element replication
//	elem.cu.tmpl    ClassElementwise: N-d gather/scatter, rows of the
//	                innermost dim per thread, fast-division unravel
//	bcast.cu.tmpl   ClassBroadcast: as elem, a src vector read once for all
//	                the rows of a thread that share it
//	fill.cu.tmpl    ClassFill: one src element replicated into V, stores only
//	                (16-byte stores where the plan's Vec allows)
//	tile.cu.tmpl    ClassTile: shared-memory tile spanning dst's and src's
//	                fastest dims, V-wide coalesced accesses on both sides, an
//	                XOR swizzle against bank conflicts, and a register
//	                transpose of Vec×Vec micro-tiles (byte_perm packing for
//	                1- and 2-byte elements), or for items under 4 bytes of
//	                Vec × 4-byte-word micro-tiles (fewer registers)
//	btile.cu.tmpl   ClassBoxTile: a box of several dims on each side staged
//	                in shared memory, both views accessed in runs
//	gather.cu.tmpl  ClassGather: elements in dst's order by a flat index,
//	                every dim unravelled, src read scattered
package templates

import "embed"

// FS holds every *.cu.tmpl file of this directory.
//
//go:embed *.cu.tmpl
var FS embed.FS

// Pattern matches every template in FS, for template.ParseFS.
const Pattern = "*.cu.tmpl"
