package layout

import (
	"fmt"
	"slices"
	"sort"
	"testing"

	"github.com/stridekit/stridekit/internal/tilegeom"
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

// TestPropFoldRun: foldRun keeps the copy's meaning, folds only into the
// vector tile and, where it does not fold, leaves the form as it was, on
// permutations of dense byte images with a common innermost run of 2 to 4
// bytes, some of them offset, strided or unaligned.
func TestPropFoldRun(t *testing.T) {
	folded := 0
	rapid.Check(t, func(t *rapid.T) {
		// aim: draws the vector tile takes once folded (3-byte runs, tile-
		// sized fast dims, unit steps, aligned views), else anything.
		aim := rapid.Bool().Draw(t, "aim")
		pick := func(label string, aimed int, any []int) int64 {
			if aim {
				return int64(aimed)
			}
			return int64(rapid.SampledFrom(any).Draw(t, label))
		}
		outer := rapid.IntRange(2, 3).Draw(t, "outer")
		run := pick("run", 3, []int{3, 3, 2, 4})
		step := pick("step", 1, []int{1, 1, 2})
		a := pick("align", 16, []int{1, 4, 16})
		shape := make([]int64, outer)
		for k := range shape {
			shape[k] = int64(rapid.IntRange(2, 12).Draw(t, "e"))
			if k < 2 && (aim || rapid.Bool().Draw(t, "tile-sized")) {
				shape[k] = 4 * int64(rapid.IntRange(10, 17).Draw(t, "e/4"))
			}
		}
		perm := rapid.Permutation([]int{0, 1, 2}[:outer]).Draw(t, "perm")
		j := joint{item: 1, dOff: run * pick("dst off", 0, []int{0, 1, 4}), sOff: run * pick("src off", 4, []int{0, 1, 4})}
		ds, ss := make([]int64, outer), make([]int64, outer)
		d, s := run, run*step
		for k := outer - 1; k >= 0; k-- {
			ds[k], d = d, d*shape[k]
			ss[perm[k]], s = s, s*shape[perm[k]]
		}
		j.shape, j.ds, j.ss = append(shape, run), append(ds, 1), append(ss, 1)
		orderDims(&j)
		coalesce(&j)
		recut(&j, a, a)
		if !transposing(&j) {
			return
		}
		want, before := j.pairs(), slices.Clone(j.shape)
		bd, bs, bo := slices.Clone(j.ds), slices.Clone(j.ss), [2]int64{j.dOff, j.sOff}
		foldRun(&j, a, a)
		if err := samePairs(want, j.pairs()); err != nil {
			t.Fatal(err)
		}
		if j.item == 3 {
			folded++
			if _, _, ok := tileOf(&j, a, a); !ok {
				t.Fatalf("folded into %v, which the vector tile does not take", j.shape)
			}
		} else if !slices.Equal(j.shape, before) || !slices.Equal(j.ds, bd) || !slices.Equal(j.ss, bs) || bo != [2]int64{j.dOff, j.sOff} {
			t.Fatalf("unfolded form changed: %v %v %v -> %v %v %v", before, bd, bs, j.shape, j.ds, j.ss)
		}
	})
	if folded == 0 {
		t.Error("no draw folded")
	}
}

// TestPropBoxTile checks chooseTile's post-conditions: extents within the
// dims, the data within the cap, the shared memory within what a block
// gets, and at most tilegeom.MaxRagged ragged dims outside either side's
// runs. (internal/tilegeom checks that a tile's sides and slots describe
// its elements exactly, for any tile.)
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
		src, dst := tilegeom.BoxSides(shape, ds, ss, tile)
		tilegeom.CutDstRuns(&dst, &src, shape, tile, item)
		if vol > 1 && vol*item > cap {
			t.Fatalf("tile %v of %d bytes over %d", tile, vol*item, cap)
		}
		if b := tilegeom.BoxSharedBytes(src, dst, tile, item, tilegeom.WordGrain, 8); b > tilegeom.MaxBoxSharedBytes {
			t.Fatalf("tile %v needs %d bytes of shared memory", tile, b)
		}
		for _, b := range []*tilegeom.BoxSide{&src, &dst} {
			if b.RunLen*b.Runs != vol {
				t.Fatalf("runs %d × %d for a tile of %d", b.Runs, b.RunLen, vol)
			}
			if _, _, ok := tilegeom.BoxRagged(shape, tile, b); !ok {
				t.Fatalf("tile %v of shape %v: over %d ragged dims outside the runs", tile, shape, tilegeom.MaxRagged)
			}
		}
		// The tile moves no more sectors than the first candidate (skew 1).
		if got, first := sectorsOf(tile, shape, ds, ss, item), sectorsOf(firstCandidate(shape, ds, ss, item, cap), shape, ds, ss, item); got > first {
			t.Fatalf("tile %v moves %d sectors, the first candidate %d", tile, got, first)
		}
	})
}

// firstCandidate returns the tile chooseTile grows with skew 1, with
// growSpan where chooseTile grows its tiles with it, and with cut dst runs
// where it sizes them so.
func firstCandidate(shape, ds, ss []int64, item, cap int64) []int64 {
	skews := boxSkews[:]
	small := smallCopy(shape, item)
	if small {
		skews = skews[:1]
	}
	out, r := chooseTileOf(nil, shape, ds, ss, item, cap, skews, false, false)
	span := r.cut && shortSrcRuns(out, shape, ss, item)
	if span {
		grown, rs := chooseTileOf(nil, shape, ds, ss, item, cap, skews, true, false)
		if span = keepGrown(out, grown, shape, ds, ss, item); span {
			out, r = grown, rs
		}
	}
	cutDst := !small && regrowCutDst(out, r, shape, ds, ss, item)
	t, _ := chooseTileOf(nil, shape, ds, ss, item, cap, boxSkews[:1], span, cutDst)
	return t
}

func sectorsOf(tile, shape, ds, ss []int64, item int64) int64 {
	return tileSectors(tile, shape, ds, ss, tilegeom.SortedDims(nil, ss), tilegeom.SortedDims(nil, ds), item)
}

// TestChooseTileSectors: a 6-d float64 permutation whose first candidate
// is evened out to half its size (extents 17 and 5 cut into 9+8 and 3+2)
// gets the tile of a larger skew, which moves fewer sectors (measured 1.5
// times faster on an H100), unless the copy is small.
func TestChooseTileSectors(t *testing.T) {
	shape := []int64{6, 240, 17, 8, 5, 9}
	ds := []int64{1468800, 6120, 360, 45, 9, 1}
	ss := []int64{1, 816, 6, 102, 195840, 979200}
	const item, cap = 8, 24 << 10
	first := firstCandidate(shape, ds, ss, item, cap)
	if !slices.Equal(first, []int64{6, 1, 9, 1, 3, 9}) {
		t.Fatalf("first candidate %v, want [6 1 9 1 3 9]", first)
	}
	tile := chooseTile(nil, shape, ds, ss, item, cap)
	got, was := sectorsOf(tile, shape, ds, ss, item), sectorsOf(first, shape, ds, ss, item)
	if slices.Equal(tile, first) || 100*got >= 97*was {
		t.Fatalf("tile %v (%d sectors), want one with under 97%% of the first candidate's %v (%d)", tile, got, first, was)
	}
	// The same layout with 2 rather than 240 of its second dim moves 574
	// KiB: under boxChoiceBytes, it keeps the first candidate.
	shape[1] = 2
	if tile, first := chooseTile(nil, shape, ds, ss, item, cap), firstCandidate(shape, ds, ss, item, cap); !slices.Equal(tile, first) {
		t.Fatalf("small copy: tile %v, want the first candidate %v", tile, first)
	}
}

func seqInts(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
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

// TestChooseTileSpan: a uint8 view whose src runs are 7 bytes (a flipped
// dim of 7) 8 bytes apart (the next dim by src stride) gets a tile that
// takes that next dim, so one tile reads whole sectors: without growSpan
// its src side spanned 7 bytes and ran at 12.6% of memcpy on an H200
// (20.5% with it). So does a 3-byte view whose dst runs are long (22.3 →
// 53.0% of memcpy: it had been gathered), its 18-byte flipped runs 21
// bytes apart. Src runs of a sector or more are not short.
func TestChooseTileSpan(t *testing.T) {
	for _, c := range []struct {
		shape, ds, ss []int64
		item          int64
		run, next     int // the short run's dim, the dim growSpan takes
	}{
		{[]int64{17, 11, 13, 6, 7, 11, 21, 12}, []int64{16648632, 1513512, 116424, 19404, 2772, 252, 12, 1}, []int64{8, -37128, 2856, 53909856, -1, 4900896, 136, 408408}, 1, 4, 0},
		{[]int64{7, 17, 11, 22, 6, 7, 12, 6}, []int64{12440736, 731808, 66528, 3024, 504, 72, 6, 1}, []int64{6468, 543312, 9236304, 7, -1, 924, 45276, 154}, 3, 4, 3},
	} {
		tile := chooseTile(nil, c.shape, c.ds, c.ss, c.item, 24<<10)
		if tile[c.run] != c.shape[c.run] || tile[c.next] < 2 {
			t.Errorf("tile %v of shape %v: want all of dim %d and at least 2 of dim %d (stride %d)", tile, c.shape, c.run, c.next, c.ss[c.next])
		}
		if !shortSrcRuns(tile, c.shape, c.ss, c.item) {
			t.Errorf("tile %v: shortSrcRuns false, want true", tile)
		}
	}
	if shortSrcRuns([]int64{32, 1}, []int64{1 << 20, 1}, []int64{1, 1 << 20}, 1) {
		t.Error("a 32-byte src run: shortSrcRuns true, want false")
	}
}

// TestSpanHoles: a float32 view whose src runs a flip cuts at 60 bytes
// (dst runs of 19 KiB) stages them as spans with no holes (47.3 → 91.0% of
// memcpy on an H200); a float64 view whose spans would be half holes keeps
// its runs (spans ran it 0.85 times as fast).
func TestSpanHoles(t *testing.T) {
	for _, c := range []struct {
		name          string
		shape, ds, ss []int64
		item          int
		want          bool
	}{
		{"f32 flipped runs of 60 bytes", []int64{16, 7, 21, 6, 15, 14, 23}, []int64{4260060, 608580, 28980, 4830, 322, 23, 1}, []int64{4260060, 28980, 202860, 345, 1, -2070, -15}, 4, true},
		{"f64 spans half holes", []int64{17, 30, 7, 31, 21, 13}, []int64{1777230, 59241, 8463, 273, 13, 1}, []int64{3554460, 118482, -1, 3822, 7, -294}, 8, false},
	} {
		d, err := New(c.shape, c.ds, c.item)
		if err != nil {
			t.Fatal(err)
		}
		s, err := New(c.shape, c.ss, c.item)
		if err != nil {
			t.Fatal(err)
		}
		p, err := PlanCopy(d, s, PlanOptions{DstAlign: 256, SrcAlign: 256})
		if err != nil {
			t.Fatal(err)
		}
		if p.Box == nil || p.Box.Src.Holes != c.want {
			t.Errorf("%s: plan %v tile %v geometry %+v: src spans %v, want %v", c.name, p.Sig, p.Tile, p.Box, p.Box != nil && p.Box.Src.Holes, c.want)
		}
	}
}
