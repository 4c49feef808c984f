package nccl

import (
	"unsafe"

	"github.com/ebitengine/purego"
)

// idByValue reports whether callInit knows this platform's way of passing
// a 128-byte struct by value.
const idByValue = true

// callInit calls fn, ncclCommInitRank(ncclComm_t *comm, int nranks,
// ncclUniqueId id, int rank) or ncclCommInitRankConfig(…, ncclConfig_t
// *config) (cfg nil for the former), under the AAPCS64: a composite type
// larger than 16 bytes is copied by the caller to memory and replaced by a
// pointer to the copy, which takes the next register. So comm, nranks,
// the copy of the id (id, a copy the callee may write), rank and config go
// in x0 to x4. The pointers are converted in the call itself, so that
// SyscallN's go:uintptrescapes keeps what they point to on the heap and
// alive until it returns.
func callInit(fn uintptr, comm *uintptr, nranks, rank int, id *UniqueID, cfg *ncclConfig) uintptr {
	r, _, _ := purego.SyscallN(fn, uintptr(unsafe.Pointer(comm)), uintptr(nranks), uintptr(unsafe.Pointer(id)), uintptr(rank), uintptr(unsafe.Pointer(cfg)))
	return r
}
