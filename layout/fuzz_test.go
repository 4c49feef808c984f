package layout

import (
	"errors"
	"math"
	"testing"
)

var sentinels = []error{ErrShape, ErrStride, ErrItemsize, ErrAxis, ErrRange, ErrNotViewable, ErrOverlappingDst, ErrOverflow, ErrDType, ErrAlignment, ErrOption}

// checkErr fails unless err wraps one of the package's sentinels.
func checkErr(t *testing.T, what string, err error) {
	t.Helper()
	for _, s := range sentinels {
		if errors.Is(err, s) {
			return
		}
	}
	t.Fatalf("%s: error %v wraps no sentinel", what, err)
}

// byteReader hands out fuzz input, then zeros.
type byteReader struct {
	b []byte
}

func (r *byteReader) next() byte {
	if len(r.b) == 0 {
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

func (r *byteReader) more() bool { return len(r.b) > 0 }

// extent decodes a small extent, or now and then a huge one.
func (r *byteReader) extent() int64 {
	c := r.next()
	switch c {
	case 255:
		return math.MaxInt64 / 3
	case 254:
		return 1 << 40
	case 253:
		return -1
	}
	return int64(c % 6)
}

// stride decodes a small signed stride, or now and then a huge one.
func (r *byteReader) stride() int64 {
	c := r.next()
	switch c {
	case 127:
		return math.MaxInt64 / 2
	case 128:
		return math.MinInt64
	}
	return int64(int8(c)) % 9
}

// small decodes a small signed int.
func (r *byteReader) small() int64 { return int64(int8(r.next())) % 8 }

// maxRefVolume bounds the volume for which the fuzz targets keep a naive
// reference.
const maxRefVolume = 4096

// refable reports whether the naive reference can follow l: a small volume
// and small extents (an empty layout may have a huge extent).
func refable(l Layout) bool {
	for _, e := range l.shape {
		if e > maxRefVolume {
			return false
		}
	}
	return l.Volume() <= maxRefVolume
}

// FuzzLayoutOps decodes a layout and a sequence of operations with arbitrary
// (often invalid) arguments. Nothing may panic; every error must wrap a
// sentinel; every result must satisfy the invariants, and, while the volume
// is small, agree element by element with the naive reference.
func FuzzLayoutOps(f *testing.F) {
	f.Add([]byte{2, 3, 4, 4, 1, 2, 0, 1, 0})
	f.Add([]byte{3, 2, 3, 4, 12, 4, 1, 4, 1, 2, 0, 1, 2, 3, 8, 9})
	f.Add([]byte{1, 255, 1, 1, 7, 0, 1, 1})
	f.Add([]byte{2, 5, 5, 250, 1, 3, 1, 1, 254, 2, 5, 6, 7})
	f.Add([]byte{4, 2, 1, 3, 2, 0, 6, 2, 1, 8, 5, 2, 1, 0, 3, 6, 1, 7, 2})
	f.Fuzz(func(t *testing.T, data []byte) {
		r := &byteReader{b: data}
		n := int(r.next() % 7)
		shape := make([]int64, n)
		for i := range shape {
			shape[i] = r.extent()
		}
		var strides []int64
		if r.next()%4 != 0 {
			strides = make([]int64, n)
			for i := range strides {
				strides[i] = r.stride()
			}
		}
		itemsize := int(r.next()%9) - 1
		l, err := New(shape, strides, itemsize)
		if err != nil {
			checkErr(t, "New", err)
			return
		}
		if msg := checkInvariants(l); msg != "" {
			t.Fatal(msg)
		}
		v, base := l, int64(0)
		tracked := refable(l)
		var rf ref
		if tracked {
			rf = refOf(l)
		}
		for ops := 0; r.more() && ops < 12; ops++ {
			nd := v.NDim()
			var (
				w   Layout
				off int64
				err error
				upd func(ref) ref
			)
			switch r.next() % 10 {
			case 0:
				perm := make([]int, nd)
				for i := range perm {
					perm[i] = (i + int(r.next())) % (nd + 1)
				}
				w, err = v.Permute(perm...)
				upd = func(x ref) ref { return x.permute(perm) }
			case 1:
				rs := make([]Range, int(r.next())%(nd+2))
				for i := range rs {
					rs[i] = Range{r.small(), r.small(), r.small()}
					if r.next()%3 == 0 {
						rs[i].Start = Omit
					}
					if r.next()%3 == 0 {
						rs[i].Stop = Omit
					}
				}
				w, off, err = v.Slice(rs...)
				upd = func(x ref) ref { return x.slice(rs) }
			case 2:
				ax, i := int(r.small()), r.small()
				w, off, err = v.Index(ax, i)
				upd = func(x ref) ref {
					a := (ax + nd) % nd
					return x.index(a, (i+v.shape[a])%max(v.shape[a], 1))
				}
			case 3:
				var axes []int
				for range int(r.next() % 3) {
					axes = append(axes, int(r.small()))
				}
				w, err = v.Squeeze(axes...)
				upd = func(x ref) ref { return x.reshape(w.shape) }
			case 4:
				var axes []int
				for range int(r.next() % 3) {
					axes = append(axes, int(r.small()))
				}
				w, err = v.Unsqueeze(axes...)
				upd = func(x ref) ref { return x.reshape(w.shape) }
			case 5:
				sh := make([]int64, int(r.next()%3))
				for i := range sh {
					sh[i] = r.extent()
				}
				for _, e := range v.shape {
					if e == 1 || r.next()%5 == 0 {
						e = r.extent()
					}
					sh = append(sh, e)
				}
				w, err = v.BroadcastTo(sh...)
				upd = func(x ref) ref { return x.broadcast(sh) }
			case 6:
				w, err = v.Flatten(int(r.small()), int(r.small()))
				upd = func(x ref) ref { return x.reshape(w.shape) }
			case 7:
				sh := make([]int64, int(r.next()%5))
				for i := range sh {
					sh[i] = r.extent()
				}
				w, err = v.Reshape(sh...)
				upd = func(x ref) ref { return x.reshape(w.shape) }
				if errors.Is(err, ErrNotViewable) && tracked {
					ns, rerr := resolveShape(sh, v.Volume())
					if rerr != nil {
						t.Fatalf("Reshape(%v) is ErrNotViewable but the shape is bad: %v", sh, rerr)
					}
					if naiveViewable(relOffsets(rf, base), ns) {
						t.Fatalf("%v.Reshape(%v): %v, but the naive check finds it viewable", v, sh, err)
					}
				}
			case 8:
				w, err = v.Repack(int(r.next()%17) - 1)
				upd = nil // the reference counts items of the old size
			default:
				d, derr := DenseLike(v, Keep)
				if derr != nil {
					checkErr(t, "DenseLike", derr)
					continue
				}
				if !d.IsContiguousAny() || !d.IsUnique() || d.Volume() != v.Volume() {
					t.Fatalf("DenseLike(%v, Keep) = %v is not dense", v, d)
				}
				_ = v.IsUnique()
				_ = v.IsContiguousAny()
				_ = v.StrideOrder()
				continue
			}
			if err != nil {
				checkErr(t, "op", err)
				continue
			}
			if msg := checkInvariants(w); msg != "" {
				t.Fatal(msg)
			}
			if w.Volume() > 0 && (base+off+w.MinOffset() < l.MinOffset() || base+off+w.MaxOffset() > l.MaxOffset()) {
				if upd != nil { // Repack changes the unit
					t.Fatalf("view %v at %d leaves the memory of %v", w, base+off, l)
				}
			}
			if tracked && upd != nil && refable(w) {
				rf = upd(rf)
				if msg := agree(w, base+off, rf); msg != "" {
					t.Fatalf("%v -> %v: %s", v, w, msg)
				}
			} else {
				tracked = false
			}
			if w.Volume() <= 1<<12 && w.IsUnique() != bruteUnique(w) {
				t.Fatalf("%v.IsUnique() = %v, brute force disagrees", w, w.IsUnique())
			}
			if upd == nil && w.Volume() > 0 {
				// Continue from the repacked layout with fresh offsets.
				l, base = w, 0
				v = w
				continue
			}
			v, base = w, base+off
		}
	})
}

// FuzzReshape builds a small layout from fuzz input and reshapes it to a
// fuzzed shape: success must preserve the C-order sequence of elements, and
// ErrNotViewable must agree with the naive viewability check.
func FuzzReshape(f *testing.F) {
	f.Add([]byte{2, 3}, []byte{3, 1}, []byte{6}, uint8(4))
	f.Add([]byte{2, 3}, []byte{1, 2}, []byte{6}, uint8(4))
	f.Add([]byte{4, 3}, []byte{4, 1}, []byte{2, 2, 3}, uint8(2))
	f.Add([]byte{3, 4}, []byte{0, 1}, []byte{3, 2, 2}, uint8(1))
	f.Add([]byte{2, 1, 3}, []byte{0xfd, 7, 0xff}, []byte{0xff, 1}, uint8(8))
	f.Fuzz(func(t *testing.T, sb, stb, tb []byte, is uint8) {
		if len(sb) > 8 || len(tb) > 10 {
			return
		}
		shape := make([]int64, len(sb))
		for i, b := range sb {
			shape[i] = int64(b % 5)
		}
		var strides []int64
		if len(stb) > 0 {
			strides = make([]int64, len(shape))
			for i := range strides {
				if i < len(stb) {
					strides[i] = int64(int8(stb[i])) % 13
				}
			}
		}
		l, err := New(shape, strides, int(is%8)+1)
		if err != nil {
			checkErr(t, "New", err)
			return
		}
		if l.Volume() > maxRefVolume {
			return
		}
		to := make([]int64, len(tb))
		for i, b := range tb {
			to[i] = int64(int8(b)) % 7 // includes -1 and other negatives
		}
		w, err := l.Reshape(to...)
		rf := refOf(l)
		if err != nil {
			checkErr(t, "Reshape", err)
			if errors.Is(err, ErrNotViewable) {
				ns, rerr := resolveShape(to, l.Volume())
				if rerr != nil || naiveViewable(rf.data, ns) {
					t.Fatalf("%v.Reshape(%v): %v, but the naive check finds it viewable", l, to, err)
				}
			}
			return
		}
		if msg := agree(w, 0, rf.reshape(w.shape)); msg != "" {
			t.Fatalf("%v.Reshape(%v) = %v: %s", l, to, w, msg)
		}
		if !naiveViewable(rf.data, w.shape) {
			t.Fatalf("%v.Reshape(%v) = %v, but the naive check finds it not viewable", l, to, w)
		}
		// Reshaping back is always possible.
		back, err := w.Reshape(l.shape...)
		if err != nil {
			t.Fatalf("%v.Reshape(%v) = %v, which does not reshape back: %v", l, to, w, err)
		}
		if msg := agree(back, 0, rf); msg != "" {
			t.Fatalf("round trip: %s", msg)
		}
	})
}
