package main

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/stridekit/stridekit/layout"
)

// This file generates random cases: N-d permutations of arrays of about a
// target size, optionally with slices and flips, reproducible from a seed
// and an index.

// Ranges of the random cases.
const (
	randMinRank   = 2
	randMaxRank   = 8
	randMinExtent = 2
	randMaxExtent = 300
	// randDefaultBytes is the default size a random case moves.
	randDefaultBytes = 256 << 20
	// randMaxSliceFactor bounds how much larger than the view a sliced
	// source array may be.
	randMaxSliceFactor = 4
)

// randItemTypes are the dtypes of random cases, one per item size.
var randItemTypes = []string{"uint8", "float16", "opaque3", "float32", "float64", "opaque12", "complex128"}

// randomSpec says which random cases to make.
type randomSpec struct {
	N     int    `json:"n"`     // how many
	Seed  uint64 `json:"seed"`  // the seed; case i uses the stream (Seed, i)
	Views bool   `json:"views"` // add slices and flips to the permutations
	Bytes int64  `json:"bytes"` // the bytes each case should move (about)
}

// randomCases returns cases 0 … N-1 of spec. Case i depends only on the
// seed, i, Views and Bytes, so any one of them is reproduced by running
// the same flags and selecting it with -case.
func randomCases(spec randomSpec) []*Case {
	out := make([]*Case, spec.N)
	for i := range out {
		out[i] = randomCase(spec.Seed, i, spec.Views, spec.Bytes)
	}
	return out
}

// randomName names case index of a seed: "rand-s42-i7", "randv-…" with
// views, and "-t<bytes>" appended for a target other than the default.
func randomName(seed uint64, index int, views bool, target int64) string {
	kind := "rand"
	if views {
		kind = "randv"
	}
	n := fmt.Sprintf("%s-s%d-i%d", kind, seed, index)
	if target != randDefaultBytes {
		n += fmt.Sprintf("-t%d", target)
	}
	return n
}

// randomCase builds case index of seed: a rank in randMinRank…randMaxRank
// (at least the rank the target needs with extents up to randMaxExtent),
// an item size from randItemTypes, extents in randMinExtent…randMaxExtent
// (some of them primes) whose product lands near the target, and a
// permutation that is not the identity. With views, some dims are sliced
// (steps 2, 3, -1, -2, sometimes with an offset) and one may be flipped.
func randomCase(seed uint64, index int, views bool, target int64) *Case {
	r := rand.New(rand.NewPCG(seed, uint64(index)))
	dt, _ := layout.ParseDType(randItemTypes[r.IntN(len(randItemTypes))])
	item := int64(dt.Itemsize())
	elems := max(float64(target)/float64(item), 4)
	lo := randMinRank
	for lo < randMaxRank && math.Pow(randMaxExtent, float64(lo)) < elems {
		lo++
	}
	hi := randMaxRank
	for hi > lo && math.Pow(randMinExtent, float64(hi)) > elems {
		hi--
	}
	rank := lo + r.IntN(hi-lo+1)
	view := randomExtents(r, rank, elems)

	perm := r.Perm(rank)
	for isIdentity(perm) {
		perm = r.Perm(rank)
	}
	c := &Case{Name: randomName(seed, index, views, target), DType: dt}
	base := slices.Clone(view)
	if views {
		items := make([]sliceItem, rank)
		factor := int64(1)
		sliced := false
		for d := range items {
			items[d] = sliceItem{Start: layout.Omit, Stop: layout.Omit, Step: 1}
			if r.IntN(3) != 0 {
				continue
			}
			step := []int64{2, 3, -1, -2}[r.IntN(4)]
			a := max(step, -step)
			if factor*a > randMaxSliceFactor {
				continue
			}
			factor *= a
			skip := int64(r.IntN(2)) // elements left out at the start
			base[d] = a*view[d] + skip
			if step > 0 {
				if skip > 0 {
					items[d].Start = skip
				}
			} else if skip > 0 {
				items[d].Start = base[d] - 1 - skip
			}
			items[d].Step = step
			sliced = true
		}
		if sliced {
			c.Src = append(c.Src, viewOp{Kind: opSlice, Items: items})
		}
	}
	c.Src = append(c.Src, viewOp{Kind: opPerm, Args: int64s(perm)})
	if views && r.IntN(4) == 0 {
		c.Src = append(c.Src, viewOp{Kind: opFlip, Args: []int64{int64(r.IntN(rank))}})
	}
	c.Base = base
	return c
}

// randomExtents draws rank extents whose product is near elems: each is
// drawn around the geometric mean still needed, the last one fills the
// remainder, and the best of several tries is kept (within 20% of the
// target ends the search).
func randomExtents(r *rand.Rand, rank int, elems float64) []int64 {
	var best []int64
	bestErr := math.Inf(1)
	for range 64 {
		ext := make([]int64, rank)
		rem := elems
		for k := range ext {
			left := float64(rank - k)
			g := math.Pow(rem, 1/left)
			if left > 1 {
				g *= math.Exp(r.Float64()*1.4 - 0.7)
			}
			e := int64(math.Round(g))
			if r.IntN(3) == 0 {
				e = nearestPrime(e)
			}
			e = min(max(e, randMinExtent), randMaxExtent)
			ext[k] = e
			rem /= float64(e)
		}
		vol := 1.0
		for _, e := range ext {
			vol *= float64(e)
		}
		if d := math.Abs(math.Log(vol / elems)); d < bestErr {
			best, bestErr = ext, d
		}
		if bestErr < math.Log(1.2) {
			break
		}
	}
	r.Shuffle(len(best), func(i, j int) { best[i], best[j] = best[j], best[i] })
	return best
}

// nearestPrime returns the prime nearest to n within the extent range
// (the smaller one on a tie).
func nearestPrime(n int64) int64 {
	n = min(max(n, randMinExtent), randMaxExtent)
	for d := int64(0); ; d++ {
		if n-d >= 2 && isPrime(n-d) {
			return n - d
		}
		if n+d <= randMaxExtent && isPrime(n+d) {
			return n + d
		}
	}
}

func isPrime(n int64) bool {
	if n < 2 {
		return false
	}
	for p := int64(2); p*p <= n; p++ {
		if n%p == 0 {
			return false
		}
	}
	return true
}

func isIdentity(p []int) bool {
	for i, v := range p {
		if i != v {
			return false
		}
	}
	return true
}

func int64s(a []int) []int64 {
	out := make([]int64, len(a))
	for i, v := range a {
		out[i] = int64(v)
	}
	return out
}
