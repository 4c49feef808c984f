// Command copy is testdata/binsize/base plus a device copy
// (runtime/memview): the difference in size is what the copy path, its
// kernels and their renderer add to a program (scripts/binary-size).
package main

import (
	"fmt"
	"os"

	"github.com/stridekit/stridekit/layout"
	"github.com/stridekit/stridekit/runtime/cuda"
	"github.com/stridekit/stridekit/runtime/hostcopy"
	"github.com/stridekit/stridekit/runtime/memview"
)

func main() {
	d, err := cuda.GetDevice(0)
	fmt.Println(d, err)
	l, err := layout.Parse(os.Args[1])
	fmt.Println(l, err, hostcopy.Copy(nil, l, nil, l))
	p, err := layout.PlanCopy(l, l, layout.PlanOptions{})
	fmt.Println(p, err)
	var v memview.StridedMemoryView
	fmt.Println(v.CopyFrom(nil, nil))
}
