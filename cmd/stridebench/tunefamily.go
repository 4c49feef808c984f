package main

import (
	"fmt"
	"math"
	"strings"

	"github.com/stridekit/stridekit/kernels"
	"github.com/stridekit/stridekit/layout"
)

// This file lists what `stridebench tune` tunes: one family per tuning
// table entry it writes, with the knobs that matter for the family's class,
// the values swept, and the representative cases it is timed on.

// knobAxis is one knob of a family and the values the sweep tries.
type knobAxis struct {
	Name   string
	Values []int
}

// tuneFamily is what one table entry is tuned on: the entry's class, item
// size and vector width (0: *), the knobs swept, and the cases, made for a
// target size in bytes (each writes about that many bytes).
type tuneFamily struct {
	Name      string // e.g. btile/3, tile/4x4, elem
	Class     layout.Class
	Item, Vec int
	Axes      []knobAxis
	Cases     func(target int64) []string // case lines (suite syntax)
}

// Knob values the sweeps try.
var (
	threads3  = knobAxis{"threads", []int{128, 256, 512}}
	rows3     = knobAxis{"rows", []int{2, 4, 8}}
	btileAxes = []knobAxis{
		threads3,
		{"tilebytes", []int{8192, 16384, 24576, 32768}},
		{"loadlanes", []int{4, 8, 16, 32}},
		{"storelanes", []int{1, 2, 4, 8}},
		{"blockbytes", []int{1, 16384, 65536}},
		{"unroll", []int{1, 2, 3}},
		{"elemstore", []int{0, 1}},
		{"overlaptables", []int{0, 1}},
		{"calcoffsets", []int{0, 1}},
		{"loadgrain", []int{4, 16}},
		// 0: tiles in the canonical order; else cut dims last where a
		// short src run's cut lies more than this many bytes of copy
		// apart (gen.Knobs.CutFirst): 16 MiB, 64 MiB (the table's), 256 MiB.
		{"cutfirst", []int{0, 16 << 20, 64 << 20, 256 << 20}},
	}
)

// btileItems are the item sizes the box tile is tuned for.
var btileItems = []int{1, 2, 3, 4, 8, 12, 16}

// tileFamilies are the (item, vector width) pairs of the vectorised tile
// kernel that are tuned: the widest vector of each item size, which the
// planner picks wherever extents and alignment allow, and the narrower
// vectors the tuning table sets apart (3-byte items in fours, single
// 8-byte items, pairs of halves: the pipelined ones).
var tileFamilies = [][2]int{{1, 16}, {2, 8}, {4, 4}, {8, 2}, {3, 4}, {8, 1}, {2, 2}}

// tuneFamilies returns every family, in the order they are tuned (box
// tiles first: they have the most knobs).
func tuneFamilies() []*tuneFamily {
	var fs []*tuneFamily
	for _, s := range btileItems {
		fs = append(fs, &tuneFamily{
			Name: fmt.Sprintf("btile/%d", s), Class: layout.ClassBoxTile, Item: s,
			Axes: btileAxes, Cases: func(t int64) []string { return btileCases(s, t) },
		})
	}
	for _, iv := range tileFamilies {
		s, v := iv[0], iv[1]
		axes := []knobAxis{{"threads", []int{128, 256}}, {"pipe", []int{0, 2}}}
		if s < 4 {
			axes = append(axes, knobAxis{"wordcols", []int{0, 1}})
		}
		fs = append(fs, &tuneFamily{
			Name: fmt.Sprintf("tile/%dx%d", s, v), Class: layout.ClassTile, Item: s, Vec: v,
			Axes: axes, Cases: func(t int64) []string { return tileCases(s, v, t) },
		})
	}
	fs = append(fs,
		&tuneFamily{Name: "elem", Class: layout.ClassElementwise, Axes: []knobAxis{threads3, rows3}, Cases: elemCases},
		&tuneFamily{Name: "bcast", Class: layout.ClassBroadcast, Axes: []knobAxis{threads3, rows3}, Cases: bcastCases},
		&tuneFamily{Name: "fill", Class: layout.ClassFill, Axes: []knobAxis{threads3, rows3}, Cases: fillCases},
	)
	return fs
}

// odd returns n, or n+1 when n is even (at least 3).
func odd(n int64) int64 {
	if n < 3 {
		return 3
	}
	return n | 1
}

// roundMultiple returns n rounded to a multiple of m, at least m.
func roundMultiple(n, m int64) int64 { return max(m, (n+m/2)/m*m) }

// isqrt returns ⌊√n⌋ for n ≥ 0.
func isqrt(n int64) int64 { return int64(math.Sqrt(float64(max(n, 0)))) }

// btileCases are the box-tile cases of item size s, each writing about
// target bytes, in order of preference: a 2-d transpose with odd extents,
// NCHW→NHWC with 3 channels (a 3-item dst fast dim) and odd H, W, a 5-d
// permutation of short dims (fast dims of 10 and 12 items), a 2-d
// transpose with a 13-item fast dim, and the first transpose with its src
// rows reversed (for 3-byte items, whose box tiles of short forward runs
// the planner moves as bytes: a case that stays in the family).
func btileCases(s int, target int64) []string {
	n := max(target/int64(s), 64)
	a := odd(isqrt(n) * 7 / 8)
	b := odd(n / a)
	if b == a {
		b += 2
	}
	hw := odd(min(181, isqrt(n/6)))
	batch := max(2, n/(3*hw*hw))
	p := max(2, n/3600)
	return []string{
		fmt.Sprintf("bt%d_t2d x%d %dx%d src=perm(1,0)", s, s, a, b),
		fmt.Sprintf("bt%d_nhwc3 x%d %dx3x%dx%d src=perm(0,2,3,1)", s, s, batch, hw, hw),
		fmt.Sprintf("bt%d_p5 x%d %dx6x10x5x12 src=perm(3,0,4,1,2)", s, s, p),
		fmt.Sprintf("bt%d_t13 x%d %dx13 src=perm(1,0)", s, s, max(2, n/13)),
		fmt.Sprintf("bt%d_t2dflip x%d %dx%d src=perm(1,0).flip(0)", s, s, a, b),
	}
}

// tileCases are the vectorised-tile cases of item size s in vectors of v:
// a 2-d transpose and a batch of 256×384 transposes, extents multiples of
// 128 (whole tiles of every item size) where v is the widest vector of s
// (12 or 16 bytes), else multiples of 128 plus v (v divides them, 2v does
// not, so the planner takes vectors of v).
func tileCases(s, v int, target int64) []string {
	n := max(target/int64(s), 128*128)
	a := roundMultiple(isqrt(n), 128)
	b := roundMultiple(n/a, 128)
	batch := max(1, n/(256*384))
	pad := int64(0)
	if s*v < 12 {
		pad = int64(v)
	}
	return []string{
		fmt.Sprintf("t%dx%d_t2d x%d %dx%d src=perm(1,0)", s, v, s, a+pad, b+pad),
		fmt.Sprintf("t%dx%d_b3d x%d %dx%dx%d src=perm(0,2,1)", s, v, s, batch, 256+pad, 384+pad),
	}
}

// rowsShape returns rows × cols of about n elements, cols at most 8192
// and a multiple of 4, with at least 8 rows.
func rowsShape(n int64) (rows, cols int64) {
	cols = max(4, min(8192, n/8)&^3)
	return max(1, n/cols), cols
}

// elemCases are elementwise float32 cases: rows of a wider array (runs
// contiguous in both views, widened to 16-byte items), every other column
// of the inner ones (src stride 2), and a flip of the fast dim.
func elemCases(target int64) []string {
	r, c := rowsShape(max(target/4, 64))
	return []string{
		fmt.Sprintf("el_rows f32 %dx%d src=slice(:,:%d)", r, c+c/4, c),
		fmt.Sprintf("el_step2 f32 %dx%d src=slice(:,1:-1:2)", r, 2*c+2),
		fmt.Sprintf("el_flip f32 %dx%d src=flip(1)", r, c),
	}
}

// bcastCases are float32 broadcasts: a row to every row (src stride 0 on
// the outer dim) and a column to every column (src stride 0 on the fast
// dim, vector stores of one repeated item).
func bcastCases(target int64) []string {
	r, c := rowsShape(max(target/4, 64))
	return []string{
		fmt.Sprintf("bc_row f32 1x%d src=bcast(%d,%d)", c, r, c),
		fmt.Sprintf("bc_col f32 %dx1 src=bcast(%d,%d)", r, r, c),
	}
}

// fillCases are float32 fills of one element: a dense array, and the first
// columns of a wider array (2-d).
func fillCases(target int64) []string {
	r, c := rowsShape(max(target/4, 64))
	return []string{
		fmt.Sprintf("fi_dense f32 1x1 src=bcast(%d,%d)", r, c),
		fmt.Sprintf("fi_rows f32 1x1 src=bcast(%d,%d) dst=slice(:,:%d) dstbase=%dx%d", r, c, c, r, c+8),
	}
}

// maxFamilyCases is how many cases a family is timed on.
const maxFamilyCases = 3

// familyCases returns the cases of f at target bytes: the first
// maxFamilyCases of f.Cases that the planner makes plans of f's class, item
// size and vector width for (with every tile size the sweep tries). It
// fails when none is.
func familyCases(f *tuneFamily, target int64) ([]*built, error) {
	cs, err := parseSuite(strings.NewReader(strings.Join(f.Cases(target), "\n")), f.Name)
	if err != nil {
		return nil, err
	}
	var out []*built
	var why []string
	for _, c := range cs {
		b, err := buildCase(c)
		if err == nil {
			err = planEachTile(f, b)
		}
		if err != nil {
			why = append(why, err.Error())
			continue
		}
		if len(out) < maxFamilyCases {
			out = append(out, b)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: %s: no case plans as the family at %s: %s", errCase, f.Name, humanSize(target), strings.Join(why, "; "))
	}
	return out, nil
}

// planEachTile checks that b plans as f with every tile size f's sweep
// tries (and the default).
func planEachTile(f *tuneFamily, b *built) error {
	sizes := []int{0}
	for _, a := range f.Axes {
		if a.Name == "tilebytes" {
			sizes = append(sizes, a.Values...)
		}
	}
	for _, tb := range sizes {
		if _, err := tunePlan(f, b, kernels.PtrAlign(uintptr(b.DstStart)), kernels.PtrAlign(uintptr(b.SrcStart)), tb); err != nil {
			return err
		}
	}
	return nil
}

// tunePlan plans b for tuning with knobs whose tile size is tileBytes, for
// arrays whose views' lowest bytes have the given alignments. It fails
// unless the plan is of f's class, item size and vector width.
func tunePlan(f *tuneFamily, b *built, dstAlign, srcAlign, tileBytes int) (layout.Plan, error) {
	p, err := layout.PlanCopy(b.Dst, b.Src, layout.PlanOptions{DstAlign: dstAlign, SrcAlign: srcAlign, TileBytes: tileBytes})
	if err != nil {
		return p, err
	}
	if p.Sig.Class != f.Class || (f.Item != 0 && int(p.Sig.Itemsize) != f.Item) || (f.Vec != 0 && int(p.Sig.Vec) != f.Vec) {
		return p, fmt.Errorf("%w: %s: case %s plans as %v, not as the family's %s %s %s", errCase, f.Name, b.Case.Name, p.Sig, f.Class, starOr(f.Item), starOr(f.Vec))
	}
	return p, nil
}
