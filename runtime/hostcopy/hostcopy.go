package hostcopy

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"unsafe"

	"github.com/stridekit/stridekit/layout"
)

// ErrBufferSize reports a byte slice shorter than the RequiredSizeInBytes of
// its layout.
var ErrBufferSize = errors.New("hostcopy: buffer too small")

// parallelMin is the copy size from which work is split across goroutines;
// chunkMin is the least work one goroutine is given.
const (
	parallelMin = 1 << 20
	chunkMin    = 256 << 10
)

// Copy copies every element of the view (src, sl) into the element of the
// view (dst, dl) at the same index; sl may broadcast to dl's shape (NumPy
// rules). Both slices follow the buffer convention of the package doc. It
// fails with an error wrapping ErrBufferSize when a slice is too short, or
// with the layout error of layout.PlanCopy (ErrShape, ErrItemsize,
// ErrOverlappingDst) when the views cannot be copied; dst is then unchanged.
// Overlapping dst and src memory is handled as described in the package doc.
func Copy(dst []byte, dl layout.Layout, src []byte, sl layout.Layout) error {
	nd, ns := dl.RequiredSizeInBytes(), sl.RequiredSizeInBytes()
	if int64(len(dst)) < nd {
		return fmt.Errorf("%w: dst is %d bytes, dst layout %v needs %d", ErrBufferSize, len(dst), dl, nd)
	}
	if int64(len(src)) < ns {
		return fmt.Errorf("%w: src is %d bytes, src layout %v needs %d", ErrBufferSize, len(src), sl, ns)
	}
	dst, src = dst[:nd], src[:ns]
	opt := layout.PlanOptions{DstAlign: addrAlign(dst), SrcAlign: addrAlign(src)}
	p, err := layout.PlanCopy(dl, sl, opt)
	if err != nil {
		return err
	}
	if p.Sig.Class == layout.ClassNone {
		return nil
	}
	if overlap(dst, src) {
		if p.Sig.Class == layout.ClassMemcpy {
			copy(dst[p.DstOffset:p.DstOffset+p.Bytes], src[p.SrcOffset:p.SrcOffset+p.Bytes])
			return nil
		}
		src = append(make([]byte, 0, len(src)+layout.MaxVectorBytes), src...)
		opt.SrcAlign = addrAlign(src)
		if p, err = layout.PlanCopy(dl, sl, opt); err != nil {
			return err
		}
	}
	run(&p, dst, src)
	return nil
}

// addrAlign returns the alignment of the first byte of b, at most 16.
func addrAlign(b []byte) int {
	if len(b) == 0 {
		return layout.MaxVectorBytes
	}
	a := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	for al := 1; al < layout.MaxVectorBytes; al *= 2 {
		if a&uintptr(al) != 0 {
			return al
		}
	}
	return layout.MaxVectorBytes
}

// overlap reports whether the byte ranges of a and b share a byte.
func overlap(a, b []byte) bool {
	if len(a) == 0 || len(b) == 0 {
		return false
	}
	pa := uintptr(unsafe.Pointer(unsafe.SliceData(a)))
	pb := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	return pa < pb+uintptr(len(b)) && pb < pa+uintptr(len(a))
}

// workers returns how many goroutines a copy of the given bytes uses.
func workers(bytes int64) int {
	if bytes < parallelMin {
		return 1
	}
	return int(max(1, min(int64(runtime.GOMAXPROCS(0)), bytes/chunkMin)))
}

// parallel splits [0, n) into w contiguous ranges and runs f on each, in
// goroutines when w > 1.
func parallel(n int64, w int, f func(lo, hi int64)) {
	if w <= 1 || n < 2 {
		f(0, n)
		return
	}
	w = int(min(int64(w), n))
	var wg sync.WaitGroup
	for i := range w {
		lo, hi := n*int64(i)/int64(w), n*int64(i+1)/int64(w)
		wg.Go(func() { f(lo, hi) })
	}
	wg.Wait()
}

// run executes a plan on the buffers (both already checked to hold it).
func run(p *layout.Plan, dst, src []byte) {
	d := unsafe.Add(unsafe.Pointer(unsafe.SliceData(dst)), p.DstOffset)
	s := unsafe.Add(unsafe.Pointer(unsafe.SliceData(src)), p.SrcOffset)
	w := int64(p.Sig.Itemsize)
	nw := workers(p.Bytes)
	switch p.Sig.Class {
	case layout.ClassMemcpy, layout.ClassContiguous:
		// Chunks of whole 4 KiB pages so workers do not share cache lines.
		const page = 4096
		pages := (p.Bytes + page - 1) / page
		parallel(pages, nw, func(lo, hi int64) {
			a, b := lo*page, min(hi*page, p.Bytes)
			copy(unsafe.Slice((*byte)(unsafe.Add(d, a)), b-a), unsafe.Slice((*byte)(unsafe.Add(s, a)), b-a))
		})
	case layout.ClassTile:
		runTile(p, d, s, w, nw)
	default:
		x := newStrided(p, w)
		parallel(p.Volume, nw, func(lo, hi int64) { x.rangeCopy(d, s, lo, hi) })
	}
}

// strided is a plan in byte strides, for the elementwise executor.
type strided struct {
	shape, dsb, ssb []int64
	w               int64
}

func newStrided(p *layout.Plan, w int64) *strided {
	n := len(p.Shape)
	x := &strided{shape: p.Shape, dsb: make([]int64, n), ssb: make([]int64, n), w: w}
	for k := range n {
		x.dsb[k] = p.DstStrides[k] * w
		x.ssb[k] = p.SrcStrides[k] * w
	}
	return x
}

// rangeCopy copies the elements of flat (C-order) canonical indices [lo, hi).
func (x *strided) rangeCopy(d, s unsafe.Pointer, lo, hi int64) {
	n := len(x.shape)
	idx := make([]int64, n)
	var doff, soff int64
	rem := lo
	for k := n - 1; k >= 0; k-- {
		idx[k] = rem % x.shape[k]
		rem /= x.shape[k]
		doff += idx[k] * x.dsb[k]
		soff += idx[k] * x.ssb[k]
	}
	inner := x.shape[n-1]
	dI, sI := x.dsb[n-1], x.ssb[n-1]
	for cur := lo; cur < hi; {
		cnt := min(inner-idx[n-1], hi-cur)
		moveRun(unsafe.Add(d, doff), unsafe.Add(s, soff), cnt, dI, sI, x.w)
		cur += cnt
		idx[n-1] += cnt
		doff += cnt * dI
		soff += cnt * sI
		for k := n - 1; k > 0 && idx[k] == x.shape[k]; k-- {
			doff += x.dsb[k-1] - idx[k]*x.dsb[k]
			soff += x.ssb[k-1] - idx[k]*x.ssb[k]
			idx[k] = 0
			idx[k-1]++
		}
	}
}

// moveRun copies cnt elements of w bytes with byte strides dI and sI.
func moveRun(d, s unsafe.Pointer, cnt, dI, sI, w int64) {
	switch {
	case dI == w && sI == w:
		copy(unsafe.Slice((*byte)(d), cnt*w), unsafe.Slice((*byte)(s), cnt*w))
		return
	case dI == w && sI == 0:
		out := unsafe.Slice((*byte)(d), cnt*w)
		copy(out, unsafe.Slice((*byte)(s), w))
		for done := w; done < cnt*w; done *= 2 {
			copy(out[done:], out[:done])
		}
		return
	}
	switch w {
	case 1:
		moveTyped[uint8](d, s, cnt, dI, sI)
	case 2:
		moveTyped[uint16](d, s, cnt, dI, sI)
	case 4:
		moveTyped[uint32](d, s, cnt, dI, sI)
	case 8:
		moveTyped[uint64](d, s, cnt, dI, sI)
	case 16:
		moveTyped[[2]uint64](d, s, cnt, dI, sI)
	default:
		for i := range cnt {
			copy(unsafe.Slice((*byte)(unsafe.Add(d, i*dI)), w), unsafe.Slice((*byte)(unsafe.Add(s, i*sI)), w))
		}
	}
}

// moveTyped copies cnt elements of type T; the plan guarantees that every
// address is aligned for T.
func moveTyped[T any](d, s unsafe.Pointer, cnt, dI, sI int64) {
	for i := range cnt {
		*(*T)(unsafe.Add(d, i*dI)) = *(*T)(unsafe.Add(s, i*sI))
	}
}

// runTile runs a ClassTile plan: dst's dim n-1 and src's dim f (both of unit
// stride in their own view) are walked in square blocks. Each block is read
// from src one contiguous src row at a time into a small buffer, transposed
// on the way, and written to dst one contiguous dst row at a time, so every
// cache line of either view is touched in one burst: power-of-two row pitches
// (which map a column of a block onto one cache set) cost nothing extra.
func runTile(p *layout.Plan, d, s unsafe.Pointer, w int64, nw int) {
	n := len(p.Shape)
	f := int(p.Sig.Fast)
	blk := int64(64)
	if w >= 4 {
		blk = 32
	}
	eL, eF := p.Shape[n-1], p.Shape[f]
	nbL, nbF := (eL+blk-1)/blk, (eF+blk-1)/blk
	outer := int64(1)
	for k := 0; k < n-1; k++ {
		if k != f {
			outer *= p.Shape[k]
		}
	}
	dF, sL := p.DstStrides[f]*w, p.SrcStrides[n-1]*w
	units := outer * nbF * nbL
	parallel(units, nw, func(lo, hi int64) {
		buf := make([]byte, blk*blk*w)
		bp := unsafe.Pointer(unsafe.SliceData(buf))
		for u := lo; u < hi; u++ {
			r := u
			bl := r % nbL
			r /= nbL
			bf := r % nbF
			r /= nbF
			var doff, soff int64
			for k := n - 2; k >= 0; k-- {
				if k == f {
					continue
				}
				i := r % p.Shape[k]
				r /= p.Shape[k]
				doff += i * p.DstStrides[k] * w
				soff += i * p.SrcStrides[k] * w
			}
			l0, l1 := bl*blk, min(bl*blk+blk, eL)
			f0, f1 := bf*blk, min(bf*blk+blk, eF)
			db := unsafe.Add(d, doff+l0*w+f0*dF)
			sb := unsafe.Add(s, soff+l0*sL+f0*w)
			rows, cols := f1-f0, l1-l0
			switch w {
			case 1:
				gatherTyped[uint8](bp, sb, rows, cols, sL)
			case 2:
				gatherTyped[uint16](bp, sb, rows, cols, sL)
			case 4:
				gatherTyped[uint32](bp, sb, rows, cols, sL)
			case 8:
				gatherTyped[uint64](bp, sb, rows, cols, sL)
			case 16:
				gatherTyped[[2]uint64](bp, sb, rows, cols, sL)
			default:
				for j := range cols {
					moveRun(unsafe.Add(bp, j*w), unsafe.Add(sb, j*sL), rows, cols*w, w, w)
				}
			}
			rb := cols * w
			for i := range rows {
				copy(unsafe.Slice((*byte)(unsafe.Add(db, i*dF)), rb), buf[i*rb:(i+1)*rb])
			}
		}
	})
}

// gatherTyped reads a block of src, cols rows along src's dim n-1 (byte
// stride sL) of rows contiguous elements along src's dim f, into buf
// transposed: buf[i·cols+j] = src[j][i].
func gatherTyped[T any](buf, s unsafe.Pointer, rows, cols, sL int64) {
	var z T
	w := int64(unsafe.Sizeof(z))
	bs := cols * w
	for j := range cols {
		src := unsafe.Slice((*T)(unsafe.Add(s, j*sL)), rows)
		dp := unsafe.Add(buf, j*w)
		for i, v := range src {
			*(*T)(unsafe.Add(dp, int64(i)*bs)) = v
		}
	}
}
