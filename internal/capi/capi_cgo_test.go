//go:build cgo

package main

import (
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stridekit/stridekit/runtime/dlpack"
)

// TestExports calls the exported C functions: a copy, a failing one whose
// message sk_last_error gives, and each thread's messages kept apart.
func TestExports(t *testing.T) {
	out := make([]int32, 4)
	src := newTensor(t, iota32(4), 3, []int64{4}, []int64{-1}, 0, false)
	dst := newTensor(t, out, 0, []int64{4}, nil, 0, false)
	if code := int(sk_copy(dst.p, src.p, -1, 0)); code != CodeOK {
		t.Fatalf("sk_copy: %d: %s", code, goString(sk_last_error()))
	}
	if want := []int32{103, 102, 101, 100}; !slices.Equal(out, want) {
		t.Errorf("flipped copy %v, want %v", out, want)
	}

	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			var code int
			var want string
			if i%2 == 0 {
				code, want = int(sk_copy(nil, src.p, -1, 0)), "dst is NULL"
			} else {
				code, want = int(sk_copy(dst.p, src.p, 0, 0)), "ambiguous"
			}
			for range 100 {
				if msg := goString(sk_last_error()); code != CodeInvalid || !strings.Contains(msg, want) {
					t.Errorf("thread %d: code %d, last error %q; want %d, %q", i, code, msg, CodeInvalid, want)
					return
				}
				runtime.Gosched()
			}
		})
	}
	wg.Wait()
	if n := dlpack.LiveExports(); n != 2 {
		t.Errorf("%d live exports, want the 2 tensors (sk_copy deletes none)", n)
	}
}
