package memview

import (
	"fmt"
	"testing"

	"github.com/stridekit/stridekit/internal/testenv"
	"github.com/stridekit/stridekit/layout"
	"github.com/stridekit/stridekit/runtime/cuda"
)

// localGatherCases are copies localGatherPays was measured on, with its
// answer where the copy fits in L2 (inL2) and where it does not.
var localGatherCases = []struct {
	ruleCase
	beyond bool // the answer beyond L2
}{
	// Gathered on an H100 at 64 MiB, and their neighbours that ran slower.
	{ruleCase{"12-byte 8-d permutation, neighbours 3 apart", []int64{9, 11, 5, 13, 5, 10, 6, 3}, []int64{16500, 150, 6, 445500, 30, 1650, 1, 148500}, 12, true}, false},
	{ruleCase{"f64 6-d permutation, neighbours 7 apart", []int64{11, 33, 23, 11, 13, 7}, []int64{33033, 1001, 363363, 13, 1, 143}, 8, true}, false},
	{ruleCase{"12-byte 5-d permutation, neighbours 29 apart", []int64{54, 24, 37, 16, 29}, []int64{412032, 16, 384, 1, 14208}, 12, true}, false},
	{ruleCase{"c128 5-d permutation of long common runs", []int64{19, 15, 35, 33, 13}, []int64{6435, 429, 122265, 13, 1}, 16, true}, true},
	{ruleCase{"12-byte 5-d permutation, neighbours 126 apart", []int64{23, 41, 46, 14, 9}, []int64{26404, 46, 1, 1886, 607292}, 12, false}, false},
	{ruleCase{"f32 7-d permutation, neighbours 16 apart", []int64{7, 7, 10, 17, 21, 6, 16}, []int64{114240, 1632, 11424, 96, 799680, 1, 6}, 4, false}, false},
	{ruleCase{"c128 ::2 slice (no transpose)", []int64{512, 512}, []int64{2048, 2}, 16, false}, false},
	{ruleCase{"c128 transpose (a vector tile)", []int64{512, 512}, []int64{1, 512}, 16, false}, false},
	{ruleCase{"contiguous", []int64{4096, 4096}, nil, 8, false}, false},
	// Common runs of 1-3-byte items, gathered in words of 16 bytes
	// (1.04-1.15 times the box tile) unless the runs are short (51
	// bytes: 0.85) or no word path exists (below).
	{ruleCase{"u8, common runs of 151 bytes", []int64{48, 14, 41, 16, 151}, []int64{151, 1623552, 39600, 2416, 1}, 1, true}, false},
	{ruleCase{"3-byte items, common runs of 711 bytes", []int64{265, 356, 237}, []int64{237, 62805, 1}, 3, true}, false},
	{ruleCase{"f16, common runs of 526 bytes", []int64{402, 317, 263}, []int64{263, 105726, 1}, 2, true}, false},
	{ruleCase{"u8, common runs of 51 bytes", []int64{41, 35, 19, 48, 51}, []int64{51, 1785, 33915, 1644720, 1}, 1, false}, false},
	// Views whose src runs a step, a flip or short extents cut under
	// 64 bytes, into dst runs of 4 KiB or more (scatteredSrc; the
	// gather ran 2.38, 1.98 and 1.41 times as fast), and two whose dst
	// runs are shorter (the gather: 0.07 and 0.23). The third, 8 bytes
	// apart, is now a box tile whose src runs are spans of 142 bytes
	// (layout's spanHoles), which ran 1.29 and 1.73 times the gather on
	// two such views.
	{ruleCase{"u8 view, src runs of 24 bytes, dst runs of 7176", []int64{35, 14, 19, 23, 13, 24}, []int64{49, 10166520, 1715, -423605, 32585, 2}, 1, true}, true},
	{ruleCase{"3-byte view, src runs of 33 bytes, dst runs of 10890", []int64{5, 9, 9, 4, 7, 11, 15, 11}, []int64{2754, 34, 306, 1445850, 206550, 5783400, 13770, 3}, 3, true}, true},
	{ruleCase{"f16 view, reversed src runs of 14 bytes", []int64{18, 11, 5, 7, 12, 6, 9, 7}, []int64{6386688, 72, 2376, 912384, 76032, 12672, 8, -1}, 2, false}, false},
	{ruleCase{"u8 view, src runs of 21 bytes, dst runs of 589", []int64{21, 59, 31, 56, 31}, []int64{1, 4634469, 149499, -2646, -42}, 1, false}, false},
	{ruleCase{"u8 view, src runs of 5 bytes, dst runs of 980", []int64{10, 5, 13, 17, 12, 14, 7, 5}, []int64{10, 1, 26239500, 36750, -2940, 105, 3748500, -624750}, 1, false}, false},
}

// TestLocalGatherPays: the copies that ran faster gathered are gathered
// and their neighbours that ran slower are not, for a device of compute
// capability 9.0 and the tuning table's word gathers; box tiles are
// gathered only where the copy fits in L2 (here 1 GiB), not beyond it (a
// 1 KiB L2, and an L2 the driver did not report), where box tiles ran
// faster at 256 MiB on an H100 and an H200.
func TestLocalGatherPays(t *testing.T) {
	for _, l2 := range []int64{1 << 30, 1 << 10, 0} {
		cases := make([]ruleCase, len(localGatherCases))
		for i, c := range localGatherCases {
			cases[i] = c.ruleCase
			if l2 < 1<<30 {
				cases[i].want = c.beyond
			}
		}
		checkRule(t, fmt.Sprintf("localGatherPays (L2 %d bytes)", l2), func(p *layout.Plan) bool { return localGatherPays(p, 90, l2) }, cases)
	}
	// A dst whose rows of 150 bytes lie 151 apart: no 16-byte words.
	p := planOf(t, []int64{48, 300, 150}, []int64{45300, 151, 1}, []int64{150, 7200, 1}, 1)
	if localGatherPays(p, 90, 1<<30) {
		t.Errorf("%v (dst strides %v): gathered with no word path", p.Sig, p.DstStrides)
	}
}

// TestLocalGatherL2: a box tile that the rule gathers where it fits in L2
// is gathered up to the copy's own size in bytes of L2 and not a byte
// below.
func TestLocalGatherL2(t *testing.T) {
	p := planOf(t, []int64{11, 33, 23, 11, 13, 7}, nil, []int64{33033, 1001, 363363, 13, 1, 143}, 8)
	n := p.Volume * int64(p.Sig.Itemsize)
	if !localGatherPays(p, 90, n) || localGatherPays(p, 90, n-1) {
		t.Errorf("%v of %d bytes: gathered with L2 of %d bytes %v, of %d bytes %v, want true, false", p.Sig, n, n, localGatherPays(p, 90, n), n-1, localGatherPays(p, 90, n-1))
	}
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

// TestGPULocalGatherL2: the device reports its L2, and a box tile that the
// rule gathers in L2 (a float64 6-d permutation whose neighbours along
// src's fastest dim lie 7 elements apart in dst) is bound as a gather at
// 8.7 MB and as a box tile at 267 MB, the same permutation with one
// extent changed.
func TestGPULocalGatherL2(t *testing.T) {
	dev := testenv.NeedGPU(t)
	testenv.NeedNVRTC(t)
	defer setGatherMode("")()
	defer forget()
	l2 := dev.L2Bytes()
	if l2 < 1<<20 || l2 > 1<<30 {
		t.Fatalf("%v: L2 of %d bytes", dev, l2)
	}
	order := []int{2, 0, 1, 5, 3, 4} // src's dims, slowest first
	for _, c := range []struct {
		d2     int64
		gather bool
	}{{3, true}, {92, false}} {
		shape := []int64{11, 33, c.d2, 11, 13, 7}
		ss := make([]int64, len(shape))
		st := int64(1)
		for i := len(order) - 1; i >= 0; i-- {
			ss[order[i]] = st
			st *= shape[order[i]]
		}
		dst := fakeView(t, cuda.MemoryDevice, dev, 0x10000, mustNew(t, shape, nil, 8), layout.Float64)
		src := fakeView(t, cuda.MemoryDevice, dev, 0x100000000, mustNew(t, shape, ss, 8), layout.Float64)
		cp, err := dst.Explain(src)
		if err != nil {
			t.Fatal(err)
		}
		if got := cp.Plan.Sig.Class == layout.ClassGather; got != c.gather {
			t.Errorf("%v of %d bytes, L2 %d bytes: plan %v, gather %v, want %v", shape, st*8, l2, cp.Plan.Sig, got, c.gather)
		}
	}
}
