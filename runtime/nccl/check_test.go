package nccl

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/stridekit/stridekit/layout"
	"github.com/stridekit/stridekit/runtime/cuda"
	"github.com/stridekit/stridekit/runtime/dist"
	"github.com/stridekit/stridekit/runtime/memview"
)

// The argument checks that need no NCCL and no GPU.

func hostView(t *testing.T, n int64) *memview.StridedMemoryView {
	t.Helper()
	l, err := layout.New([]int64{n}, nil, 1)
	if err != nil {
		t.Fatal(err)
	}
	v, err := memview.FromHost(make([]uint8, n), l)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestCheckExchange(t *testing.T) {
	v := hostView(t, 16)
	segs := []dist.Segment{{Len: 8}, {Off: 8, Len: 8}}
	for _, tt := range []struct {
		name             string
		send, recv       *memview.StridedMemoryView
		sendSeg, recvSeg []dist.Segment
		want, wantDist   error
		wantText         string
	}{
		{"nil send", nil, v, segs, segs, ErrNil, dist.ErrNil, "send <nil view>"},
		{"nil receive", v, nil, segs, segs, ErrNil, dist.ErrNil, "receive <nil view>"},
		{"too few segments", v, hostView(t, 16), segs[:1], segs, ErrSegment, dist.ErrSegment, "1 send and 2 receive segments for 2 ranks"},
		{"too many segments", v, hostView(t, 16), segs, append(segs, segs...), ErrSegment, dist.ErrSegment, "4 receive"},
		{"host memory", v, hostView(t, 16), segs, segs, ErrBuffer, dist.ErrBuffer, "NCCL exchanges device memory"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := checkExchange(1, 2, nil, tt.send, tt.recv, tt.sendSeg, tt.recvSeg)
			if !errors.Is(err, tt.want) || !errors.Is(err, tt.wantDist) || !strings.Contains(err.Error(), tt.wantText) {
				t.Errorf("got %v; want %v (%v) saying %q", err, tt.want, tt.wantDist, tt.wantText)
			}
		})
	}
}

func TestCheckSegments(t *testing.T) {
	for _, tt := range []struct {
		segs []dist.Segment
		size int64
		ok   bool
	}{
		{[]dist.Segment{{Off: 0, Len: 8}, {Off: 8, Len: 8}}, 16, true},
		{[]dist.Segment{{Off: 16, Len: 0}, {Off: 0, Len: 0}}, 16, true},
		{nil, 0, true},
		{[]dist.Segment{{Off: 0, Len: 8}, {Off: 8, Len: 9}}, 16, false},
		{[]dist.Segment{{Off: 17, Len: 0}}, 16, false},
		{[]dist.Segment{{Off: -1, Len: 1}}, 16, false},
		{[]dist.Segment{{Off: 0, Len: -1}}, 16, false},
		{[]dist.Segment{{Off: 8, Len: math.MaxInt64}}, 16, false}, // Off+Len overflows
	} {
		if err := checkSegments(tt.segs, tt.size); (err == nil) != tt.ok {
			t.Errorf("%v in %d bytes: %v, want ok %v", tt.segs, tt.size, err, tt.ok)
		}
	}
}

func TestEqualSegments(t *testing.T) {
	segs, err := equalSegments(3, 5)
	if err != nil || len(segs) != 3 || segs[2] != (dist.Segment{Off: 10, Len: 5}) {
		t.Errorf("equalSegments(3, 5) = %v, %v", segs, err)
	}
	for _, n := range []int64{-1, math.MaxInt64 / 2} {
		if _, err := equalSegments(3, n); err == nil {
			t.Errorf("equalSegments(3, %d) accepted", n)
		}
	}
}

// TestCommArguments calls the methods of a communicator with no NCCL
// behind it: everything here is refused before NCCL would be called.
func TestCommArguments(t *testing.T) {
	ctx := context.Background()
	c := &Comm{size: 2, rank: 1, stop: make(chan struct{})}
	if err := c.AllToAllBytes(ctx, 0x1000, 0x2000, -1, nil); !errors.Is(err, ErrSegment) {
		t.Errorf("negative size: %v", err)
	}
	if err := c.AllToAllBytes(ctx, 0, 0x2000, 8, nil); !errors.Is(err, ErrBuffer) {
		t.Errorf("0 pointer: %v", err)
	}
	if err := c.AllToAllBytes(ctx, 0x1000, 0x2000, 8, nil); !errors.Is(err, ErrStream) {
		t.Errorf("nil stream: %v", err)
	}
	if err := c.WaitStream(ctx, nil); !errors.Is(err, ErrStream) {
		t.Errorf("WaitStream of a nil stream: %v", err)
	}
	if _, err := c.Alloc(-1, nil); !errors.Is(err, ErrBuffer) || !errors.Is(err, dist.ErrBuffer) {
		t.Errorf("Alloc(-1): %v", err)
	}
	v := hostView(t, 16)
	segs := []dist.Segment{{Len: 8}, {Off: 8, Len: 8}}
	if err := c.AllToAll(ctx, v, hostView(t, 16), segs, segs, nil); !errors.Is(err, ErrBuffer) {
		t.Errorf("AllToAll of host views: %v", err)
	}
	if err := c.Err(); !errors.Is(err, ErrClosed) {
		t.Errorf("Err of a communicator never made: %v", err)
	}
}

func TestNilComm(t *testing.T) {
	var c *Comm
	ctx := context.Background()
	if c.Rank() != -1 || c.Size() != 0 || c.Device() != nil || c.IsBlocking() || c.String() != "nccl.Comm<nil>" {
		t.Error("accessors of a nil Comm")
	}
	for name, err := range map[string]error{
		"AllToAll":      c.AllToAll(ctx, nil, nil, nil, nil, nil),
		"AllToAllBytes": c.AllToAllBytes(ctx, 0, 0, 0, nil),
		"WaitStream":    c.WaitStream(ctx, nil),
		"Err":           c.Err(),
	} {
		if !errors.Is(err, ErrNil) || !errors.Is(err, dist.ErrNil) {
			t.Errorf("%s: %v, want ErrNil", name, err)
		}
	}
	if _, err := c.Alloc(8, nil); !errors.Is(err, ErrNil) {
		t.Errorf("Alloc: %v", err)
	}
	if c.Close() != nil || c.Abort(nil) != nil {
		t.Error("Close and Abort of a nil Comm must do nothing")
	}
}

// TestZeroComm uses a Comm made without NewComm: every call fails or does
// nothing, none panics.
func TestZeroComm(t *testing.T) {
	c := &Comm{}
	ctx := context.Background()
	if err := c.Abort(nil); err != nil {
		t.Errorf("Abort: %v", err)
	}
	if err := c.AllToAllBytes(ctx, 0, 0, 0, &cuda.Stream{}); !errors.Is(err, ErrClosed) {
		t.Errorf("AllToAllBytes: %v", err)
	}
	if err := c.WaitStream(ctx, nil); !errors.Is(err, ErrStream) {
		t.Errorf("WaitStream: %v", err)
	}
	if _, err := c.Alloc(8, nil); err == nil {
		t.Error("Alloc on no device succeeded")
	}
	if err := c.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
}

func TestNewCommArguments(t *testing.T) {
	ctx := context.Background()
	if _, err := NewComm(ctx, nil, 2, 0, UniqueID{}); !errors.Is(err, ErrNil) {
		t.Errorf("nil device: %v", err)
	}
	dev := &cuda.Device{} // checked after the ranks; never used
	for _, r := range []struct{ size, rank int }{{0, 0}, {-1, 0}, {2, 2}, {2, -1}, {math.MaxInt32 + 1, 0}} {
		if _, err := NewComm(ctx, dev, r.size, r.rank, UniqueID{}); !errors.Is(err, ErrRank) || !errors.Is(err, dist.ErrRank) {
			t.Errorf("rank %d of %d: %v", r.rank, r.size, err)
		}
	}
}

func TestErrors(t *testing.T) {
	e := &Error{Call: "ncclGroupEnd", Code: ncclRemoteError, Name: "remote process exited or there was a network error", Last: "peer 3 closed"}
	if !errors.Is(e, ErrRemote) || errors.Is(e, ErrSystem) {
		t.Error("Is matches by code")
	}
	want := "nccl: ncclGroupEnd: remote process exited or there was a network error (6): peer 3 closed"
	if e.Error() != want {
		t.Errorf("Error() = %q\nwant       %q", e.Error(), want)
	}
	for s, d := range map[error]error{ErrTimeout: dist.ErrTimeout, ErrAborted: dist.ErrAborted, ErrClosed: dist.ErrClosed,
		ErrBuffer: dist.ErrBuffer, ErrSegment: dist.ErrSegment, ErrNil: dist.ErrNil, ErrRank: dist.ErrRank} {
		if !errors.Is(s, d) || errors.Is(d, s) {
			t.Errorf("%v should match %v, not the other way", s, d)
		}
	}
	if resultName(7) != "ncclInProgress" || resultName(99) != "ncclResult 99" {
		t.Error("resultName")
	}
}
