//go:build cgo

package main

/*
#include <stdint.h>
#include <stdlib.h>

// The flags and return codes of sk_copy, for C callers of the library.
enum {
	SK_SRC_LEGACY = 1,
	SK_DST_LEGACY = 2,
	SK_SYNC = 4,
};
enum {
	SK_OK = 0,
	SK_EINVAL = -1,
	SK_ETENSOR = -2,
	SK_ECOPY = -3,
	SK_EREADONLY = -4,
	SK_ECUDA = -5,
	SK_EINTERNAL = -6,
};
*/
import "C"

import (
	"sync"
	"syscall"
	"unsafe"
)

// The C enums must say what the Go constants say.
var (
	_ = [1]struct{}{}[C.SK_SRC_LEGACY-FlagSrcLegacy]
	_ = [1]struct{}{}[C.SK_DST_LEGACY-FlagDstLegacy]
	_ = [1]struct{}{}[C.SK_SYNC-FlagSync]
	_ = [1]struct{}{}[C.SK_OK-CodeOK]
	_ = [1]struct{}{}[C.SK_EINVAL-CodeInvalid]
	_ = [1]struct{}{}[C.SK_ETENSOR-CodeTensor]
	_ = [1]struct{}{}[C.SK_ECOPY-CodeCopy]
	_ = [1]struct{}{}[C.SK_EREADONLY-CodeReadOnly]
	_ = [1]struct{}{}[C.SK_ECUDA-CodeCUDA]
	_ = [1]struct{}{}[C.SK_EINTERNAL-CodeInternal]
)

// lastErrors holds each OS thread's last error message as a C string:
// a C caller's thread is the one its call into Go runs on.
var lastErrors struct {
	mu  sync.Mutex
	msg map[int]*C.char
}

// setLastError records msg as the calling thread's last error, freeing the
// one before.
func setLastError(msg string) {
	tid := syscall.Gettid()
	c := C.CString(msg)
	lastErrors.mu.Lock()
	defer lastErrors.mu.Unlock()
	if lastErrors.msg == nil {
		lastErrors.msg = map[int]*C.char{}
	}
	if old := lastErrors.msg[tid]; old != nil {
		C.free(unsafe.Pointer(old))
	}
	lastErrors.msg[tid] = c
}

var empty = C.CString("")

// sk_copy copies the DLPack tensor src into dst on a CUDA stream (see the
// package doc).
//
//export sk_copy
func sk_copy(dst, src unsafe.Pointer, stream C.int64_t, flags C.uint64_t) C.int {
	code, err := copyTensors(dst, src, int64(stream), uint64(flags))
	if err != nil {
		setLastError(err.Error())
	}
	return C.int(code)
}

// sk_last_error returns the message of the calling thread's last failed
// sk_copy, or "".
//
//export sk_last_error
func sk_last_error() *C.char {
	tid := syscall.Gettid()
	lastErrors.mu.Lock()
	defer lastErrors.mu.Unlock()
	if c := lastErrors.msg[tid]; c != nil {
		return c
	}
	return empty
}

// goString returns the C string p as a Go string.
func goString(p *C.char) string { return C.GoString(p) }
