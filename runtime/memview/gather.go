package memview

import (
	"os"

	"github.com/stridekit/stridekit/layout"
)

// localGatherPays reports whether a copy on one device planned as p runs
// faster as a gather (layout.ClassGather: dst written in its own order, a
// warp's 32 consecutive elements at a time, src read scattered). It does
// for elements of 8 bytes or more (layout.Plan's Itemsize, after the
// planner widened it) that
//   - transpose in runs common to both views (an elementwise plan), or
//   - would go through a box tile whose neighbours along src's fastest dim
//     lie at most localGatherNeighbours elements apart in dst: the sectors
//     a warp reads scattered are read again by it or the next warps while
//     they are still in L1.
//
// Measured on an H100 (seeds 937 and 941 of stridebench, 240 random
// permutations of 64 MiB, each planned both ways in one session; see
// docs/design.md, "The planner"): the 20 such elementwise copies ran -0.3 to
// +3.9 points of memcpy faster gathered, the 10 such box tiles -2.1 to
// +12.7 (mean +5.3). Gathers of smaller elements lost 5 to 57 points, and
// box tiles whose neighbours lie 43 to 126 elements apart -10.1 to +4.8.
// bind applies it under $STRIDEKIT_GATHER (gatherBy).
func localGatherPays(p *layout.Plan) bool {
	if !gatherable(p) || p.Sig.Itemsize < localGatherItem {
		return false
	}
	switch p.Sig.Class {
	case layout.ClassElementwise:
		return p.Transposes()
	case layout.ClassBoxTile:
		return abs(p.DstStrides[innermost(p.SrcStrides)]) <= localGatherNeighbours
	}
	return false
}

// localGatherItem and localGatherNeighbours are localGatherPays's bounds.
const (
	localGatherItem       = 8
	localGatherNeighbours = 32
)

// localGatherMode is $STRIDEKIT_GATHER, gatherBy's mode for
// localGatherPays: for measuring the rule (stridebench run).
var localGatherMode = os.Getenv("STRIDEKIT_GATHER")

// gatherBy says whether to run a copy planned as p as a gather, under a
// gather rule and the mode that measures it: "1" gathers every copy that
// could be a gather, "0" none, anything else those rule picks.
func gatherBy(mode string, p *layout.Plan, rule func(*layout.Plan) bool) bool {
	switch mode {
	case "1":
		return gatherable(p)
	case "0":
		return false
	}
	return rule(p)
}
