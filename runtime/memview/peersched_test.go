package memview

import (
	"math"
	"testing"

	"github.com/stridekit/stridekit/layout"
)

// constRate is a rateFunc of one rate for every local copy.
func constRate(r float64) rateFunc {
	return func(bool, layout.Layout, layout.Layout) float64 { return r }
}

// TestPipeModelTime: the model's time for hand-worked schedules.
func TestPipeModelTime(t *testing.T) {
	m := pipeModel{link: 1, perCopy: 0.5, pack: 4}
	// packs end at 1, 3; copies run 1..5.5 and 5.5..14
	if got := m.time([]int64{4, 8}); got != 14 {
		t.Errorf("pack only: %v, want 14", got)
	}
	m = pipeModel{link: 1, perCopy: 0, unpack: 2}
	// copies end at 8, 12; unpacks run 8..12 and 12..14
	if got := m.time([]int64{8, 4}); got != 14 {
		t.Errorf("unpack only: %v, want 14", got)
	}
	m = pipeModel{link: 1, perCopy: 0, pack: 2, unpack: 2}
	// the link at 1/1.02 of its speed: pack 2, copy to 2+4·1.02, unpack 2 more
	if got, want := m.time([]int64{4}), 4+4*pipeBothSides; math.Abs(got-want) > 1e-12 {
		t.Errorf("both sides: %v, want %v", got, want)
	}
}

// TestPipeScheduleShape: a 256 MiB copy whose only kernel is the unpack
// (a transpose from a dense source, the kernel at an H200's speed) gets a
// few chunks shrinking to a small last one, and the model expects it well
// above equal chunks; with the pack as the only kernel the chunks grow
// from a small first one. Every schedule covers the dim, no chunk under
// the least given.
func TestPipeScheduleShape(t *testing.T) {
	const e, per = 8192, 32 << 10 // 256 MiB
	for _, up := range []bool{true, false} {
		m := pipeBase
		if up {
			m.pack = 4.85 * m.link
		} else {
			m.unpack = 4.85 * m.link
		}
		n, tm := pipeSchedule(m, e, per, 64)
		sum := int64(0)
		for _, k := range n {
			if k < 64 {
				t.Errorf("up %v: chunk of %d indices, under 64", up, k)
			}
			sum += k
		}
		if sum != e || len(n) < 3 || len(n) > 12 {
			t.Fatalf("up %v: chunks %v: want 3 to 12 covering %d", up, n, e)
		}
		small := n[len(n)-1]
		if up {
			small = n[0]
		}
		if small > e/16 {
			t.Errorf("up %v: chunks %v: the edge chunk is not small", up, n)
		}
		eq := make([]int64, 8)
		for i := range eq {
			eq[i] = e / 8 * per
		}
		link := float64(e*per) / m.link
		if eff, eqEff := link/tm, link/m.time(eq); eff < 0.96 || eff < eqEff+0.02 {
			t.Errorf("up %v: chunks %v: the model's %.3f against %.3f for 8 equal chunks", up, n, eff, eqEff)
		}
	}
}

// TestGradedCuts: for 256 MiB copies, the image the graded geometry picks
// leaves the kernel to one side where a view is gap-free: a pack into the
// destination's own bytes for a strided source into a dense destination,
// either side for a transpose between dense views; a broadcasting source
// keeps its own order (C is one row, unpacked). The model expects the
// one-sided schedules at 95% of the link's time or better.
func TestGradedCuts(t *testing.T) {
	rate := constRate(5 * pipeBase.link)
	big, _ := layout.Dense([]int64{8192, 16384}, 4, layout.C)
	slice, _, _ := big.Slice(layout.All(), layout.Range{Start: 0, Stop: 16384, Step: 2}) // 8192², stride 2
	dense, _ := layout.Dense([]int64{8192, 8192}, 4, layout.C)
	tr, _ := dense.Permute(1, 0)
	row, _ := layout.New([]int64{8192, 8192}, []int64{0, 1}, 4)
	for _, c := range []struct {
		name         string
		dst, src     layout.Layout
		pack, unpack bool // the kernel sides wanted (both false: either, not both)
		minEff       float64
	}{
		{"strided source", dense, slice, true, false, 0.95},
		{"transpose", dense, tr, false, false, 0.95},
		{"broadcast row", dense, row, false, true, 0},
	} {
		g, err := pipeGeometry(c.dst, c.src, 16, 16, 0, rate)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		pack, unpack := !g.packDirect, !g.unpackDirect
		if pack == unpack || (c.pack || c.unpack) && (pack != c.pack || unpack != c.unpack) {
			t.Errorf("%s: a pack %v and an unpack %v, want %v and %v", c.name, pack, unpack, c.pack, c.unpack)
		}
		if eff := modelEff(g, 5*pipeBase.link); eff < c.minEff {
			t.Errorf("%s: %d chunks, model %.3f of the link's time", c.name, len(g.chunks), eff)
		}
	}
}

// modelEff returns the link's time for g's bytes over the model's time for
// g's chunks, with kernels of rate bytes a second on the sides that have
// one.
func modelEff(g *pipeGeom, rate float64) float64 {
	m := pipeBase
	if !g.packDirect {
		m.pack = rate
	}
	if !g.unpackDirect {
		m.unpack = rate
	}
	sizes := make([]int64, len(g.chunks))
	for i, ch := range g.chunks {
		sizes[i] = ch.bytes
	}
	return float64(g.span) / m.link / m.time(sizes)
}

// TestLeastIndices: a graded chunk keeps the kernel's view 128-byte runs
// where the dim cut is inside the view's innermost run.
func TestLeastIndices(t *testing.T) {
	d, _ := layout.Dense([]int64{64, 64, 64}, 4, layout.C)
	rev, _ := d.Permute(2, 1, 0) // rev's dim 0 is d's innermost
	if got := leastIndices(d, 2); got != 32 {
		t.Errorf("innermost dim of f32: %d indices, want 32", got)
	}
	if got := leastIndices(d, 0); got != 1 {
		t.Errorf("outermost dim: %d indices, want 1", got)
	}
	if got := leastIndices(rev, 0); got != 32 {
		t.Errorf("reversed view's dim 0: %d indices, want 32", got)
	}
}

// TestLocalRate: the model's local rate of a plannable copy is positive
// (with no device, 2e12 bytes a second of memory), lower for a box tile
// of bytes than for a plain copy, and 0 for a pair that cannot be planned.
func TestLocalRate(t *testing.T) {
	d, _ := layout.Dense([]int64{64, 64, 64}, 1, layout.C)
	rev, _ := d.Permute(2, 1, 0)
	plain, btile := localRate(nil, d, d), localRate(nil, d, rev)
	if plain <= 0 || btile <= 0 || btile >= plain {
		t.Errorf("plain copy %v, u8 reversal %v: want both positive, the reversal slower", plain, btile)
	}
	other, _ := layout.Dense([]int64{8, 8}, 1, layout.C)
	if r := localRate(nil, other, d); r != 0 {
		t.Errorf("shapes that differ: rate %v, want 0", r)
	}
}
