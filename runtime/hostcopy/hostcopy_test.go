package hostcopy_test

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"unsafe"

	"github.com/stridekit/stridekit/internal/layouttest"
	"github.com/stridekit/stridekit/layout"
	"github.com/stridekit/stridekit/runtime/hostcopy"
	"pgregory.net/rapid"
)

const poison = 0xA5

// naive copies element by element, straight from the definitions: for every
// dst index, the src element at the same index (broadcast dims read index 0).
func naive(dst []byte, dl layout.Layout, src []byte, sl layout.Layout) {
	shape, ds, ss := dl.Shape(), dl.Strides(), sl.Strides()
	sshape := sl.Shape()
	nd, ns := len(shape), len(sshape)
	item := int64(dl.Itemsize())
	for _, e := range shape {
		if e == 0 {
			return
		}
	}
	idx := make([]int64, nd)
	for {
		var od, os int64
		for k := range nd {
			od += idx[k] * ds[k]
			if j := k - (nd - ns); j >= 0 && sshape[j] != 1 {
				os += idx[k] * ss[j]
			}
		}
		bd, bs := (od-dl.MinOffset())*item, (os-sl.MinOffset())*item
		copy(dst[bd:bd+item], src[bs:bs+item])
		k := nd - 1
		for ; k >= 0; k-- {
			idx[k]++
			if idx[k] < shape[k] {
				break
			}
			idx[k] = 0
		}
		if k < 0 {
			return
		}
	}
}

// buffer returns a slice of n bytes starting misalign bytes past a 64-byte
// boundary, inside a 64-aligned region with at least 48 bytes of padding on
// both sides, all filled with fill; it also returns the whole region.
func buffer(n int64, misalign int, fill byte) (view, whole []byte) {
	whole = make([]byte, n+64*3)
	for i := range whole {
		whole[i] = fill
	}
	base := int((64 - uintptr(unsafe.Pointer(unsafe.SliceData(whole)))%64) % 64)
	whole = whole[base : base+int(n)+128]
	return whole[64+misalign : 64+misalign+int(n)], whole
}

// checkCopy runs Copy on poisoned, misaligned buffers and compares every byte
// of dst's allocation with the naive reference.
func checkCopy(t layouttest.TB, dl, sl layout.Layout, dmis, smis int, seed uint64) {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 1))
	src, _ := buffer(sl.RequiredSizeInBytes(), smis, 0)
	for i := range src {
		src[i] = byte(r.Uint32())
	}
	dst, dwhole := buffer(dl.RequiredSizeInBytes(), dmis, poison)
	want, wwhole := buffer(dl.RequiredSizeInBytes(), dmis, poison)
	naive(want, dl, src, sl)
	if err := hostcopy.Copy(dst, dl, src, sl); err != nil {
		t.Fatalf("Copy(%v <- %v): %v", dl, sl, err)
	}
	if !bytes.Equal(dwhole, wwhole) {
		for i := range dwhole {
			if dwhole[i] != wwhole[i] {
				t.Fatalf("Copy(%v <- %v, misalign %d/%d): byte %d of the allocation is %#x, want %#x", dl, sl, dmis, smis, i, dwhole[i], wwhole[i])
			}
		}
	}
}

func TestCopyTable(t *testing.T) {
	n := func(shape, strides []int64, item int) layout.Layout {
		return layouttest.MustNew(t, shape, strides, item)
	}
	cases := []struct {
		name   string
		dl, sl layout.Layout
	}{
		{"dense C", n(layouttest.S64(33, 17), nil, 4), n(layouttest.S64(33, 17), nil, 4)},
		{"transpose f32 (tile)", n(layouttest.S64(100, 70), nil, 4), n(layouttest.S64(100, 70), layouttest.S64(1, 100), 4)},
		{"transpose u8 (tile)", n(layouttest.S64(100, 70), nil, 1), n(layouttest.S64(100, 70), layouttest.S64(1, 100), 1)},
		{"transpose u16 (tile)", n(layouttest.S64(100, 70), nil, 2), n(layouttest.S64(100, 70), layouttest.S64(1, 100), 2)},
		{"transpose f64 (tile)", n(layouttest.S64(100, 70), nil, 8), n(layouttest.S64(100, 70), layouttest.S64(1, 100), 8)},
		{"transpose c128 (tile)", n(layouttest.S64(40, 70), nil, 16), n(layouttest.S64(40, 70), layouttest.S64(1, 40), 16)},
		{"transpose 12-byte (tile, opaque)", n(layouttest.S64(40, 70), nil, 12), n(layouttest.S64(40, 70), layouttest.S64(1, 40), 12)},
		{"transpose 24-byte (split)", n(layouttest.S64(40, 70), nil, 24), n(layouttest.S64(40, 70), layouttest.S64(1, 40), 24)},
		{"3-d permutation", n(layouttest.S64(20, 30, 40), nil, 4), n(layouttest.S64(20, 30, 40), layouttest.S64(40, 1, 600), 4)},
		{"3-d permutation with gaps", n(layouttest.S64(20, 30, 40), layouttest.S64(1300, 41, 1), 2), n(layouttest.S64(20, 30, 40), layouttest.S64(45, 1, 950), 2)},
		{"slice [:, ::2]", n(layouttest.S64(64, 32), nil, 4), n(layouttest.S64(64, 32), layouttest.S64(64, 2), 4)},
		{"reverse", n(layouttest.S64(1000), nil, 4), n(layouttest.S64(1000), layouttest.S64(-1), 4)},
		{"flip both", n(layouttest.S64(30, 40), layouttest.S64(-40, -1), 8), n(layouttest.S64(30, 40), layouttest.S64(-80, -1), 8)},
		{"broadcast row", n(layouttest.S64(64, 33), nil, 4), n(layouttest.S64(33), nil, 4)},
		{"broadcast column", n(layouttest.S64(64, 33), nil, 4), n(layouttest.S64(64, 1), nil, 4)},
		{"fill", n(layouttest.S64(64, 33), nil, 4), n(nil, nil, 4)},
		{"fill strided dst", n(layouttest.S64(64, 33), layouttest.S64(70, 2), 2), n(layouttest.S64(1), nil, 2)},
		{"scalar", n(nil, nil, 8), n(nil, nil, 8)},
		{"empty", n(layouttest.S64(5, 0), nil, 8), n(layouttest.S64(1, 0), nil, 8)},
		{"odd itemsize 5", n(layouttest.S64(7, 9), nil, 5), n(layouttest.S64(7, 9), layouttest.S64(1, 7), 5)},
		{"itemsize 40", n(layouttest.S64(7, 9), nil, 40), n(layouttest.S64(7, 9), layouttest.S64(1, 7), 40)},
		{"parallel memcpy 2 MiB", n(layouttest.S64(512, 1024), nil, 4), n(layouttest.S64(512, 1024), nil, 4)},
		{"parallel transpose 4 MiB", n(layouttest.S64(1024, 1024), nil, 4), n(layouttest.S64(1024, 1024), layouttest.S64(1, 1024), 4)},
		{"parallel slice 2 MiB", n(layouttest.S64(1024, 512), nil, 4), n(layouttest.S64(1024, 512), layouttest.S64(1024, 2), 4)},
		{"parallel fill 2 MiB", n(layouttest.S64(1<<19), nil, 4), n(nil, nil, 4)},
		{"parallel 1-d gather", n(layouttest.S64(1<<19), nil, 4), n(layouttest.S64(1<<19), layouttest.S64(3), 4)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, mis := range [][2]int{{0, 0}, {4, 0}, {0, 8}, {1, 3}} {
				checkCopy(t, c.dl, c.sl, mis[0], mis[1], 7)
			}
		})
	}
}

// TestCopyManyDims copies through 72 dims (64 of extent 1, 8 of extent 2..3)
// with a reversed dim order on the src side.
func TestCopyManyDims(t *testing.T) {
	const nd = 72
	shape := make([]int64, nd)
	for i := range shape {
		shape[i] = 1
		if i%9 == 0 {
			shape[i] = int64(2 + i%2)
		}
	}
	dl := layouttest.MustNew(t, shape, nil, 4)
	sl, err := layout.Dense(shape, 4, layout.F)
	if err != nil {
		t.Fatal(err)
	}
	checkCopy(t, dl, sl, 0, 0, 1)
	// 70 dims of extent 2 are too many elements; 20 dims of extent 2 with a
	// permuted src is 2^20 elements of 1 byte.
	sh := make([]int64, 20)
	perm := make([]int, 20)
	for i := range sh {
		sh[i] = 2
		perm[i] = (i * 7) % 20
	}
	dl = layouttest.MustNew(t, sh, nil, 1)
	if sl, err = layout.Dense(sh, 1, layout.Perm(perm...)); err != nil {
		t.Fatal(err)
	}
	checkCopy(t, dl, sl, 0, 0, 2)
}

func TestCopyErrors(t *testing.T) {
	dl := layouttest.MustNew(t, layouttest.S64(4, 4), nil, 4)
	sl := layouttest.MustNew(t, layouttest.S64(4, 4), layouttest.S64(1, 4), 4)
	buf := make([]byte, 64)
	cases := []struct {
		name     string
		dst, src []byte
		dl, sl   layout.Layout
		err      error
		mention  []string
	}{
		{"short dst", buf[:63], buf, dl, sl, hostcopy.ErrBufferSize, []string{"dst is 63 bytes", "needs 64"}},
		{"short src", make([]byte, 64), buf[:10], dl, sl, hostcopy.ErrBufferSize, []string{"src is 10 bytes", "needs 64"}},
		{"shape mismatch", make([]byte, 64), buf, dl, layouttest.MustNew(t, layouttest.S64(2, 8), nil, 4), layout.ErrShape, []string{"[2 8]", "[4 4]"}},
		{"overlapping dst", make([]byte, 64), buf, layouttest.MustNew(t, layouttest.S64(4, 4), layouttest.S64(1, 1), 4), sl, layout.ErrOverlappingDst, []string{"dst"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := hostcopy.Copy(c.dst, c.dl, c.src, c.sl)
			if !errors.Is(err, c.err) {
				t.Fatalf("error %v, want %v", err, c.err)
			}
			for _, m := range c.mention {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("error %q does not mention %q", err, m)
				}
			}
		})
	}
}

// TestCopyOverlap copies between overlapping views of one array: the result
// must be as if src were read completely first.
func TestCopyOverlap(t *testing.T) {
	cases := []struct {
		name       string
		dl, sl     layout.Layout
		dpos, spos int
	}{
		{"memmove forward", layouttest.MustNew(t, layouttest.S64(100), nil, 4), layouttest.MustNew(t, layouttest.S64(100), nil, 4), 8, 0},
		{"memmove backward", layouttest.MustNew(t, layouttest.S64(100), nil, 4), layouttest.MustNew(t, layouttest.S64(100), nil, 4), 0, 8},
		{"in-place transpose", layouttest.MustNew(t, layouttest.S64(40, 40), nil, 4), layouttest.MustNew(t, layouttest.S64(40, 40), layouttest.S64(1, 40), 4), 0, 0},
		{"in-place reverse", layouttest.MustNew(t, layouttest.S64(1000), nil, 2), layouttest.MustNew(t, layouttest.S64(1000), layouttest.S64(-1), 2), 0, 0},
		{"shifted slice", layouttest.MustNew(t, layouttest.S64(64, 32), nil, 4), layouttest.MustNew(t, layouttest.S64(64, 32), layouttest.S64(64, 2), 4), 100, 0},
		{"large in-place transpose", layouttest.MustNew(t, layouttest.S64(1024, 1024), nil, 4), layouttest.MustNew(t, layouttest.S64(1024, 1024), layouttest.S64(1, 1024), 4), 0, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			size := max(int(c.dl.RequiredSizeInBytes())+c.dpos, int(c.sl.RequiredSizeInBytes())+c.spos)
			arr := make([]byte, size)
			for i := range arr {
				arr[i] = byte(i*7 + 3)
			}
			want := append([]byte(nil), arr...)
			snapshot := append([]byte(nil), arr...)
			naive(want[c.dpos:], c.dl, snapshot[c.spos:], c.sl)
			if err := hostcopy.Copy(arr[c.dpos:], c.dl, arr[c.spos:], c.sl); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(arr, want) {
				t.Fatal("overlapping copy differs from copy of a snapshot")
			}
		})
	}
}

// genLayouts draws a dst/src pair: a unique dst with random extents, order,
// gaps and signs; a src of the same or a broadcastable shape with arbitrary
// (negative, zero, overlapping) or dense strides.
func genLayouts(t *rapid.T) (dst, src layout.Layout) {
	item := rapid.SampledFrom([]int{1, 2, 3, 4, 8, 12, 16, 24}).Draw(t, "item")
	var shape []int64
	big := rapid.IntRange(0, 3).Draw(t, "big") == 0
	if big {
		shape = rapid.SliceOfN(rapid.Int64Range(15, 40), 2, 3).Draw(t, "shape")
	} else {
		shape = rapid.SliceOfN(rapid.Int64Range(0, 5), 0, 6).Draw(t, "shape")
	}
	nd := len(shape)
	dense := func(label string, sh []int64, signs bool) []int64 {
		n := len(sh)
		perm := rapid.Permutation(iota(n)).Draw(t, label+"perm")
		st := make([]int64, n)
		acc := int64(1)
		for k := n - 1; k >= 0; k-- {
			d := perm[k]
			st[d] = acc
			if signs && rapid.Bool().Draw(t, label+"neg") {
				st[d] = -acc
			}
			acc *= max(sh[d], 1) * rapid.Int64Range(1, 2).Draw(t, label+"gap")
		}
		return st
	}
	dst = layouttest.MustNew(t, shape, dense("d", shape, true), item)
	if rapid.IntRange(0, 3).Draw(t, "dmode") == 0 {
		st := rapid.SliceOfN(rapid.Int64Range(-9, 9), nd, nd).Draw(t, "dstrides")
		if l, err := layout.New(shape, st, item); err == nil && l.IsUnique() {
			dst = l
		}
	}
	ns := rapid.IntRange(0, nd).Draw(t, "ns")
	sshape := make([]int64, ns)
	for j := range sshape {
		sshape[j] = shape[nd-ns+j]
		if rapid.IntRange(0, 4).Draw(t, "bcast") == 0 {
			sshape[j] = 1
		}
	}
	var sst []int64
	switch rapid.IntRange(0, 2).Draw(t, "smode") {
	case 0:
		sst = rapid.SliceOfN(rapid.Int64Range(-9, 9), ns, ns).Draw(t, "sstrides")
	case 1:
		sst = dense("s", sshape, true)
	default:
		sst = append([]int64(nil), dst.Strides()[nd-ns:]...)
	}
	return dst, layouttest.MustNew(t, sshape, sst, item)
}

func iota(n int) []int {
	p := make([]int, n)
	for i := range p {
		p[i] = i
	}
	return p
}

func TestCopyProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		dl, sl := genLayouts(t)
		dmis := rapid.IntRange(0, 16).Draw(t, "dmis")
		smis := rapid.IntRange(0, 16).Draw(t, "smis")
		checkCopy(t, dl, sl, dmis, smis, rapid.Uint64().Draw(t, "seed"))
	})
}

// FuzzHostCopy decodes a dst/src pair from the fuzz input; Copy must never
// panic and, when it accepts the pair, must agree with the naive copy.
func FuzzHostCopy(f *testing.F) {
	f.Add([]byte{2, 4, 3, 4, 1, 2, 2, 0xfd, 1, 0x02}, uint8(0), uint8(0))
	f.Add([]byte{3, 1, 5, 5, 5, 25, 5, 1, 3, 1, 5, 25, 0}, uint8(3), uint8(1))
	f.Add([]byte{2, 3, 8, 8, 8, 1, 2, 1, 8}, uint8(1), uint8(2))
	f.Fuzz(func(t *testing.T, data []byte, dmis, smis uint8) {
		dl, sl, _, ok := layouttest.DecodePair(data)
		if !ok {
			return
		}
		if !dl.IsUnique() {
			if err := hostcopy.Copy(make([]byte, dl.RequiredSizeInBytes()), dl, make([]byte, sl.RequiredSizeInBytes()), sl); err == nil {
				t.Fatalf("Copy accepted the overlapping dst %v", dl)
			}
			return
		}
		if err := hostcopy.Copy(make([]byte, dl.RequiredSizeInBytes()), dl, make([]byte, sl.RequiredSizeInBytes()), sl); err != nil {
			if !errors.Is(err, layout.ErrShape) {
				t.Fatalf("Copy(%v <- %v): %v", dl, sl, err)
			}
			return
		}
		checkCopy(t, dl, sl, int(dmis%17), int(smis%17), 3)
	})
}

// TestTileFastPaths covers the register transposes of the ClassTile executor
// (8×8 bytes, 4×4 uint16, 2×2 uint32) and the typed and opaque gathers, at
// extents that are not multiples of the sub-block or the block edge, tiny
// tiles, a negative stride in one view, and 4-d permutations whose fast dims
// are in the middle. Each case must plan as a tile of the given itemsize
// (with aligned buffers) and match the naive copy at four misalignments.
func TestTileFastPaths(t *testing.T) {
	n := func(shape, strides []int64, item int) layout.Layout {
		return layouttest.MustNew(t, shape, strides, item)
	}
	cases := []struct {
		name   string
		dl, sl layout.Layout
		item   int // canonical Sig.Itemsize
	}{
		{"u8 67x45", n(layouttest.S64(67, 45), nil, 1), n(layouttest.S64(67, 45), layouttest.S64(1, 67), 1), 1},
		{"u8 16x16 tiny", n(layouttest.S64(16, 16), nil, 1), n(layouttest.S64(16, 16), layouttest.S64(1, 16), 1), 1},
		{"u8 16x23", n(layouttest.S64(16, 23), nil, 1), n(layouttest.S64(16, 23), layouttest.S64(1, 16), 1), 1},
		{"u8 130x129 two blocks and tails", n(layouttest.S64(130, 129), nil, 1), n(layouttest.S64(130, 129), layouttest.S64(1, 130), 1), 1},
		{"u8 64x64 one block", n(layouttest.S64(64, 64), nil, 1), n(layouttest.S64(64, 64), layouttest.S64(1, 64), 1), 1},
		{"u8 negative src stride", n(layouttest.S64(41, 77), nil, 1), n(layouttest.S64(41, 77), layouttest.S64(1, -41), 1), 1},
		{"u8 negative dst stride", n(layouttest.S64(41, 77), layouttest.S64(-77, 1), 1), n(layouttest.S64(41, 77), layouttest.S64(1, 41), 1), 1},
		{"u8 padded pitches", n(layouttest.S64(50, 70), layouttest.S64(75, 1), 1), n(layouttest.S64(50, 70), layouttest.S64(1, 53), 1), 1},
		{"u16 37x23", n(layouttest.S64(37, 23), nil, 2), n(layouttest.S64(37, 23), layouttest.S64(1, 37), 2), 2},
		{"u16 18x19", n(layouttest.S64(18, 19), nil, 2), n(layouttest.S64(18, 19), layouttest.S64(1, 18), 2), 2},
		{"u16 negative src stride", n(layouttest.S64(35, 66), nil, 2), n(layouttest.S64(35, 66), layouttest.S64(1, -35), 2), 2},
		{"f32 33x17", n(layouttest.S64(33, 17), nil, 4), n(layouttest.S64(33, 17), layouttest.S64(1, 33), 4), 4},
		{"f32 17x31", n(layouttest.S64(17, 31), nil, 4), n(layouttest.S64(17, 31), layouttest.S64(1, 17), 4), 4},
		{"f32 negative dst stride", n(layouttest.S64(19, 50), layouttest.S64(-50, 1), 4), n(layouttest.S64(19, 50), layouttest.S64(1, 19), 4), 4},
		{"f64 21x19", n(layouttest.S64(21, 19), nil, 8), n(layouttest.S64(21, 19), layouttest.S64(1, 21), 8), 8},
		{"c128 17x18", n(layouttest.S64(17, 18), nil, 16), n(layouttest.S64(17, 18), layouttest.S64(1, 17), 16), 16},
		{"3-byte 19x21", n(layouttest.S64(19, 21), nil, 3), n(layouttest.S64(19, 21), layouttest.S64(1, 19), 3), 3},
		{"5-byte 26x17", n(layouttest.S64(26, 17), nil, 5), n(layouttest.S64(26, 17), layouttest.S64(1, 26), 5), 5},
		{"12-byte 17x20", n(layouttest.S64(17, 20), nil, 12), n(layouttest.S64(17, 20), layouttest.S64(1, 17), 12), 12},
		// shape (3, 20, 5, 24): dst's fast dim is 3, src's is 1 (strides
		// 100, 1, 20, 300), so the canonical Fast dim sits between others.
		{"4-d u8 fast dims in the middle", n(layouttest.S64(3, 20, 5, 24), nil, 1), n(layouttest.S64(3, 20, 5, 24), layouttest.S64(100, 1, 20, 300), 1), 1},
		{"4-d u16 fast dims in the middle", n(layouttest.S64(3, 20, 5, 24), nil, 2), n(layouttest.S64(3, 20, 5, 24), layouttest.S64(100, 1, 20, 300), 2), 2},
		{"4-d f32 fast dims in the middle", n(layouttest.S64(3, 20, 5, 24), nil, 4), n(layouttest.S64(3, 20, 5, 24), layouttest.S64(100, 1, 20, 300), 4), 4},
		{"4-d u8 negative outer", n(layouttest.S64(2, 33, 3, 18), layouttest.S64(-1782, 54, 18, 1), 1), n(layouttest.S64(2, 33, 3, 18), layouttest.S64(-99, 1, 33, 198), 1), 1},
		{"parallel u8 1200x1100", n(layouttest.S64(1200, 1100), nil, 1), n(layouttest.S64(1200, 1100), layouttest.S64(1, 1200), 1), 1},
		{"parallel u16 700x900", n(layouttest.S64(700, 900), nil, 2), n(layouttest.S64(700, 900), layouttest.S64(1, 700), 2), 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := layout.PlanCopy(c.dl, c.sl, layout.PlanOptions{DstAlign: 16, SrcAlign: 16})
			if err != nil {
				t.Fatal(err)
			}
			if p.Sig.Class != layout.ClassTile && p.Sig.Class != layout.ClassBoxTile || int(p.Sig.Itemsize) != c.item {
				t.Fatalf("plan is %v of itemsize %d, want a tile of %d", p.Sig.Class, p.Sig.Itemsize, c.item)
			}
			for _, mis := range [][2]int{{0, 0}, {4, 0}, {0, 8}, {1, 3}} {
				checkCopy(t, c.dl, c.sl, mis[0], mis[1], 11)
			}
		})
	}
}
