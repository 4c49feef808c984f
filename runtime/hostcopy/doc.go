// Package hostcopy copies between strided views of host memory: it is the
// host-to-host path of stridekit and the reference that every GPU test
// checks its results against.
//
// # Buffers
//
// A view is a byte slice plus a layout.Layout. Following the buffer
// convention of package layout, the slice for layout l holds the element of
// offset o (in items) at byte (o - l.MinOffset())·l.Itemsize(), and must be at
// least l.RequiredSizeInBytes() long. Copy checks the lengths and fails with
// an error wrapping ErrBufferSize when a slice is too short; bytes past the
// required size are never touched.
//
// # How a copy runs
//
// Copy asks layout.PlanCopy for the joint canonical form of the two views,
// telling it the alignment of the two slices, and runs the plan on the CPU:
//
//   - ClassMemcpy: one copy() of the bytes, split across goroutines when large;
//   - ClassElementwise: an N-d loop whose innermost run is one copy() when it
//     is contiguous in both views, and typed 1-, 2-, 4-, 8- or 16-byte moves
//     otherwise;
//   - ClassTile, and ClassBoxTile where dst and src each have a unit-stride
//     dim: a cache-blocked transpose over the two fast dims (src's and
//     dst's), in square blocks 64 bytes (at least 8 elements) on a side staged
//     through a small buffer, so both views are read and written in whole
//     cache lines; 1-, 2- and 4-byte elements are transposed in uint64
//     registers (8×8, 4×4 and 2×2 sub-blocks);
//   - ClassBroadcast and ClassFill: repeated writes; a run with unit dst
//     stride and zero src stride is filled by doubling copy() calls.
//
// Copies of at least 1 MiB split their work across up to GOMAXPROCS
// goroutines. Only dst's bytes under the view are written.
//
// # Aliasing
//
// dst and src may share memory. When the byte ranges of the two views
// overlap, Copy behaves as if src were read completely before dst is written:
// a memcpy-class copy uses copy() (a memmove); every other class first stages
// src's bytes through a temporary buffer. Views of one array that do not
// overlap are copied directly.
package hostcopy
