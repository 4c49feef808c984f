// Command base links what a program that plans copies and copies on the
// host links, but not the device copy path: the baseline of
// scripts/binary-size.
package main

import (
	"fmt"
	"os"

	"github.com/stridekit/stridekit/layout"
	"github.com/stridekit/stridekit/runtime/cuda"
	"github.com/stridekit/stridekit/runtime/hostcopy"
)

func main() {
	d, err := cuda.GetDevice(0)
	fmt.Println(d, err)
	l, err := layout.Parse(os.Args[1])
	fmt.Println(l, err, hostcopy.Copy(nil, l, nil, l))
	p, err := layout.PlanCopy(l, l, layout.PlanOptions{})
	fmt.Println(p, err)
}
