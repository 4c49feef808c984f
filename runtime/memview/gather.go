package memview

import (
	"os"

	"github.com/stridekit/stridekit/layout"
)

// localGatherPays reports whether a copy on one device planned as p runs
// faster as a gather (layout.ClassGather: dst written in its own order, a
// warp's 32 consecutive elements at a time, src read scattered) on a
// device of compute capability arch. It does for
//   - elements of 8 bytes or more (layout.Plan's Itemsize, after the
//     planner widened it) that transpose in runs common to both views (an
//     elementwise plan), and
//   - box tiles of 1-3-byte items whose src runs are short and dst runs
//     long (scatteredSrc).
//
// Measured on an H100 (seeds 937 and 941 of stridebench, 240 random
// permutations of 64 MiB, each planned both ways in one session; see
// docs/design.md, "The planner"): the 20 such elementwise copies ran -0.3 to
// +3.9 points of memcpy faster gathered. Other box tiles stay box tiles:
// those of 8 bytes or more whose neighbours along src's fastest dim lie at
// most 32 elements apart in dst, and those of 1-3-byte items whose fastest
// dim is the same in both views, which this rule gathered until
// 2026-11-28, ran 1.161 (H200) and 1.090 (H100) times as fast as box
// tiles over the 17 such copies of 256 MiB among seeds 41 and 3001-3005
// (0.96-1.70: a uint8 7-d permutation 43 → 74% of memcpy), and 1.038 and
// 1.003 over the 20 of 64 MiB (0.87-1.21), where L2 still holds much of
// what the gather reads scattered; the elementwise ones gathered stayed
// ahead (box tile over gather 0.994 and 0.977, H200).
// bind applies it under $STRIDEKIT_GATHER (gatherBy).
func localGatherPays(p *layout.Plan, arch int) bool {
	if !gatherable(p) {
		return false
	}
	if p.Sig.Itemsize < localGatherItem {
		return p.Sig.Class == layout.ClassBoxTile && scatteredSrc(p)
	}
	return p.Sig.Class == layout.ClassElementwise && p.Transposes()
}

// localGatherItem, localGatherSrcRun and localGatherDstRun are
// localGatherPays's bounds.
const (
	localGatherItem   = 8
	localGatherSrcRun = 64
	localGatherDstRun = 4096
)

// scatteredSrc reports whether box-tile plan p moves items of 1 to 3 bytes
// from src runs of under localGatherSrcRun bytes into dst runs of
// localGatherDstRun bytes or more: a src that a step, a flip or short
// extents cut into pieces, whose runs the tile cannot lengthen. A gather
// then writes dst in long runs and reads each src sector while its
// neighbours are still in the caches, where the box tile stages thousands
// of short runs a tile. Measured on an H100 (random views of 64 MiB, the
// gather forced against the default in one binary, two rounds each way):
// 1.31 times as fast over the 10 such plans of seed 1503 (1.08-1.57), and
// 1.32 over the 13 of fresh seeds 1505-1509 (0.99-2.38; a uint8 view 26 →
// 63% of its roofline); the other 37 box tiles of seed 1503 with src runs
// under 128 bytes ran 0.55 gathered (0.07-2.69: dst runs under 2 KB lost
// most).
func scatteredSrc(p *layout.Plan) bool {
	item := int64(p.Sig.Itemsize)
	return item <= 3 && p.Box != nil && p.Box.Src.RunLen*item < localGatherSrcRun && p.Box.Dst.RunLen*item >= localGatherDstRun
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
