package main

import (
	"fmt"
	"strings"
)

// A case line builds a source view of a dense array and a destination
// view: here NCHW to NHWC in half precision, written as a dense NCHW source
// copied into a dense NHWC array viewed through perm(0,3,1,2).
func Example_caseSyntax() {
	cs, err := parseSuite(strings.NewReader("nchw_nhwc f16 2x3x4x5 dst=perm(0,3,1,2)\n"), "example")
	if err != nil {
		fmt.Println(err)
		return
	}
	b, err := buildCase(cs[0])
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("src", b.Src, "of array", shapeString(b.SrcBase.Shape()))
	fmt.Println("dst", b.Dst, "of array", shapeString(b.DstBase.Shape()))
	// Output:
	// src (2,3,4,5):(60,20,5,1)x2 of array 2x3x4x5
	// dst (2,3,4,5):(60,1,15,3)x2 of array 2x4x5x3
}

// The roofline counts 32-byte sectors: a[:, ::2] of a float32 array reads
// every sector of its rows, twice the bytes it writes.
func Example_roofline() {
	cs, _ := parseSuite(strings.NewReader("half f32 64x128 src=slice(:,::2)\n"), "example")
	b, _ := buildCase(cs[0])
	fmt.Println("writes", b.Moved, "bytes; DRAM moves", rooflineBytes(b), "bytes")
	// Output: writes 16384 bytes; DRAM moves 49152 bytes
}

// Random cases are named by their seed and index and do not depend on how
// many are made.
func Example_randomCases() {
	for _, c := range randomCases(randomSpec{N: 2, Seed: 5, Bytes: 1 << 20}) {
		fmt.Println(c.Name)
	}
	// Output:
	// rand-s5-i0-t1048576
	// rand-s5-i1-t1048576
}
