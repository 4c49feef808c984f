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
// copy on the host. Its limits: -n 1..131072, -reps 1..10000, one matrix
// at most 16 GiB; the two host matrices must fit in half of the physical
// memory and, on a GPU, the two device matrices in the device's memory. A
// copy past them is a usage error, reported before anything is allocated.
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
// strides counted in items, ITEM the item size in bytes or a whole-byte
// dtype name (float32, f16, bf16, uint8, complex128, float32x4, x3 or
// opaque3 for 3-byte opaque items, …: layout.ParseDType's names, as in
// stridebench's suites); leaving out ":(strides)" means dense C order. A
// transposed 4096×4096 float32 matrix is "(4096,4096):(1,4096)xfloat32",
// the same as "(4096,4096):(1,4096)x4".
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
size in bytes or a whole-byte dtype name (float32, f16, bf16, uint8,
complex128, float32x4, x3 or opaque3 for 3-byte opaque items, ...); without
":(strides)" the layout is dense C order. Examples:
  (4096,4096)xfloat32            a row-major float32 matrix
  (4096,4096):(1,4096)x4         its transpose (column-major)
  (3,5):(-5,1)x2                 rows reversed, 2-byte items
`

// usageError is a command-line error: the command prints it and its
// synopsis, and exits 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

// usagef returns a usageError; the message names the flag and its value.
func usagef(format string, a ...any) error {
	return &usageError{fmt.Sprintf(format, a...)}
}

// newFlags returns the flag set of a command. It prints nothing while
// parsing (parse functions return errors; the command prints them); its
// Usage prints the command's synopsis, its flags and extra.
func newFlags(name, synopsis, extra string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: stridekit %s %s\n\nFlags:\n", name, synopsis)
		fs.PrintDefaults()
		fmt.Fprint(fs.Output(), extra)
	}
	return fs
}

// parseFlags parses args with fs: flag.ErrHelp for -h, a usageError for a
// bad flag or an argument left over.
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return &usageError{err.Error()}
	}
	if fs.NArg() != 0 {
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	return nil
}

// parseStatus ends a command whose flags did not parse: -h prints fs's
// usage on stdout (status 0); a usage error prints the error and the
// command's synopsis on stderr (status 2). stop is false when err is nil.
func parseStatus(fs *flag.FlagSet, synopsis string, err error, stdout, stderr io.Writer) (status int, stop bool) {
	if err == nil {
		return 0, false
	}
	if errors.Is(err, flag.ErrHelp) {
		fs.SetOutput(stdout)
		fs.Usage()
		return 0, true
	}
	fmt.Fprintf(stderr, "stridekit %s: %v\nusage: stridekit %s %s\nRun \"stridekit %s -h\" for the flags and their limits.\n",
		fs.Name(), err, fs.Name(), synopsis, fs.Name())
	return 2, true
}

// wholeDType reads a dtype name (layout.ParseDType's spellings: float32,
// f16, bf16, x3, opaque12, float32x4, ...) and refuses sub-byte types,
// whose elements are not whole bytes.
func wholeDType(name string) (layout.DType, error) {
	dt, err := layout.ParseDType(name)
	if err != nil {
		return layout.DType{}, err
	}
	if dt.Itemsize() == 0 {
		return layout.DType{}, fmt.Errorf("%v is a sub-byte type (%d bits an element): give its packed group size in bytes, or a whole-byte dtype", dt, dt.TotalBits())
	}
	return dt, nil
}

// parseLayout reads a LAYOUT whose ITEM may be a dtype name; it returns the
// layout and the dtype, the zero DType for a plain item size (which goes
// with any dtype of that size). ITEM is what follows the first 'x' after
// the shape and strides, so dtype names with lanes (float32x4) and the
// opaque spelling xN ("(8,8)xx3") work.
func parseLayout(s string) (layout.Layout, layout.DType, error) {
	end := strings.LastIndex(s, ")")
	if end < 0 {
		return layout.Layout{}, layout.DType{}, fmt.Errorf("%q has no (shape)", s)
	}
	i := strings.Index(s[end:], "x")
	if i < 0 {
		return layout.Layout{}, layout.DType{}, fmt.Errorf("%q has no xITEM after the shape", s)
	}
	i += end
	item := strings.TrimSpace(s[i+1:])
	if _, err := strconv.Atoi(item); err == nil {
		l, err := layout.Parse(s)
		return l, layout.DType{}, err
	}
	dt, err := wholeDType(item)
	if err != nil {
		return layout.Layout{}, layout.DType{}, err
	}
	l, err := layout.Parse(s[:i] + "x" + strconv.Itoa(dt.Itemsize()))
	return l, dt, err
}

// planConfig is what "stridekit plan" plans.
type planConfig struct {
	dst, src           layout.Layout
	dstDType, srcDType layout.DType // zero for a plain item size
	dstAlign, srcAlign int
}

const planSynopsis = "-dst LAYOUT -src LAYOUT [-dst-align N] [-src-align N]"

// maxAlign bounds -dst-align and -src-align.
const maxAlign = 1 << 30

// planFlags declares the flags of "stridekit plan".
func planFlags() (fs *flag.FlagSet, dst, src *string, dstAlign, srcAlign *int) {
	fs = newFlags("plan", planSynopsis, layoutHelp)
	dst = fs.String("dst", "", "destination `LAYOUT`, e.g. '(4096,4096)xfloat32' (required)")
	src = fs.String("src", "", "source `LAYOUT`, e.g. '(4096,4096):(1,4096)xfloat32' (required)")
	dstAlign = fs.Int("dst-align", 256, "byte alignment of the destination's lowest byte (0 or a power of two up to 2^30)")
	srcAlign = fs.Int("src-align", 256, "byte alignment of the source's lowest byte (0 or a power of two up to 2^30)")
	return
}

// parsePlan reads the flags of "stridekit plan": flag.ErrHelp for -h, a
// usageError for bad usage.
func parsePlan(args []string) (*planConfig, error) {
	fs, dstText, srcText, dstAlign, srcAlign := planFlags()
	if err := parseFlags(fs, args); err != nil {
		return nil, err
	}
	for _, f := range []struct{ name, val string }{{"-dst", *dstText}, {"-src", *srcText}} {
		if f.val == "" {
			return nil, usagef("%s is required", f.name)
		}
	}
	c := &planConfig{dstAlign: *dstAlign, srcAlign: *srcAlign}
	var err error
	if c.dst, c.dstDType, err = parseLayout(*dstText); err != nil {
		return nil, usagef("-dst %q: %v", *dstText, err)
	}
	if c.src, c.srcDType, err = parseLayout(*srcText); err != nil {
		return nil, usagef("-src %q: %v", *srcText, err)
	}
	for _, a := range []struct {
		name string
		v    int
	}{{"-dst-align", c.dstAlign}, {"-src-align", c.srcAlign}} {
		if a.v < 0 || a.v > maxAlign || a.v&(a.v-1) != 0 {
			return nil, usagef("%s %d is not 0 or a power of two up to 2^30", a.name, a.v)
		}
	}
	return c, nil
}

// planCmd runs "stridekit plan" and returns the exit status.
func planCmd(args []string, stdout, stderr io.Writer) int {
	c, err := parsePlan(args)
	if st, stop := parseStatus(planUsage(), planSynopsis, err, stdout, stderr); stop {
		return st
	}
	dst, src, ddt, sdt := c.dst, c.src, c.dstDType, c.srcDType
	if ddt.IsValid() && sdt.IsValid() && ddt != sdt {
		fmt.Fprintf(stderr, "stridekit plan: the dtypes differ: -dst %v, -src %v (copies do not convert)\n", ddt, sdt)
		return 1
	}
	p, err := layout.PlanCopy(dst, src, layout.PlanOptions{DstAlign: c.dstAlign, SrcAlign: c.srcAlign})
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
		s, d := &p.Box.Src, &p.Box.Dst
		spans := ""
		if s.Holes {
			spans = fmt.Sprintf(", each loaded as a span of %d", s.Span)
		}
		fmt.Fprintf(stdout, "tile       %v: src runs %d × %d elements (step %d%s), dst runs %d × %d elements (step %d)\n",
			p.Tile, s.Runs, s.RunLen, s.Step, spans, d.Runs, d.RunLen, d.Step)
	}
	fmt.Fprintf(stdout, "moves      %d elements, %d bytes\n", p.Volume, p.Bytes)
	return 0
}

// planUsage returns a flag set of "stridekit plan" to print its usage.
func planUsage() *flag.FlagSet {
	fs, _, _, _, _ := planFlags()
	return fs
}
