package main

import (
	"encoding/binary"
	"flag"
	"fmt"
	"io"
	"math"
	"math/bits"
	"slices"
	"strings"
	"time"

	"github.com/stridekit/stridekit/internal/meminfo"
	"github.com/stridekit/stridekit/layout"
	"github.com/stridekit/stridekit/runtime/cuda"
	"github.com/stridekit/stridekit/runtime/memview"
)

// Limits of "stridekit copy" (its -h states them).
const (
	maxCopyN    = 1 << 17 // -n
	maxCopyReps = 10000   // -reps
	// maxMatrixBytes bounds one N×N matrix; the copy holds two of them on
	// the device and two on the host.
	maxMatrixBytes = 16 << 30
	// maxOrdinal bounds -device.
	maxOrdinal = 1 << 16
)

const copySynopsis = "[-n N] [-dtype DTYPE] [-device N] [-reps N]"

const copyHelp = `
Limits: -n 1..131072, -reps 1..10000, -device 0..65536; one N×N matrix may
take at most 16 GiB (N·N·itemsize bytes). The copy needs two matrices on the
host (the source pattern and the result), which must fit in half of the
machine's physical memory, and on a GPU two on the device, which must fit
in its total memory; a copy that does not fit is refused before anything
is allocated.

DTYPE is a dtype name: float32, f16, bf16, uint8, complex128, float32x4, x3
or opaque3 (3-byte opaque items), ...; sub-byte types (fp4, fp6) are refused.
`

// copyConfig is what "stridekit copy" runs.
type copyConfig struct {
	n       int64
	dtype   layout.DType
	ordinal int
	reps    int
	layout  layout.Layout // the N×N matrix, dense C order
	bytes   int64         // the bytes of one matrix
}

// copyFlags declares the flags of "stridekit copy".
func copyFlags() (fs *flag.FlagSet, n *int64, dtype *string, ordinal, reps *int) {
	fs = newFlags("copy", copySynopsis, copyHelp)
	n = fs.Int64("n", 8192, "the matrix is `N`×N (1..131072)")
	dtype = fs.String("dtype", "float32", "element type: a `DTYPE` name (float32, f16, uint8, complex128, x3, ...)")
	ordinal = fs.Int("device", 0, "CUDA device `ordinal`")
	reps = fs.Int("reps", 20, "timed copies, the median is printed (`N`: 1..10000)")
	return
}

// parseCopy reads the flags of "stridekit copy": flag.ErrHelp for -h, a
// usageError for bad usage, such as a matrix past maxMatrixBytes. It
// allocates nothing of the matrix's size and touches no device.
func parseCopy(args []string) (*copyConfig, error) {
	fs, n, dtName, ordinal, reps := copyFlags()
	if err := parseFlags(fs, args); err != nil {
		return nil, err
	}
	dt, err := wholeDType(*dtName)
	if err != nil {
		return nil, usagef("-dtype %q: %v", *dtName, err)
	}
	if *n < 1 || *n > maxCopyN {
		return nil, usagef("-n %d: must be in 1..%d", *n, maxCopyN)
	}
	if *reps < 1 || *reps > maxCopyReps {
		return nil, usagef("-reps %d: must be in 1..%d", *reps, maxCopyReps)
	}
	if *ordinal < 0 || *ordinal > maxOrdinal {
		return nil, usagef("-device %d: must be in 0..%d", *ordinal, maxOrdinal)
	}
	c := &copyConfig{n: *n, dtype: dt, ordinal: *ordinal, reps: *reps}
	size, ok := matrixBytes(*n, dt.Itemsize())
	if !ok || size > maxMatrixBytes {
		return nil, usagef("-n %d -dtype %v: an N×N matrix of %d-byte items takes %s, more than the %s limit", *n, dt, dt.Itemsize(), bytesText(*n, dt.Itemsize()), sizeText(maxMatrixBytes))
	}
	c.bytes = size
	if c.layout, err = layout.Dense([]int64{*n, *n}, dt.Itemsize(), layout.C); err != nil {
		return nil, usagef("-n %d -dtype %v: %v", *n, dt, err)
	}
	return c, nil
}

// matrixBytes returns n·n·item, and false when it overflows an int64.
func matrixBytes(n int64, item int) (int64, bool) {
	if n < 0 || item < 0 {
		return 0, false
	}
	hi, lo := bits.Mul64(uint64(n), uint64(n))
	if hi != 0 {
		return 0, false
	}
	hi, lo = bits.Mul64(lo, uint64(item))
	if hi != 0 || lo > math.MaxInt64 {
		return 0, false
	}
	return int64(lo), true
}

// bytesText writes n·n·item bytes for a message, without overflowing.
func bytesText(n int64, item int) string {
	if b, ok := matrixBytes(n, item); ok {
		return sizeText(b)
	}
	return fmt.Sprintf("%.3g bytes", float64(n)*float64(n)*float64(item))
}

// sizeText writes a byte count in binary units: "16 GiB", "1.5 MiB".
func sizeText(b int64) string {
	const units = "KMGTPE"
	if b < 1024 {
		return fmt.Sprintf("%d bytes", b)
	}
	v, u := float64(b)/1024, 0
	for v >= 1024 && u < len(units)-1 {
		v /= 1024
		u++
	}
	return fmt.Sprintf("%.4g %ciB", v, units[u])
}

// getDevice opens the CUDA device; tests replace it.
var getDevice = cuda.GetDevice

// hostMemory returns the machine's physical memory in bytes, 0 when it is
// not known; tests replace it.
var hostMemory = func() int64 { return int64(min(meminfo.Total(), 1<<62)) }

// fitsHost checks that the host buffers of the copy (two matrices) fit in
// half of the physical memory, where that is known.
func fitsHost(c *copyConfig) error {
	mem := hostMemory()
	if mem <= 0 {
		return nil
	}
	if need := 2 * c.bytes; need > mem/2 {
		return usagef("-n %d -dtype %v: the copy needs %s of host memory (two %s matrices), more than half of this machine's %s", c.n, c.dtype, sizeText(need), sizeText(c.bytes), sizeText(mem))
	}
	return nil
}

// fitsDevice checks that the device buffers (two matrices) fit in the
// device's total memory.
func fitsDevice(c *copyConfig, total int64, name string) error {
	if total <= 0 {
		return nil
	}
	if need := 2 * c.bytes; need > total {
		return usagef("-n %d -dtype %v: the copy needs %s on the device (two %s matrices), more than the %s of %s", c.n, c.dtype, sizeText(need), sizeText(c.bytes), sizeText(total), name)
	}
	return nil
}

// oneLine joins the lines of an error message with spaces.
func oneLine(err error) string { return strings.Join(strings.Fields(err.Error()), " ") }

// copyCmd runs "stridekit copy": a transpose on the GPU through memview,
// timed beside cuMemcpyDtoD, or on the host when there is no GPU.
func copyCmd(args []string, stdout, stderr io.Writer) int {
	c, err := parseCopy(args)
	if err == nil {
		err = fitsHost(c)
	}
	if st, stop := parseStatus(copyUsage(), copySynopsis, err, stdout, stderr); stop {
		return st
	}
	dev, err := getDevice(c.ordinal)
	if err != nil {
		fmt.Fprintf(stdout, "no GPU (%s): running the same copy on the host\n", oneLine(err))
		return hostCopy(c.layout, c.dtype, c.reps, stdout, stderr)
	}
	if err := fitsDevice(c, dev.TotalMemory(), dev.Name()); err != nil {
		st, _ := parseStatus(copyUsage(), copySynopsis, err, stdout, stderr)
		return st
	}
	if err := deviceCopy(dev, c.layout, c.dtype, c.reps, stdout); err != nil {
		fmt.Fprintf(stderr, "stridekit copy: %v\n", err)
		return 1
	}
	return 0
}

// copyUsage returns a flag set of "stridekit copy" to print its usage.
func copyUsage() *flag.FlagSet {
	fs, _, _, _, _ := copyFlags()
	return fs
}

// pattern returns bytes where element i holds i (little-endian, truncated
// to the item size), so a transposed copy can be checked exactly.
func pattern(l layout.Layout) []byte {
	item := l.Itemsize()
	b := make([]byte, l.RequiredSizeInBytes())
	var w [8]byte
	for i := int64(0); i < l.Volume(); i++ {
		binary.LittleEndian.PutUint64(w[:], uint64(i))
		copy(b[i*int64(item):], w[:min(item, 8)])
	}
	return b
}

// checkTransposed reports the first element of got that is not the
// transpose of pattern(l); it computes the pattern's elements as it goes
// rather than holding a third matrix.
func checkTransposed(got []byte, l layout.Layout) error {
	n, item := l.Shape()[0], int64(l.Itemsize())
	want := make([]byte, item)
	var w [8]byte
	for i := int64(0); i < n; i++ {
		for j := int64(0); j < n; j++ {
			binary.LittleEndian.PutUint64(w[:], uint64(j*n+i))
			copy(want, w[:min(item, 8)])
			if g := got[(i*n+j)*item : (i*n+j+1)*item]; string(g) != string(want) {
				return fmt.Errorf("element (%d, %d) is % x, want % x", i, j, g, want)
			}
		}
	}
	return nil
}

func deviceCopy(dev *cuda.Device, l layout.Layout, dt layout.DType, reps int, out io.Writer) error {
	s, err := dev.NewStream(true)
	if err != nil {
		return err
	}
	defer s.Close()
	size := int(l.RequiredSizeInBytes())
	a, err := dev.Alloc(size, s)
	if err != nil {
		return err
	}
	defer a.Close()
	b, err := dev.Alloc(size, s)
	if err != nil {
		return err
	}
	defer b.Close()
	src, err := memview.FromBuffer(a, l, dt)
	if err != nil {
		return err
	}
	dst, err := memview.FromBuffer(b, l, dt)
	if err != nil {
		return err
	}
	host, err := memview.FromHost(pattern(l), l)
	if err != nil {
		return err
	}
	if host, err = host.View(l, dt); err != nil {
		return err
	}
	if err := src.CopyFrom(host, s); err != nil {
		return err
	}
	srcT, err := src.Permute(1, 0)
	if err != nil {
		return err
	}
	cp, err := dst.Explain(srcT)
	if err != nil {
		return err
	}
	copyT, err := timeOnStream(dev, s, reps, func() error { return dst.CopyFrom(srcT, s) })
	if err != nil {
		return err
	}
	memT, err := timeOnStream(dev, s, reps, func() error { return dev.MemcpyAsync(b.Ptr(), a.Ptr(), size, s) })
	if err != nil {
		return err
	}
	if err := dst.CopyFrom(srcT, s); err != nil {
		return err
	}
	got := make([]byte, size)
	gv, _ := memview.FromHost(got, l)
	gv, _ = gv.View(l, dt)
	if err := gv.CopyFrom(dst, s); err != nil {
		return err
	}
	if err := checkTransposed(got, l); err != nil {
		return fmt.Errorf("wrong result: %w", err)
	}
	gbs := func(d time.Duration) float64 { return 2 * float64(size) / d.Seconds() / 1e9 }
	fmt.Fprintf(out, "transposed %v %v on %s (sm_%d) with kernel %v\n", l.Shape(), dt, dev.Name(), dev.Arch(), cp.Plan.Sig)
	fmt.Fprintf(out, "  stridekit      %9.3f ms  %7.1f GB/s  %5.1f%% of cuMemcpyDtoD\n", ms(copyT), gbs(copyT), 100*memT.Seconds()/copyT.Seconds())
	fmt.Fprintf(out, "  cuMemcpyDtoD   %9.3f ms  %7.1f GB/s  (the same bytes, same stream)\n", ms(memT), gbs(memT))
	fmt.Fprintf(out, "  result checked: dst = srcᵀ\n")
	return nil
}

func ms(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }

// timeOnStream runs f once to warm up, then reps times between CUDA events,
// and returns the median time of one run.
func timeOnStream(dev *cuda.Device, s *cuda.Stream, reps int, f func() error) (time.Duration, error) {
	e0, err := dev.NewEvent(true)
	if err != nil {
		return 0, err
	}
	defer e0.Close()
	e1, err := dev.NewEvent(true)
	if err != nil {
		return 0, err
	}
	defer e1.Close()
	if err := f(); err != nil {
		return 0, err
	}
	ts := make([]time.Duration, 0, reps)
	for range reps {
		if err := e0.Record(s); err != nil {
			return 0, err
		}
		if err := f(); err != nil {
			return 0, err
		}
		if err := e1.Record(s); err != nil {
			return 0, err
		}
		if err := e1.Synchronize(); err != nil {
			return 0, err
		}
		d, err := cuda.ElapsedTime(e0, e1)
		if err != nil {
			return 0, err
		}
		ts = append(ts, d)
	}
	slices.Sort(ts)
	return ts[len(ts)/2], nil
}

// hostCopy is the quick start without a GPU: the same transpose between
// host views, through the same API.
func hostCopy(l layout.Layout, dt layout.DType, reps int, out, stderr io.Writer) int {
	in := pattern(l)
	got := make([]byte, len(in))
	src, err := memview.FromHost(in, l)
	if err == nil {
		src, err = src.View(l, dt)
	}
	var dst, srcT *memview.StridedMemoryView
	if err == nil {
		dst, err = memview.FromHost(got, l)
	}
	if err == nil {
		dst, err = dst.View(l, dt)
	}
	if err == nil {
		srcT, err = src.Permute(1, 0)
	}
	if err != nil {
		fmt.Fprintf(stderr, "stridekit copy: %v\n", err)
		return 1
	}
	ts := make([]time.Duration, 0, reps)
	for range reps {
		t0 := time.Now()
		if err := dst.CopyFrom(srcT, nil); err != nil {
			fmt.Fprintf(stderr, "stridekit copy: %v\n", err)
			return 1
		}
		ts = append(ts, time.Since(t0))
	}
	slices.Sort(ts)
	if err := checkTransposed(got, l); err != nil {
		fmt.Fprintf(stderr, "stridekit copy: wrong result: %v\n", err)
		return 1
	}
	d := ts[len(ts)/2]
	fmt.Fprintf(out, "transposed %v %v on the host: %.3f ms, %.1f GB/s (result checked)\n", l.Shape(), dt, ms(d), 2*float64(len(in))/d.Seconds()/1e9)
	return 0
}
