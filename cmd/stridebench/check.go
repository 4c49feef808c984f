package main

import (
	"bytes"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
)

// This file holds what the correctness check needs: the source pattern,
// the poison, and the windows of the destination that are compared.

// patternMask clears bit 6 of every source byte. No IEEE float built from
// such bytes is a NaN or an infinity (the top exponent bit sits in bit 6 of
// the top byte of float16, bfloat16, float32 and float64), so frameworks
// that canonicalise NaNs copy it bit for bit; and poisonByte, which has
// bit 6 set, can never be a source byte, so an unwritten destination byte
// is always caught.
const (
	patternMask = 0xBF
	poisonByte  = 0xE5
)

// Sizes of the correctness check: destinations up to fullCheckBytes are
// compared whole; larger ones in checkWindows random windows of
// checkWindowBytes plus edgeBytes at each end.
const (
	fullCheckBytes   = 64 << 20
	checkWindows     = 6
	checkWindowBytes = 1 << 20
	edgeBytes        = 4 << 10
)

// splitmix64 is the SplitMix64 output function: byte k of a pattern is byte
// k%8 (little-endian) of splitmix64(seed + k/8), masked with patternMask.
// peers.py computes the same bytes with NumPy.
func splitmix64(x uint64) uint64 {
	x += 0x9E3779B97F4A7C15
	x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9
	x = (x ^ (x >> 27)) * 0x94D049BB133111EB
	return x ^ (x >> 31)
}

// fillPattern writes the pattern of seed into b, in parallel for large b.
func fillPattern(b []byte, seed uint64) {
	const chunk = 8 << 20 // a multiple of 8
	n := int64(len(b))
	if n <= chunk {
		patternRange(b, seed, 0)
		return
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	for lo := int64(0); lo < n; lo += chunk {
		hi := min(lo+chunk, n)
		sem <- struct{}{}
		wg.Go(func() {
			patternRange(b[lo:hi], seed, lo)
			<-sem
		})
	}
	wg.Wait()
}

// patternRange writes pattern bytes at+0 … at+len(b)-1 into b; at is a
// multiple of 8.
func patternRange(b []byte, seed uint64, at int64) {
	w := uint64(at / 8)
	for i := 0; i < len(b); i += 8 {
		v := splitmix64(seed + w)
		w++
		for j := 0; j < 8 && i+j < len(b); j++ {
			b[i+j] = byte(v>>(8*j)) & patternMask
		}
	}
}

// caseSeed is the pattern seed of a case: a hash of its name.
func caseSeed(name string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(name))
	return h.Sum64()
}

// window is a byte range of the destination array.
type window struct{ Off, Len int64 }

// checkWindowsFor returns the windows of an n-byte destination that the
// check compares: all of it up to fullCheckBytes, else the first and last
// edgeBytes and checkWindows random windows of checkWindowBytes, sorted.
func checkWindowsFor(n int64, seed uint64) []window {
	if n <= fullCheckBytes {
		return []window{{0, n}}
	}
	r := rand.New(rand.NewPCG(seed, 0x636865636b)) // "check"
	ws := []window{{0, edgeBytes}, {n - edgeBytes, edgeBytes}}
	for range checkWindows {
		ws = append(ws, window{r.Int64N(n - checkWindowBytes + 1), checkWindowBytes})
	}
	slices.SortFunc(ws, func(a, b window) int { return int(a.Off - b.Off) })
	return ws
}

// compareWindow compares got with want (both the bytes of window w) and
// describes the first difference, or returns "".
func compareWindow(w window, got, want []byte) string {
	if bytes.Equal(got, want) {
		return ""
	}
	first, bad := -1, 0
	for i := range got {
		if got[i] != want[i] {
			if first < 0 {
				first = i
			}
			bad++
		}
	}
	what := ""
	if got[first] == poisonByte {
		what = " (never written)"
	}
	return fmt.Sprintf("dst byte %d is %#02x, want %#02x%s; %d of %d bytes differ in window [%d, %d)",
		w.Off+int64(first), got[first], want[first], what, bad, w.Len, w.Off, w.Off+w.Len)
}
