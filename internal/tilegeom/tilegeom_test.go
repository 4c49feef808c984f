package tilegeom

import (
	"cmp"
	"fmt"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// TestPropBoxSides checks, for any box tile over a transposing canonical
// form, that BoxSides describes the tile's elements exactly (every element
// of a whole tile is in one run of each side, a run's elements are Step
// apart), that BoxSrcWeights gives the src runs slots whose words neither
// leave the data bytes nor overlap, that BoxRagged names exactly the
// ragged dims outside the runs, that BoxSharedBytesSorted agrees with
// BoxSharedBytes, and that BoxGeometry.Set agrees with them.
func TestPropBoxSides(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 5).Draw(t, "n")
		shape := make([]int64, n)
		for k := range shape {
			shape[k] = int64(rapid.IntRange(2, 24).Draw(t, "e"))
		}
		item := int64(rapid.SampledFrom([]int{1, 2, 3, 4, 8, 12, 16}).Draw(t, "item"))
		// src: a permutation of a dense layout, maybe with a gap or a
		// reversed dim; dst dense C (the canonical order).
		perm := rapid.Permutation([]int{0, 1, 2, 3, 4}[:n]).Draw(t, "perm")
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
		// The tile: each extent 1, whole or anything between (whole dims
		// make runs of several dims), halved until it holds at most 4096
		// elements.
		tile := make([]int64, n)
		vol := int64(1)
		for k := range tile {
			switch rapid.IntRange(0, 2).Draw(t, "kind") {
			case 0:
				tile[k] = 1
			case 1:
				tile[k] = shape[k]
			default:
				tile[k] = int64(rapid.Int64Range(1, shape[k]).Draw(t, "t"))
			}
			vol *= tile[k]
		}
		for vol > 4096 {
			k := 0
			for i := range tile {
				if tile[i] > tile[k] {
					k = i
				}
			}
			vol = vol / tile[k] * (tile[k] / 2)
			tile[k] /= 2
		}
		src, dst := BoxSides(shape, ds, ss, tile)
		for _, sd := range []struct {
			b       BoxSide
			strides []int64
		}{{src, ss}, {dst, ds}} {
			checkSide(t, sd.b, shape, sd.strides, tile, vol)
			checkRagged(t, sd.b, shape, tile)
		}
		grain := int64(rapid.SampledFrom([]int{WordGrain, ChunkGrain}).Draw(t, "grain"))
		checkSlots(t, src, ss, tile, item, grain)
		var so, do [MaxBoxNDim]int8
		want := BoxSharedBytes(src, dst, tile, item, grain, 8)
		if got := BoxSharedBytesSorted(SortedDims(so[:0], ss), SortedDims(do[:0], ds), shape, ds, ss, tile, item, grain); got != want {
			t.Fatalf("BoxSharedBytesSorted = %d, BoxSharedBytes = %d", got, want)
		}

		checkCutDst(t, src, dst, shape, tile, item, vol, &so, &do, ds, ss, grain)
		CutDstRuns(&dst, &src, shape, tile, item) // as Set does

		index64 := rapid.Bool().Draw(t, "index64")
		var g BoxGeometry
		g.Set(shape, ds, ss, tile, item, grain, index64)
		w := make([]int64, n)
		BoxSrcWeights(&src, ss, tile, item, grain, w)
		idx := int64(4)
		if index64 {
			idx = 8
		}
		sl := BoxSharedLayout(src, dst, tile, item, grain, idx)
		if g.Grain != grain || g.Src != src || g.Dst != dst || !slices.Equal(g.W[:n], w) || g.Shared != sl || sl.Total != BoxSharedBytes(src, dst, tile, item, grain, idx) {
			t.Fatalf("geometry %+v for sides %+v / %+v, weights %v, shared %+v", g, src, dst, w, sl)
		}
		if c0 := (src.RunLen - 1) * item; src.Step == -1 && g.C0 != c0 || src.Step != -1 && g.C0 != 0 {
			t.Fatalf("c0 %d for src runs of %d, step %d", g.C0, src.RunLen, src.Step)
		}
		for k, x := range g.W[n:] {
			if x != 0 {
				t.Fatalf("weight %d of dim %d outside the form", x, n+k)
			}
		}
	})
}

// checkRagged checks BoxRagged against the tile dims outside the side's
// runs whose extent does not divide the dim's, and its last run dim.
func checkRagged(t *rapid.T, b BoxSide, shape, tile []int64) {
	var want []int
	for i := b.NRun; i < b.NDims; i++ {
		if k := int(b.Order[i]); shape[k]%tile[k] != 0 {
			want = append(want, k)
		}
	}
	rg, last, ok := BoxRagged(shape, tile, &b)
	if ok != (len(want) <= MaxRagged) {
		t.Fatalf("ragged dims %v: ok %v", want, ok)
	}
	if ok {
		got := slices.DeleteFunc(slices.Clone(rg[:]), func(k int) bool { return k < 0 })
		if !slices.Equal(got, want) || len(want) < MaxRagged && rg[len(want)] != -1 {
			t.Fatalf("ragged dims %v, want %v", rg, want)
		}
	}
	wantLast := -1
	if b.NRun > 0 {
		if k := int(b.Order[b.NRun-1]); shape[k]%tile[k] != 0 {
			wantLast = k
		}
	}
	if last != wantLast {
		t.Fatalf("last ragged run dim %d, want %d (side %+v, tile %v)", last, wantLast, b, tile)
	}
}

// checkSlots checks BoxSrcWeights' shared-memory layout of the src runs at
// grain: every run's slot address minus its src address is the same modulo
// the grain (so one phase per tile aligns them all), and for each phase
// the aligned grains that cover a contiguous run (the bytes of a strided
// one) lie within the data bytes and overlap no other run's. Every step
// between slots is an odd number of grains.
func checkSlots(t *rapid.T, src BoxSide, ss, tile []int64, item, grain int64) {
	w := make([]int64, len(tile))
	data := BoxSrcWeights(&src, ss, tile, item, grain, w)
	if d2 := BoxSrcWeights(&src, nil, tile, item, grain, nil); d2 != data {
		t.Fatalf("data bytes %d with strides, %d without", data, d2)
	}
	// Each step from run to run is an odd multiple of the grain give or
	// take the src phase: at WordGrain 32 consecutive runs along any dim
	// start in 32 banks, at ChunkGrain 8 in 8 groups of 4.
	for i := src.NRun; i < src.NDims; i++ {
		k := src.Order[i]
		u := w[k] - ((ss[k]*item)%grain+grain)%grain
		if u%grain != 0 || (u/grain)%2 != 1 {
			t.Fatalf("dim %d: step %d between slots at grain %d (weights %v, tile %v)", k, w[k], grain, w, tile)
		}
	}
	contig := src.Step == 1 || src.Step == -1
	type span struct{ lo, hi int64 }
	spans := make([][]span, grain)
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
		if ph := ((slot-addr)%grain + grain) % grain; phase < 0 {
			phase = ph
		} else if ph != phase {
			t.Fatalf("run %d: slot %d, src byte %d: phase %d, run 0's %d (weights %v)", r, slot, addr, ph, phase, w)
		}
		for ph := int64(0); ph < grain; ph++ {
			lo, hi := slot+ph, slot+ph+src.RunLen*item
			if contig {
				lo, hi = lo&^(grain-1), (hi+grain-1)&^(grain-1)
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

// TestTileEdges checks the vector tile's edges for every element and
// vector width a ClassTile plan may have: powers of two, multiples of the
// vector, at most 128.
func TestTileEdges(t *testing.T) {
	for item := 1; item <= 16; item *= 2 {
		for vec := 1; vec*item <= 16; vec *= 2 {
			r, c := TileEdges(item, vec)
			for _, e := range []int{r, c} {
				if e&(e-1) != 0 || e%vec != 0 || e < 32 || e > 128 {
					t.Errorf("TileEdges(%d, %d) = %d, %d", item, vec, r, c)
				}
			}
		}
	}
}

// TestSpanSide: a tile of 7-element runs, flipped, 8 elements apart gets
// runs that span 8·t-1 elements with holes, and runs whose dims go
// opposite ways one span (the next dims join while their stride is at
// most twice the span, and the span under twice the elements); a stride
// twice the span further out stays out, a strided run keeps its side, and
// so does a run SideFromOrder already takes whole.
func TestSpanSide(t *testing.T) {
	for _, c := range []struct {
		name              string
		shape, ss, tile   []int64
		ok                bool
		nrun              int
		runLen, span, low int64
	}{
		{"holes", []int64{7, 17, 300}, []int64{-1, 8, 136}, []int64{7, 4, 2}, true, 2, 28, 31, -6},
		{"signs", []int64{7, 7, 8}, []int64{1, -7, 56}, []int64{7, 7, 8}, true, 3, 392, 441, -42},
		{"far", []int64{7, 17, 300}, []int64{1, 15, 255}, []int64{7, 4, 2}, false, 1, 7, 7, 0},
		{"strided", []int64{7, 17}, []int64{3, 21}, []int64{7, 4}, false, 2, 28, 28, 0},
		{"contiguous", []int64{7, 17}, []int64{1, 7}, []int64{7, 4}, false, 2, 28, 28, 0},
	} {
		var b BoxSide
		lo, ok := SpanSide(&b, SortedDims(nil, c.ss), c.shape, c.ss, c.tile)
		if ok != c.ok || b.NRun != c.nrun || b.RunLen != c.runLen || b.LoadLen() != c.span || lo != c.low || b.Holes != c.ok {
			t.Errorf("%s: ok %v, side %+v, lo %d; want ok %v, %d run dims, %d elements loaded as %d, lo %d", c.name, ok, b, lo, c.ok, c.nrun, c.runLen, c.span, c.low)
		}
		if b.Runs*b.RunLen != c.tile[0]*c.tile[1]*vol(c.tile[2:]) {
			t.Errorf("%s: %d runs of %d elements in a tile %v", c.name, b.Runs, b.RunLen, c.tile)
		}
	}
}

func vol(t []int64) int64 {
	v := int64(1)
	for _, x := range t {
		v *= x
	}
	return v
}

// checkCutDst checks CutDstRuns on a tile of vol elements whose plain
// sides are src and dst: it cuts only a tile whose shared memory does not
// fit as it stands, leaving runs of fewer dims, of minCutDst elements and
// bytes or more, that together still hold the tile and fit; and
// BoxSharedBytesCut sizes the tile with the runs so cut.
func checkCutDst(t *rapid.T, src, dst BoxSide, shape, tile []int64, item, vol int64, so, do *[MaxBoxNDim]int8, ds, ss []int64, grain int64) {
	over := BoxSharedBytes(src, dst, tile, item, WordGrain, 8) > MaxBoxSharedBytes
	c := dst
	cut := CutDstRuns(&c, &src, shape, tile, item)
	switch {
	case cut && !over:
		t.Fatalf("dst runs %+v cut to %+v in a tile that fits", dst, c)
	case !cut && c != dst:
		t.Fatalf("dst runs %+v changed to %+v, reported uncut", dst, c)
	case cut && (c.NRun >= dst.NRun || c.RunLen < minCutDst || c.RunLen*item < minCutDst || c.RunLen*c.Runs != vol):
		t.Fatalf("dst runs %+v cut to %+v (tile of %d elements)", dst, c, vol)
	case cut && BoxSharedBytes(src, c, tile, item, WordGrain, 8) > MaxBoxSharedBytes:
		t.Fatalf("dst runs cut to %+v still need %d bytes", c, BoxSharedBytes(src, c, tile, item, WordGrain, 8))
	}
	if cut {
		if _, _, ok := BoxRagged(shape, tile, &c); !ok {
			t.Fatalf("dst runs cut to %+v leave over %d ragged dims", c, MaxRagged)
		}
	}
	if got, want := BoxSharedBytesCut(SortedDims(so[:0], ss), SortedDims(do[:0], ds), shape, ds, ss, tile, item, grain), BoxSharedBytes(src, c, tile, item, grain, 8); got != want {
		t.Fatalf("BoxSharedBytesCut = %d, BoxSharedBytes of the cut sides = %d", got, want)
	}
}

// TestPropCutDstRuns checks CutDstRuns (checkCutDst) on tiles that often
// need it: batched transposes whose dst rows continue each other, a tile
// of whole rows, so the dst run spans the tile's row dims. And a uint8
// transpose of 195 by 122 rows in one tile, a 95 KiB element table uncut,
// is cut to runs of a row.
func TestPropCutDstRuns(t *testing.T) {
	shape, ds, ss, tile := []int64{157, 195, 122}, []int64{23790, 122, 1}, []int64{14040, 1, 195}, []int64{1, 195, 122}
	src, dst := BoxSides(shape, ds, ss, tile)
	if !CutDstRuns(&dst, &src, shape, tile, 1) || dst.NRun != 1 || dst.RunLen != 122 || dst.Runs != 195 {
		t.Fatalf("uint8 195x122 tile: dst runs %+v, want 195 runs of 122", dst)
	}
	rapid.Check(t, func(t *rapid.T) {
		item := int64(rapid.SampledFrom([]int{1, 2, 3, 4, 8}).Draw(t, "item"))
		b := rapid.Int64Range(2, 300).Draw(t, "b")     // src's inner dim, dst's rows
		a := rapid.Int64Range(2, 300).Draw(t, "a")     // dst's inner dim
		c := rapid.Int64Range(1, 40).Draw(t, "c")      // the batch
		tb := rapid.Int64Range(1, b).Draw(t, "tile b") // rows a tile
		tc := rapid.Int64Range(1, c).Draw(t, "tile c") // batch a tile
		shape, ds, ss := []int64{c, b, a}, []int64{b * a, a, 1}, []int64{b * a, 1, b}
		tile := []int64{tc, tb, a}
		vol := tc * tb * a
		if vol*item > 64<<10 {
			t.Skip("tile over 64 KiB")
		}
		src, dst := BoxSides(shape, ds, ss, tile)
		var so, do [MaxBoxNDim]int8
		checkCutDst(t, src, dst, shape, tile, item, vol, &so, &do, ds, ss, WordGrain)
	})
}
