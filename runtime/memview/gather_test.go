package memview

import (
	"testing"

	"github.com/stridekit/stridekit/layout"
	"github.com/stridekit/stridekit/runtime/cuda"
)

// TestLocalGatherPays: elementwise transposes of 8 bytes or more and box
// tiles of short, scattered sub-word src runs are gathered (they ran
// faster gathered on an H100); other box tiles are not, among them those
// an earlier rule gathered, which ran faster as box tiles at 256 MiB on an
// H100 and an H200 (for a device of compute capability 9.0).
func TestLocalGatherPays(t *testing.T) {
	checkRule(t, "localGatherPays", func(p *layout.Plan) bool { return localGatherPays(p, 90) }, []ruleCase{
		{"c128 5-d permutation of long common runs", []int64{19, 15, 35, 33, 13}, []int64{6435, 429, 122265, 13, 1}, 16, true},
		{"c128 ::2 slice (no transpose)", []int64{512, 512}, []int64{2048, 2}, 16, false},
		{"c128 transpose (a vector tile)", []int64{512, 512}, []int64{1, 512}, 16, false},
		{"contiguous", []int64{4096, 4096}, nil, 8, false},
		// Box tiles of 8 bytes or more whose neighbours along src's
		// fastest dim lie few elements apart in dst (3, 7 and 29; the
		// last, 12-byte items of seed 3001, ran 56 → 90% of memcpy as a
		// box tile on an H200), or far (126).
		{"12-byte 8-d permutation, neighbours 3 apart", []int64{9, 11, 5, 13, 5, 10, 6, 3}, []int64{16500, 150, 6, 445500, 30, 1650, 1, 148500}, 12, false},
		{"f64 6-d permutation, neighbours 7 apart", []int64{11, 33, 23, 11, 13, 7}, []int64{33033, 1001, 363363, 13, 1, 143}, 8, false},
		{"12-byte 5-d permutation, neighbours 29 apart", []int64{54, 24, 37, 16, 29}, []int64{412032, 16, 384, 1, 14208}, 12, false},
		{"12-byte 5-d permutation, neighbours 126 apart", []int64{23, 41, 46, 14, 9}, []int64{26404, 46, 1, 1886, 607292}, 12, false},
		{"f32 7-d permutation, neighbours 16 apart", []int64{7, 7, 10, 17, 21, 6, 16}, []int64{114240, 1632, 11424, 96, 799680, 1, 6}, 4, false},
		// Box tiles of 1-3-byte items whose fastest dim is the same in
		// both views (the earlier rule gathered them in 16-byte words).
		{"u8, common runs of 151 bytes", []int64{48, 14, 41, 16, 151}, []int64{151, 1623552, 39600, 2416, 1}, 1, false},
		{"3-byte items, common runs of 711 bytes", []int64{265, 356, 237}, []int64{237, 62805, 1}, 3, false},
		{"f16, common runs of 526 bytes", []int64{402, 317, 263}, []int64{263, 105726, 1}, 2, false},
		// Views whose src runs a step, a flip or short extents cut under
		// 64 bytes, into dst runs of 4 KiB or more (scatteredSrc; the
		// gather ran 2.38, 1.98 and 1.41 times as fast), and two whose dst
		// runs are shorter (the gather: 0.07 and 0.23).
		{"u8 view, src runs of 24 bytes, dst runs of 7176", []int64{35, 14, 19, 23, 13, 24}, []int64{49, 10166520, 1715, -423605, 32585, 2}, 1, true},
		{"3-byte view, src runs of 33 bytes, dst runs of 10890", []int64{5, 9, 9, 4, 7, 11, 15, 11}, []int64{2754, 34, 306, 1445850, 206550, 5783400, 13770, 3}, 3, true},
		{"f16 view, reversed src runs of 14 bytes", []int64{18, 11, 5, 7, 12, 6, 9, 7}, []int64{6386688, 72, 2376, 912384, 76032, 12672, 8, -1}, 2, true},
		{"u8 view, src runs of 21 bytes, dst runs of 589", []int64{21, 59, 31, 56, 31}, []int64{1, 4634469, 149499, -2646, -42}, 1, false},
		{"u8 view, src runs of 5 bytes, dst runs of 980", []int64{10, 5, 13, 17, 12, 14, 7, 5}, []int64{10, 1, 26239500, 36750, -2940, 105, 3748500, -624750}, 1, false},
	})
}

// TestLocalGatherBinding: a device copy that localGatherPays picks is bound
// as a gather, and Explain reports the gather it runs.
func TestLocalGatherBinding(t *testing.T) {
	defer setGatherMode("")()
	defer forget()
	dev := new(cuda.Device)
	dl := mustNew(t, []int64{19, 15, 35, 33, 13}, nil, 16)
	sl := mustNew(t, []int64{19, 15, 35, 33, 13}, []int64{6435, 429, 122265, 13, 1}, 16)
	dst := fakeView(t, cuda.MemoryDevice, dev, 0x10000, dl, layout.Complex128)
	src := fakeView(t, cuda.MemoryDevice, dev, 0x10000000, sl, layout.Complex128)
	cp, err := dst.Explain(src)
	if err != nil {
		t.Fatal(err)
	}
	if cp.Plan.Sig.Class != layout.ClassGather {
		t.Errorf("plan %v, want a gather", cp.Plan.Sig)
	}
}

// TestGatherBy: mode "1" gathers whatever could be a gather, "0" nothing,
// any other mode asks the rule.
func TestGatherBy(t *testing.T) {
	perm := planOf(t, []int64{64, 64}, nil, []int64{1, 64}, 4) // a tile
	flat := planOf(t, []int64{64, 64}, nil, nil, 4)            // a memcpy
	yes := func(*layout.Plan, int) bool { return true }
	no := func(*layout.Plan, int) bool { return false }
	for _, c := range []struct {
		mode string
		p    *layout.Plan
		rule func(*layout.Plan, int) bool
		want bool
	}{
		{"1", perm, no, true},
		{"1", flat, yes, false},
		{"0", perm, yes, false},
		{"", perm, yes, true},
		{"", perm, no, false},
		{"x", perm, yes, true},
	} {
		if got := gatherBy(c.mode, c.p, 90, c.rule); got != c.want {
			t.Errorf("gatherBy(%q, %v, rule %v) = %v, want %v", c.mode, c.p.Sig, c.rule(c.p, 90), got, c.want)
		}
	}
}

// setGatherMode sets localGatherMode to m ($STRIDEKIT_GATHER as the test
// needs it, whatever the environment) and returns what restores it.
func setGatherMode(m string) func() {
	old := localGatherMode
	localGatherMode = m
	return func() { localGatherMode = old }
}
