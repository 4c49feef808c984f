// Package memview is stridekit's user-facing API: StridedMemoryView, a typed
// strided view of host or device memory, and CopyFrom / CopyTo, which copy
// between any two views in one call — the Go form of cuda.core's
// StridedMemoryView.copy_from and copy_to.
//
// A device transpose:
//
//	dev, _ := cuda.GetDevice(0)
//	s, _ := dev.NewStream(true)
//	a, _ := dev.Alloc(4096*4096*4, s)
//	b, _ := dev.Alloc(4096*4096*4, s)
//	la, _ := layout.Dense([]int64{4096, 4096}, 4, layout.C)
//	src, _ := memview.FromBuffer(a, la, layout.Float32)
//	dst, _ := memview.FromBuffer(b, la, layout.Float32)
//	srcT, _ := src.Permute(1, 0)
//	err := dst.CopyFrom(srcT, s) // queued on s; b holds aᵀ once s gets there
//
// # Pointers
//
// A view's pointer (Ptr) addresses its element at index 0, as in NumPy,
// DLPack and cuda.core; with negative strides some elements lie below it
// (package layout's doc states the convention). FromBuffer and FromHost
// place a layout's lowest byte at the start of the memory, so a reversed
// layout fits the buffer it describes; View, ViewAt, Slice and Permute
// derive views of the same memory and check that they stay inside it.
//
// # Which path a copy takes
//
// One dispatch decides by where the two views live:
//
//   - device ↔ device (device or managed memory of one device): one plan
//     (layout.PlanCopy, with the real alignment of both pointers), run by
//     package kernels as nothing, one cuMemcpyAsync, or one copy kernel on
//     the stream.
//   - device ↔ device of two devices of one host (PathPeer): with peer
//     access, one copy kernel reading or writing the other device's
//     memory, on the device of the copy's stream for copies under 1 MiB,
//     else on the destination's (pulling) for sources that fill their span
//     and on the source's (pushing) for sources with gaps; without peer
//     access, a pipeline of chunks packed on the source's device, moved by
//     cuMemcpyPeerAsync and unpacked on the destination's, the stages
//     overlapping. Work on the other device is
//     ordered after the copy's stream and the copy's stream after it by
//     events; PeerStream orders a stream of the other device too.
//   - host → device, device → host: the host view's compact image crosses
//     the bus in one contiguous DMA (pinned, gap-free host views) or in
//     chunks through pinned staging buffers, the host gathering or
//     scattering one chunk while the previous one moves; one device kernel
//     permutes between the image and the device view. A broadcast source
//     stays compact: each distinct element crosses once. Never one transfer
//     per row or element.
//   - host ↔ host (pageable or pinned): runtime/hostcopy on the CPU.
//
// Blocking documents when each returns. Temporaries come from the stream-
// ordered device allocator and a pool of pinned staging buffers, or from an
// Allocator given with WithAllocator.
//
// # Aliasing
//
// When the source and destination memory overlap, a copy behaves as if the
// source were read completely first (it is staged through a temporary);
// copying a view onto itself does nothing. A destination whose elements
// overlap (a broadcast view, say) is refused.
//
// # DLPack
//
// FromDLPack (FromDLPackLegacy for tensors of producers before DLPack 1.0)
// takes a tensor from any DLPack producer and owns it: Close, on the view or
// the last view derived from it, runs its deleter once. FromDLTensor views a
// borrowed DLTensor and calls no deleter. ToDLPack hands a view to a
// consumer as a DLManagedTensorVersioned whose memory lives until the
// consumer calls its deleter. The stream handshake of __dlpack__(stream=…)
// is ToDLPack's argument on the way out and OnStream on the way in;
// ProducerStream orders the producer's work with an event when its stream is
// known. ToHost asks for the tensor on the host, copied when it is in device
// memory and flagged IS_COPIED. Importing a tensor of a recently seen layout
// costs three allocations and about 350 ns: the view, and the cleanup that
// gives a forgotten view's tensor back to its producer (runtime.AddCleanup).
//
// # Errors and cost
//
// Views are checked when they are made (bounds, dtype, uniqueness), so a
// copy checks only what involves both views; each failure is a typed error
// (errors.Is: ErrOutOfBounds, ErrReadOnly, ErrDType, ErrDevice,
// ErrNilStream, ErrClosed, ErrIncomplete, layout.ErrShape,
// layout.ErrOverlappingDst) naming both views. A device copy whose kernel is
// cached costs a plan and one cuLaunchKernel of host time and allocates
// nothing.
package memview
