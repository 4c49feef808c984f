// Command stridekit is the command-line front end of stridekit.
//
// Usage:
//
//	stridekit plan -dst LAYOUT -src LAYOUT [-dst-align N] [-src-align N]
//
// plan runs the copy planner on a destination and a source layout and prints
// the canonical form it reduces them to, the kernel class and the kernel
// signature. Layouts are written as Layout.String prints them:
// "(shape):(strides)xitemsize", strides in elements, e.g. a transposed
// 4096×4096 float32 matrix is "(4096,4096):(1,4096)x4"; leaving out
// ":(strides)" means dense C order. The alignments are the byte alignments
// known for the start of each buffer (default 256, as cuMemAlloc guarantees).
//
// Example:
//
//	stridekit plan -dst '(4096,4096):(4096,1)x4' -src '(4096,4096):(1,4096)x4'
//
// Exit status: 0 on success, 1 when the planner refuses the pair (the error
// says why), 2 on bad usage.
package main

import (
	"flag"
	"fmt"
	"io"
	"log"
	"os"

	"github.com/stridekit/stridekit/layout"
)

func main() {
	log.SetFlags(0)
	log.SetPrefix("stridekit: ")
	if len(os.Args) < 2 {
		usage()
		os.Exit(2)
	}
	switch os.Args[1] {
	case "plan":
		os.Exit(planCmd(os.Args[2:], os.Stdout, os.Stderr))
	case "-h", "-help", "--help", "help":
		usage()
	default:
		log.Printf("unknown command %q", os.Args[1])
		usage()
		os.Exit(2)
	}
}

func usage() {
	fmt.Fprintf(os.Stderr, "usage:\n\tstridekit plan -dst LAYOUT -src LAYOUT [-dst-align N] [-src-align N]\n")
}

// planCmd runs "stridekit plan" and returns the exit status.
func planCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("plan", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dstText := fs.String("dst", "", "destination layout, e.g. '(4096,4096):(4096,1)x4'")
	srcText := fs.String("src", "", "source layout, e.g. '(4096,4096):(1,4096)x4'")
	dstAlign := fs.Int("dst-align", 256, "byte alignment of the destination buffer's start")
	srcAlign := fs.Int("src-align", 256, "byte alignment of the source buffer's start")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *dstText == "" || *srcText == "" || fs.NArg() != 0 {
		fmt.Fprintln(stderr, "stridekit plan: -dst and -src are required, and nothing else")
		return 2
	}
	dst, err := layout.Parse(*dstText)
	if err != nil {
		fmt.Fprintf(stderr, "stridekit plan: -dst: %v\n", err)
		return 2
	}
	src, err := layout.Parse(*srcText)
	if err != nil {
		fmt.Fprintf(stderr, "stridekit plan: -src: %v\n", err)
		return 2
	}
	p, err := layout.PlanCopy(dst, src, layout.PlanOptions{DstAlign: *dstAlign, SrcAlign: *srcAlign})
	if err != nil {
		fmt.Fprintf(stderr, "stridekit plan: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "dst        %v\nsrc        %v\n", dst, src)
	fmt.Fprintf(stdout, "class      %v\nsignature  %v\n", p.Sig.Class, p.Sig)
	fmt.Fprintf(stdout, "canonical  shape %v  dst strides %v  src strides %v  (elements of %d bytes)\n",
		p.Shape, p.DstStrides, p.SrcStrides, p.Sig.Itemsize)
	fmt.Fprintf(stdout, "offsets    dst %d B  src %d B\n", p.DstOffset, p.SrcOffset)
	fmt.Fprintf(stdout, "moves      %d elements, %d bytes\n", p.Volume, p.Bytes)
	return 0
}
