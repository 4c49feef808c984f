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
// # The pointer convention
//
// One convention holds across stridekit. A view's pointer addresses the
// element at index (0, …, 0), as in NumPy, DLPack and cuda.core. With
// negative strides some elements lie before it: the view's lowest byte is
// MinOffset()·Itemsize() bytes from the pointer (MinOffset ≤ 0), and the view
// spans RequiredSizeInBytes() bytes from its lowest byte. Slice and Index
// return the item offset of the new view's index 0 from the old view's index
// 0: add it, times the itemsize, to the pointer.
//
// What describes memory rather than an element is measured from the lowest
// byte: a host byte slice holding a view (runtime/hostcopy) starts at the
// view's lowest byte, the element at item offset o sitting at byte
// (o - MinOffset())·Itemsize(); a Plan's DstOffset and SrcOffset, and the
// pointers a copy kernel is launched with, are from the views' lowest bytes.
// runtime/memview, which holds views by their index-0 pointers, converts in
// one place (lowest byte = pointer + MinOffset()·Itemsize()).
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
// ErrOverlappingDst. The planner itself assumes that the destination and the
// source do not share memory; the copy paths built on it (runtime/hostcopy,
// runtime/memview) stage an overlapping source through a temporary, so a
// copy between overlapping views reads the source as it was before.
//
// # Data types
//
// DType names an element type with its DLPack code, bits and lanes: bool,
// integers, floats, bfloat16, complex, the fp8, fp6 and fp4 types, and
// opaque items of any byte size. Sub-byte types are handled packed: see
// PackedLayout, which views a packed fp4 or fp6 layout as a layout of whole
// bytes when its innermost dim allows, and says why when it does not.
package layout
