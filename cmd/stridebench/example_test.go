package main

import (
	"fmt"
	"strings"

	"github.com/stridekit/stridekit/gen"
	"github.com/stridekit/stridekit/layout"
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

// The tuner writes an architecture's entries under a comment of its own and
// keeps the rest of the table as it was.
func Example_tuningTable() {
	old := "# header\nany elem * * threads=256 rows=4\n"
	e := gen.TuningEntry{Arch: 90, Class: layout.ClassElementwise, Set: map[string]int{"threads": 128, "rows": 8}}
	text, err := rewriteTuning(old, 90, []string{"tuned on a test GPU."}, []gen.TuningEntry{e})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Print(text)
	// Output:
	// # header
	// any elem * * threads=256 rows=4
	//
	// # sm_90: tuned on a test GPU.
	// sm_90 elem * * threads=128 rows=8
}

// A knob value replaces the current one only when it is faster by more
// than 2% and by more than twice the spread of the samples.
func Example_replacementRule() {
	cur := score{OK: true, Time: 1.000e-3, Spread: 4e-6}
	for _, t := range []float64{0.990e-3, 0.975e-3, 0.900e-3} {
		fmt.Printf("%.3f ms against 1.000 ms: %v\n", t*1e3, beats(score{OK: true, Time: t, Spread: 4e-6}, cur))
	}
	// Output:
	// 0.990 ms against 1.000 ms: false
	// 0.975 ms against 1.000 ms: true
	// 0.900 ms against 1.000 ms: true
}

// The record measures a case against memcpy, or against its roofline when
// its source reads more sectors than the copy writes: here both copies take
// twice memcpy's time, but a[:, ::2] can reach only two thirds of memcpy.
func Example_reference() {
	cs, _ := parseSuite(strings.NewReader("half f32 64x128 src=slice(:,::2)\nt f32 64x64 src=perm(1,0)\n"), "example")
	for _, p := range prepare(cs, nil) {
		r := newResult(p, nil)
		fillTimes(r, timing{Median: 2e-6}, timing{Median: 1e-6})
		pct, ref := reference(r)
		fmt.Printf("%s: %.0f%% of memcpy, %.0f%% of the reference (%s)\n", r.Name, r.PctMemcpy, pct, ref)
	}
	// Output:
	// half: 50% of memcpy, 75% of the reference (roofline)
	// t: 50% of memcpy, 50% of the reference (memcpy)
}
