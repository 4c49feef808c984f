package nccl

import (
	"encoding/binary"
	"unsafe"

	"github.com/ebitengine/purego"
)

// idByValue reports whether callInit knows this platform's way of passing
// a 128-byte struct by value.
const idByValue = true

// callInit calls fn, ncclCommInitRank(ncclComm_t *comm, int nranks,
// ncclUniqueId id, int rank) or ncclCommInitRankConfig(…, ncclConfig_t
// *config) (cfg nil for the former), under the System V AMD64 ABI. The
// 128-byte id is of class MEMORY: it is passed on the stack and takes no
// register, so comm, nranks, rank and config take rdi, rsi, rdx and rcx,
// and the id's sixteen eightbytes follow the sixth argument (r8 and r9
// unused), which is where SyscallN puts its seventh and later arguments:
// at the bottom of the stack, in order. The pointers are converted in the
// call itself, so that SyscallN's go:uintptrescapes keeps what they point to
// on the heap and alive until it returns.
func callInit(fn uintptr, comm *uintptr, nranks, rank int, id *UniqueID, cfg *ncclConfig) uintptr {
	var w [16]uintptr
	for i := range w {
		w[i] = uintptr(binary.LittleEndian.Uint64(id[8*i:]))
	}
	r, _, _ := purego.SyscallN(fn, uintptr(unsafe.Pointer(comm)), uintptr(nranks), uintptr(rank), uintptr(unsafe.Pointer(cfg)), 0, 0,
		w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7], w[8], w[9], w[10], w[11], w[12], w[13], w[14], w[15])
	return r
}
