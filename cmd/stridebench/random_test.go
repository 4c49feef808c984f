package main

import (
	"math"
	"reflect"
	"strings"
	"testing"
)

func TestRandomDeterministic(t *testing.T) {
	for _, views := range []bool{false, true} {
		a := randomCases(randomSpec{N: 20, Seed: 42, Views: views, Bytes: randDefaultBytes})
		b := randomCases(randomSpec{N: 20, Seed: 42, Views: views, Bytes: randDefaultBytes})
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("views=%v: two runs with seed 42 differ", views)
		}
		// Case i does not depend on how many cases are made.
		c := randomCases(randomSpec{N: 5, Seed: 42, Views: views, Bytes: randDefaultBytes})
		if !reflect.DeepEqual(a[:5], c) {
			t.Errorf("views=%v: the first 5 of 20 cases differ from 5 cases", views)
		}
		d := randomCases(randomSpec{N: 20, Seed: 43, Views: views, Bytes: randDefaultBytes})
		same := 0
		for i := range a {
			if a[i].String()[strings.IndexByte(a[i].String(), ' '):] == d[i].String()[strings.IndexByte(d[i].String(), ' '):] {
				same++
			}
		}
		if same > 2 {
			t.Errorf("views=%v: seeds 42 and 43 give %d identical cases of 20", views, same)
		}
	}
}

func TestRandomNames(t *testing.T) {
	for _, tc := range []struct {
		seed   uint64
		i      int
		views  bool
		target int64
		want   string
	}{
		{42, 7, false, randDefaultBytes, "rand-s42-i7"},
		{1, 0, true, randDefaultBytes, "randv-s1-i0"},
		{3, 2, false, 1 << 20, "rand-s3-i2-t1048576"},
	} {
		if got := randomCase(tc.seed, tc.i, tc.views, tc.target).Name; got != tc.want {
			t.Errorf("name %q, want %q", got, tc.want)
		}
	}
}

// TestRandomRanges checks that random cases stay in their documented
// ranges, build, and move about the target.
func TestRandomRanges(t *testing.T) {
	items := map[int]bool{}
	ranks := map[int]bool{}
	primes, sliced, flipped := 0, 0, 0
	for _, target := range []int64{randDefaultBytes, 1 << 20} {
		for _, views := range []bool{false, true} {
			for _, c := range randomCases(randomSpec{N: 150, Seed: 7, Views: views, Bytes: target}) {
				b, err := buildCase(c)
				if err != nil {
					t.Fatalf("%v: %v", c, err)
				}
				shape := b.Src.Shape()
				r := len(shape)
				ranks[r] = true
				items[b.Item] = true
				if r < randMinRank || r > randMaxRank {
					t.Errorf("%v: rank %d", c, r)
				}
				for _, e := range shape {
					if e < randMinExtent || e > randMaxExtent {
						t.Errorf("%v: extent %d outside [%d, %d]", c, e, randMinExtent, randMaxExtent)
					}
					if isPrime(e) {
						primes++
					}
				}
				ratio := float64(b.Moved) / float64(target)
				if math.Abs(math.Log(ratio)) > math.Log(2) {
					t.Errorf("%v moves %d bytes, more than a factor 2 from the target %d", c, b.Moved, target)
				}
				if b.SrcBytes > randMaxSliceFactor*b.Moved+int64(r)*b.Moved/2 {
					t.Errorf("%v: src array %d bytes for %d moved", c, b.SrcBytes, b.Moved)
				}
				perm := c.Src[len(c.Src)-1]
				if perm.Kind == opFlip {
					flipped++
					perm = c.Src[len(c.Src)-2]
				}
				if perm.Kind != opPerm || isIdentity(ints(perm.Args)) {
					t.Errorf("%v: no non-identity permutation", c)
				}
				if c.Src[0].Kind == opSlice {
					sliced++
					if !views {
						t.Errorf("%v: sliced without -random-views", c)
					}
				}
			}
		}
	}
	for _, want := range []int{1, 2, 3, 4, 8, 12, 16} {
		if !items[want] {
			t.Errorf("no random case has item size %d", want)
		}
	}
	for r := 3; r <= randMaxRank; r++ {
		if !ranks[r] {
			t.Errorf("no random case has rank %d", r)
		}
	}
	if primes == 0 || sliced == 0 || flipped == 0 {
		t.Errorf("primes %d, sliced %d, flipped %d: want some of each", primes, sliced, flipped)
	}
}

func TestNearestPrime(t *testing.T) {
	for _, tc := range [][2]int64{{1, 2}, {2, 2}, {4, 3}, {9, 7}, {24, 23}, {25, 23}, {299, 293}, {1000, 293}} {
		if got := nearestPrime(tc[0]); got != tc[1] {
			t.Errorf("nearestPrime(%d) = %d, want %d", tc[0], got, tc[1])
		}
	}
}
