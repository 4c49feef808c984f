package main

import (
	"strings"
	"testing"
)

func TestSplitmix64(t *testing.T) {
	// The first outputs of SplitMix64 seeded with 0 (Steele, Lea and
	// Flood's reference sequence).
	want := []uint64{0xe220a8397b1dcdaf, 0x6e789e6aa1b965f4, 0x06c45d188009454f}
	for i, w := range want {
		if got := splitmix64(uint64(i) * 0x9E3779B97F4A7C15); got != w {
			t.Errorf("output %d: %#x, want %#x", i, got, w)
		}
	}
}

func TestFillPattern(t *testing.T) {
	const n = 20<<20 + 5 // several parallel chunks and a ragged end
	b := make([]byte, n)
	fillPattern(b, 99)
	ref := make([]byte, n)
	patternRange(ref, 99, 0)
	for i := range b {
		if b[i] != ref[i] {
			t.Fatalf("byte %d: parallel fill %#x, serial %#x", i, b[i], ref[i])
		}
		if b[i]&^patternMask != 0 || b[i] == poisonByte {
			t.Fatalf("byte %d = %#x has bit 6 set", i, b[i])
		}
	}
	// Byte k is byte k%8 of splitmix64(seed + k/8).
	for _, k := range []int{0, 7, 8, 12345, n - 1} {
		if want := byte(splitmix64(99+uint64(k/8))>>(8*(k%8))) & patternMask; b[k] != want {
			t.Errorf("byte %d = %#x, want %#x", k, b[k], want)
		}
	}
	other := make([]byte, 64)
	fillPattern(other, 100)
	if string(other) == string(b[:64]) {
		t.Error("seeds 99 and 100 give the same pattern")
	}
}

func TestCheckWindows(t *testing.T) {
	if ws := checkWindowsFor(fullCheckBytes, 1); len(ws) != 1 || ws[0] != (window{0, fullCheckBytes}) {
		t.Errorf("64 MiB: %v, want the whole buffer", ws)
	}
	const n = 1<<30 + 3
	ws := checkWindowsFor(n, 1)
	if len(ws) != checkWindows+2 {
		t.Fatalf("%d windows", len(ws))
	}
	if ws[0] != (window{0, edgeBytes}) || ws[len(ws)-1] != (window{n - edgeBytes, edgeBytes}) {
		t.Errorf("windows %v do not start with the first and end with the last %d bytes", ws, edgeBytes)
	}
	for i, w := range ws {
		if w.Off < 0 || w.Off+w.Len > n {
			t.Errorf("window %v outside [0, %d)", w, n)
		}
		if i > 0 && w.Off < ws[i-1].Off {
			t.Errorf("windows not sorted: %v", ws)
		}
	}
	again := checkWindowsFor(n, 1)
	for i := range ws {
		if ws[i] != again[i] {
			t.Fatalf("windows differ between calls: %v, %v", ws, again)
		}
	}
}

func TestCompareWindow(t *testing.T) {
	want := []byte{1, 2, 3, 4, 5}
	if msg := compareWindow(window{100, 5}, []byte{1, 2, 3, 4, 5}, want); msg != "" {
		t.Errorf("equal windows: %q", msg)
	}
	msg := compareWindow(window{100, 5}, []byte{1, 2, poisonByte, 4, 9}, want)
	for _, s := range []string{"dst byte 102", "0xe5", "want 0x03", "never written", "2 of 5 bytes"} {
		if !strings.Contains(msg, s) {
			t.Errorf("message %q does not say %q", msg, s)
		}
	}
}
