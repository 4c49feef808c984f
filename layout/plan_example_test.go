package layout_test

import (
	"fmt"

	"github.com/stridekit/stridekit/layout"
)

// Plan the transpose of a 64×32 float32 matrix stored in F order into a C-order
// one, with both buffers 16-byte aligned: a tile kernel that moves 4 floats
// per vector on both sides.
func ExamplePlanCopy() {
	dst, _ := layout.Dense([]int64{64, 32}, 4, layout.C)
	src, _ := layout.Dense([]int64{64, 32}, 4, layout.F)
	p, err := layout.PlanCopy(dst, src, layout.PlanOptions{DstAlign: 16, SrcAlign: 16})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(p.Sig)
	fmt.Println(p.Shape, p.DstStrides, p.SrcStrides, p.Bytes)

	// A same-order copy of a sliced view of rows merges into 16-byte elements.
	view, _ := layout.New([]int64{64, 32}, []int64{64, 1}, 4)
	p, _ = layout.PlanCopy(dst, view, layout.PlanOptions{DstAlign: 16, SrcAlign: 16})
	fmt.Println(p.Sig)
	fmt.Println(p.Shape, p.DstStrides, p.SrcStrides)
	// Output:
	// tile:nd=2,fast=0,item=4,vec=4,idx=32
	// [64 32] [32 1] [1 64] 8192
	// elem:nd=2,item=16,vec=1,idx=32
	// [64 8] [8 1] [16 1]
}
