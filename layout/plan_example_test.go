package layout_test

import (
	"fmt"

	"github.com/stridekit/stridekit/layout"
)

// Plan the transpose of a 64×32 float32 matrix stored in F order into a C-order
// one, with both buffers 16-byte aligned: a tile kernel that moves 4 floats
// per vector on both sides.
func ExamplePlanCopy() {
	dst, _ := layout.Dense([]int64{128, 64}, 4, layout.C)
	src, _ := layout.Dense([]int64{128, 64}, 4, layout.F)
	p, err := layout.PlanCopy(dst, src, layout.PlanOptions{DstAlign: 16, SrcAlign: 16})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(p.Sig)
	fmt.Println(p.Shape, p.DstStrides, p.SrcStrides, p.Bytes)

	// A same-order copy of a sliced view of rows merges into 16-byte elements.
	view, _ := layout.New([]int64{128, 64}, []int64{100, 1}, 4)
	p, _ = layout.PlanCopy(dst, view, layout.PlanOptions{DstAlign: 16, SrcAlign: 16})
	fmt.Println(p.Sig)
	fmt.Println(p.Shape, p.DstStrides, p.SrcStrides)

	// A transpose of odd extents cannot use vectors: a box tile, each side
	// read or written in runs of floats.
	odd, _ := layout.Dense([]int64{301, 299}, 4, layout.C)
	oddT, _ := layout.Dense([]int64{301, 299}, 4, layout.F)
	p, _ = layout.PlanCopy(odd, oddT, layout.PlanOptions{DstAlign: 16, SrcAlign: 16})
	fmt.Println(p.Sig)
	thin, _ := layout.Dense([]int64{91, 299}, 4, layout.C)
	thinT, _ := layout.Dense([]int64{91, 299}, 4, layout.F)
	p, _ = layout.PlanCopy(thin, thinT, layout.PlanOptions{DstAlign: 16, SrcAlign: 16})
	fmt.Println(p.Sig, p.Tile)
	// Output:
	// tile:nd=2,fast=0,item=4,vec=4,idx=32
	// [128 64] [64 1] [1 128] 32768
	// elem:nd=2,item=16,vec=1,idx=32
	// [128 16] [16 1] [25 1]
	// btile:nd=2,item=4,vec=1,idx=32
	// btile:nd=2,item=4,vec=1,idx=32 [46 60]
}

// A copy whose writes cost more than its reads (a destination across a
// peer link) can ask for a gather: every element in dst's order, the
// source read wherever it lies, no tile. A copy that needs no kernel of
// that kind keeps its class.
func ExamplePlanOptions_gather() {
	dst, _ := layout.Dense([]int64{301, 299}, 4, layout.C)
	src, _ := layout.Dense([]int64{301, 299}, 4, layout.F)
	opt := layout.PlanOptions{DstAlign: 16, SrcAlign: 16, Gather: true}
	p, _ := layout.PlanCopy(dst, src, opt)
	fmt.Println(p.Sig, p.Shape, p.DstStrides, p.SrcStrides)
	p, _ = layout.PlanCopy(dst, dst, opt)
	fmt.Println(p.Sig)
	// Output:
	// gather:nd=2,item=4,vec=1,idx=32 [301 299] [299 1] [1 301]
	// memcpy:nd=1,item=4,vec=1,idx=32
}
