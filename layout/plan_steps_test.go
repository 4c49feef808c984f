package layout

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"testing"

	"pgregory.net/rapid"
)

// Each planner step must keep the copy's meaning: the set of (dst byte, src
// byte) pairs a joint form addresses. These properties check every step on
// its own, on random joint forms, against a brute-force enumeration.

// pairs returns the (dst byte, src byte) pairs of j, sorted.
func (j *joint) pairs() [][2]int64 {
	var out [][2]int64
	idx := make([]int64, j.n())
	vol := int64(1)
	for _, e := range j.shape {
		vol *= e
	}
	for v := int64(0); v < vol; v++ {
		r := v
		d, s := j.dOff, j.sOff
		for k := j.n() - 1; k >= 0; k-- {
			idx[k] = r % j.shape[k]
			r /= j.shape[k]
			d += idx[k] * j.ds[k]
			s += idx[k] * j.ss[k]
		}
		for b := int64(0); b < j.item; b++ {
			out = append(out, [2]int64{d*j.item + b, s*j.item + b})
		}
	}
	sort.Slice(out, func(a, b int) bool {
		if out[a][0] != out[b][0] {
			return out[a][0] < out[b][0]
		}
		return out[a][1] < out[b][1]
	})
	return out
}

func samePairs(a, b [][2]int64) error {
	if len(a) != len(b) {
		return fmt.Errorf("%d pairs, want %d", len(b), len(a))
	}
	for i := range a {
		if a[i] != b[i] {
			return fmt.Errorf("pair %d is %v, want %v", i, b[i], a[i])
		}
	}
	return nil
}

// genJoint draws a joint form of up to 4 dims and 256 elements whose
// offsets keep every element offset non-negative (as joinDims leaves them).
func genJoint(t *rapid.T, ordered bool) joint {
	n := rapid.IntRange(1, 4).Draw(t, "n")
	j := joint{item: int64(rapid.SampledFrom([]int{1, 2, 3, 4, 8, 12, 16}).Draw(t, "item"))}
	vol := int64(1)
	for k := 0; k < n; k++ {
		e := int64(rapid.IntRange(2, 6).Draw(t, "e"))
		if vol*e > 256 {
			break
		}
		vol *= e
		j.shape = append(j.shape, e)
		j.ds = append(j.ds, int64(rapid.IntRange(-40, 40).Filter(func(x int) bool { return x != 0 }).Draw(t, "d")))
		j.ss = append(j.ss, int64(rapid.IntRange(-40, 40).Draw(t, "s")))
	}
	if ordered {
		orderDims(&j)
	}
	for k := range j.shape {
		j.dOff += max(-j.ds[k], 0) * (j.shape[k] - 1)
		j.sOff += max(-j.ss[k], 0) * (j.shape[k] - 1)
	}
	return j
}

func TestPropFlipDims(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		j := genJoint(t, false)
		want := j.pairs()
		flipDims(&j)
		if err := samePairs(want, j.pairs()); err != nil {
			t.Fatal(err)
		}
		for k := range j.shape {
			if j.ds[k] < 0 && j.ss[k] <= 0 {
				t.Fatalf("dim %d still backwards: %d %d", k, j.ds[k], j.ss[k])
			}
		}
	})
}

func TestPropOrderDims(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		j := genJoint(t, false)
		want := j.pairs()
		orderDims(&j)
		if err := samePairs(want, j.pairs()); err != nil {
			t.Fatal(err)
		}
		for k := 1; k < j.n(); k++ {
			if uabs(j.ds[k-1]) < uabs(j.ds[k]) {
				t.Fatalf("not ordered: %v", j.ds)
			}
		}
	})
}

func TestPropCoalesce(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		j := genJoint(t, true)
		// Make merges likely: sometimes give dim k the strides that merge it
		// into dim k+1.
		for k := 0; k+1 < j.n(); k++ {
			if rapid.Bool().Draw(t, "mergeable") {
				j.ds[k], j.ss[k] = j.shape[k+1]*j.ds[k+1], j.shape[k+1]*j.ss[k+1]
			}
		}
		j.dOff, j.sOff = 0, 0
		for k := range j.shape {
			j.dOff += max(-j.ds[k], 0) * (j.shape[k] - 1)
			j.sOff += max(-j.ss[k], 0) * (j.shape[k] - 1)
		}
		want := j.pairs()
		before := j.n()
		coalesce(&j)
		if err := samePairs(want, j.pairs()); err != nil {
			t.Fatal(err)
		}
		for k := 0; k+1 < j.n(); k++ {
			if j.ds[k] == j.shape[k+1]*j.ds[k+1] && j.ss[k] == j.shape[k+1]*j.ss[k+1] {
				t.Fatalf("dims %d,%d still mergeable (from %d dims)", k, k+1, before)
			}
		}
	})
}

func TestPropRecut(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		j := genJoint(t, true)
		flipDims(&j)
		orderDims(&j)
		coalesce(&j)
		aD := int64(rapid.SampledFrom([]int{1, 2, 4, 8, 16}).Draw(t, "aD"))
		aS := int64(rapid.SampledFrom([]int{1, 2, 4, 8, 16}).Draw(t, "aS"))
		want := j.pairs()
		item := j.item
		recut(&j, aD, aS)
		if err := samePairs(want, j.pairs()); err != nil {
			t.Fatal(err)
		}
		// Every element address is aligned to the element's natural
		// alignment, given the views' alignments.
		// Element offsets are multiples of the element, so every element
		// address is aligned to natAlign(element) when the views' lowest
		// bytes are: that alignment must not exceed what they have.
		if w := natAlign(j.item); j.item > MaxVectorBytes && j.item != item || w > aD || w > aS {
			t.Fatalf("element %d bytes (from %d) with alignments %d/%d", j.item, item, aD, aS)
		}
	})
}

// TestPropBoxTile checks chooseTile's post-conditions and that BoxSides
// describes the tile's elements exactly: every element of a whole tile is
// in one run of each side, and a run's elements are Step apart.
func TestPropBoxTile(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 5).Draw(t, "n")
		shape := make([]int64, n)
		for k := range shape {
			shape[k] = int64(rapid.IntRange(2, 40).Draw(t, "e"))
		}
		item := int64(rapid.SampledFrom([]int{1, 2, 3, 4, 8, 12, 16}).Draw(t, "item"))
		// src: a permutation of a dense layout, maybe with a gap or a
		// reversed dim; dst dense C (the canonical order).
		perm := rapid.Permutation(seqInts(n)).Draw(t, "perm")
		ss := make([]int64, n)
		st := int64(1)
		step := int64(rapid.SampledFrom([]int{1, 1, 2, -1}).Draw(t, "step"))
		for i := n - 1; i >= 0; i-- {
			ss[perm[i]] = st * step
			st *= shape[perm[i]]
			step = 1
		}
		ds := make([]int64, n)
		st = 1
		for k := n - 1; k >= 0; k-- {
			ds[k] = st
			st *= shape[k]
		}
		cap := int64(rapid.SampledFrom([]int{1 << 10, 4 << 10, 16 << 10}).Draw(t, "cap"))
		tile := chooseTile(nil, shape, ds, ss, item, cap)
		vol := int64(1)
		for k, e := range tile {
			if e < 1 || e > shape[k] {
				t.Fatalf("tile %v of shape %v", tile, shape)
			}
			vol *= e
		}
		src, dst := BoxSides(shape, ds, ss, tile)
		if vol > 1 && vol*item > cap {
			t.Fatalf("tile %v of %d bytes over %d", tile, vol*item, cap)
		}
		if BoxSharedBytes(src, dst, tile, item, 8) > MaxBoxSharedBytes {
			t.Fatalf("tile %v needs %d bytes of shared memory", tile, BoxSharedBytes(src, dst, tile, item, 8))
		}
		for _, sd := range []struct {
			b       BoxSide
			strides []int64
		}{{src, ss}, {dst, ds}} {
			checkSide(t, sd.b, shape, sd.strides, tile, vol)
		}
		checkSlots(t, src, ss, tile, item)
	})
}

// checkSlots checks BoxSrcWeights' shared-memory layout of the src runs:
// every run's slot address minus its src address is the same modulo 4 (so
// one phase per tile aligns them all), and for each of the four phases the
// aligned words that cover a contiguous run (the bytes of a strided one) lie
// within the data bytes and overlap no other run's.
func checkSlots(t *rapid.T, src BoxSide, ss, tile []int64, item int64) {
	w := make([]int64, len(tile))
	data := BoxSrcWeights(&src, ss, tile, item, w)
	if d2 := BoxSrcWeights(&src, nil, tile, item, nil); d2 != data {
		t.Fatalf("data bytes %d with strides, %d without", data, d2)
	}
	contig := src.Step == 1 || src.Step == -1
	type span struct{ lo, hi int64 }
	var spans [4][]span
	phase := int64(-1)
	for r := int64(0); r < src.Runs; r++ {
		x := r
		slot, addr := int64(0), int64(0)
		for i := src.NRun; i < src.NDims; i++ {
			k := src.Order[i]
			c := x % tile[k]
			x /= tile[k]
			slot += c * w[k]
			addr += c * ss[k] * item
		}
		if src.Step == -1 {
			addr -= (src.RunLen - 1) * item // the run's lowest byte
		}
		if ph := ((slot-addr)%4 + 4) % 4; phase < 0 {
			phase = ph
		} else if ph != phase {
			t.Fatalf("run %d: slot %d, src byte %d: phase %d, run 0's %d (weights %v)", r, slot, addr, ph, phase, w)
		}
		for ph := int64(0); ph < 4; ph++ {
			lo, hi := slot+ph, slot+ph+src.RunLen*item
			if contig {
				lo, hi = lo&^3, (hi+3)&^3
			}
			if lo < 0 || hi > data {
				t.Fatalf("run %d at phase %d: bytes [%d, %d) outside the %d data bytes", r, ph, lo, hi, data)
			}
			spans[ph] = append(spans[ph], span{lo, hi})
		}
	}
	for ph := range spans {
		s := spans[ph]
		slices.SortFunc(s, func(a, b span) int { return cmp.Compare(a.lo, b.lo) })
		for i := 1; i < len(s); i++ {
			if s[i].lo < s[i-1].hi {
				t.Fatalf("phase %d: runs' words [%d, %d) and [%d, %d) overlap (weights %v, tile %v)", ph, s[i-1].lo, s[i-1].hi, s[i].lo, s[i].hi, w, tile)
			}
		}
	}
}

func seqInts(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}

// checkSide enumerates a whole tile (at the origin) through the side's run
// structure and checks it visits each element once, with run elements Step
// apart in memory.
func checkSide(t *rapid.T, b BoxSide, shape, strides, tile []int64, vol int64) {
	if b.RunLen*b.Runs != vol {
		t.Fatalf("runs %d × %d for a tile of %d", b.Runs, b.RunLen, vol)
	}
	seen := map[string]bool{}
	coord := make([]int64, len(shape))
	for r := int64(0); r < b.Runs; r++ {
		// run index over Order[NRun:], first fastest
		x := r
		for i := b.NRun; i < b.NDims; i++ {
			k := b.Order[i]
			coord[k] = x % tile[k]
			x /= tile[k]
		}
		var first int64
		for e := int64(0); e < b.RunLen; e++ {
			y := e
			for i := 0; i < b.NRun; i++ {
				k := b.Order[i]
				coord[k] = y % tile[k]
				y /= tile[k]
			}
			off := int64(0)
			for k := range coord {
				off += coord[k] * strides[k]
			}
			if e == 0 {
				first = off
			} else if off != first+e*b.Step {
				t.Fatalf("run %d element %d at %d, want %d + %d·%d (tile %v strides %v)", r, e, off, first, e, b.Step, tile, strides)
			}
			key := fmt.Sprint(coord)
			if seen[key] {
				t.Fatalf("element %v twice", coord)
			}
			seen[key] = true
		}
	}
}

func TestLargestDivisor(t *testing.T) {
	for e := int64(1); e < 300; e++ {
		for lim := int64(1); lim < 310; lim += 7 {
			want := int64(1)
			for d := int64(1); d <= min(e, lim); d++ {
				if e%d == 0 {
					want = d
				}
			}
			if got := largestDivisor(e, lim); got != want {
				t.Fatalf("largestDivisor(%d, %d) = %d, want %d", e, lim, got, want)
			}
		}
	}
}
