package dist

import (
	"context"

	"github.com/stridekit/stridekit/runtime/cuda"
	"github.com/stridekit/stridekit/runtime/memview"
)

// Segment is a byte range [Off, Off+Len) of a transport buffer: what one
// rank sends to, or receives from, one other rank in an exchange.
type Segment struct{ Off, Len int64 }

// Transport moves bytes between the ranks of a group: the exchange step of
// a reshard. The host transport (NewHostGroup) runs its ranks as
// goroutines of one process; package runtime/nccl provides one over NCCL,
// one process (or goroutine) per GPU.
type Transport interface {
	// Rank is this member's rank, in [0, Size()).
	Rank() int
	// Size is the number of ranks in the group.
	Size() int
	// Alloc returns a contiguous 1-D uint8 view of n bytes of the memory the
	// transport exchanges from and into: host memory for a host transport,
	// device memory (stream-ordered on s) for a device one.
	Alloc(n int64, s *cuda.Stream) (*memview.StridedMemoryView, error)
	// AllToAll sends, for every rank q, the bytes sendSeg[q] of send to q
	// and receives from q the bytes recvSeg[q] of recv, as one grouped
	// exchange (len(sendSeg) == len(recvSeg) == Size(); a zero-length
	// segment moves nothing). send and recv are views made by Alloc. A
	// device transport returns once the exchange is queued on s; a host
	// transport returns when it is done. ctx bounds the wait for the other
	// ranks: a rank that never arrives gives an error, never a hang.
	AllToAll(ctx context.Context, send, recv *memview.StridedMemoryView, sendSeg, recvSeg []Segment, s *cuda.Stream) error
}
