//go:build !amd64 && !arm64

package nccl

// idByValue reports whether callInit knows this platform's way of passing
// a 128-byte struct by value: not here (NCCL ships for x86-64 and
// aarch64), so NewComm returns ErrNotSupported.
const idByValue = false

// callInit is never called where idByValue is false.
func callInit(fn uintptr, comm *uintptr, nranks, rank int, id *UniqueID, cfg *ncclConfig) uintptr {
	return ncclInvalidUsage
}
