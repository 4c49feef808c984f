//go:build cgo && linux

package main

import (
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stridekit/stridekit/runtime/dlpack"
)

// TestLastErrorThreadsExit: threads that fail an sk_copy and then exit
// leave no message behind (each thread's message is freed with the
// thread), while a live thread keeps its own until its next failing call.
func TestLastErrorThreadsExit(t *testing.T) {
	const threads = 32
	src := newTensor(t, iota32(4), 0, []int64{4}, nil, 0, false)
	dsts := make([]*tensor, threads)
	for i := range dsts {
		dsts[i] = newTensor(t, make([]int32, 4), 0, []int64{4}, nil, 0, false)
	}
	base := lastErrorsHeld()
	var onMain atomic.Int32
	var wg sync.WaitGroup
	for i, dst := range dsts {
		wg.Go(func() {
			// Locked and never unlocked: the thread exits with the goroutine,
			// unless it is the main thread, which Go keeps (wedged).
			runtime.LockOSThread()
			if syscall.Gettid() == syscall.Getpid() {
				onMain.Add(1)
			}
			if code := int(sk_copy(nil, src.p, -1, 0)); code != CodeInvalid {
				t.Errorf("thread %d: code %d", i, code)
			}
			if msg := goString(sk_last_error()); !strings.Contains(msg, "dst is NULL") {
				t.Errorf("thread %d: last error %q", i, msg)
			}
			if n := lastErrorsHeld(); n < 1 {
				t.Errorf("thread %d: %d messages held with its own", i, n)
			}
			// A success keeps the message of the last failure.
			if code := int(sk_copy(dst.p, src.p, -1, 0)); code != CodeOK {
				t.Errorf("thread %d: copy: code %d", i, code)
			}
			if msg := goString(sk_last_error()); !strings.Contains(msg, "dst is NULL") {
				t.Errorf("thread %d: last error after a success %q", i, msg)
			}
		})
	}
	wg.Wait()
	want := base + int(onMain.Load())
	deadline := time.Now().Add(10 * time.Second)
	for lastErrorsHeld() > want && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if n := lastErrorsHeld(); n > want {
		t.Errorf("%d messages held after %d failing threads exited, want at most %d (%d before, %d on the main thread, which stays)", n, threads, want, base, onMain.Load())
	}
}

// TestCopyHostileNDim: a tensor whose ndim is far beyond its shape and
// strides arrays is refused through the C entry point (SK_ETENSOR, the
// message naming ndim) instead of read past them.
func TestCopyHostileNDim(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	src := newTensor(t, iota32(4), 0, []int64{4}, []int64{1}, 0, false)
	dst := newTensor(t, make([]int32, 4), 0, []int64{4}, []int64{1}, 0, false)
	for _, x := range []*tensor{src, dst} {
		m := (*dlpack.DLManagedTensorVersioned)(x.p)
		m.DLTensor.NDim = 1 << 30
		code := int(sk_copy(dst.p, src.p, -1, 0))
		m.DLTensor.NDim = 1
		if msg := goString(sk_last_error()); code != CodeTensor || !strings.Contains(msg, "ndim = 1073741824") {
			t.Errorf("code %d, last error %q; want %d and the ndim", code, msg, CodeTensor)
		}
	}
	if code := int(sk_copy(dst.p, src.p, -1, 0)); code != CodeOK {
		t.Errorf("restored tensors: code %d: %s", code, goString(sk_last_error()))
	}
}
