package dist

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stridekit/stridekit/layout"
	"github.com/stridekit/stridekit/runtime/memview"
)

// exchange runs f on every rank of ts in its own goroutine and returns
// their errors.
func exchange(ts []Transport, f func(t *HostTransport) error) []error {
	errs := make([]error, len(ts))
	var wg sync.WaitGroup
	for r, t := range ts {
		wg.Go(func() { errs[r] = f(t.(*HostTransport)) })
	}
	wg.Wait()
	return errs
}

// bytesOf returns the bytes of a view from Alloc.
func bytesOf(t *testing.T, v *memview.StridedMemoryView) []byte {
	t.Helper()
	n := v.Shape()[0]
	b := make([]byte, n)
	out, _ := memview.FromHost(b, mustLayout(layout.New([]int64{n}, nil, 1)))
	if err := out.CopyFrom(v, nil); err != nil {
		t.Fatal(err)
	}
	return b
}

// TestHostAllToAll exchanges, many times over with the same buffers, a
// segment of 1+r+q bytes from every rank r to every rank q (itself
// included), and checks what arrives.
func TestHostAllToAll(t *testing.T) {
	const n = 4
	ts, err := NewHostGroup(n)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	errs := exchange(ts, func(h *HostTransport) error {
		r := h.Rank()
		send, recv, sendSeg, recvSeg := layoutSegments(h, func(from, to int) int64 { return int64(1 + from + to) })
		sb := make([]byte, send.Shape()[0])
		sv, _ := memview.FromHost(sb, send.Layout())
		for round := range 50 {
			for q := range n {
				for k := range sendSeg[q].Len {
					sb[sendSeg[q].Off+k] = byte(round + 10*r + q)
				}
			}
			if err := send.CopyFrom(sv, nil); err != nil {
				return err
			}
			if err := h.AllToAll(ctx, send, recv, sendSeg, recvSeg, nil); err != nil {
				return err
			}
			got := bytesOf(t, recv)
			for q := range n {
				for k := range recvSeg[q].Len {
					if b := got[recvSeg[q].Off+k]; b != byte(round+10*q+r) {
						return fmt.Errorf("round %d: byte %d from rank %d is %d", round, k, q, b)
					}
				}
			}
		}
		return nil
	})
	for r, err := range errs {
		if err != nil {
			t.Errorf("rank %d: %v", r, err)
		}
	}
}

// layoutSegments allocates send and receive buffers for segments of
// size(from, to) bytes, laid out back to back in peer order.
func layoutSegments(h *HostTransport, size func(from, to int) int64) (send, recv *memview.StridedMemoryView, sendSeg, recvSeg []Segment) {
	n := h.Size()
	sendSeg, recvSeg = make([]Segment, n), make([]Segment, n)
	var so, ro int64
	for q := range n {
		sendSeg[q] = Segment{so, size(h.Rank(), q)}
		so += sendSeg[q].Len
		recvSeg[q] = Segment{ro, size(q, h.Rank())}
		ro += recvSeg[q].Len
	}
	send, _ = h.Alloc(so, nil)
	recv, _ = h.Alloc(ro, nil)
	return send, recv, sendSeg, recvSeg
}

// TestHostSegmentMismatch has rank 0 expect one byte more from rank 1 than
// rank 1 sends: both fail with ErrSegment, the others succeed, and the
// group still works.
func TestHostSegmentMismatch(t *testing.T) {
	ts, _ := NewHostGroup(3)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	run := func(skew bool) []error {
		return exchange(ts, func(h *HostTransport) error {
			send, recv, sendSeg, recvSeg := layoutSegments(h, func(from, to int) int64 {
				if skew && from == 1 && to == 0 && h.Rank() == 0 {
					return 3
				}
				return 2
			})
			return h.AllToAll(ctx, send, recv, sendSeg, recvSeg, nil)
		})
	}
	errs := run(true)
	for r, err := range errs {
		if (r < 2) != errors.Is(err, ErrSegment) {
			t.Errorf("rank %d: %v", r, err)
		}
	}
	for r, err := range run(false) {
		if err != nil {
			t.Errorf("rank %d after a mismatch: %v", r, err)
		}
	}
}

// TestHostBadArguments has one rank pass arguments the transport refuses:
// every rank fails at once (no waiting for a deadline).
func TestHostBadArguments(t *testing.T) {
	ts, _ := NewHostGroup(3)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	seg := make([]Segment, 3)
	buf := func(h *HostTransport) *memview.StridedMemoryView { v, _ := h.Alloc(4, nil); return v }
	cases := []struct {
		name string
		call func(h *HostTransport) error
		want error
	}{
		{"2 segments", func(h *HostTransport) error { return h.AllToAll(ctx, buf(h), buf(h), seg[:2], seg, nil) }, ErrSegment},
		{"nil recv", func(h *HostTransport) error { return h.AllToAll(ctx, buf(h), nil, seg, seg, nil) }, ErrNil},
		{"segment past the end", func(h *HostTransport) error {
			return h.AllToAll(ctx, buf(h), buf(h), []Segment{{3, 2}, {}, {}}, seg, nil)
		}, ErrSegment},
		{"send is recv", func(h *HostTransport) error { b := buf(h); return h.AllToAll(ctx, b, b, seg, seg, nil) }, ErrBuffer},
		{"2-D buffer", func(h *HostTransport) error {
			v, _ := memview.FromHost(make([]byte, 4), mustLayout(layout.New([]int64{2, 2}, nil, 1)))
			return h.AllToAll(ctx, buf(h), v, seg, seg, nil)
		}, ErrBuffer},
	}
	for _, c := range cases {
		start := time.Now()
		errs := exchange(ts, func(h *HostTransport) error {
			if h.Rank() == 1 {
				return c.call(h)
			}
			return h.AllToAll(ctx, buf(h), buf(h), seg, seg, nil)
		})
		if !errors.Is(errs[1], c.want) {
			t.Errorf("%s: rank 1: %v, want %v", c.name, errs[1], c.want)
		}
		for _, r := range []int{0, 2} {
			if !errors.Is(errs[r], ErrSegment) {
				t.Errorf("%s: rank %d: %v", c.name, r, errs[r])
			}
		}
		if el := time.Since(start); el > 5*time.Second {
			t.Errorf("%s: took %v", c.name, el)
		}
	}
}

// TestHostDeadRank leaves rank 2 out of an exchange: ranks 0 and 1 give
// up at their deadline with ErrTimeout and context.DeadlineExceeded, and
// every later exchange, rank 2's included, fails with the same error.
func TestHostDeadRank(t *testing.T) {
	ts, _ := NewHostGroup(3)
	seg := make([]Segment, 3)
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	errs := exchange(ts[:2], func(h *HostTransport) error {
		b, _ := h.Alloc(1, nil)
		c, _ := h.Alloc(1, nil)
		return h.AllToAll(ctx, b, c, seg, seg, nil)
	})
	if el := time.Since(start); el > 5*time.Second {
		t.Errorf("the ranks took %v to give up", el)
	}
	for r, err := range errs {
		if !errors.Is(err, ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("rank %d: %v", r, err)
		}
	}
	later := exchange(ts, func(h *HostTransport) error {
		b, _ := h.Alloc(1, nil)
		c, _ := h.Alloc(1, nil)
		return h.AllToAll(context.Background(), b, c, seg, seg, nil)
	})
	for r, err := range later {
		if !errors.Is(err, ErrTimeout) {
			t.Errorf("rank %d, later: %v", r, err)
		}
	}
}

// TestHostAbortWakes aborts a rank while the others wait with no
// deadline: they return ErrAborted at once. Close breaks a group too.
func TestHostAbortWakes(t *testing.T) {
	for _, closeIt := range []bool{false, true} {
		ts, _ := NewHostGroup(4)
		seg := make([]Segment, 4)
		done := make(chan []error)
		go func() {
			done <- exchange(ts[:3], func(h *HostTransport) error {
				b, _ := h.Alloc(1, nil)
				c, _ := h.Alloc(1, nil)
				return h.AllToAll(context.Background(), b, c, seg, seg, nil)
			})
		}()
		time.Sleep(10 * time.Millisecond)
		dead := ts[3].(*HostTransport)
		want := ErrAborted
		if closeIt {
			dead.Close()
			want = ErrClosed
		} else {
			dead.Abort(nil)
		}
		select {
		case errs := <-done:
			for r, err := range errs {
				if !errors.Is(err, ErrAborted) || !errors.Is(err, want) {
					t.Errorf("close %v: rank %d: %v", closeIt, r, err)
				}
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("close %v: the ranks still wait", closeIt)
		}
	}
}

func TestHostGroupErrors(t *testing.T) {
	for _, n := range []int{0, -1, MaxHostRanks + 1} {
		if _, err := NewHostGroup(n); !errors.Is(err, ErrMesh) {
			t.Errorf("NewHostGroup(%d): %v", n, err)
		}
	}
	ts, _ := NewHostGroup(1)
	if _, err := ts[0].Alloc(-1, nil); !errors.Is(err, ErrBuffer) {
		t.Errorf("Alloc(-1): %v", err)
	}
	v, err := ts[0].Alloc(0, nil)
	if err != nil || v.Shape()[0] != 0 {
		t.Errorf("Alloc(0): %v, %v", v, err)
	}
}

// TestHostTimeoutWaitsForReaders has rank 1 pass the first barrier of an
// exchange, hold a reader of the others' send buffers and never reach the
// second barrier: rank 0 gives up at its deadline but returns only once
// no rank reads its send buffer any more.
func TestHostTimeoutWaitsForReaders(t *testing.T) {
	ts, _ := NewHostGroup(2)
	h0, h1 := ts[0].(*HostTransport), ts[1].(*HostTransport)
	g := h0.g
	seg := make([]Segment, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		b, _ := h0.Alloc(1, nil)
		c, _ := h0.Alloc(1, nil)
		done <- h0.AllToAll(ctx, b, c, seg, seg, nil)
	}()
	b, _ := h1.Alloc(1, nil)
	if err := g.barrier(context.Background(), 1, "test", &hostSlot{send: b, sendSeg: seg, recvSeg: seg}); err != nil {
		t.Fatal(err)
	}
	if err := g.startCopy(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		t.Fatalf("rank 0 returned while rank 1 still reads: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	g.endCopy()
	select {
	case err := <-done:
		if !errors.Is(err, ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("rank 0: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("rank 0 still waits")
	}
	if err := g.startCopy(); !errors.Is(err, ErrTimeout) {
		t.Errorf("a reader starting after the break: %v", err)
	}
}
