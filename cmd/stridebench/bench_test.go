package main

import (
	"math"
	"testing"
	"time"

	"github.com/stridekit/stridekit/kernels"
)

func TestMedian(t *testing.T) {
	for _, tc := range []struct {
		xs   []float64
		want float64
	}{{nil, 0}, {[]float64{3}, 3}, {[]float64{5, 1, 3}, 3}, {[]float64{4, 1, 3, 2}, 2.5}} {
		if got := median(tc.xs); got != tc.want {
			t.Errorf("median(%v) = %v, want %v", tc.xs, got, tc.want)
		}
	}
}

func TestPercentile(t *testing.T) {
	s := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	for _, tc := range [][2]float64{{0, 1}, {10, 1}, {11, 2}, {50, 5}, {100, 10}} {
		if got := percentile(s, tc[0]); got != tc[1] {
			t.Errorf("percentile %v = %v, want %v", tc[0], got, tc[1])
		}
	}
}

// TestMeasure drives measure with a fake clock: each operation takes 10 µs
// and every third sample is slowed down, which the median ignores.
func TestMeasure(t *testing.T) {
	var calls []int
	sample := 0
	tm, err := measure(21, 4, func(n int) (time.Duration, error) {
		calls = append(calls, n)
		d := time.Duration(n) * 10 * time.Microsecond
		if len(calls) > 2 {
			sample++
			if sample%3 == 0 {
				d *= 5
			}
		}
		return d, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// Warm-up (4), calibration (1), then batches that cover minBatchTime.
	if calls[0] != 4 || calls[1] != 1 {
		t.Fatalf("first calls %v, want warm-up 4 then 1", calls[:2])
	}
	wantBatch := int(minBatchTime/(10*time.Microsecond)) + 1
	if tm.Batch != wantBatch || len(calls) != 2+21 || calls[2] != wantBatch {
		t.Errorf("batch %d over %d calls, want %d over 23", tm.Batch, len(calls), wantBatch)
	}
	if math.Abs(tm.Median-10e-6) > 1e-12 || tm.Reps != 21 {
		t.Errorf("median %v s over %d reps, want 10 µs over 21", tm.Median, tm.Reps)
	}
}

func TestFillTimes(t *testing.T) {
	r := &result{Bytes: 1 << 30, RoofBytes: 3 << 29} // a[:, ::2]: 1.5 × memcpy's traffic
	fillTimes(r, timing{Median: 2e-3, Batch: 1, Reps: 30}, timing{Median: 1e-3})
	check := func(name string, got, want float64) {
		if math.Abs(got-want) > 1e-9*math.Abs(want) {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	check("TimeNs", r.TimeNs, 2e6)
	check("GBps", r.GBps, 2*float64(1<<30)/2e-3/1e9)
	check("PctMemcpy", r.PctMemcpy, 50)
	check("RooflineNs", r.RooflineNs, 0.75e6) // 3/4 of memcpy's 2·Bytes in 1 ms
	check("PctRoofline", r.PctRoofline, 37.5)
	check("RoofPctMemcpy", r.RoofPctMemcpy, 100/0.75)
}

func TestStartAlign(t *testing.T) {
	for _, tc := range [][2]int64{{0, 16}, {256, 16}, {4, 4}, {6, 2}, {3, 1}, {24, 8}} {
		if got := kernels.PtrAlign(uintptr(tc[0])); int64(got) != tc[1] {
			t.Errorf("kernels.PtrAlign(%d) = %d, want %d", tc[0], got, tc[1])
		}
	}
}

func TestPairCount(t *testing.T) {
	const l2 = 50 << 20
	for _, tc := range []struct {
		touched int64
		want    int
	}{
		{1 << 30, 1}, {4 * l2, 1}, {4*l2 - 1, 2}, {128 << 20, 2}, {l2, 4}, {l2 / 2, 8}, {4 << 10, 51200}, {1, maxPairs}, {0, 1},
	} {
		got := pairCount(tc.touched, l2)
		if got != tc.want {
			t.Errorf("pairCount(%d, %d) = %d, want %d", tc.touched, l2, got, tc.want)
		}
		if got > 1 && got < maxPairs && int64(got)*tc.touched < 4*l2 {
			t.Errorf("%d pairs of %d bytes cover less than four times the L2", got, tc.touched)
		}
	}
	if pairCount(1<<20, 0) != 1 {
		t.Error("no L2 size: more than one pair")
	}
}

// TestParseNvidiaRelease reads the release from the version file's first
// line for the proprietary and the open kernel module, and "" from text
// without one.
func TestParseNvidiaRelease(t *testing.T) {
	for _, c := range []struct{ text, want string }{
		{"NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.65.06  Sun Jul 27 06:54:38 UTC 2025\nGCC version: gcc 12\n", "580.65.06"},
		{"NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build  (dvs-builder@U22)\n", "580.159.04"},
		{"NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  Release Build\n580.1\n", ""},
		{"no module here 580.1\n", ""},
		{"", ""},
	} {
		if got := parseNvidiaRelease(c.text); got != c.want {
			t.Errorf("parseNvidiaRelease(%q) = %q, want %q", c.text, got, c.want)
		}
	}
}
