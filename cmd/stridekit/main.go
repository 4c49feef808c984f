// Command stridekit is the command-line front end of stridekit: it runs a
// copy (the quick start) and shows how any copy is planned.
//
// Usage:
//
//	stridekit copy [-n N] [-dtype DTYPE] [-device N] [-reps N]
//	stridekit plan -dst LAYOUT -src LAYOUT [-dst-align N] [-src-align N]
//
// copy transposes an N×N matrix on the GPU through runtime/memview
// (dst.CopyFrom(src.Permute(1, 0), stream)), checks the result, and prints
// its bandwidth beside cuMemcpyDtoD of the same bytes, timed the same way
// in the same run. Without a GPU it says so in one line and runs the same
// copy on the host.
//
// plan runs the copy planner on a destination and a source layout and prints
// the canonical form it reduces them to, the kernel class and signature, and
// for a box tile its runs. The alignments are the byte alignments of the
// views' lowest bytes (default 256, as cuMemAlloc gives).
//
// A LAYOUT is written as layout.Layout.String prints it:
//
//	(shape):(strides)xITEM
//
// strides counted in items, ITEM the item size in bytes or a dtype name
// (float32, f16, bf16, uint8, complex128, …); leaving out ":(strides)" means
// dense C order. A transposed 4096×4096 float32 matrix is
// "(4096,4096):(1,4096)xfloat32", the same as "(4096,4096):(1,4096)x4".
//
// Example:
//
//	stridekit plan -dst '(4096,4096)xf32' -src '(4096,4096):(1,4096)xf32'
//
// Exit status: 0 on success (and for -h), 1 when the copy or the plan fails
// (the error says why), 2 on bad usage (the message names the flag).
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/stridekit/stridekit/layout"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

const usageText = `usage:
	stridekit copy [-n N] [-dtype DTYPE] [-device N] [-reps N]
	stridekit plan -dst LAYOUT -src LAYOUT [-dst-align N] [-src-align N]
Run "stridekit COMMAND -h" for a command's flags and the LAYOUT syntax.
`

// run runs the command line args and returns the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) < 1 {
		fmt.Fprint(stderr, usageText)
		return 2
	}
	switch args[0] {
	case "plan":
		return planCmd(args[1:], stdout, stderr)
	case "copy":
		return copyCmd(args[1:], stdout, stderr)
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, usageText)
		return 0
	}
	fmt.Fprintf(stderr, "stridekit: unknown command %q\n%s", args[0], usageText)
	return 2
}

const layoutHelp = `
A LAYOUT is (shape):(strides)xITEM: strides counted in items, ITEM the item
size in bytes or a dtype name (float32, f16, bf16, uint8, complex128, ...);
without ":(strides)" the layout is dense C order. Examples:
  (4096,4096)xfloat32            a row-major float32 matrix
  (4096,4096):(1,4096)x4         its transpose (column-major)
  (3,5):(-5,1)x2                 rows reversed, 2-byte items
`

// newFlags returns a flag set whose -h prints the command's usage and whose
// errors name the flag (the flag package's own messages).
func newFlags(name, synopsis string, stderr io.Writer, extra string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: stridekit %s %s\n\nFlags:\n", name, synopsis)
		fs.PrintDefaults()
		fmt.Fprint(fs.Output(), extra)
	}
	return fs
}

// parseFlags parses args; it returns the exit status to use when the
// command must stop (-h: 0, printing usage to stdout; a bad flag: 2).
func parseFlags(fs *flag.FlagSet, args []string, stdout io.Writer) (int, bool) {
	err := fs.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		fs.SetOutput(stdout)
		fs.Usage()
		return 0, false
	}
	if err != nil {
		return 2, false
	}
	return 0, true
}

// parseLayout reads a LAYOUT whose ITEM may be a dtype name; it returns the
// layout and the dtype, the zero DType for a plain item size (which goes
// with any dtype of that size).
func parseLayout(s string) (layout.Layout, layout.DType, error) {
	i := strings.LastIndex(s, "x")
	if i < 0 || i < strings.LastIndex(s, ")") {
		return layout.Layout{}, layout.DType{}, fmt.Errorf("%q has no xITEM after the shape", s)
	}
	item := s[i+1:]
	if _, err := strconv.Atoi(item); err == nil {
		l, err := layout.Parse(s)
		return l, layout.DType{}, err
	}
	dt, err := layout.ParseDType(item)
	if err != nil {
		return layout.Layout{}, layout.DType{}, err
	}
	if dt.Itemsize() == 0 {
		return layout.Layout{}, layout.DType{}, fmt.Errorf("%v has no whole-byte items: give its packed group size in bytes", dt)
	}
	l, err := layout.Parse(s[:i] + "x" + strconv.Itoa(dt.Itemsize()))
	return l, dt, err
}

// planCmd runs "stridekit plan" and returns the exit status.
func planCmd(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("plan", "-dst LAYOUT -src LAYOUT [-dst-align N] [-src-align N]", stderr, layoutHelp)
	dstText := fs.String("dst", "", "destination `LAYOUT`, e.g. '(4096,4096)xfloat32' (required)")
	srcText := fs.String("src", "", "source `LAYOUT`, e.g. '(4096,4096):(1,4096)xfloat32' (required)")
	dstAlign := fs.Int("dst-align", 256, "byte alignment of the destination's lowest byte")
	srcAlign := fs.Int("src-align", 256, "byte alignment of the source's lowest byte")
	if st, ok := parseFlags(fs, args, stdout); !ok {
		return st
	}
	if fs.NArg() != 0 {
		fmt.Fprintf(stderr, "stridekit plan: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	for _, f := range []struct{ name, val string }{{"-dst", *dstText}, {"-src", *srcText}} {
		if f.val == "" {
			fmt.Fprintf(stderr, "stridekit plan: %s is required\n", f.name)
			return 2
		}
	}
	dst, ddt, err := parseLayout(*dstText)
	if err != nil {
		fmt.Fprintf(stderr, "stridekit plan: -dst: %v\n", err)
		return 2
	}
	src, sdt, err := parseLayout(*srcText)
	if err != nil {
		fmt.Fprintf(stderr, "stridekit plan: -src: %v\n", err)
		return 2
	}
	for _, a := range []struct {
		name string
		v    int
	}{{"-dst-align", *dstAlign}, {"-src-align", *srcAlign}} {
		if a.v < 0 || a.v&(a.v-1) != 0 {
			fmt.Fprintf(stderr, "stridekit plan: %s %d is not 0 or a power of two\n", a.name, a.v)
			return 2
		}
	}
	if ddt.IsValid() && sdt.IsValid() && ddt != sdt {
		fmt.Fprintf(stderr, "stridekit plan: the dtypes differ: -dst %v, -src %v (copies do not convert)\n", ddt, sdt)
		return 1
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
	if p.Sig.Class == layout.ClassBoxTile {
		s, d := layout.BoxSides(p.Shape, p.DstStrides, p.SrcStrides, p.Tile)
		fmt.Fprintf(stdout, "tile       %v: src runs %d × %d elements (step %d), dst runs %d × %d elements (step %d)\n",
			p.Tile, s.Runs, s.RunLen, s.Step, d.Runs, d.RunLen, d.Step)
	}
	fmt.Fprintf(stdout, "moves      %d elements, %d bytes\n", p.Volume, p.Bytes)
	return 0
}
