package nccl

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stridekit/stridekit/internal/testenv"
	"github.com/stridekit/stridekit/runtime/cuda"
	"github.com/stridekit/stridekit/runtime/dist"
	"github.com/stridekit/stridekit/runtime/memview"
)

// The GPU tests: they need a device and NCCL, and skip with a one-line
// reason without either, unless STRIDEKIT_REQUIRE_GPU=1 (the GPU runner)
// turns the skip into a failure. The tests of two ranks need two devices
// (testenv.NeedGPUs: STRIDEKIT_REQUIRE_GPUS=2 makes them required).

// needNCCL skips tb where NCCL cannot be loaded, or fails it with
// STRIDEKIT_REQUIRE_GPU=1 or STRIDEKIT_REQUIRE_NCCL=1.
func needNCCL(tb testing.TB) {
	tb.Helper()
	err := Load()
	if err == nil {
		v, _ := Version()
		p, _ := LibraryPath()
		tb.Logf("NCCL %s from %s", versionString(v), p)
		return
	}
	if os.Getenv("STRIDEKIT_REQUIRE_GPU") == "1" || os.Getenv("STRIDEKIT_REQUIRE_NCCL") == "1" {
		tb.Fatalf("NCCL required (STRIDEKIT_REQUIRE_GPU=1): %v", err)
	}
	tb.Skipf("no NCCL: %.300s", err)
}

// pattern returns n bytes that differ with seed and position.
func pattern(seed, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(seed*131 + i*7 + i>>8)
	}
	return b
}

// put writes b into the device memory of v at off, and waits for it.
func put(t *testing.T, v *memview.StridedMemoryView, off int, b []byte) {
	t.Helper()
	d := v.Device()
	if err := d.CopyHtoD(cuda.DevicePtr(v.Ptr()+uintptr(off)), b); err != nil {
		t.Fatal(err)
	}
	if err := d.Synchronize(); err != nil { // a pageable copy may still be in flight
		t.Fatal(err)
	}
}

// get reads n bytes of the device memory of v at off.
func get(t *testing.T, v *memview.StridedMemoryView, off, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	if err := v.Device().CopyDtoH(b, cuda.DevicePtr(v.Ptr()+uintptr(off))); err != nil {
		t.Fatal(err)
	}
	return b
}

// alloc returns a view of n bytes from c.Alloc, set to fill, closed when
// t ends.
func alloc(t *testing.T, c *Comm, n int, s *cuda.Stream, fill byte) *memview.StridedMemoryView {
	t.Helper()
	v, err := c.Alloc(int64(n), s)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { v.Close() })
	if sh, st := v.Shape(), v.Strides(); len(sh) != 1 || sh[0] != int64(n) || st[0] != 1 || v.Kind() != cuda.MemoryDevice || v.Device() != c.Device() {
		t.Fatalf("Alloc(%d): %v", n, v)
	}
	if err := s.Synchronize(); err != nil { // stream-ordered allocation
		t.Fatal(err)
	}
	put(t, v, 0, bytes.Repeat([]byte{fill}, n))
	return v
}

// TestGPUSelfExchange exchanges a device buffer with itself in a
// communicator of one rank: AllToAll with offsets, AllToAllBytes, an empty
// exchange, and the checks of device views.
func TestGPUSelfExchange(t *testing.T) {
	dev := testenv.NeedGPU(t)
	needNCCL(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	id, err := NewUniqueID()
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewComm(ctx, dev, 1, 0, id)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	t.Logf("%v", c)
	s := testenv.NewStream(t, dev)
	const n = 1 << 20
	send, recv := alloc(t, c, n, s, 0), alloc(t, c, n, s, 0xEE)
	src := pattern(1, n)
	put(t, send, 0, src)

	const from, to, length = 3, 1001, n - 5000
	seg := func(off, n int) []dist.Segment { return []dist.Segment{{Off: int64(off), Len: int64(n)}} }
	if err := c.AllToAll(ctx, send, recv, seg(from, length), seg(to, length), s); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitStream(ctx, s); err != nil {
		t.Fatal(err)
	}
	got := get(t, recv, 0, n)
	want := bytes.Repeat([]byte{0xEE}, n)
	copy(want[to:], src[from:from+length])
	if !bytes.Equal(got, want) {
		t.Fatalf("received bytes differ (first at %d)", firstDiff(got, want))
	}

	if err := c.AllToAllBytes(ctx, cuda.DevicePtr(send.Ptr()), cuda.DevicePtr(recv.Ptr()), n, s); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitStream(ctx, s); err != nil {
		t.Fatal(err)
	}
	if got := get(t, recv, 0, n); !bytes.Equal(got, src) {
		t.Fatalf("AllToAllBytes: received bytes differ (first at %d)", firstDiff(got, src))
	}
	if err := c.AllToAll(ctx, send, recv, seg(0, 0), seg(n, 0), s); err != nil {
		t.Errorf("empty exchange: %v", err)
	}

	for name, tc := range map[string]struct {
		send, recv       *memview.StridedMemoryView
		sendSeg, recvSeg []dist.Segment
		want             error
	}{
		"segment past the end": {send, recv, seg(n-10, 11), seg(0, 11), ErrSegment},
		"read-only receive":    {send, recv.AsReadOnly(), seg(0, 8), seg(0, 8), ErrBuffer},
		"same buffer":          {send, send, seg(0, 8), seg(8, 8), ErrBuffer},
		"two segments, 1 rank": {send, recv, append(seg(0, 8), seg(8, 8)...), seg(0, 8), ErrSegment},
	} {
		if err := c.AllToAll(ctx, tc.send, tc.recv, tc.sendSeg, tc.recvSeg, s); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", name, err, tc.want)
		}
	}
	if err := c.AllToAll(ctx, send, recv, seg(0, 8), seg(0, 8), nil); !errors.Is(err, ErrStream) {
		t.Errorf("nil stream: %v", err)
	}
	if err := c.Err(); err != nil {
		t.Errorf("refused arguments broke the communicator: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.AllToAll(ctx, send, recv, seg(0, 8), seg(0, 8), s); !errors.Is(err, ErrClosed) {
		t.Errorf("after Close: %v", err)
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// pairLen is how many bytes rank p sends rank q in TestGPUTwoRanks: a
// different length for each ordered pair, itself included.
func pairLen(p, q int) int { return 100_003 + 37*p + 1001*q }

// rankResult is what one rank of TestGPUTwoRanks found.
type rankResult struct {
	err  error
	recv []byte
}

// TestGPUTwoRanks forms a communicator of two ranks, one goroutine and one
// device each, through the file bootstrap, and exchanges distinct patterns
// of distinct lengths between every ordered pair with AllToAll.
func TestGPUTwoRanks(t *testing.T) {
	devs := testenv.NeedGPUs(t, 2)
	needNCCL(t)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	path := filepath.Join(t.TempDir(), "nccl.id")
	var wg sync.WaitGroup
	res := make([]rankResult, 2)
	for r := range 2 {
		wg.Go(func() { res[r] = runRank(ctx, devs[r], Config{Rank: r, Size: 2, File: path}) })
	}
	wg.Wait()
	for r := range 2 {
		if res[r].err != nil {
			t.Fatalf("rank %d: %v", r, res[r].err)
		}
		if err := checkRecv(r, 2, res[r].recv); err != nil {
			t.Error(err)
		}
	}
}

// checkRecv reports whether rank r of size received from every rank q
// the pattern q sent it, in rank order.
func checkRecv(r, size int, recv []byte) error {
	off := 0
	for q := range size {
		want := pattern(10*q+r, pairLen(q, r))
		if off+len(want) > len(recv) {
			return fmt.Errorf("rank %d: received %d bytes, want more", r, len(recv))
		}
		if got := recv[off : off+len(want)]; !bytes.Equal(got, want) {
			return fmt.Errorf("rank %d from rank %d: bytes differ (first at %d)", r, q, firstDiff(got, want))
		}
		off += len(want)
	}
	return nil
}

// rankEnv, set, makes the test binary one rank of TestGPUTwoProcesses
// (rank:size:addr), run by TestMain instead of the tests.
const rankEnv = "STRIDEKIT_NCCL_TEST_RANK"

// runRankChild is one process of TestGPUTwoProcesses: rank r on device r,
// bootstrapped over TCP.
func runRankChild() int {
	var r, size int
	var addr string
	if _, err := fmt.Sscanf(os.Getenv(rankEnv), "%d:%d:%s", &r, &size, &addr); err != nil {
		fmt.Println("bad", rankEnv, err)
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dev, err := cuda.GetDevice(r)
	if err != nil {
		fmt.Println(err)
		return 1
	}
	res := runRank(ctx, dev, Config{Rank: r, Size: size, Addr: addr})
	if res.err == nil {
		res.err = checkRecv(r, size, res.recv)
	}
	if res.err != nil {
		fmt.Println(res.err)
		return 1
	}
	fmt.Println("ok")
	return 0
}

// TestGPUTwoProcesses runs the exchange of TestGPUTwoRanks between two
// processes (this test binary, run again as one rank each, on device 0
// and 1), bootstrapped over TCP as torchrun's workers would be.
func TestGPUTwoProcesses(t *testing.T) {
	testenv.NeedGPUs(t, 2)
	needNCCL(t)
	exe, err := os.Executable()
	if err != nil {
		t.Skip(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Skip(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	var wg sync.WaitGroup
	out := make([][]byte, 2)
	errs := make([]error, 2)
	for r := range 2 {
		wg.Go(func() {
			cmd := exec.Command(exe, "-test.run=^$")
			cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d:2:%s", rankEnv, r, addr))
			out[r], errs[r] = cmd.CombinedOutput()
		})
	}
	wg.Wait()
	for r := range 2 {
		if errs[r] != nil || !bytes.HasSuffix(bytes.TrimSpace(out[r]), []byte("ok")) {
			t.Errorf("rank %d: %v\n%s", r, errs[r], out[r])
		}
	}
}

// runRank is one rank of TestGPUTwoRanks: bootstrap, communicator,
// buffers, one AllToAll, and the bytes received.
func runRank(ctx context.Context, dev *cuda.Device, cfg Config) rankResult {
	id, err := Bootstrap(ctx, cfg)
	if err != nil {
		return rankResult{err: err}
	}
	c, err := NewComm(ctx, dev, cfg.Size, cfg.Rank, id)
	if err != nil {
		return rankResult{err: err}
	}
	defer c.Close()
	s, err := dev.NewStream(true)
	if err != nil {
		return rankResult{err: err}
	}
	defer s.Close()
	sendSeg, recvSeg := make([]dist.Segment, cfg.Size), make([]dist.Segment, cfg.Size)
	var src []byte
	var nr int64
	for q := range cfg.Size {
		b := pattern(10*cfg.Rank+q, pairLen(cfg.Rank, q))
		sendSeg[q] = dist.Segment{Off: int64(len(src)), Len: int64(len(b))}
		src = append(src, b...)
		recvSeg[q] = dist.Segment{Off: nr, Len: int64(pairLen(q, cfg.Rank))}
		nr += recvSeg[q].Len
	}
	send, err := c.Alloc(int64(len(src)), s)
	if err != nil {
		return rankResult{err: err}
	}
	defer send.Close()
	recv, err := c.Alloc(nr, s)
	if err != nil {
		return rankResult{err: err}
	}
	defer recv.Close()
	if err := s.Synchronize(); err != nil {
		return rankResult{err: err}
	}
	if err := dev.CopyHtoD(cuda.DevicePtr(send.Ptr()), src); err != nil {
		return rankResult{err: err}
	}
	if err := dev.Synchronize(); err != nil {
		return rankResult{err: err}
	}
	if err := c.AllToAll(ctx, send, recv, sendSeg, recvSeg, s); err != nil {
		return rankResult{err: err}
	}
	if err := c.WaitStream(ctx, s); err != nil {
		return rankResult{err: err}
	}
	out := make([]byte, nr)
	if err := dev.CopyDtoH(out, cuda.DevicePtr(recv.Ptr())); err != nil {
		return rankResult{err: err}
	}
	return rankResult{recv: out}
}

// TestGPUTimeout joins a communicator of two ranks whose second rank never
// comes: NewComm must give ErrTimeout soon after its 2.5 s deadline, not
// hang. One device does.
func TestGPUTimeout(t *testing.T) {
	dev := testenv.NeedGPU(t)
	needNCCL(t)
	id, err := NewUniqueID()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2500*time.Millisecond)
	defer cancel()
	start := time.Now()
	c, err := NewComm(ctx, dev, 2, 0, id)
	d := time.Since(start)
	if err == nil {
		c.Close()
		t.Fatal("NewComm of 2 ranks with one joining succeeded")
	}
	if !errors.Is(err, ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, dist.ErrTimeout) {
		t.Fatalf("got %v; want ErrTimeout", err)
	}
	t.Logf("%v after %v", err, d)
	if d > 15*time.Second {
		t.Errorf("took %v after a 2.5 s deadline", d)
	}
}

// TestGPUPeerGone forms a communicator of two ranks, then aborts rank 1
// and makes rank 0 exchange with it: AllToAll queues the work, and
// WaitStream must return an error (a timeout, or NCCL's report of the
// peer) within its deadline, not hang; the stream is usable again after.
func TestGPUPeerGone(t *testing.T) {
	devs := testenv.NeedGPUs(t, 2)
	needNCCL(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	id, err := NewUniqueID()
	if err != nil {
		t.Fatal(err)
	}
	comms := make([]*Comm, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for r := range 2 {
		wg.Go(func() { comms[r], errs[r] = NewComm(ctx, devs[r], 2, r, id) })
	}
	wg.Wait()
	for r := range 2 {
		if errs[r] != nil {
			t.Fatalf("rank %d: %v", r, errs[r])
		}
	}
	defer comms[0].Close()
	defer comms[1].Close()
	const n = 1 << 16
	s := make([]*cuda.Stream, 2)
	bufs := make([][2]*memview.StridedMemoryView, 2)
	for r := range 2 {
		s[r] = testenv.NewStream(t, devs[r])
		bufs[r] = [2]*memview.StridedMemoryView{alloc(t, comms[r], 2*n, s[r], 1), alloc(t, comms[r], 2*n, s[r], 2)}
	}
	exchange := func(r int, ctx context.Context) error { // each rank's first exchange connects the pair
		if err := comms[r].AllToAllBytes(ctx, cuda.DevicePtr(bufs[r][0].Ptr()), cuda.DevicePtr(bufs[r][1].Ptr()), n, s[r]); err != nil {
			return err
		}
		return comms[r].WaitStream(ctx, s[r])
	}
	for r := range 2 {
		wg.Go(func() { errs[r] = exchange(r, ctx) })
	}
	wg.Wait()
	for r := range 2 {
		if errs[r] != nil {
			t.Fatalf("first exchange, rank %d: %v", r, errs[r])
		}
	}
	if err := comms[1].Abort(fmt.Errorf("test: rank 1 dies")); err != nil {
		t.Fatal(err)
	}
	short, cancel2 := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel2()
	start := time.Now()
	err = exchange(0, short)
	d := time.Since(start)
	t.Logf("rank 0 with rank 1 gone: %v after %v", err, d)
	if err == nil {
		t.Fatal("exchange with an aborted peer succeeded")
	}
	if d > 20*time.Second {
		t.Errorf("took %v after a 3 s deadline", d)
	}
	if !errors.Is(comms[0].Err(), err) && comms[0].Err() == nil {
		t.Errorf("rank 0 still usable after %v", err)
	}
	if err := s[0].Synchronize(); err != nil {
		t.Errorf("stream after the abort: %v", err)
	}
}

// TestGPUAlloc checks the views Alloc makes: size 0, and closing them.
func TestGPUAlloc(t *testing.T) {
	dev := testenv.NeedGPU(t)
	needNCCL(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	id, err := NewUniqueID()
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewComm(ctx, dev, 1, 0, id, Blocking(true))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if !c.IsBlocking() {
		t.Error("Blocking(true) made a non-blocking communicator")
	}
	for _, n := range []int64{0, 1, 4096} {
		v, err := c.Alloc(n, nil)
		if err != nil {
			t.Fatalf("Alloc(%d): %v", n, err)
		}
		if v.Shape()[0] != n || v.Device() != dev {
			t.Errorf("Alloc(%d): %v", n, v)
		}
		if err := v.Close(); err != nil {
			t.Errorf("Close of Alloc(%d): %v", n, err)
		}
	}
	s := testenv.NewStream(t, dev)
	send, recv := alloc(t, c, 64, s, 0x11), alloc(t, c, 64, s, 0)
	if err := c.AllToAllBytes(ctx, cuda.DevicePtr(send.Ptr()), cuda.DevicePtr(recv.Ptr()), 64, s); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitStream(ctx, s); err != nil {
		t.Fatal(err)
	}
	if got := get(t, recv, 0, 64); !bytes.Equal(got, bytes.Repeat([]byte{0x11}, 64)) {
		t.Errorf("blocking exchange received %x", got)
	}
}
