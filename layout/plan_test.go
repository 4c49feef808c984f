package layout_test

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/stridekit/stridekit/internal/layouttest"
	"github.com/stridekit/stridekit/internal/tilegeom"
	"github.com/stridekit/stridekit/layout"
	"pgregory.net/rapid"
)

func TestPlanCopyTable(t *testing.T) {
	type tc struct {
		name       string
		dst, src   layout.Layout
		opt        layout.PlanOptions
		sig        string
		shape      []int64 // nil: not checked
		ds, ss     []int64
		dOff, sOff int64
	}
	n := func(shape, strides []int64, item int) layout.Layout {
		return layouttest.MustNew(t, shape, strides, item)
	}
	a16 := layout.PlanOptions{DstAlign: 16, SrcAlign: 16}
	cases := []tc{
		{name: "same-order dense C is memcpy", dst: n(layouttest.S64(64, 64), nil, 4), src: n(layouttest.S64(64, 64), nil, 4),
			sig: "memcpy:nd=1,item=4,vec=1,idx=32", shape: layouttest.S64(4096), ds: layouttest.S64(1), ss: layouttest.S64(1)},
		{name: "memcpy widens to 16 bytes with 16-byte alignment", dst: n(layouttest.S64(64, 64), nil, 4), src: n(layouttest.S64(64, 64), nil, 4), opt: a16,
			sig: "memcpy:nd=1,item=16,vec=1,idx=32", shape: layouttest.S64(1024), ds: layouttest.S64(1), ss: layouttest.S64(1)},
		{name: "same permuted dense order is memcpy", dst: n(layouttest.S64(3, 4, 5), layouttest.S64(1, 15, 3), 2), src: n(layouttest.S64(3, 4, 5), layouttest.S64(1, 15, 3), 2),
			sig: "memcpy:nd=1,item=2,vec=1,idx=32", shape: layouttest.S64(60)},
		{name: "dense C from dense F is tile with fast=0", dst: n(layouttest.S64(128, 64), nil, 4), src: n(layouttest.S64(128, 64), layouttest.S64(1, 128), 4), opt: a16,
			sig: "tile:nd=2,fast=0,item=4,vec=4,idx=32", shape: layouttest.S64(128, 64), ds: layouttest.S64(64, 1), ss: layouttest.S64(1, 128)},
		{name: "small dense C from dense F wastes tiles: box tile", dst: n(layouttest.S64(64, 32), nil, 4), src: n(layouttest.S64(64, 32), layouttest.S64(1, 64), 4), opt: a16,
			sig: "btile:nd=2,item=4,vec=1,idx=32", shape: layouttest.S64(64, 32), ds: layouttest.S64(32, 1), ss: layouttest.S64(1, 64)},
		{name: "3-d permutation (2,0,1) merges to a 2-d tile, fast=0", dst: n(layouttest.S64(128, 16, 64), nil, 1), src: n(layouttest.S64(128, 16, 64), layouttest.S64(1, 64*128, 128), 1), opt: a16,
			sig: "tile:nd=2,fast=0,item=1,vec=16,idx=32", shape: layouttest.S64(128, 1024), ds: layouttest.S64(1024, 1), ss: layouttest.S64(1, 128)},
		{name: "interleaved RGB transpose: the 3-byte common run is one item, vector tile", dst: n(layouttest.S64(200, 100, 3), nil, 1), src: n(layouttest.S64(200, 100, 3), layouttest.S64(3, 600, 1), 1), opt: a16,
			sig: "tile:nd=2,fast=0,item=3,vec=4,idx=32", shape: layouttest.S64(200, 100), ds: layouttest.S64(100, 1), ss: layouttest.S64(1, 200)},
		{name: "RGB transpose with odd extents: no vector tile, so bytes under a common dim of 3", dst: n(layouttest.S64(201, 99, 3), nil, 1), src: n(layouttest.S64(201, 99, 3), layouttest.S64(3, 603, 1), 1), opt: a16,
			sig: "btile:nd=3,item=1,vec=1,idx=32", shape: layouttest.S64(201, 99, 3), ds: layouttest.S64(297, 3, 1), ss: layouttest.S64(3, 603, 1)},
		{name: "f32 xyz points transposed: a 12-byte run is not folded", dst: n(layouttest.S64(200, 100, 3), nil, 4), src: n(layouttest.S64(200, 100, 3), layouttest.S64(3, 600, 1), 4), opt: a16,
			sig: "btile:nd=3,item=4,vec=1,idx=32", shape: layouttest.S64(200, 100, 3), ds: layouttest.S64(300, 3, 1), ss: layouttest.S64(3, 600, 1)},
		{name: "RGB transpose aligned to 2: no 12-byte vectors, bytes", dst: n(layouttest.S64(200, 100, 3), nil, 1), src: n(layouttest.S64(200, 100, 3), layouttest.S64(3, 600, 1), 1), opt: layout.PlanOptions{DstAlign: 2, SrcAlign: 16},
			sig: "btile:nd=3,item=1,vec=1,idx=32", shape: layouttest.S64(200, 100, 3), ds: layouttest.S64(300, 3, 1), ss: layouttest.S64(3, 600, 1)},
		{name: "a 6-byte run of bytes aligned to 1 stays bytes", dst: n(layouttest.S64(200, 100, 6), nil, 1), src: n(layouttest.S64(200, 100, 6), layouttest.S64(6, 1200, 1), 1), opt: layout.PlanOptions{DstAlign: 1, SrcAlign: 1},
			sig: "btile:nd=3,item=1,vec=1,idx=32", shape: layouttest.S64(200, 100, 6), ds: layouttest.S64(600, 6, 1), ss: layouttest.S64(6, 1200, 1)},
		{name: "transpose with a long common run is elementwise", dst: n(layouttest.S64(20, 30, 40), nil, 4), src: n(layouttest.S64(20, 30, 40), layouttest.S64(40, 800, 1), 4), opt: a16,
			sig: "elem:nd=3,item=16,vec=1,idx=32", shape: layouttest.S64(20, 30, 10), ds: layouttest.S64(300, 10, 1), ss: layouttest.S64(10, 200, 1)},
		{name: "transpose with a common run under ElemRunBytes is a box tile", dst: n(layouttest.S64(20, 30, 36), nil, 4), src: n(layouttest.S64(20, 30, 36), layouttest.S64(36, 720, 1), 4), opt: a16,
			sig: "btile:nd=3,item=16,vec=1,idx=32"},
		{name: "a common run under ElemRunBytes whose src rows a step cuts apart is elementwise", dst: n(layouttest.S64(20, 30, 36), nil, 4), src: n(layouttest.S64(20, 30, 36), layouttest.S64(72, 1440, 1), 4), opt: a16,
			sig: "elem:nd=3,item=16,vec=1,idx=32"},
		{name: "the same at PlanOptions.ElemRunBytes 64 is elementwise", dst: n(layouttest.S64(20, 30, 36), nil, 4), src: n(layouttest.S64(20, 30, 36), layouttest.S64(36, 720, 1), 4), opt: layout.PlanOptions{DstAlign: 16, SrcAlign: 16, ElemRunBytes: 64},
			sig: "elem:nd=3,item=16,vec=1,idx=32"},
		{name: "permutation with src fast at middle canonical dim", dst: n(layouttest.S64(20, 30, 40), nil, 4), src: n(layouttest.S64(20, 30, 40), layouttest.S64(40, 1, 30*20), 4),
			sig: "btile:nd=3,item=4,vec=1,idx=32", shape: layouttest.S64(20, 30, 40), ds: layouttest.S64(1200, 40, 1), ss: layouttest.S64(40, 1, 600)},
		{name: "f64 transpose whose fast dims fill five eighths of their tiles is a tile", dst: n(layouttest.S64(40, 300), nil, 8), src: n(layouttest.S64(40, 300), layouttest.S64(1, 40), 8),
			sig: "tile:nd=2,fast=0,item=8,vec=1,idx=32"},
		{name: "f64 transpose filling under five eighths of its tiles is a box tile", dst: n(layouttest.S64(36, 300), nil, 8), src: n(layouttest.S64(36, 300), layouttest.S64(1, 36), 8),
			sig: "btile:nd=2,item=8,vec=1,idx=32"},
		{name: "u8 transpose in 4-byte vectors is a tile", dst: n(layouttest.S64(100, 200), nil, 1), src: n(layouttest.S64(100, 200), layouttest.S64(1, 100), 1), opt: a16,
			sig: "tile:nd=2,fast=0,item=1,vec=4,idx=32"},
		{name: "f32 transpose in single floats (odd extents) is a box tile", dst: n(layouttest.S64(301, 299), nil, 4), src: n(layouttest.S64(301, 299), layouttest.S64(1, 301), 4), opt: a16,
			sig: "btile:nd=2,item=4,vec=1,idx=32"},
		{name: "f32 transpose in single floats with a side of 96 is a box tile", dst: n(layouttest.S64(96, 299), nil, 4), src: n(layouttest.S64(96, 299), layouttest.S64(1, 96), 4), opt: a16,
			sig: "btile:nd=2,item=4,vec=1,idx=32"},
		{name: "f32 transpose at a 4-byte offset is a box tile", dst: n(layouttest.S64(128, 256), nil, 4), src: n(layouttest.S64(128, 256), layouttest.S64(1, 128), 4), opt: layout.PlanOptions{DstAlign: 16, SrcAlign: 4},
			sig: "btile:nd=2,item=4,vec=1,idx=32"},
		{name: "f64 transpose in single items is a tile", dst: n(layouttest.S64(301, 299), nil, 8), src: n(layouttest.S64(301, 299), layouttest.S64(1, 301), 8), opt: a16,
			sig: "tile:nd=2,fast=0,item=8,vec=1,idx=32"},
		{name: "small transpose below TileMinExtent is a box tile", dst: n(layouttest.S64(8, 8), nil, 4), src: n(layouttest.S64(8, 8), layouttest.S64(1, 8), 4),
			sig: "btile:nd=2,item=4,vec=1,idx=32"},
		{name: "slice [:, ::2] is elementwise", dst: n(layouttest.S64(64, 32), nil, 4), src: n(layouttest.S64(64, 32), layouttest.S64(64, 2), 4),
			sig: "elem:nd=1,item=4,vec=1,idx=32", shape: layouttest.S64(2048), ds: layouttest.S64(1), ss: layouttest.S64(2)},
		{name: "row slice [:, :32] of 64 merges rows into 16-byte elements", dst: n(layouttest.S64(64, 32), nil, 4), src: n(layouttest.S64(64, 32), layouttest.S64(64, 1), 4), opt: a16,
			sig: "elem:nd=2,item=16,vec=1,idx=32", shape: layouttest.S64(64, 8), ds: layouttest.S64(8, 1), ss: layouttest.S64(16, 1)},
		{name: "widening respects src alignment 4", dst: n(layouttest.S64(64, 32), nil, 4), src: n(layouttest.S64(64, 32), layouttest.S64(64, 1), 4), opt: layout.PlanOptions{DstAlign: 16, SrcAlign: 4},
			sig: "elem:nd=2,item=4,vec=1,idx=32", shape: layouttest.S64(64, 32)},
		{name: "widening respects strides: row pitch 34 floats allows 8 bytes", dst: n(layouttest.S64(64, 32), layouttest.S64(34, 1), 4), src: n(layouttest.S64(64, 32), nil, 4), opt: a16,
			sig: "elem:nd=2,item=8,vec=1,idx=32", shape: layouttest.S64(64, 16), ds: layouttest.S64(17, 1), ss: layouttest.S64(16, 1)},
		{name: "alignment below the itemsize splits the element", dst: n(layouttest.S64(10), layouttest.S64(2), 4), src: n(layouttest.S64(10), nil, 4), opt: layout.PlanOptions{DstAlign: 2, SrcAlign: 16},
			sig: "elem:nd=2,item=2,vec=1,idx=32", shape: layouttest.S64(10, 2), ds: layouttest.S64(4, 1), ss: layouttest.S64(2, 1)},
		{name: "negative strides in both are flipped", dst: n(layouttest.S64(8, 8), layouttest.S64(-8, -1), 4), src: n(layouttest.S64(8, 8), layouttest.S64(-8, -1), 4),
			sig: "memcpy:nd=1,item=4,vec=1,idx=32", shape: layouttest.S64(64), dOff: 0, sOff: 0},
		{name: "negative in src only stays (reverse copy)", dst: n(layouttest.S64(100), nil, 4), src: n(layouttest.S64(100), layouttest.S64(-1), 4),
			sig: "elem:nd=1,item=4,vec=1,idx=32", shape: layouttest.S64(100), ds: layouttest.S64(1), ss: layouttest.S64(-1), dOff: 0, sOff: 99 * 4},
		{name: "negative in dst only stays", dst: n(layouttest.S64(100), layouttest.S64(-1), 4), src: n(layouttest.S64(100), nil, 4),
			sig: "elem:nd=1,item=4,vec=1,idx=32", shape: layouttest.S64(100), ds: layouttest.S64(-1), ss: layouttest.S64(1), dOff: 99 * 4, sOff: 0},
		{name: "flip moves index 0: offsets point at the last element", dst: n(layouttest.S64(4, 5), layouttest.S64(-10, 1), 4), src: n(layouttest.S64(4, 5), layouttest.S64(-5, 1), 4),
			sig: "elem:nd=2,item=4,vec=1,idx=32", shape: layouttest.S64(4, 5), ds: layouttest.S64(10, 1), ss: layouttest.S64(5, 1), dOff: 0, sOff: 0},
		{name: "extent-1 dims are dropped", dst: n(layouttest.S64(1, 16, 1, 4), layouttest.S64(99, 4, 7, 1), 8), src: n(layouttest.S64(1, 16, 1, 4), layouttest.S64(5, 4, 3, 1), 8),
			sig: "memcpy:nd=1,item=8,vec=1,idx=32", shape: layouttest.S64(64)},
		{name: "broadcast row (NumPy: missing leading dim repeats)", dst: n(layouttest.S64(64, 32), nil, 4), src: n(layouttest.S64(32), nil, 4), opt: a16,
			sig: "bcast:nd=2,item=16,vec=1,idx=32", shape: layouttest.S64(64, 8), ds: layouttest.S64(8, 1), ss: layouttest.S64(0, 1)},
		{name: "broadcast column (NumPy: extent 1 repeats)", dst: n(layouttest.S64(64, 32), nil, 4), src: n(layouttest.S64(64, 1), nil, 4), opt: a16,
			sig: "bcast:nd=2,item=4,vec=4,idx=32", shape: layouttest.S64(64, 32), ds: layouttest.S64(32, 1), ss: layouttest.S64(1, 0)},
		{name: "scalar fills everything", dst: n(layouttest.S64(64, 32), nil, 4), src: n(nil, nil, 4), opt: a16,
			sig: "fill:nd=1,item=4,vec=4,idx=32", shape: layouttest.S64(2048), ds: layouttest.S64(1), ss: layouttest.S64(0)},
		{name: "fill with natural alignment only is scalar", dst: n(layouttest.S64(64, 32), nil, 4), src: n(layouttest.S64(1, 1), nil, 4),
			sig: "fill:nd=1,item=4,vec=1,idx=32"},
		{name: "single element is memcpy", dst: n(layouttest.S64(1, 1), nil, 8), src: n(layouttest.S64(1), nil, 8),
			sig: "memcpy:nd=1,item=8,vec=1,idx=32", shape: layouttest.S64(1)},
		{name: "empty is none", dst: n(layouttest.S64(3, 0), nil, 8), src: n(layouttest.S64(1, 0), nil, 8), sig: "none:nd=0,item=8,vec=1,idx=32"},
		{name: "24-byte items split into 8-byte elements", dst: n(layouttest.S64(8, 3), nil, 24), src: n(layouttest.S64(8, 3), layouttest.S64(1, 8), 24),
			sig: "btile:nd=3,item=8,vec=1,idx=32", shape: layouttest.S64(8, 3, 3), ds: layouttest.S64(9, 3, 1), ss: layouttest.S64(3, 24, 1)},
		{name: "12-byte items stay opaque in a gather", dst: n(layouttest.S64(20), nil, 12), src: n(layouttest.S64(20), layouttest.S64(3), 12),
			sig: "elem:nd=1,item=12,vec=1,idx=32"},
		{name: "12-byte items merge into a run", dst: n(layouttest.S64(20), nil, 12), src: n(layouttest.S64(20), nil, 12),
			sig: "memcpy:nd=1,item=4,vec=1,idx=32", shape: layouttest.S64(60)},
		{name: "index width 32 at volume 2^31-1", dst: n(layouttest.S64(math.MaxInt32), nil, 1), src: n(layouttest.S64(math.MaxInt32), layouttest.S64(-1), 1),
			sig: "elem:nd=1,item=1,vec=1,idx=32", sOff: math.MaxInt32 - 1},
		{name: "index width 64 at volume 2^31", dst: n(layouttest.S64(1<<31), nil, 1), src: n(layouttest.S64(1<<31), layouttest.S64(-1), 1),
			sig: "elem:nd=1,item=1,vec=1,idx=64", sOff: math.MaxInt32},
		{name: "index width 64 when a src offset passes 2^31", dst: n(layouttest.S64(1<<16, 2), nil, 1), src: n(layouttest.S64(1<<16, 2), layouttest.S64(1<<16, 1<<30), 1),
			sig: "btile:nd=2,item=1,vec=1,idx=64"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := layout.PlanCopy(c.dst, c.src, c.opt)
			if err != nil {
				t.Fatal(err)
			}
			if got := p.Sig.String(); got != c.sig {
				t.Errorf("signature %s, want %s", got, c.sig)
			}
			if err := p.Sig.Validate(); err != nil {
				t.Error(err)
			}
			eq := func(what string, got, want []int64) {
				if want != nil && !equal64(got, want) {
					t.Errorf("%s %v, want %v", what, got, want)
				}
			}
			eq("shape", p.Shape, c.shape)
			eq("dst strides", p.DstStrides, c.ds)
			eq("src strides", p.SrcStrides, c.ss)
			if p.DstOffset != c.dOff || p.SrcOffset != c.sOff {
				t.Errorf("offsets dst %d src %d, want %d %d", p.DstOffset, p.SrcOffset, c.dOff, c.sOff)
			}
			if p.Sig.Class != layout.ClassNone && p.Bytes != c.dst.Volume()*int64(c.dst.Itemsize()) {
				t.Errorf("Bytes %d, want %d", p.Bytes, c.dst.Volume()*int64(c.dst.Itemsize()))
			}
		})
	}
}

func equal64(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestPlanCopyErrors(t *testing.T) {
	n := func(shape, strides []int64, item int) layout.Layout {
		return layouttest.MustNew(t, shape, strides, item)
	}
	cases := []struct {
		name     string
		dst, src layout.Layout
		opt      layout.PlanOptions
		err      error
		mention  []string
	}{
		{"shapes differ", n(layouttest.S64(3, 4), nil, 4), n(layouttest.S64(4, 3), nil, 4), layout.PlanOptions{}, layout.ErrShape, []string{"src shape [4 3]", "dst shape [3 4]"}},
		{"NumPy: extent 1 in dst does not broadcast", n(layouttest.S64(1, 4), nil, 4), n(layouttest.S64(3, 4), nil, 4), layout.PlanOptions{}, layout.ErrShape, []string{"[3 4]", "[1 4]"}},
		{"src has more dims", n(layouttest.S64(4), nil, 4), n(layouttest.S64(1, 4), nil, 4), layout.PlanOptions{}, layout.ErrShape, []string{"src shape [1 4]", "dst shape [4]"}},
		{"itemsizes differ", n(layouttest.S64(4), nil, 4), n(layouttest.S64(4), nil, 8), layout.PlanOptions{}, layout.ErrItemsize, []string{"dst itemsize 4", "src itemsize 8"}},
		{"dst overlaps (zero stride)", n(layouttest.S64(4, 4), layouttest.S64(0, 1), 4), n(layouttest.S64(4, 4), nil, 4), layout.PlanOptions{}, layout.ErrOverlappingDst, []string{"dst (4,4):(0,1)x4"}},
		{"dst overlaps (strides 1,1)", n(layouttest.S64(3, 3), layouttest.S64(1, 1), 4), n(layouttest.S64(3, 3), nil, 4), layout.PlanOptions{}, layout.ErrOverlappingDst, []string{"dst"}},
		{"dst alignment not a power of two", n(layouttest.S64(4), nil, 4), n(layouttest.S64(4), nil, 4), layout.PlanOptions{DstAlign: 3}, layout.ErrAlignment, []string{"DstAlign = 3"}},
		{"src alignment negative", n(layouttest.S64(4), nil, 4), n(layouttest.S64(4), nil, 4), layout.PlanOptions{SrcAlign: -4}, layout.ErrAlignment, []string{"SrcAlign = -4"}},
		{"tile bytes negative", n(layouttest.S64(4), nil, 4), n(layouttest.S64(4), nil, 4), layout.PlanOptions{TileBytes: -1}, layout.ErrOption, []string{"TileBytes = -1"}},
		{"elem run bytes negative", n(layouttest.S64(4), nil, 4), n(layouttest.S64(4), nil, 4), layout.PlanOptions{ElemRunBytes: -5}, layout.ErrOption, []string{"ElemRunBytes = -5"}},
		{"cut src runs negative", n(layouttest.S64(4), nil, 4), n(layouttest.S64(4), nil, 4), layout.PlanOptions{CutSrcRuns: -2}, layout.ErrOption, []string{"CutSrcRuns = -2"}},
		{"zero layouts", layout.Layout{}, layout.Layout{}, layout.PlanOptions{}, layout.ErrItemsize, []string{"itemsize 0"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var p layout.Plan
			p.Sig.Class = layout.ClassTile
			err := layout.PlanCopyInto(&p, c.dst, c.src, c.opt)
			if !errors.Is(err, c.err) {
				t.Fatalf("error %v, want %v", err, c.err)
			}
			for _, m := range c.mention {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("error %q does not mention %q", err, m)
				}
			}
			if p.Sig.Class != layout.ClassNone || len(p.Shape) != 0 {
				t.Errorf("plan not reset after error: %+v", p)
			}
		})
	}
}

// A non-unique-looking but unique dst passes the exact check: offsets of
// shape (3,2) strides (2,3) are 0,3,2,5,4,7.
func TestPlanCopyUniqueDstExactCheck(t *testing.T) {
	d := layouttest.MustNew(t, layouttest.S64(3, 2), layouttest.S64(2, 3), 4)
	if _, err := layout.PlanCopy(d, layouttest.MustNew(t, layouttest.S64(3, 2), nil, 4), layout.PlanOptions{}); err != nil {
		t.Fatal(err)
	}
}

// Layout pairs that differ only in extents, strides and offsets share a
// signature (and so a kernel).
func TestPlanCopySignatureInvariance(t *testing.T) {
	groups := [][][2]layout.Layout{
		{ // 2-d transposes of f32
			{layouttest.MustNew(t, layouttest.S64(64, 128), nil, 4), layouttest.MustNew(t, layouttest.S64(64, 128), layouttest.S64(1, 64), 4)},
			{layouttest.MustNew(t, layouttest.S64(90, 300), nil, 4), layouttest.MustNew(t, layouttest.S64(90, 300), layouttest.S64(1, 90), 4)},
			{layouttest.MustNew(t, layouttest.S64(17, 4000), layouttest.S64(5000, 1), 4), layouttest.MustNew(t, layouttest.S64(17, 4000), layouttest.S64(1, 20), 4)},
		},
		{ // column slices
			{layouttest.MustNew(t, layouttest.S64(64, 32), nil, 2), layouttest.MustNew(t, layouttest.S64(64, 32), layouttest.S64(100, 2), 2)},
			{layouttest.MustNew(t, layouttest.S64(5, 7), nil, 2), layouttest.MustNew(t, layouttest.S64(5, 7), layouttest.S64(100, 3), 2)},
		},
		{ // dense copies
			{layouttest.MustNew(t, layouttest.S64(64, 32), nil, 8), layouttest.MustNew(t, layouttest.S64(64, 32), nil, 8)},
			{layouttest.MustNew(t, layouttest.S64(3, 5, 7), layouttest.S64(1, 3, 15), 8), layouttest.MustNew(t, layouttest.S64(3, 5, 7), layouttest.S64(1, 3, 15), 8)},
		},
	}
	for gi, g := range groups {
		var first layout.Signature
		for i, pr := range g {
			p, err := layout.PlanCopy(pr[0], pr[1], layout.PlanOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if i == 0 {
				first = p.Sig
			} else if p.Sig != first {
				t.Errorf("group %d: %v <- %v has signature %v, want %v", gi, pr[0], pr[1], p.Sig, first)
			}
		}
	}
}

func TestPlanCopyIntoNoAllocs(t *testing.T) {
	d := layouttest.MustNew(t, layouttest.S64(2, 3, 4, 5, 6, 7, 8, 9), nil, 4)
	s, err := layout.New(layouttest.S64(2, 3, 4, 5, 6, 7, 8, 9), layouttest.S64(1, 2, 6, 24, 120, 720, 5040, 40320), 4)
	if err != nil {
		t.Fatal(err)
	}
	var p layout.Plan
	allocs := testing.AllocsPerRun(100, func() {
		if err := layout.PlanCopyInto(&p, d, s, layout.PlanOptions{DstAlign: 16, SrcAlign: 16}); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("PlanCopyInto allocates %v times per call, want 0", allocs)
	}
}

// Many dims: 70 dims, most of extent 1 or 2, permuted src.
func TestPlanCopyManyDims(t *testing.T) {
	const nd = 70
	shape := make([]int64, nd)
	for i := range shape {
		shape[i] = 1
		if i%7 == 0 {
			shape[i] = 2
		}
	}
	d := layouttest.MustNew(t, shape, nil, 4)
	f, err := layout.Dense(shape, 4, layout.F)
	if err != nil {
		t.Fatal(err)
	}
	p, err := layout.PlanCopy(d, f, layout.PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Sig.NDim != 10 || p.Sig.Class != layout.ClassBoxTile {
		t.Errorf("plan %v, want a box tile over 10 dims", p.Sig)
	}
	checkPairs(t, d, f, p)
}

// genLayouts draws a dst/src pair for property tests: a unique dst with
// random extents, order, gaps and signs; a src of the same or a broadcastable
// shape with arbitrary (negative, zero, overlapping) or dense strides.
func genLayouts(t *rapid.T) (dst, src layout.Layout) {
	item := rapid.SampledFrom([]int{1, 2, 3, 4, 8, 12, 16, 24}).Draw(t, "item")
	var shape []int64
	big := rapid.IntRange(0, 3).Draw(t, "big") == 0
	if big { // large enough for tiles
		shape = rapid.SliceOfN(rapid.Int64Range(15, 20), 2, 3).Draw(t, "shape")
	} else {
		shape = rapid.SliceOfN(rapid.Int64Range(1, 5), 0, 6).Draw(t, "shape")
		if len(shape) > 0 && rapid.IntRange(0, 9).Draw(t, "empty") == 0 {
			shape[rapid.IntRange(0, len(shape)-1).Draw(t, "emptydim")] = 0
		}
	}
	nd := len(shape)
	denseStrides := func(label string) []int64 {
		perm := rapid.Permutation(iota(nd)).Draw(t, label+"perm")
		st := make([]int64, nd)
		acc := int64(1)
		for k := nd - 1; k >= 0; k-- {
			d := perm[k]
			st[d] = acc
			if rapid.Bool().Draw(t, label+"neg") {
				st[d] = -acc
			}
			acc *= max(shape[d], 1) * rapid.Int64Range(1, 2).Draw(t, label+"gap")
		}
		return st
	}
	var err error
	dst, err = layout.New(shape, denseStrides("d"), item)
	if err != nil {
		t.Fatal(err)
	}
	if rapid.IntRange(0, 3).Draw(t, "dmode") == 0 {
		st := rapid.SliceOfN(rapid.Int64Range(-9, 9), nd, nd).Draw(t, "dstrides")
		if l, err := layout.New(shape, st, item); err == nil && l.IsUnique() {
			dst = l
		}
	}
	ns := rapid.IntRange(0, nd).Draw(t, "ns")
	sshape := make([]int64, ns)
	for j := range sshape {
		sshape[j] = shape[nd-ns+j]
		if !big && rapid.IntRange(0, 4).Draw(t, "bcast") == 0 {
			sshape[j] = 1
		}
	}
	var sst []int64
	smode := rapid.IntRange(0, 2).Draw(t, "smode")
	if big {
		smode = 1
	}
	switch smode {
	case 0:
		sst = rapid.SliceOfN(rapid.Int64Range(-9, 9), ns, ns).Draw(t, "sstrides")
	case 1:
		perm := rapid.Permutation(iota(ns)).Draw(t, "sperm")
		sst = make([]int64, ns)
		acc := int64(1)
		for k := ns - 1; k >= 0; k-- {
			sst[perm[k]] = acc
			acc *= max(sshape[perm[k]], 1)
		}
	default: // same strides as dst (where shapes agree)
		sst = append([]int64(nil), dst.Strides()[nd-ns:]...)
	}
	src, err = layout.New(sshape, sst, item)
	if err != nil {
		t.Fatal(err)
	}
	return dst, src
}

func abs(a int64) int64 {
	if a < 0 {
		return -a
	}
	return a
}

func iota(n int) []int {
	p := make([]int, n)
	for i := range p {
		p[i] = i
	}
	return p
}

// eachIndex calls f with the element offsets of every index of shape under
// the given strides (an empty strides slice for leading dims means stride 0:
// broadcasting). The offsets are in items.
func eachIndex(shape []int64, strides [][]int64, f func(offs []int64)) {
	for _, e := range shape {
		if e == 0 {
			return
		}
	}
	nd := len(shape)
	idx := make([]int64, nd)
	offs := make([]int64, len(strides))
	stride := func(v, k int) int64 {
		st := strides[v]
		j := k - (nd - len(st))
		if j < 0 {
			return 0
		}
		return st[j]
	}
	for {
		f(offs)
		k := nd - 1
		for ; k >= 0; k-- {
			idx[k]++
			for v := range offs {
				offs[v] += stride(v, k)
			}
			if idx[k] < shape[k] {
				break
			}
			for v := range offs {
				offs[v] -= stride(v, k) * idx[k]
			}
			idx[k] = 0
		}
		if k < 0 {
			return
		}
	}
}

// srcStridesFor returns src's strides with broadcast (extent-1) dims zeroed.
func srcStridesFor(src layout.Layout) []int64 {
	st := src.Strides()
	for j, e := range src.Shape() {
		if e == 1 {
			st[j] = 0
		}
	}
	return st
}

// checkPairs checks that the plan addresses exactly the (dst byte, src byte)
// pairs of the original views, and the guarantees documented on Plan.
func checkPairs(t layouttest.TB, dst, src layout.Layout, p layout.Plan) {
	t.Helper()
	item := int64(dst.Itemsize())
	want := map[int64]int64{}
	eachIndex(dst.Shape(), [][]int64{dst.Strides(), srcStridesFor(src)}, func(o []int64) {
		for b := range item {
			db := (o[0]-dst.MinOffset())*item + b
			if _, dup := want[db]; dup {
				t.Fatalf("dst byte %d written twice by the original views", db)
			}
			want[db] = (o[1]-src.MinOffset())*item + b
		}
	})
	if p.Sig.Class == layout.ClassNone {
		if len(want) != 0 {
			t.Fatalf("ClassNone plan for %d bytes", len(want))
		}
		return
	}
	w := int64(p.Sig.Itemsize)
	got := 0
	eachIndex(p.Shape, [][]int64{p.DstStrides, p.SrcStrides}, func(o []int64) {
		for b := range w {
			db := p.DstOffset + o[0]*w + b
			sb := p.SrcOffset + o[1]*w + b
			ws, ok := want[db]
			if !ok || ws != sb {
				t.Fatalf("plan %v maps dst byte %d to src byte %d; want %d (present %v)", p.Sig, db, sb, ws, ok)
			}
			got++
		}
	})
	if got != len(want) {
		t.Fatalf("plan %v addresses %d bytes, the views %d", p.Sig, got, len(want))
	}
	if p.Bytes != int64(got) || p.Volume*w != p.Bytes {
		t.Fatalf("plan Bytes %d Volume %d, want %d bytes", p.Bytes, p.Volume, got)
	}
}

// checkGuarantees checks the vector and alignment guarantees of a plan made
// with options opt.
func checkGuarantees(t layouttest.TB, p layout.Plan, opt layout.PlanOptions, item int) {
	t.Helper()
	if p.Sig.Class == layout.ClassNone {
		return
	}
	if err := p.Sig.Validate(); err != nil {
		t.Fatal(err)
	}
	n := len(p.Shape)
	if int(p.Sig.NDim) != n {
		t.Fatalf("NDim %d, len(Shape) %d", p.Sig.NDim, n)
	}
	w := int64(p.Sig.Itemsize)
	nat := func(a int) int64 {
		if a == 0 {
			a = item & -item
		}
		return min(int64(a), 16)
	}
	aD, aS := nat(opt.DstAlign), nat(opt.SrcAlign)
	wa := w & -w // the alignment every element address must have
	if aD < wa || aS < wa || p.DstOffset%w != 0 || p.SrcOffset%w != 0 {
		t.Fatalf("element of %d bytes with alignments %d/%d, offsets %d/%d", w, aD, aS, p.DstOffset, p.SrcOffset)
	}
	for k := range n {
		if p.Shape[k] < 1 || p.DstStrides[k] == 0 {
			t.Fatalf("dim %d: extent %d dst stride %d", k, p.Shape[k], p.DstStrides[k])
		}
		if k > 0 && abs(p.DstStrides[k]) > abs(p.DstStrides[k-1]) {
			t.Fatalf("dims not ordered by |dst stride|: %v", p.DstStrides)
		}
	}
	v := int64(p.Sig.Vec)
	if v > 1 {
		vb := v * w
		switch p.Sig.Class {
		case layout.ClassTile:
			f := int(p.Sig.Fast)
			for k := range n {
				if k != n-1 && p.DstStrides[k]%v != 0 || k != f && p.SrcStrides[k]%v != 0 {
					t.Fatalf("tile vec %d: strides %v / %v", v, p.DstStrides, p.SrcStrides)
				}
			}
			if p.Shape[n-1]%v != 0 || p.Shape[f]%v != 0 || p.DstOffset%vb != 0 || p.SrcOffset%vb != 0 || aD < vb || aS < vb {
				t.Fatalf("tile vec %d: shape %v offsets %d/%d", v, p.Shape, p.DstOffset, p.SrcOffset)
			}
		case layout.ClassBroadcast, layout.ClassFill:
			for k := range n - 1 {
				if p.DstStrides[k]%v != 0 {
					t.Fatalf("bcast vec %d: dst strides %v", v, p.DstStrides)
				}
			}
			if p.DstStrides[n-1] != 1 || p.SrcStrides[n-1] != 0 || p.Shape[n-1]%v != 0 || p.DstOffset%vb != 0 || aD < vb {
				t.Fatalf("bcast vec %d: plan %+v", v, p)
			}
		default:
			t.Fatalf("vec %d in class %v", v, p.Sig.Class)
		}
	}
	if !p.Sig.Index64 {
		dMax, sMax := p.DstOffset/w, p.SrcOffset/w
		for k := range n {
			dMax += max(p.DstStrides[k], 0) * (p.Shape[k] - 1)
			sMax += max(p.SrcStrides[k], 0) * (p.Shape[k] - 1)
		}
		if p.Volume > math.MaxInt32 || dMax > math.MaxInt32 || sMax > math.MaxInt32 {
			t.Fatalf("idx=32 with volume %d, max offsets %d/%d", p.Volume, dMax, sMax)
		}
	}
	if p.Sig.Class == layout.ClassMemcpy || p.Sig.Class == layout.ClassElementwise {
		if v != 1 {
			t.Fatalf("vec %d in class %v", v, p.Sig.Class)
		}
	}
	switch p.Sig.Class {
	case layout.ClassMemcpy:
		if n != 1 || p.DstStrides[0] != 1 || p.SrcStrides[0] != 1 {
			t.Fatalf("memcpy plan %+v", p)
		}
	case layout.ClassTile:
		f := int(p.Sig.Fast)
		if p.DstStrides[n-1] != 1 || p.SrcStrides[f] != 1 || p.SrcStrides[n-1] == 1 ||
			p.Shape[n-1] < layout.TileMinExtent || p.Shape[f] < layout.TileMinExtent {
			t.Fatalf("tile plan %+v", p)
		}
		for k := range n {
			if p.SrcStrides[k] == 0 || k < f && p.SrcStrides[k] == 1 {
				t.Fatalf("tile plan %+v", p)
			}
		}
	case layout.ClassFill:
		for _, s := range p.SrcStrides {
			if s != 0 {
				t.Fatalf("fill plan %+v", p)
			}
		}
	case layout.ClassBoxTile:
		if n > layout.MaxBoxNDim || len(p.Tile) != n {
			t.Fatalf("btile plan of %d dims with tile %v", n, p.Tile)
		}
		vol := int64(1)
		for k, e := range p.Tile {
			if e < 1 || e > p.Shape[k] || p.SrcStrides[k] == 0 {
				t.Fatalf("btile plan %+v", p)
			}
			vol *= e
		}
		src, dst := tilegeom.BoxSides(p.Shape, p.DstStrides, p.SrcStrides, p.Tile)
		tilegeom.CutDstRuns(&dst, &src, p.Shape, p.Tile, w)
		if vol > 1 && vol*w > layout.DefaultTileBytes || tilegeom.BoxSharedBytes(src, dst, p.Tile, w, tilegeom.WordGrain, 8) > tilegeom.MaxBoxSharedBytes {
			t.Fatalf("btile plan %+v too large", p)
		}
		if p.Box == nil {
			t.Fatalf("btile plan %+v without its geometry", p)
		}
		checkGrain(t, p, opt, w)
	}
	if p.Sig.Class != layout.ClassBoxTile && (len(p.Tile) != 0 || p.Box != nil) {
		t.Fatalf("tile %v (geometry %+v) in a %v plan", p.Tile, p.Box, p.Sig.Class)
	}
	if p.DstOffset < 0 || p.SrcOffset < 0 || p.DstOffset >= max(p.DstSpan, 1) || p.SrcOffset >= max(p.SrcSpan, 1) {
		t.Fatalf("offsets %d/%d outside spans %d/%d", p.DstOffset, p.SrcOffset, p.DstSpan, p.SrcSpan)
	}
}

// checkGrain checks a box tile's geometry and the grain of its src slots:
// 16-byte chunks only where opt asks for them, the src runs are contiguous,
// the shared memory fits and a warp's reads of a dst run's first 32
// elements meet no more bank conflicts than at words; words otherwise.
func checkGrain(t layouttest.TB, p layout.Plan, opt layout.PlanOptions, w int64) {
	grain := p.Box.Grain
	var g, g4 tilegeom.BoxGeometry
	set := func(g *tilegeom.BoxGeometry, grain int64) {
		g.Set(p.Shape, p.DstStrides, p.SrcStrides, p.Tile, w, grain, p.Sig.Index64)
		if p.Box.Src.Holes && !g.SetSpans(p.Shape, p.DstStrides, p.SrcStrides, p.Tile, w, grain, p.Sig.Index64) {
			t.Fatalf("btile plan %+v: src spans %+v, but SpanSide takes no more dims", p, p.Box.Src)
		}
	}
	set(&g, grain)
	if *p.Box != g {
		t.Fatalf("btile plan %+v: geometry %+v, want %+v", p, p.Box, g)
	}
	switch {
	case grain == tilegeom.WordGrain:
	case grain != tilegeom.ChunkGrain || opt.LoadGrain != tilegeom.ChunkGrain:
		t.Fatalf("grain %d for LoadGrain %d", grain, opt.LoadGrain)
	case g.Src.Step != 1 && g.Src.Step != -1 || g.Shared.Total > tilegeom.MaxBoxSharedBytes:
		t.Fatalf("chunks for src runs of step %d, %d bytes of shared memory", g.Src.Step, g.Shared.Total)
	default:
		set(&g4, tilegeom.WordGrain)
		if c, c4 := bankLoad(&g, p.Tile, w), bankLoad(&g4, p.Tile, w); c > c4 {
			t.Fatalf("chunks with %d words in a bank, %d with words (weights %v, %v)", c, c4, g.W, g4.W)
		}
	}
}

// bankLoad is the planner's measure of a store phase's bank conflicts,
// worked out element by element: for each phase 0-3, the most distinct
// 4-byte words in one bank among those the first 32 elements of dst run 0
// touch, summed.
func bankLoad(g *tilegeom.BoxGeometry, tile []int64, item int64) int {
	sum := 0
	for ph := int64(0); ph < 4; ph++ {
		banks := map[int64]map[int64]bool{}
		for i := int64(0); i < min(g.Dst.RunLen, 32); i++ {
			off, x := ph, i
			for _, k := range g.Dst.Order[:g.Dst.NRun] {
				off += x % tile[k] * g.W[k]
				x /= tile[k]
			}
			for b := off; b < off+min(item, 16); b++ {
				word := b >> 2
				if banks[word&31] == nil {
					banks[word&31] = map[int64]bool{}
				}
				banks[word&31][word] = true
			}
		}
		most := 0
		for _, ws := range banks {
			most = max(most, len(ws))
		}
		sum += most
	}
	return sum
}

func TestPlanCopyProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		dst, src := genLayouts(t)
		opt := layout.PlanOptions{
			DstAlign:  rapid.SampledFrom([]int{0, 1, 2, 4, 8, 16, 64}).Draw(t, "dalign"),
			SrcAlign:  rapid.SampledFrom([]int{0, 1, 2, 4, 8, 16, 64}).Draw(t, "salign"),
			LoadGrain: rapid.SampledFrom([]int{0, 4, 16}).Draw(t, "grain"),
		}
		p, err := layout.PlanCopy(dst, src, opt)
		if err != nil {
			t.Fatalf("PlanCopy(%v, %v): %v", dst, src, err)
		}
		checkPairs(t, dst, src, p)
		checkGuarantees(t, p, opt, dst.Itemsize())
		// Reusing a plan gives the same result.
		var q layout.Plan
		_ = layout.PlanCopyInto(&q, layouttest.MustNew(t, layouttest.S64(7, 9), nil, 2), layouttest.MustNew(t, layouttest.S64(7, 9), layouttest.S64(1, 7), 2), layout.PlanOptions{})
		if err := layout.PlanCopyInto(&q, dst, src, opt); err != nil || q.Sig != p.Sig || !equal64(q.Shape, p.Shape) ||
			!equal64(q.DstStrides, p.DstStrides) || !equal64(q.SrcStrides, p.SrcStrides) || q.DstOffset != p.DstOffset || q.SrcOffset != p.SrcOffset {
			t.Fatalf("reused plan %+v differs from %+v (%v)", q, p, err)
		}
	})
}

// FuzzPlanCopy decodes a dst/src pair from the fuzz input; the planner must
// never panic, and an accepted pair must be planned exactly.
func FuzzPlanCopy(f *testing.F) {
	f.Add([]byte{2, 4, 3, 4, 1, 2, 2, 0xfd, 1, 0x02})
	f.Add([]byte{3, 1, 5, 5, 5, 25, 5, 1, 3, 1, 5, 25, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		dst, src, opt, ok := layouttest.DecodePair(data)
		if !ok {
			return
		}
		p, err := layout.PlanCopy(dst, src, opt)
		if err != nil {
			return
		}
		checkPairs(t, dst, src, p)
		checkGuarantees(t, p, opt, dst.Itemsize())
	})
}

// TestPlanTransposes: a plan transposes where its src order differs from
// its dst order, whatever class the planner gave it.
func TestPlanTransposes(t *testing.T) {
	for _, c := range []struct {
		name       string
		shape, src []int64
		want       bool
	}{
		{"transpose", []int64{64, 64}, []int64{1, 64}, true},
		{"outer dims swapped, long common runs", []int64{8, 9, 256}, []int64{256, 2048, 1}, true},
		{"::2 slice", []int64{64, 64}, []int64{256, 2}, false},
		{"contiguous", []int64{64, 64}, nil, false},
	} {
		dst, _ := layout.Dense(c.shape, 4, layout.C)
		src, err := layout.New(c.shape, c.src, 4)
		if err != nil {
			t.Fatal(err)
		}
		p, err := layout.PlanCopy(dst, src, layout.PlanOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := p.Transposes(); got != c.want {
			t.Errorf("%s (%v): Transposes = %v, want %v", c.name, p.Sig, got, c.want)
		}
	}
}

// TestPlanLoadGrain: with LoadGrain 16 the planner lays out at 16-byte
// chunks a tile whose store phase keeps its banks (a u8 2-d transpose
// whose tile is one src run, a u8 6-d permutation), and at words one whose
// chunked slots put more of a dst run's first elements in a bank (3-byte
// items split into bytes, 7-d; a u8 6-d permutation). These ran, on an
// H200, 0.97-1.10 and 0.76-0.85 times as fast chunked.
func TestPlanLoadGrain(t *testing.T) {
	for _, c := range []struct {
		shape, ss []int64
		item      int
		grain     int64
	}{
		{layouttest.S64(148, 71, 101, 63), layouttest.S64(1, 941724, 9324, 148), 1, 16},
		{layouttest.S64(12, 16, 47, 32, 9, 26), layouttest.S64(1, 4223232, 12, 14664, 469248, 564), 1, 16},
		{layouttest.S64(6, 5, 24, 14, 11, 17, 12), layouttest.S64(14, 4523904, 84, 1, 2016, 22176, 376992), 3, 4},
	} {
		dst, src := layouttest.MustNew(t, c.shape, nil, c.item), layouttest.MustNew(t, c.shape, c.ss, c.item)
		for _, g := range []int{0, 4, 16} {
			opt := layout.PlanOptions{DstAlign: 16, SrcAlign: 16, TileBytes: 32 << 10, LoadGrain: g}
			p, err := layout.PlanCopy(dst, src, opt)
			if err != nil {
				t.Fatal(err)
			}
			if p.Sig.Class != layout.ClassBoxTile {
				t.Fatalf("%v from %v: %v, want a box tile", dst, src, p.Sig)
			}
			want := int64(tilegeom.WordGrain)
			if g == tilegeom.ChunkGrain {
				want = c.grain
			}
			if p.Box.Grain != want {
				t.Errorf("%v from %v, LoadGrain %d: grain %d, want %d", dst, src, g, p.Box.Grain, want)
			}
			checkGrain(t, p, opt, int64(p.Sig.Itemsize))
		}
	}
	if _, err := layout.PlanCopy(layouttest.MustNew(t, layouttest.S64(4, 4), nil, 1), layouttest.MustNew(t, layouttest.S64(4, 4), layouttest.S64(1, 4), 1), layout.PlanOptions{LoadGrain: 8}); !errors.Is(err, layout.ErrOption) {
		t.Errorf("LoadGrain 8: %v, want ErrOption", err)
	}
}
