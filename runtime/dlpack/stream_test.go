package dlpack_test

import (
	"errors"
	"testing"

	"github.com/stridekit/stridekit/runtime/dlpack"
)

func TestParseCUDAStream(t *testing.T) {
	for _, c := range []struct {
		v    int64
		want dlpack.StreamRequest
		sync bool
	}{
		{-1, dlpack.StreamRequest{Kind: dlpack.SyncNone}, false},
		{1, dlpack.StreamRequest{Kind: dlpack.SyncLegacy, Handle: 1}, true},
		{2, dlpack.StreamRequest{Kind: dlpack.SyncPerThread, Handle: 2}, true},
		{3, dlpack.StreamRequest{Kind: dlpack.SyncHandle, Handle: 3}, true},
		{0x55d0c0ffee00, dlpack.StreamRequest{Kind: dlpack.SyncHandle, Handle: 0x55d0c0ffee00}, true},
	} {
		got, err := dlpack.ParseCUDAStream(c.v)
		if err != nil || got != c.want || got.Sync() != c.sync {
			t.Errorf("ParseCUDAStream(%d) = %+v (sync %v), %v; want %+v (sync %v)", c.v, got, got.Sync(), err, c.want, c.sync)
		}
	}
	for _, v := range []int64{0, -2, -1 << 63} {
		if _, err := dlpack.ParseCUDAStream(v); !errors.Is(err, dlpack.ErrStream) {
			t.Errorf("ParseCUDAStream(%d) error %v, want ErrStream", v, err)
		}
	}
}

func TestStreamKindString(t *testing.T) {
	for k, want := range map[dlpack.StreamKind]string{
		dlpack.SyncNone: "no-sync", dlpack.SyncLegacy: "legacy-default", dlpack.SyncPerThread: "per-thread-default",
		dlpack.SyncHandle: "handle", 0: "StreamKind(0)",
	} {
		if k.String() != want {
			t.Errorf("%d: %q, want %q", uint8(k), k.String(), want)
		}
	}
}

func TestCUDAStreamValueNil(t *testing.T) {
	if v := dlpack.CUDAStreamValue(nil); v != dlpack.StreamLegacy {
		t.Errorf("CUDAStreamValue(nil) = %d, want %d", v, dlpack.StreamLegacy)
	}
}

// TestStreamRequestStream checks the stream each kind of request names: none
// for no-sync, and the handle itself for the others.
func TestStreamRequestStream(t *testing.T) {
	if s := (dlpack.StreamRequest{Kind: dlpack.SyncNone}).Stream(nil); s != nil {
		t.Errorf("no-sync request names stream %#x, want none", s.Handle())
	}
	if s := (dlpack.StreamRequest{}).Stream(nil); s != nil {
		t.Errorf("zero request names stream %#x, want none", s.Handle())
	}
	for _, v := range []int64{1, 2, 0x55d0c0ffee00} {
		r, err := dlpack.ParseCUDAStream(v)
		if err != nil {
			t.Fatal(err)
		}
		s := r.Stream(nil)
		if s == nil || s.Handle() != uintptr(v) {
			t.Errorf("stream of %d: %v, want handle %#x", v, s, v)
		}
	}
}
