package gen_test

import (
	"fmt"
	"log"
	"strings"

	"github.com/stridekit/stridekit/gen"
	"github.com/stridekit/stridekit/layout"
)

// Name spells a signature in the kernel's name, so a profiler trace says
// which kernel ran.
func ExampleName() {
	sig, err := layout.ParseSignature("tile:nd=3,fast=0,item=4,vec=4,idx=32")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(gen.Name(sig))
	// Output: sk_tile_nd3_f0_i4_v4_i32
}

// Source renders the CUDA C of one kernel; the same signature and knobs
// always give the same bytes.
func ExampleSource() {
	sig, _ := layout.ParseSignature("elem:nd=2,item=8")
	k := gen.KnobsFor(sig, 90) // the tuning of sm_90 GPUs (H100, H200)
	src, err := gen.Source(sig, k)
	if err != nil {
		log.Fatal(err)
	}
	again, _ := gen.Source(sig, k)
	fmt.Println(strings.Contains(src, `extern "C" __global__`), src == again)
	// Output: true true
}
