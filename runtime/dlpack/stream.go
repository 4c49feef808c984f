package dlpack

import (
	"fmt"

	"github.com/stridekit/stridekit/runtime/cuda"
)

// The CUDA values of the stream argument of DLPack's Python protocol,
// __dlpack__(stream=...), by which a consumer tells the producer on which
// stream it will use the tensor, so the producer can order its pending work
// before it. Any value above 2 is a CUstream handle; 0 is refused as
// ambiguous (it could mean either default stream).
const (
	// StreamNoSync (-1) asks the producer not to synchronise at all.
	StreamNoSync int64 = -1
	// StreamLegacy (1) is the legacy default stream (CU_STREAM_LEGACY).
	StreamLegacy int64 = 1
	// StreamPerThread (2) is the per-thread default stream
	// (CU_STREAM_PER_THREAD).
	StreamPerThread int64 = 2
)

// StreamKind says what a stream value of the protocol asks for.
type StreamKind uint8

// The kinds of stream request.
const (
	// SyncNone means the consumer synchronises itself; the producer does
	// nothing.
	SyncNone StreamKind = iota + 1
	// SyncLegacy means: order the work before the legacy default stream.
	SyncLegacy
	// SyncPerThread means: order the work before the per-thread default
	// stream.
	SyncPerThread
	// SyncHandle means: order the work before the stream whose CUstream
	// handle the value is.
	SyncHandle
)

// String returns the kind's name.
func (k StreamKind) String() string {
	switch k {
	case SyncNone:
		return "no-sync"
	case SyncLegacy:
		return "legacy-default"
	case SyncPerThread:
		return "per-thread-default"
	case SyncHandle:
		return "handle"
	}
	return fmt.Sprintf("StreamKind(%d)", uint8(k))
}

// StreamRequest is a parsed CUDA stream value of __dlpack__(stream=...).
type StreamRequest struct {
	// Kind says what was asked for.
	Kind StreamKind
	// Handle is the CUstream to order the producer's work before: 0x1 for
	// the legacy default stream and 0x2 for the per-thread one (the
	// driver's own special handles), the value itself for a handle, and 0
	// for SyncNone.
	Handle uintptr
}

// Sync reports whether the producer must order its work before a stream
// (false only for SyncNone).
func (r StreamRequest) Sync() bool { return r.Kind != SyncNone }

// ParseCUDAStream interprets the stream value v a consumer passed to a CUDA
// producer's __dlpack__: -1 no synchronisation, 1 the legacy default
// stream, 2 the per-thread default stream, above 2 a CUstream handle. 0 is
// refused as ambiguous, and values below -1 as meaningless, with an
// ErrStream error.
func ParseCUDAStream(v int64) (StreamRequest, error) {
	switch {
	case v == StreamNoSync:
		return StreamRequest{Kind: SyncNone}, nil
	case v == 0:
		return StreamRequest{}, fmt.Errorf("%w: stream 0 is ambiguous for CUDA (pass 1 for the legacy default stream, 2 for the per-thread one)", ErrStream)
	case v < -1:
		return StreamRequest{}, fmt.Errorf("%w: stream %d: CUDA stream values are -1, 1, 2 or a CUstream handle", ErrStream, v)
	case v == StreamLegacy:
		return StreamRequest{Kind: SyncLegacy, Handle: uintptr(v)}, nil
	case v == StreamPerThread:
		return StreamRequest{Kind: SyncPerThread, Handle: uintptr(v)}, nil
	}
	return StreamRequest{Kind: SyncHandle, Handle: uintptr(v)}, nil
}

// CUDAStreamValue returns the stream value a consumer passes to a CUDA
// producer's __dlpack__ to have its work ordered before s: s's CUstream
// handle, which is 1 for the legacy and 2 for the per-thread default stream,
// and 1 for a nil s (which stands for the legacy default stream in package
// cuda).
func CUDAStreamValue(s *cuda.Stream) int64 {
	if s == nil || s.Handle() == 0 {
		return StreamLegacy
	}
	return int64(s.Handle())
}

// Stream returns the stream r names, as a stream of dev a consumer's or
// producer's code can queue work on or wait with: nil for SyncNone (there
// is nothing to order before), else dev.StreamFromHandle(r.Handle), which
// does not own the stream (its Close does nothing). A per-thread default
// stream (SyncPerThread) is the calling OS thread's, which in Go is any
// thread: see cuda.Device.PerThreadStream before using it.
func (r StreamRequest) Stream(dev *cuda.Device) *cuda.Stream {
	if r.Kind == SyncNone || r.Kind == 0 {
		return nil
	}
	return dev.StreamFromHandle(r.Handle)
}
