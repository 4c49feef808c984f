package kernels_test

import (
	"fmt"

	"github.com/stridekit/stridekit/kernels"
	"github.com/stridekit/stridekit/layout"
	"github.com/stridekit/stridekit/runtime/cuda"
)

// PlanOptions gives the planner the real alignment of both views' lowest
// bytes: a transpose of float32 matrices at 256-byte aligned addresses is
// vectorised 4 wide, the same at an odd float offset moves single floats
// through a box tile.
func ExamplePlanOptions() {
	dst, _ := layout.Dense([]int64{4096, 4096}, 4, layout.C)
	src, _ := layout.Dense([]int64{4096, 4096}, 4, layout.F)
	for _, base := range []cuda.DevicePtr{0x7f0000000000, 0x7f0000000004} {
		p, err := layout.PlanCopy(dst, src, kernels.PlanOptions(nil, base, base, 4))
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(p.Sig)
	}
	// Output:
	// tile:nd=2,fast=0,item=4,vec=4,idx=32
	// btile:nd=2,item=4,vec=1,idx=32
}
