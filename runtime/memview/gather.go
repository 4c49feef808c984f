package memview

import (
	"os"

	"github.com/stridekit/stridekit/layout"
)

// localGatherPays reports whether a copy on one device planned as p runs
// faster as a gather (layout.ClassGather: dst written in its own order, a
// warp's 32 consecutive elements at a time, src read scattered) on a
// device of compute capability arch with l2 bytes of L2 cache (0:
// unknown). It does for
//   - elements of 8 bytes or more (layout.Plan's Itemsize, after the
//     planner widened it) that transpose in runs common to both views (an
//     elementwise plan);
//   - box tiles of 1-3-byte items whose src runs are short and dst runs
//     long (scatteredSrc);
//   - box tiles of copies that fit in L2 (l2BoxGather): of 8 bytes or more
//     whose neighbours along src's fastest dim lie at most
//     localGatherNeighbours elements apart in dst (the sectors a warp reads
//     scattered are read again by it or the next warps), and of 1-3-byte
//     items whose fastest dim is the same in both views (a common run the
//     planner could not widen into elements of 8 bytes or more, such as
//     151 bytes) of at least localGatherCommonRun bytes, where the gather
//     kernel writes dst in words (wordGather).
//
// Measured on an H100 (seeds 937 and 941 of stridebench, 240 random
// permutations of 64 MiB, each planned both ways in one session; see
// docs/design.md, "The planner"): the 20 such elementwise copies ran -0.3 to
// +3.9 points of memcpy faster gathered. The box tiles of the third group
// depend on the copy's size (2026-11-28, seeds 41 and 3001-3005, each
// timed both ways twice in one call): at 16 MiB, H200, they ran 1.095
// times as fast gathered (20 copies, 0.94-1.39); at 64 MiB 0.963 (H200)
// and 0.997 (H100); at 256 MiB 0.861 and 0.917 (17 copies; a uint8 7-d
// permutation 74 → 43% of memcpy gathered), once L2 no longer holds what
// the gather reads scattered.
// bind applies it under $STRIDEKIT_GATHER (gatherBy).
func localGatherPays(p *layout.Plan, arch int, l2 int64) bool {
	if !gatherable(p) {
		return false
	}
	if p.Sig.Itemsize < localGatherItem {
		return p.Sig.Class == layout.ClassBoxTile && (scatteredSrc(p) || l2BoxGather(p, arch, l2))
	}
	switch p.Sig.Class {
	case layout.ClassElementwise:
		return p.Transposes()
	case layout.ClassBoxTile:
		return l2BoxGather(p, arch, l2)
	}
	return false
}

// l2BoxGather reports whether box-tile plan p, whose copy fits in l2 bytes
// of L2, is one that localGatherPays gathers there.
func l2BoxGather(p *layout.Plan, arch int, l2 int64) bool {
	item := int64(p.Sig.Itemsize)
	if p.Volume > l2/item {
		return false
	}
	k := innermost(p.SrcStrides)
	if item >= localGatherItem {
		return abs(p.DstStrides[k]) <= localGatherNeighbours
	}
	return p.DstStrides[k] == 1 && p.SrcStrides[k] == 1 && p.Shape[k]*item >= localGatherCommonRun && wordGather(p, arch)
}

// localGatherItem, localGatherNeighbours, localGatherCommonRun and
// localGatherSrcRun are localGatherPays's bounds (with layout's
// ScatteredItem and ScatteredDstBytes, which the planner reads too).
const (
	localGatherItem       = 8
	localGatherNeighbours = 32
	localGatherCommonRun  = 64
	localGatherSrcRun     = 64
)

// scatteredSrc reports whether box-tile plan p moves items of 1 to
// layout.ScatteredItem bytes from src runs of under localGatherSrcRun
// bytes into dst runs of layout.ScatteredDstBytes or more: a src that a
// step, a flip or short extents cut into pieces, whose runs the tile
// cannot lengthen. A gather then writes dst in long runs and reads each
// src sector while its neighbours are still in the caches, where the box
// tile stages thousands of short runs a tile. Measured on an H100 (random views of 64 MiB, the
// gather forced against the default in one binary, two rounds each way):
// 1.31 times as fast over the 10 such plans of seed 1503 (1.08-1.57), and
// 1.32 over the 13 of fresh seeds 1505-1509 (0.99-2.38; a uint8 view 26 →
// 63% of its roofline); the other 37 box tiles of seed 1503 with src runs
// under 128 bytes ran 0.55 gathered (0.07-2.69: dst runs under 2 KB lost
// most).
//
// It reads the src runs as the tile stages them: runs that the planner
// made spans (tilegeom.SpanSide, a load of a run's bytes from its lowest
// element to its highest) are long, and stay box tiles. On an H200 (256
// MiB, ABC CBA) the two random views of 1-3-byte items whose short runs
// became spans ran 1.29 and 1.73 times as fast as gathered (a uint8 view
// 45.8 → 59.0% of memcpy, a 3-byte one 31.5 → 54.6).
func scatteredSrc(p *layout.Plan) bool {
	item := int64(p.Sig.Itemsize)
	return item <= layout.ScatteredItem && p.Box != nil && p.Box.Src.RunLen*item < localGatherSrcRun && p.Box.Dst.RunLen*item >= layout.ScatteredDstBytes
}

// localGatherMode is $STRIDEKIT_GATHER, gatherBy's mode for
// localGatherPays: for measuring the rule (stridebench run).
var localGatherMode = os.Getenv("STRIDEKIT_GATHER")

// gatherBy says whether to run a copy planned as p, on a device of compute
// capability arch, as a gather, under a gather rule and the mode that
// measures it: "1" gathers every copy that could be a gather, "0" none,
// anything else those rule picks.
func gatherBy(mode string, p *layout.Plan, arch int, rule func(*layout.Plan, int) bool) bool {
	switch mode {
	case "1":
		return gatherable(p)
	case "0":
		return false
	}
	return rule(p, arch)
}
