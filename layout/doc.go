// Package layout describes where the elements of a strided n-dimensional
// array sit in memory, derives views of it, and plans copies between two such
// arrays. It is pure Go and needs no GPU: the kernel generator (package gen)
// and the runtime build on it.
//
// # Layouts
//
// A Layout is a shape (extents), strides counted in items, and the item size
// in bytes: the Go form of cuda.core's StridedLayout and of CuTe's
// (Shape):(Stride) pair, printed the same way, e.g. "(4,2):(2,1)x4". The
// element at index (i₀, …, iₙ₋₁) sits at item offset Σ iₖ·strideₖ from the
// element at index 0. Strides may be negative (a reversed dim), zero (a
// broadcast dim) or anything else; extents may be 0 (no elements) or 1. There
// is no limit on the number of dims.
//
// Build layouts with New (strides in items), FromByteStrides (strides in
// bytes, as NumPy and DLPack report them), Dense (gap-free in C, F or any
// permutation order), DenseLike and ToDense, or from a dtype with
// DType.Layout and PackedLayout.
//
// # The buffer convention
//
// A host buffer for layout l is a byte slice of l.RequiredSizeInBytes()
// bytes that holds the element at item offset o at byte
// (o - l.MinOffset())·l.Itemsize(). A device pointer for l points at the
// element at index 0; the lowest byte addressed is then MinOffset()·Itemsize()
// bytes before it. Views returned by Slice and Index come with the item
// offset of their index 0 relative to index 0 of the layout they were taken
// from: add it (times the itemsize) to the pointer.
//
// # Invariants
//
// Every Layout returned with a nil error satisfies: itemsize > 0; every
// extent ≥ 0; len(strides) == len(shape); every stride times the itemsize,
// the volume, MinOffset, MaxOffset and RequiredSizeInBytes fit in int64. All
// arithmetic on user input is checked: a result that would overflow is an
// ErrOverflow error, never a wrapped-around value. Nothing panics on user
// input; every error wraps one of the sentinel errors (ErrShape, ErrStride,
// ErrItemsize, ErrAxis, ErrRange, ErrNotViewable, ErrOverflow, ErrDType, …)
// for errors.Is and names the argument and value at fault.
//
// Layouts are immutable values: operations return new layouts, and the
// slices that accessors return are copies.
//
// # Views and aliasing
//
// Reshape, Squeeze, Unsqueeze, Permute, Flatten, Repack, BroadcastTo, Slice
// and Index return views: layouts that address the same memory as the one
// they start from (their offsets, plus the returned base offset, are offsets
// of the original). They never copy; when a view cannot express the result
// (a reshape across non-mergeable dims), they fail with ErrNotViewable and
// the caller copies to ToDense() first.
//
// Two indices of a layout may share an offset (zero strides, or strides
// that interleave). Such a layout is fine to read (a broadcast source) but
// not to write: IsUnique reports whether it is safe as a copy destination,
// and the copy planner refuses an overlapping destination with
// ErrOverlappingDst. The planner also assumes that the destination and the
// source do not share memory; copying between overlapping buffers has no
// defined result.
//
// # Data types
//
// DType names an element type with its DLPack code, bits and lanes: bool,
// integers, floats, bfloat16, complex, the fp8, fp6 and fp4 types, and
// opaque items of any byte size. Sub-byte types are handled packed: see
// PackedLayout, which views a packed fp4 or fp6 layout as a layout of whole
// bytes when its innermost dim allows, and says why when it does not.
package layout
