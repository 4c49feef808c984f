package nccl

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/stridekit/stridekit/runtime/dist"
)

// The tests here run Comm against the fake NCCL of fake_test.go, with no
// device: NCCL calls are made on the calling goroutine, and exchanges go
// through Comm.exchange with made-up addresses and stream handle.

// fakeID is the id the fake's ncclGetUniqueId makes, which its init
// checks byte for byte.
func fakeID(t *testing.T, f *fakeNCCL) UniqueID {
	t.Helper()
	id, err := f.lib.newUniqueID()
	if err != nil {
		t.Fatal(err)
	}
	for i, b := range id {
		if b != byte(i*7+3) {
			t.Fatalf("ncclGetUniqueId: byte %d is %#x, want %#x", i, b, byte(i*7+3))
		}
	}
	return id
}

// newFakeComm joins a communicator of the fake as rank of size.
func newFakeComm(t *testing.T, f *fakeNCCL, ctx context.Context, size, rank int, opts ...Option) (*Comm, error) {
	t.Helper()
	return newComm(ctx, f.lib, nil, direct, size, rank, fakeID(t, f), opts)
}

// waitKnob waits up to 5 s for knob k of the fake to reach want.
func waitKnob(t *testing.T, f *fakeNCCL, k int, want int64) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for f.knob(k) != want {
		if time.Now().After(deadline) {
			t.Fatalf("knob %d is %d after 5 s, want %d", k, f.knob(k), want)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestFakeInit(t *testing.T) {
	f := loadFake(t)
	f.setKnob(kInitPolls, 300) // past the spinning polls, into the sleeping ones
	c, err := newFakeComm(t, f, context.Background(), 5, 3)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, k := range []struct {
		name string
		knob int
		want int64
	}{
		{"id passed by value intact", kIDOK, 1},
		{"nranks", kNRanks, 5},
		{"rank", kRank, 3},
		{"config fields at the header's offsets, undefined ones INT_MIN/NULL", kCfgOK, 1},
		{"config size", kCfgSize, int64(unsafe.Sizeof(ncclConfig{}))},
		{"config version", kCfgVersion, configVersion},
		{"config blocking", kCfgBlocking, 0},
		{"polls until settled", kPolls, 300},
	} {
		if got := f.knob(k.knob); got != k.want {
			t.Errorf("%s: fake saw %d, want %d", k.name, got, k.want)
		}
	}
	if c.IsBlocking() || c.Rank() != 3 || c.Size() != 5 {
		t.Errorf("%v: want non-blocking rank 3 of 5", c)
	}
	if err := c.Err(); err != nil {
		t.Errorf("Err of a working communicator: %v", err)
	}
}

func TestFakeInitTimeout(t *testing.T) {
	f := loadFake(t)
	f.setKnob(kInitPolls, -1) // a rank never joins
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := newFakeComm(t, f, ctx, 2, 0)
	if !errors.Is(err, ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, dist.ErrTimeout) {
		t.Fatalf("got %v; want ErrTimeout (and dist's) wrapping context.DeadlineExceeded", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("took %v after a 100 ms deadline", d)
	}
	if n := f.knob(kAborts); n != 1 {
		t.Errorf("%d aborts of the half-made communicator, want 1", n)
	}
	if !strings.Contains(err.Error(), "rank 0 of 2") || !strings.Contains(err.Error(), "ncclCommInitRankConfig") {
		t.Errorf("message %q: want the rank and the call", err)
	}
}

func TestFakeInitError(t *testing.T) {
	f := loadFake(t)
	f.setKnob(kInitPolls, 3)
	f.setKnob(kInitResult, ncclSystemError)
	_, err := newFakeComm(t, f, context.Background(), 2, 1)
	var e *Error
	if !errors.Is(err, ErrSystem) || !errors.As(err, &e) || e.Call != "ncclCommInitRankConfig" ||
		e.Name != "fake system error" || e.Last != "fake last error" {
		t.Fatalf("got %#v; want ErrSystem from ncclCommInitRankConfig with NCCL's messages", err)
	}
	if n := f.knob(kAborts); n != 1 {
		t.Errorf("%d aborts of the failed communicator, want 1", n)
	}
}

func TestFakeExchange(t *testing.T) {
	f := loadFake(t)
	f.setKnob(kGroupPolls, 3)
	c, err := newFakeComm(t, f, context.Background(), 3, 1)
	if err != nil {
		t.Fatal(err)
	}
	const send, recv, stream = 0x10000, 0x20000, 0x7777
	sendSeg := []dist.Segment{{Off: 0, Len: 16}, {Off: 16, Len: 0}, {Off: 32, Len: 8}}
	recvSeg := []dist.Segment{{Off: 100, Len: 4}, {Off: 0, Len: 0}, {Off: 200, Len: 0}}
	polls := f.knob(kPolls)
	if err := c.exchange(context.Background(), send, recv, sendSeg, recvSeg, stream); err != nil {
		t.Fatal(err)
	}
	if n := f.knob(kPolls) - polls; n != 3 {
		t.Errorf("%d polls of the group, want 3", n)
	}
	recs := f.log()
	var h int64
	if len(recs) > 1 {
		h = recs[1].comm
	}
	want := []fakeRec{
		{op: 1},
		{op: 3, buf: send + 0, count: 16, dtype: ncclUint8, peer: 0, comm: h, stream: stream},
		{op: 4, buf: recv + 100, count: 4, dtype: ncclUint8, peer: 0, comm: h, stream: stream},
		{op: 3, buf: send + 32, count: 8, dtype: ncclUint8, peer: 2, comm: h, stream: stream},
		{op: 2},
	}
	if len(recs) != len(want) || h == 0 {
		t.Fatalf("calls %+v\nwant %+v", recs, want)
	}
	for i := range want {
		if recs[i] != want[i] {
			t.Errorf("call %d: %+v, want %+v", i, recs[i], want[i])
		}
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if n, a := f.knob(kDestroys), f.knob(kAborts); n != 1 || a != 0 {
		t.Errorf("Close of a working communicator: %d destroys, %d aborts; want 1, 0", n, a)
	}
	if err := c.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	err = c.exchange(context.Background(), send, recv, sendSeg, recvSeg, stream)
	if !errors.Is(err, ErrClosed) || !errors.Is(err, dist.ErrClosed) {
		t.Errorf("exchange after Close: %v, want ErrClosed", err)
	}
	if err := c.Abort(nil); err != nil || f.knob(kAborts) != 0 {
		t.Errorf("Abort after Close: %v, %d aborts; want nothing done", err, f.knob(kAborts))
	}
}

func TestFakeExchangeTimeout(t *testing.T) {
	f := loadFake(t)
	c, err := newFakeComm(t, f, context.Background(), 2, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.setKnob(kGroupPolls, -1) // the peer never comes
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	segs := []dist.Segment{{Off: 0, Len: 4}, {Off: 4, Len: 4}}
	err = c.exchange(ctx, 0x1000, 0x2000, segs, segs, 1)
	if !errors.Is(err, ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v; want ErrTimeout", err)
	}
	if n := f.knob(kAborts); n != 1 {
		t.Errorf("%d aborts, want 1", n)
	}
	again := c.exchange(context.Background(), 0x1000, 0x2000, segs, segs, 1)
	if again != err || c.Err() != err {
		t.Errorf("later exchange: %v, Err: %v; want the first error %v", again, c.Err(), err)
	}
	if err := c.Close(); err != nil || f.knob(kDestroys) != 0 || f.knob(kAborts) != 1 {
		t.Errorf("Close of an aborted communicator: %v, %d destroys, %d aborts; want nothing more", err, f.knob(kDestroys), f.knob(kAborts))
	}
}

func TestFakeAbortDuringExchange(t *testing.T) {
	f := loadFake(t)
	c, err := newFakeComm(t, f, context.Background(), 2, 1)
	if err != nil {
		t.Fatal(err)
	}
	f.setKnob(kGroupPolls, -1)
	segs := []dist.Segment{{Off: 0, Len: 4}, {Off: 4, Len: 4}}
	done := make(chan error, 1)
	go func() { done <- c.exchange(context.Background(), 0x1000, 0x2000, segs, segs, 1) }()
	time.Sleep(20 * time.Millisecond)
	cause := errors.New("peer 0 is gone")
	if err := c.Abort(cause); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, ErrAborted) || !errors.Is(err, dist.ErrAborted) {
			t.Fatalf("exchange: %v, want ErrAborted", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("exchange still waiting 5 s after Abort")
	}
	if n := f.knob(kAborts); n != 1 {
		t.Errorf("%d aborts, want 1", n)
	}
	if err := c.Err(); !errors.Is(err, ErrAborted) {
		t.Errorf("Err after Abort: %v", err)
	}
}

func TestFakeAbortIdle(t *testing.T) {
	f := loadFake(t)
	c, err := newFakeComm(t, f, context.Background(), 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	cause := errors.New("shutting down")
	if err := c.Abort(cause); err != nil {
		t.Fatal(err)
	}
	err = c.exchange(context.Background(), 0x1000, 0x2000, []dist.Segment{{Len: 1}}, []dist.Segment{{Len: 1}}, 1)
	if !errors.Is(err, ErrAborted) || !errors.Is(err, cause) {
		t.Errorf("exchange after Abort: %v; want ErrAborted wrapping the cause", err)
	}
	if err := c.Abort(nil); err != nil || f.knob(kAborts) != 1 {
		t.Errorf("second Abort: %v, %d aborts; want one in all", err, f.knob(kAborts))
	}
}

func TestFakeExchangeError(t *testing.T) {
	f := loadFake(t)
	c, err := newFakeComm(t, f, context.Background(), 2, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.setKnob(kGroupPolls, 2)
	f.setKnob(kGroupResult, ncclRemoteError)
	segs := []dist.Segment{{Off: 0, Len: 4}, {Off: 4, Len: 4}}
	err = c.exchange(context.Background(), 0x1000, 0x2000, segs, segs, 1)
	if !errors.Is(err, ErrRemote) {
		t.Fatalf("got %v; want ErrRemote", err)
	}
	if f.knob(kAborts) != 1 {
		t.Errorf("%d aborts, want 1", f.knob(kAborts))
	}
}

func TestFakeSendFails(t *testing.T) {
	f := loadFake(t)
	c, err := newFakeComm(t, f, context.Background(), 3, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.setKnob(kSendFailPeer, 1)
	segs := []dist.Segment{{Off: 0, Len: 4}, {Off: 4, Len: 4}, {Off: 8, Len: 4}}
	err = c.exchange(context.Background(), 0x1000, 0x2000, segs, segs, 1)
	var e *Error
	if !errors.Is(err, ErrInvalidArgument) || !errors.As(err, &e) || e.Call != "ncclSend to rank 1" {
		t.Fatalf("got %v; want ErrInvalidArgument of ncclSend to rank 1", err)
	}
	if d := f.knob(kDepth); d != 0 {
		t.Errorf("group depth %d after the failed send: the group was left open", d)
	}
	if recs := f.log(); recs[len(recs)-1].op != 2 {
		t.Errorf("last call %+v, want ncclGroupEnd", recs[len(recs)-1])
	}
}

func TestFakeBlocking(t *testing.T) {
	f := loadFake(t)
	c, err := newFakeComm(t, f, context.Background(), 2, 1, Blocking(true))
	if err != nil {
		t.Fatal(err)
	}
	if !c.IsBlocking() || f.knob(kCfgBlocking) != 1 || f.knob(kCfgOK) != 1 {
		t.Fatalf("%v: config blocking %d; want a blocking communicator", c, f.knob(kCfgBlocking))
	}
	segs := []dist.Segment{{Off: 0, Len: 4}, {Off: 4, Len: 4}}
	if err := c.exchange(context.Background(), 0x1000, 0x2000, segs, segs, 1); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil || f.knob(kDestroys) != 1 {
		t.Errorf("Close: %v, %d destroys", err, f.knob(kDestroys))
	}
}

// TestFakeBlockingFallback runs an NCCL without ncclCommInitRankConfig:
// NewComm falls back on ncclCommInitRank, and a call that blocks on an
// absent peer still returns at ctx's end, the communicator being aborted
// once the call returns.
func TestFakeBlockingFallback(t *testing.T) {
	f := loadFake(t, "-DFAKE_OLD")
	c, err := newFakeComm(t, f, context.Background(), 2, 1)
	if err != nil {
		t.Fatal(err)
	}
	if !c.IsBlocking() || f.knob(kIDOK) != 1 || f.knob(kRank) != 1 || f.knob(kNRanks) != 2 {
		t.Fatalf("%v: id ok %d, rank %d of %d", c, f.knob(kIDOK), f.knob(kRank), f.knob(kNRanks))
	}
	f.setKnob(kGroupPolls, -1)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	segs := []dist.Segment{{Off: 0, Len: 4}, {Off: 4, Len: 4}}
	err = c.exchange(ctx, 0x1000, 0x2000, segs, segs, 1)
	if !errors.Is(err, ErrTimeout) {
		t.Fatalf("got %v; want ErrTimeout", err)
	}
	if f.knob(kAborts) != 0 {
		t.Error("aborted while the blocking call still runs")
	}
	f.setKnob(kRelease, 1)
	waitKnob(t, f, kAborts, 1)
	if err := c.Close(); err != nil || f.knob(kDestroys) != 0 {
		t.Errorf("Close: %v, %d destroys; want none", err, f.knob(kDestroys))
	}
}

func TestFakeBlockingInitTimeout(t *testing.T) {
	f := loadFake(t, "-DFAKE_OLD")
	f.setKnob(kInitPolls, -1)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := newFakeComm(t, f, ctx, 2, 0)
	if !errors.Is(err, ErrTimeout) || !strings.Contains(err.Error(), "ncclCommInitRank") {
		t.Fatalf("got %v; want ErrTimeout naming ncclCommInitRank", err)
	}
	f.setKnob(kRelease, 1)
	waitKnob(t, f, kAborts, 1) // the handle the init returns late is aborted
}

// TestFakeConcurrent makes exchanges, Err and Close from several
// goroutines at once (for the race detector).
func TestFakeConcurrent(t *testing.T) {
	f := loadFake(t)
	c, err := newFakeComm(t, f, context.Background(), 2, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.setKnob(kGroupPolls, 2)
	segs := []dist.Segment{{Off: 0, Len: 4}, {Off: 4, Len: 4}}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 20 {
				if err := c.exchange(context.Background(), 0x1000, 0x2000, segs, segs, 1); err != nil && !errors.Is(err, ErrClosed) {
					t.Error(err)
				}
				c.Err()
			}
		})
	}
	wg.Go(func() { time.Sleep(time.Millisecond); c.Close() })
	wg.Wait()
	if n := f.knob(kDestroys); n != 1 {
		t.Errorf("%d destroys, want 1", n)
	}
}
