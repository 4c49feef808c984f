package main

import (
	"errors"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
)

// TestPeerCases: the default peer selection takes the named cases it
// names, every one builds and moves at most -shrink bytes, and random
// cases are added after them.
func TestPeerCases(t *testing.T) {
	ps, err := peerCases(regexp.MustCompile(defaultPeerCases), false, randomSpec{N: 3, Seed: 5, Bytes: 1 << 20}, 16<<20)
	if err != nil {
		t.Fatal(err)
	}
	named := 0
	for _, p := range ps {
		if p.Built == nil {
			t.Fatalf("%s: %v", p.Case.Name, p.Err)
		}
		if p.Built.Moved > 16<<20 {
			t.Errorf("%s moves %d bytes, want ≤ 16 MiB", p.Case.Name, p.Built.Moved)
		}
		if !p.Random {
			named++
		}
	}
	if named < 10 || len(ps) != named+3 {
		t.Errorf("%d named and %d random cases, want ≥ 10 and 3", named, len(ps)-named)
	}
	if ps, _ := peerCases(regexp.MustCompile(""), true, randomSpec{}, 0); len(ps) != 0 {
		t.Errorf("no named and no random: %d cases", len(ps))
	}
}

// TestPeerSummaryTorch checks that the summary counts a case as faster
// than PyTorch by time (PyTorch's time over stridekit's), and reports the
// count by % of each one's own memcpy beside it: a case faster by time but
// behind by % (PyTorch's baseline the slower) counts only in the first.
func TestPeerSummaryTorch(t *testing.T) {
	ok := func(best, rate, tm float64) *peerCaseResult {
		return &peerCaseResult{Status: statusOK, PctBest: best, PctBoth: best, TorchRate: rate, TorchTime: tm}
	}
	var b strings.Builder
	peerSummary(&b, []*peerCaseResult{ok(93, 0.99, 1.02), ok(80, 1.1, 1.2), ok(60, 0.8, 0.9), {Status: "error"}})
	if want := "faster than PyTorch on 2 of 3 (time; 1 by % of each one's own memcpy)"; !strings.Contains(b.String(), want) {
		t.Errorf("summary %q lacks %q", b.String(), want)
	}
}

// TestBoth: both calls each op n times, the two on different goroutines,
// and returns each one's first error.
func TestBoth(t *testing.T) {
	var na, nb atomic.Int32
	a := func() error { na.Add(1); return nil }
	b := func() error { nb.Add(1); return nil }
	if err := both(5, a, b); err != nil || na.Load() != 5 || nb.Load() != 5 {
		t.Fatalf("err %v, a ran %d times, b %d; want nil, 5, 5", err, na.Load(), nb.Load())
	}
	ea, eb := errors.New("a failed"), errors.New("b failed")
	err := both(3, func() error { return ea }, func() error { return eb })
	if !errors.Is(err, ea) || !errors.Is(err, eb) {
		t.Fatalf("err %v, want both ops' errors", err)
	}
}
