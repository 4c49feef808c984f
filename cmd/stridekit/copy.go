package main

import (
	"encoding/binary"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/stridekit/stridekit/layout"
	"github.com/stridekit/stridekit/runtime/cuda"
	"github.com/stridekit/stridekit/runtime/memview"
)

// copyCmd runs "stridekit copy": a transpose on the GPU through memview,
// timed beside cuMemcpyDtoD, or on the host when there is no GPU.
func copyCmd(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("copy", "[-n N] [-dtype DTYPE] [-device N] [-reps N]", stderr, "")
	n := fs.Int64("n", 8192, "the matrix is `N`×N")
	dtName := fs.String("dtype", "float32", "element type (a dtype name: float32, f16, uint8, complex128, ...)")
	ordinal := fs.Int("device", 0, "CUDA device `ordinal`")
	reps := fs.Int("reps", 20, "timed copies; the median is printed")
	if st, ok := parseFlags(fs, args, stdout); !ok {
		return st
	}
	if fs.NArg() != 0 {
		fmt.Fprintf(stderr, "stridekit copy: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	dt, err := layout.ParseDType(*dtName)
	if err != nil || dt.Itemsize() == 0 {
		fmt.Fprintf(stderr, "stridekit copy: -dtype %q: not a dtype of whole-byte items (%v)\n", *dtName, err)
		return 2
	}
	if *n < 1 || *n > 1<<17 {
		fmt.Fprintf(stderr, "stridekit copy: -n %d must be in 1..131072\n", *n)
		return 2
	}
	if *reps < 1 {
		fmt.Fprintf(stderr, "stridekit copy: -reps %d must be at least 1\n", *reps)
		return 2
	}
	l, err := layout.Dense([]int64{*n, *n}, dt.Itemsize(), layout.C)
	if err != nil {
		fmt.Fprintf(stderr, "stridekit copy: %v\n", err)
		return 2
	}
	dev, err := cuda.GetDevice(*ordinal)
	if err != nil {
		fmt.Fprintf(stdout, "no GPU (%.120v): running the same copy on the host\n", err)
		return hostCopy(l, dt, *reps, stdout, stderr)
	}
	if err := deviceCopy(dev, l, dt, *reps, stdout); err != nil {
		fmt.Fprintf(stderr, "stridekit copy: %v\n", err)
		return 1
	}
	return 0
}

// pattern returns bytes where element i holds i (little-endian, truncated
// to the item size), so a transposed copy can be checked exactly.
func pattern(l layout.Layout) []byte {
	item := l.Itemsize()
	b := make([]byte, l.RequiredSizeInBytes())
	var w [8]byte
	for i := int64(0); i < l.Volume(); i++ {
		binary.LittleEndian.PutUint64(w[:], uint64(i))
		copy(b[int(i)*item:], w[:min(item, 8)])
	}
	return b
}

// checkTransposed reports the first element of got that is not the
// transpose of pattern(l).
func checkTransposed(got []byte, l layout.Layout) error {
	n, item := l.Shape()[0], int64(l.Itemsize())
	want := pattern(l)
	for i := int64(0); i < n; i++ {
		for j := int64(0); j < n; j++ {
			g, w := got[(i*n+j)*item:(i*n+j+1)*item], want[(j*n+i)*item:(j*n+i+1)*item]
			if string(g) != string(w) {
				return fmt.Errorf("element (%d, %d) is % x, want % x", i, j, g, w)
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
