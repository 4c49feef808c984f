// Package dist lays tensors out over the ranks of a group (a device mesh)
// and reshards them: a distributed view is a global shape, a mesh, a split
// of each dim over mesh axes and each rank's local strided view; Reshard
// moves every element from one split to another through a Transport, each
// rank packing what it sends and unpacking what it receives with
// stridekit's copies.
//
// # Model
//
// A Mesh is the shape of the group: the sizes of its axes, the ranks laid
// out over it row-major. A Spec says, per tensor dim, which mesh axes split
// it (major first, as JAX's PartitionSpec); mesh axes no dim uses replicate
// the tensor. A Sharding (global shape, mesh, spec) gives each rank its
// block: on a dim of extent n cut into k parts, part i is [i·n/k,
// (i+1)·n/k), so parts are balanced and may be empty. A DistView is one
// rank's part: the sharding, the dtype, the rank and its local
// memview.StridedMemoryView, of the block's shape and any strides.
//
// # Resharding
//
// NewReshard plans, on each rank and without talking to the others, what
// the rank sends to and receives from every rank: the intersections of
// source and destination blocks. Where the source is replicated, each
// destination box is read from one replica chosen by a rule every rank
// computes the same way (the destination's own copy when it holds one, else
// replicas in turn; see Reshard). Run packs each outgoing box into its
// segment of a send buffer, copies the box the rank keeps straight across,
// exchanges all segments in one Transport.AllToAll and unpacks what
// arrived. Each rank plans O(ranks) boxes; the bytes exchanged are those
// that change rank, once each.
//
// # Transports
//
// A Transport is the exchange: NewHostGroup runs the ranks as goroutines of
// one process over host memory (for tests and single-machine programs);
// package runtime/nccl exchanges device memory over NCCL. A rank that does
// not arrive makes the others fail when their context ends, never hang.
//
// # Errors
//
// Every error wraps one of the sentinels (ErrMesh, ErrSpec, ErrShape,
// ErrRank, ErrDType, ErrNil, ErrBuffer, ErrSegment, ErrTimeout, ErrAborted,
// ErrClosed) or an error of memview or layout from a copy, and names the
// argument and value at fault. Nothing panics on user input.
package dist
