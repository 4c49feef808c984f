// Package layouttest holds what the planner's and the host copier's tests
// share: MustNew for table literals, and DecodePair, which turns fuzzer input
// into a pair of layouts for a copy so both fuzz targets explore the same
// space: any ndim up to 6, extents up to 8, itemsizes 1..24, small signed
// strides (negative, zero, overlapping), sources of fewer dims and extent-1
// dims that broadcast, and odd buffer alignments.
package layouttest

import "github.com/stridekit/stridekit/layout"

// DecodePair reads, one small signed byte each: ndim, itemsize, the extents, the
// dst strides, the src ndim, for each src dim a broadcast flag and a stride,
// and the two alignments (from 0, 1, 2, 4, 8, 16, 32 and the invalid 3). It
// returns ok=false when the bytes describe no valid pair of layouts or one
// larger than 64 KiB. Missing bytes read as zero.
func DecodePair(data []byte) (dst, src layout.Layout, opt layout.PlanOptions, ok bool) {
	next := func() int64 {
		if len(data) == 0 {
			return 0
		}
		b := data[0]
		data = data[1:]
		return int64(int8(b))
	}
	nd := int(uint8(next()) % 7)
	item := int(uint8(next())%24) + 1
	shape := make([]int64, nd)
	vol := int64(1)
	for i := range shape {
		shape[i] = int64(uint8(next()) % 9)
		vol *= max(shape[i], 1)
	}
	if vol*int64(item) > 1<<16 {
		return dst, src, opt, false
	}
	dsts := make([]int64, nd)
	for i := range dsts {
		dsts[i] = next()
	}
	ns := int(uint8(next())) % (nd + 1)
	sshape := make([]int64, ns)
	sst := make([]int64, ns)
	for j := range sshape {
		sshape[j] = shape[nd-ns+j]
		if next()&1 == 1 {
			sshape[j] = 1
		}
		sst[j] = next()
	}
	aligns := []int{0, 1, 2, 4, 8, 16, 32, 3}
	opt.DstAlign = aligns[uint8(next())%8]
	opt.SrcAlign = aligns[uint8(next())%8]
	var err error
	if dst, err = layout.New(shape, dsts, item); err != nil {
		return dst, src, opt, false
	}
	if src, err = layout.New(sshape, sst, item); err != nil {
		return dst, src, opt, false
	}
	return dst, src, opt, true
}

// TB is the part of testing.TB that rapid.T also has, so helpers serve both.
type TB interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

// MustNew is layout.New that fails t instead of returning an error.
func MustNew(t TB, shape, strides []int64, item int) layout.Layout {
	t.Helper()
	l, err := layout.New(shape, strides, item)
	if err != nil {
		t.Fatalf("New(%v, %v, %d): %v", shape, strides, item, err)
	}
	return l
}

// MustDense is layout.Dense of shape in the order perm (C order when perm
// is empty) that fails t instead of returning an error.
func MustDense(t TB, shape []int64, item int, perm ...int) layout.Layout {
	t.Helper()
	order := layout.C
	if len(perm) > 0 {
		order = layout.Perm(perm...)
	}
	l, err := layout.Dense(shape, item, order)
	if err != nil {
		t.Fatalf("Dense(%v, %d, perm %v): %v", shape, item, perm, err)
	}
	return l
}

// S64 spells an []int64 literal briefly in test tables.
func S64(v ...int64) []int64 { return v }

// DispatchCase is a small copy of one kernel class: dst is dense (C
// order) of Shape, src is Shape at SrcStrides (in items of Item bytes),
// and its plan's class is Class. The dispatch benchmarks (gen's plan and
// packing, kernels' Bind, memview's first and repeated copies) time the
// same cases, so their figures add up.
type DispatchCase struct {
	Name              string
	Shape, SrcStrides []int64
	Item              int
	Class             layout.Class
}

// DispatchCases returns one small copy of every kernel class: a 128×128
// float32 transpose, a 16 KiB uint8 permutation (a box tile), a float32
// slice of step 2 (elementwise), a broadcast row and a fill.
func DispatchCases() []DispatchCase {
	return []DispatchCase{
		{"tile-f32-128x128", S64(128, 128), S64(1, 128), 4, layout.ClassTile},
		{"btile-u8-16KiB-perm", S64(16, 32, 32), S64(1, 16, 512), 1, layout.ClassBoxTile},
		{"elem-f32-slice2", S64(64, 128), S64(512, 2), 4, layout.ClassElementwise},
		{"bcast-f32-row", S64(64, 128), S64(0, 1), 4, layout.ClassBroadcast},
		{"fill-f32", S64(64, 128), S64(0, 0), 4, layout.ClassFill},
	}
}
