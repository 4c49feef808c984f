package hostcopy

import (
	"encoding/binary"
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
	case layout.ClassMemcpy:
		// Chunks of whole 4 KiB pages so workers do not share cache lines.
		const page = 4096
		pages := (p.Bytes + page - 1) / page
		parallel(pages, nw, func(lo, hi int64) {
			a, b := lo*page, min(hi*page, p.Bytes)
			copy(unsafe.Slice((*byte)(unsafe.Add(d, a)), b-a), unsafe.Slice((*byte)(unsafe.Add(s, a)), b-a))
		})
	case layout.ClassTile, layout.ClassBoxTile:
		if f, ok := tileDims(p); ok {
			runTile(p, f, d, s, w, nw)
			return
		}
		fallthrough
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

// tileBytes is the edge of a tile block in bytes: one cache line of src row
// and of dst row per block row. Measured on 4096² and 4000² transposes of 1-,
// 2-, 4- and 8-byte elements, 64 beat 32, 128 and 256 (with or without
// grouping blocks for TLB reuse), by up to 2× for 4-byte elements.
const tileBytes = 64

// tileEdge returns the edge, in elements, of a tile block for elements of w
// bytes: tileBytes bytes, but at least 8 elements, rounded up to a multiple
// of 8 so that the register transposes of gather1, gather2 and gather4 cover
// whole blocks where the extents allow.
func tileEdge(w int64) int64 {
	e := max(tileBytes/w, 8)
	return (e + 7) &^ 7
}

// tileDims returns the src fast dim f for runTile: a ClassTile plan's Fast,
// or for a ClassBoxTile plan with unit dst stride along dim n-1 the slowest
// other dim of unit src stride. Other box tiles (strided or reversed fast
// dims) run elementwise on the host.
func tileDims(p *layout.Plan) (int, bool) {
	if p.Sig.Class == layout.ClassTile {
		return int(p.Sig.Fast), true
	}
	n := len(p.Shape)
	if p.DstStrides[n-1] != 1 || p.SrcStrides[n-1] == 1 {
		return 0, false
	}
	for k := 0; k < n-1; k++ {
		if p.SrcStrides[k] == 1 {
			return k, true
		}
	}
	return 0, false
}

// runTile runs a transposing plan: dst's dim n-1 and src's dim f (both of unit
// stride in their own view) are walked in square blocks of tileEdge(w)
// elements, block columns (along dim n-1) innermost. Each block is read from
// src a few contiguous src rows at a time, transposed on the way (8×8 bytes
// or 4×4 uint16 in uint64 registers, 2×2 uint32 as uint64 pairs, elementwise
// for other sizes) into a small contiguous buffer, and written to dst one
// contiguous dst row at a time, so every cache line of either view is touched
// in one burst even when power-of-two row pitches map a column of a block
// onto one cache set.
func runTile(p *layout.Plan, f int, d, s unsafe.Pointer, w int64, nw int) {
	n := len(p.Shape)
	blk := tileEdge(w)
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
		words := make([]uint64, (blk*blk*w+7)/8)
		buf := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(words))), blk*blk*w)
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
			rb := cols * w
			b := buf[:rows*rb]
			switch w {
			case 1:
				gather1(b, sb, rows, cols, sL)
			case 2:
				gather2(b, sb, rows, cols, sL)
			case 4:
				gather4(b, sb, rows, cols, sL)
			case 8:
				gatherTyped[uint64](b, sb, rows, cols, sL)
			case 16:
				gatherTyped[[2]uint64](b, sb, rows, cols, sL)
			default:
				for j := range cols {
					row := unsafe.Slice((*byte)(unsafe.Add(sb, j*sL)), rows*w)
					for i := range rows {
						copy(b[i*rb+j*w:i*rb+j*w+w], row[i*w:i*w+w])
					}
				}
			}
			for i := range rows {
				copy(unsafe.Slice((*byte)(unsafe.Add(db, i*dF)), rb), b[i*rb:(i+1)*rb])
			}
		}
	})
}

// srcRow returns the n bytes of src row j (byte pitch sL) from s.
func srcRow(s unsafe.Pointer, j, sL, n int64) []byte {
	return unsafe.Slice((*byte)(unsafe.Add(s, j*sL)), n)
}

// gather1 reads a block of 1-byte elements, cols src rows (byte pitch sL) of
// rows contiguous bytes, into buf transposed: buf[i·cols+j] = src[j][i]. Full
// 8×8 sub-blocks are transposed in registers: eight little-endian uint64
// loads, a 3-stage butterfly (swap 4-, 2-, then 1-byte lanes between words 4,
// 2, then 1 apart), eight stores.
func gather1(buf []byte, s unsafe.Pointer, rows, cols, sL int64) {
	r8, c8 := rows&^7, cols&^7
	for j := int64(0); j < c8; j += 8 {
		s0, s1, s2, s3 := srcRow(s, j, sL, rows), srcRow(s, j+1, sL, rows), srcRow(s, j+2, sL, rows), srcRow(s, j+3, sL, rows)
		s4, s5, s6, s7 := srcRow(s, j+4, sL, rows), srcRow(s, j+5, sL, rows), srcRow(s, j+6, sL, rows), srcRow(s, j+7, sL, rows)
		for i := int64(0); i < r8; i += 8 {
			x0, x1, x2, x3 := le.Uint64(s0[i:]), le.Uint64(s1[i:]), le.Uint64(s2[i:]), le.Uint64(s3[i:])
			x4, x5, x6, x7 := le.Uint64(s4[i:]), le.Uint64(s5[i:]), le.Uint64(s6[i:]), le.Uint64(s7[i:])
			x0, x4 = swapLanes(x0, x4, 32, 0x00000000ffffffff)
			x1, x5 = swapLanes(x1, x5, 32, 0x00000000ffffffff)
			x2, x6 = swapLanes(x2, x6, 32, 0x00000000ffffffff)
			x3, x7 = swapLanes(x3, x7, 32, 0x00000000ffffffff)
			x0, x2 = swapLanes(x0, x2, 16, 0x0000ffff0000ffff)
			x1, x3 = swapLanes(x1, x3, 16, 0x0000ffff0000ffff)
			x4, x6 = swapLanes(x4, x6, 16, 0x0000ffff0000ffff)
			x5, x7 = swapLanes(x5, x7, 16, 0x0000ffff0000ffff)
			x0, x1 = swapLanes(x0, x1, 8, 0x00ff00ff00ff00ff)
			x2, x3 = swapLanes(x2, x3, 8, 0x00ff00ff00ff00ff)
			x4, x5 = swapLanes(x4, x5, 8, 0x00ff00ff00ff00ff)
			x6, x7 = swapLanes(x6, x7, 8, 0x00ff00ff00ff00ff)
			o := i*cols + j
			le.PutUint64(buf[o:], x0)
			le.PutUint64(buf[o+cols:], x1)
			le.PutUint64(buf[o+2*cols:], x2)
			le.PutUint64(buf[o+3*cols:], x3)
			le.PutUint64(buf[o+4*cols:], x4)
			le.PutUint64(buf[o+5*cols:], x5)
			le.PutUint64(buf[o+6*cols:], x6)
			le.PutUint64(buf[o+7*cols:], x7)
		}
		for i := r8; i < rows; i++ {
			o := i*cols + j
			b := buf[o : o+8 : o+8]
			b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7] = s0[i], s1[i], s2[i], s3[i], s4[i], s5[i], s6[i], s7[i]
		}
	}
	for j := c8; j < cols; j++ {
		for i, v := range srcRow(s, j, sL, rows) {
			buf[int64(i)*cols+j] = v
		}
	}
}

// gather2 is gather1 for 2-byte elements: full 4×4 sub-blocks go through a
// 2-stage butterfly of uint64 words (swap 4-, then 2-byte lanes between words
// 2, then 1 apart). buf holds byte (i·cols+j)·2 of element [i][j].
func gather2(buf []byte, s unsafe.Pointer, rows, cols, sL int64) {
	r4, c4 := rows&^3, cols&^3
	n := rows * 2
	for j := int64(0); j < c4; j += 4 {
		s0, s1, s2, s3 := srcRow(s, j, sL, n), srcRow(s, j+1, sL, n), srcRow(s, j+2, sL, n), srcRow(s, j+3, sL, n)
		for i := int64(0); i < r4; i += 4 {
			x0, x1, x2, x3 := le.Uint64(s0[2*i:]), le.Uint64(s1[2*i:]), le.Uint64(s2[2*i:]), le.Uint64(s3[2*i:])
			x0, x2 = swapLanes(x0, x2, 32, 0x00000000ffffffff)
			x1, x3 = swapLanes(x1, x3, 32, 0x00000000ffffffff)
			x0, x1 = swapLanes(x0, x1, 16, 0x0000ffff0000ffff)
			x2, x3 = swapLanes(x2, x3, 16, 0x0000ffff0000ffff)
			o := 2 * (i*cols + j)
			le.PutUint64(buf[o:], x0)
			le.PutUint64(buf[o+2*cols:], x1)
			le.PutUint64(buf[o+4*cols:], x2)
			le.PutUint64(buf[o+6*cols:], x3)
		}
		for i := r4; i < rows; i++ {
			o := 2 * (i*cols + j)
			b := buf[o : o+8 : o+8]
			copy(b[0:2], s0[2*i:])
			copy(b[2:4], s1[2*i:])
			copy(b[4:6], s2[2*i:])
			copy(b[6:8], s3[2*i:])
		}
	}
	for j := c4; j < cols; j++ {
		row := srcRow(s, j, sL, n)
		for i := range rows {
			o := 2 * (i*cols + j)
			buf[o], buf[o+1] = row[2*i], row[2*i+1]
		}
	}
}

// gather4 is gather1 for 4-byte elements: 2×2 sub-blocks are read as one
// uint64 from each of two src rows and written as one uint64 to each of two
// buf rows, their 4-byte lanes swapped.
func gather4(buf []byte, s unsafe.Pointer, rows, cols, sL int64) {
	r2, c2 := rows&^1, cols&^1
	n := rows * 4
	for j := int64(0); j < c2; j += 2 {
		s0, s1 := srcRow(s, j, sL, n), srcRow(s, j+1, sL, n)
		for i := int64(0); i < r2; i += 2 {
			x0, x1 := swapLanes(le.Uint64(s0[4*i:]), le.Uint64(s1[4*i:]), 32, 0x00000000ffffffff)
			o := 4 * (i*cols + j)
			le.PutUint64(buf[o:], x0)
			le.PutUint64(buf[o+4*cols:], x1)
		}
		if r2 < rows {
			o := 4 * (r2*cols + j)
			copy(buf[o:o+4], s0[4*r2:])
			copy(buf[o+4:o+8], s1[4*r2:])
		}
	}
	if c2 < cols {
		row := srcRow(s, c2, sL, n)
		for i := range rows {
			o := 4 * (i*cols + c2)
			copy(buf[o:o+4], row[4*i:4*i+4])
		}
	}
}

// swapLanes exchanges the high lanes of a (those of mask ^m, lanes of sh
// bits) with the low lanes of b: it returns a's low lanes interleaved with
// b's low lanes, and a's high lanes interleaved with b's high lanes.
func swapLanes(a, b uint64, sh uint, m uint64) (uint64, uint64) {
	return a&m | (b&m)<<sh, (a>>sh)&m | b&^m
}

// le is the byte order of the words of the register transposes: any fixed
// order works; little-endian loads and stores are single moves on the common
// hosts.
var le = binary.LittleEndian

// gatherTyped reads a block of src, cols rows along src's dim n-1 (byte
// stride sL) of rows contiguous elements along src's dim f, into buf
// transposed: element [i][j] of buf (at i·cols+j) is src[j][i]. The plan
// guarantees every src address is aligned for T; buf is 8-aligned.
func gatherTyped[T any](b []byte, s unsafe.Pointer, rows, cols, sL int64) {
	var z T
	w := int64(unsafe.Sizeof(z))
	buf := unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(b))), int64(len(b))/w)
	for j := range cols {
		src := unsafe.Slice((*T)(unsafe.Add(s, j*sL)), rows)
		for i, v := range src {
			buf[int64(i)*cols+j] = v
		}
	}
}
