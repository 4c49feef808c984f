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

// What follows is capi's own. Each thread's last error message lives in
// thread-local storage under a pthread key whose destructor frees it when
// the thread exits: no table indexed by thread id that grows with every
// thread ever seen, and no message of an exited thread handed to a later
// thread that reuses its id. cgo also copies this preamble into
// _cgo_export.c and the library's public header, which define
// GO_CGO_EXPORT_PROLOGUE_H before it and need none of this; the
// definitions are static, so that even where they were compiled twice they
// would not clash.
#ifndef GO_CGO_EXPORT_PROLOGUE_H
#include <pthread.h>

static pthread_key_t sk_err_key;
static pthread_once_t sk_err_once = PTHREAD_ONCE_INIT;
static int sk_err_keyed;
static long sk_err_held; // messages held, for tests

static void sk_err_free(void *msg) {
	if (msg != NULL) {
		free(msg);
		__atomic_fetch_sub(&sk_err_held, 1, __ATOMIC_RELAXED);
	}
}

static void sk_err_init(void) {
	sk_err_keyed = pthread_key_create(&sk_err_key, sk_err_free) == 0;
}

// sk_set_error makes msg (from malloc; NULL clears) the calling thread's
// last error, and frees the one before. Without a key it frees msg.
static void sk_set_error(char *msg) {
	pthread_once(&sk_err_once, sk_err_init);
	if (!sk_err_keyed) {
		free(msg);
		return;
	}
	void *old = pthread_getspecific(sk_err_key);
	if (pthread_setspecific(sk_err_key, msg) != 0) {
		free(msg);
		return;
	}
	if (msg != NULL) {
		__atomic_fetch_add(&sk_err_held, 1, __ATOMIC_RELAXED);
	}
	sk_err_free(old);
}

// sk_get_error returns the calling thread's last error, or NULL.
static const char *sk_get_error(void) {
	pthread_once(&sk_err_once, sk_err_init);
	return sk_err_keyed ? (const char *)pthread_getspecific(sk_err_key) : NULL;
}

static long sk_errors_held(void) { return __atomic_load_n(&sk_err_held, __ATOMIC_RELAXED); }
#endif
*/
import "C"

import "unsafe"

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

// setLastError records msg as the calling thread's last error, freeing the
// one before. A C caller's thread is the one its call into Go runs on (the
// goroutine stays locked to it during the call), so the C helpers, called
// from here, run on that thread too.
func setLastError(msg string) { C.sk_set_error(C.CString(msg)) }

// lastErrorsHeld returns how many threads' messages are held: those of
// live threads whose last failing sk_copy left one.
func lastErrorsHeld() int { return int(C.sk_errors_held()) }

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
	if c := C.sk_get_error(); c != nil {
		return c
	}
	return empty
}

// goString returns the C string p as a Go string.
func goString(p *C.char) string { return C.GoString(p) }
