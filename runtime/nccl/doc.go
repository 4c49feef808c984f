// Package nccl is stridekit's binding to NCCL, NVIDIA's collective
// communication library, loaded at run time with
// github.com/ebitengine/purego as package runtime/cuda loads the driver: no
// cgo, so a CGO_ENABLED=0 build runs anywhere, and without NCCL every call
// that needs it returns an error matching ErrNoNCCL. It provides what
// dist.Reshard needs to move tensors between GPUs: a communicator (Comm)
// that is a dist.Transport, and the bootstrap that hands its unique id from
// rank 0 to the other ranks.
//
// # Loading
//
// NCCL is loaded at the first call that needs it (or Load), once per
// process. $STRIDEKIT_NCCL, when set, names the only library tried (a path
// or a soname); otherwise the sonames libnccl.so.2 and libnccl.so are tried,
// then $CUDA_HOME/lib64 and /usr/local/cuda/lib64, then the NCCL of
// NVIDIA's Python wheels (the one PyTorch installs) in the site-packages of
// virtual environments, conda, the user and the system: see Load. The error
// is a *LoadError listing every candidate and why it failed. Version gives
// the library's version.
//
// # Bootstrap
//
// Every rank of a communicator needs the same UniqueID, which one rank
// makes. Bootstrap hands it out as torchrun does: rank 0 makes it and
// publishes it, through a file (PublishFile, atomically) or a TCP address
// (ServeID, which serves it to the Size-1 others), and the others wait for
// it (ReadFile, FetchID), each bounded by a context. ConfigFromEnv reads the
// configuration from the environment:
//
//	STRIDEKIT_RANK          this process's rank (else RANK, as torchrun sets it; else 0)
//	STRIDEKIT_WORLD_SIZE    the number of ranks (else WORLD_SIZE; else 1)
//	STRIDEKIT_LOCAL_RANK    the device ordinal to use (else LOCAL_RANK; else the rank)
//	STRIDEKIT_NCCL_ID_ADDR  host:port that rank 0 serves the id on
//	STRIDEKIT_NCCL_ID_FILE  a file rank 0 writes the id to, on storage all ranks see
//	STRIDEKIT_NCCL          the NCCL library to load, and no other
//
// One of STRIDEKIT_NCCL_ID_ADDR and STRIDEKIT_NCCL_ID_FILE must be set for
// more than one rank. NCCL's own variables (NCCL_DEBUG, NCCL_SOCKET_IFNAME,
// …) work as usual.
//
// # Communicators
//
// NewComm joins a communicator on a device, with ncclCommInitRankConfig in
// non-blocking mode and the device's primary context current
// (cuda.Device.Do): it polls ncclCommGetAsyncError until the
// communicator is ready, and aborts it (ncclCommAbort) when its context
// ends first, so that a rank that never joins gives an error matching
// ErrTimeout, never a hang. NCCL before 2.14, or of a major version other
// than 2, falls back on the blocking ncclCommInitRank (see Blocking for
// what that costs).
//
// Comm.AllToAll, the dist.Transport exchange, queues one group of ncclSend
// and ncclRecv of bytes on a stream and returns; Comm.WaitStream waits for
// the stream while it watches the communicator for errors, so a peer that
// dies mid-exchange gives an error, not a hang. Comm.AllToAllBytes is NCCL's
// own all-to-all of equal chunks, the baseline for benchmarks. Any failure
// aborts the communicator, and every later call returns that error; Abort
// does it on demand, Close destroys a healthy one.
//
// # Errors
//
// Every failed NCCL call becomes an *Error with the call, the code, NCCL's
// name for it and its last error message (ncclGetLastError); the sentinels
// ErrRemote, ErrInvalidUsage, … match it by code. Arguments are checked
// before NCCL is called, with errors naming them: ErrRank, ErrNil,
// ErrStream, ErrBuffer, ErrSegment. ErrTimeout, ErrAborted, ErrClosed and
// those argument errors also match package dist's sentinels of the same
// names, so code that only knows dist.Transport can test them. Nothing
// panics on user input.
//
// # ABI
//
// NCCL passes ncclUniqueId (128 bytes) by value to its init functions,
// which purego cannot express as an argument: this package lays the id out
// as the platform's C ABI does, on the stack for amd64 (System V) and by
// reference to a copy for arm64 (AAPCS64); other platforms get
// ErrNotSupported. The ncclConfig_t it passes is NCCL 2.28's layout, which
// NCCL 2.14 and later read correctly (see the comment on ncclConfig in
// abi.go).
package nccl
