package memview

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stridekit/stridekit/internal/pairgen"
	"github.com/stridekit/stridekit/layout"
	"github.com/stridekit/stridekit/runtime/cuda"
	"github.com/stridekit/stridekit/runtime/hostcopy"
)

func dense(t testing.TB, item int, shape ...int64) layout.Layout {
	t.Helper()
	l, err := layout.Dense(shape, item, layout.C)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func mustNew(t testing.TB, shape, strides []int64, item int) layout.Layout {
	t.Helper()
	l, err := layout.New(shape, strides, item)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// fakeView is a view of kind k on device dev at address low, for the
// checks and plans that run before any driver call.
func fakeView(t testing.TB, k cuda.MemoryKind, dev *cuda.Device, low uintptr, l layout.Layout, dt layout.DType) *StridedMemoryView {
	t.Helper()
	v, err := newView(low, l, dt, low, low+uintptr(l.RequiredSizeInBytes()))
	if err != nil {
		t.Fatal(err)
	}
	v.kind, v.dev = k, dev
	return v
}

func TestFromHostBoundsAndDType(t *testing.T) {
	data := make([]float32, 12)
	l := dense(t, 4, 3, 4)
	v, err := FromHost(data, l)
	if err != nil {
		t.Fatal(err)
	}
	if v.DType() != layout.Float32 || v.Kind() != cuda.MemoryPageable || v.DeviceID() != -1 || v.IsDeviceAccessible() || v.ReadOnly() {
		t.Errorf("view %v: dtype %v kind %v device %d", v, v.DType(), v.Kind(), v.DeviceID())
	}
	if _, err := FromHost(data, dense(t, 4, 4, 4)); !errors.Is(err, ErrOutOfBounds) {
		t.Errorf("13..16 floats in 12: %v", err)
	}
	// A reversed layout: the slice holds it from its lowest byte.
	rev := mustNew(t, []int64{12}, []int64{-1}, 4)
	r, err := FromHost(data, rev)
	if err != nil {
		t.Fatal(err)
	}
	if r.Ptr() != v.Ptr()+44 {
		t.Errorf("reversed view's index 0 at +%d, want +44", r.Ptr()-v.Ptr())
	}
	// Bytes viewed as float32: opaque until reinterpreted.
	b, err := FromHost(make([]byte, 48), l)
	if err != nil {
		t.Fatal(err)
	}
	if b.DType().Itemsize() != 4 || b.DType() == layout.Float32 {
		t.Errorf("[]byte with 4-byte items: dtype %v", b.DType())
	}
	f, err := b.View(l, layout.Float32)
	if err != nil || f.DType() != layout.Float32 {
		t.Fatalf("View as float32: %v %v", f, err)
	}
	if _, err := b.View(l, layout.Float64); !errors.Is(err, ErrDType) {
		t.Errorf("float64 dtype on 4-byte items: %v", err)
	}
	if _, err := b.View(dense(t, 4, 13), layout.Float32); !errors.Is(err, ErrOutOfBounds) {
		t.Errorf("View past the end: %v", err)
	}
	if _, err := b.ViewAt(4, dense(t, 4, 11), layout.Float32); err != nil {
		t.Errorf("ViewAt inside: %v", err)
	}
	if _, err := b.ViewAt(8, dense(t, 4, 11), layout.Float32); !errors.Is(err, ErrOutOfBounds) {
		t.Errorf("ViewAt past the end: %v", err)
	}
	if _, err := b.ViewAt(-4, dense(t, 4, 2), layout.Float32); !errors.Is(err, ErrOutOfBounds) {
		t.Errorf("ViewAt before the start: %v", err)
	}
	if _, err := FromBuffer(nil, l, layout.Float32); !errors.Is(err, ErrNilView) {
		t.Errorf("FromBuffer(nil): %v", err)
	}
}

// TestCopyErrors checks every refusal of CopyFrom: a typed error that names
// both views, and dst unchanged.
func TestCopyErrors(t *testing.T) {
	d0, d1 := new(cuda.Device), new(cuda.Device)
	l := dense(t, 4, 8, 8)
	host := func() *StridedMemoryView {
		v, err := FromHost(make([]float32, 64), l)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	dev := func(d *cuda.Device, at uintptr) *StridedMemoryView {
		return fakeView(t, cuda.MemoryDevice, d, at, l, layout.Float32)
	}
	i32 := host()
	i32, _ = i32.View(l, layout.Int32)
	bcast := fakeView(t, cuda.MemoryDevice, d0, 0x10000, mustNew(t, []int64{8, 8}, []int64{0, 1}, 4), layout.Float32)
	closed := host()
	closed.owner = &owner{}
	closed.Close()
	cases := []struct {
		name     string
		dst, src *StridedMemoryView
		s        *cuda.Stream
		want     error
	}{
		{"nil src", host(), nil, nil, ErrNilView},
		{"read-only dst", host().AsReadOnly(), host(), nil, ErrReadOnly},
		{"dtype mismatch", host(), i32, nil, ErrDType},
		{"shape mismatch", host(), func() *StridedMemoryView { v, _ := FromHost(make([]float32, 64), dense(t, 4, 4, 16)); return v }(), nil, layout.ErrShape},
		{"overlapping dst", bcast, dev(d0, 0x20000), nil, layout.ErrOverlappingDst},
		{"two devices, nil stream", dev(d0, 0x10000), dev(d1, 0x20000), nil, ErrNilStream},
		{"two devices, stream of a third", dev(d0, 0x10000), dev(d1, 0x20000), new(cuda.Device).LegacyStream(), ErrDevice},
		{"nil stream for device memory", dev(d0, 0x10000), dev(d0, 0x20000), nil, ErrNilStream},
		{"nil stream host to device", dev(d0, 0x10000), host(), nil, ErrNilStream},
		{"nil stream for a device view onto itself", dev(d0, 0x10000), dev(d0, 0x10000), nil, ErrNilStream},
		{"closed src", host(), closed, nil, ErrClosed},
		{"closed dst", closed, host(), nil, ErrClosed},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.dst.CopyFrom(c.src, c.s)
			if !errors.Is(err, c.want) {
				t.Fatalf("error %v, want %v", err, c.want)
			}
			if c.src != nil && c.dst != nil && (!strings.Contains(err.Error(), c.src.String()) || !strings.Contains(err.Error(), c.dst.String())) {
				t.Errorf("error %q does not name both views", err)
			}
		})
	}
	if err := (*StridedMemoryView)(nil).CopyTo(host(), nil); !errors.Is(err, ErrNilView) {
		t.Errorf("nil.CopyTo: %v", err)
	}
}

// TestHostCopies copies random pairs of every kind between host views (Go
// slices, at offsets in larger slices) and compares every byte of the dst
// buffer, margins included, with a naive copy.
func TestHostCopies(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 5))
	n := 400
	if testing.Short() {
		n = 100
	}
	for i := 0; i < n; i++ {
		c := pairgen.Random(r, 64<<10)
		dbuf := make([]byte, c.DstBuf)
		sbuf := make([]byte, c.SrcBuf)
		pairgen.Poison(dbuf)
		pairgen.Fill(r, sbuf)
		want := bytes.Clone(dbuf)
		naiveCopy(want[c.DstBase:], c.Dst, sbuf[c.SrcBase:], c.Src)
		dv, err := FromHost(dbuf[c.DstBase:], c.Dst)
		if err != nil {
			t.Fatal(err)
		}
		sv, err := FromHost(sbuf[c.SrcBase:], c.Src)
		if err != nil {
			t.Fatal(err)
		}
		if err := dv.CopyFrom(sv, nil); err != nil {
			t.Fatalf("%v: %v", c, err)
		}
		if !bytes.Equal(dbuf, want) {
			t.Fatalf("%v: dst differs from the naive copy", c)
		}
	}
}

// naiveCopy copies element by element, index by index (NumPy broadcasting
// of src), buffers from each view's lowest byte.
func naiveCopy(dst []byte, dl layout.Layout, src []byte, sl layout.Layout) {
	shape := dl.Shape()
	ds, ss := dl.Strides(), sl.Strides()
	sShape := sl.Shape()
	item := int64(dl.Itemsize())
	lead := len(shape) - len(sShape)
	idx := make([]int64, len(shape))
	vol := dl.Volume()
	for v := int64(0); v < vol; v++ {
		x := v
		for k := len(shape) - 1; k >= 0; k-- {
			idx[k] = x % shape[k]
			x /= shape[k]
		}
		d, s := -dl.MinOffset(), -sl.MinOffset()
		for k := range shape {
			d += idx[k] * ds[k]
			if j := k - lead; j >= 0 && sShape[j] != 1 {
				s += idx[k] * ss[j]
			}
		}
		copy(dst[d*item:(d+1)*item], src[s*item:(s+1)*item])
	}
}

// TestOverlappingHostViews: a copy between overlapping views reads src as
// it was; a view onto itself is unchanged.
func TestOverlappingHostViews(t *testing.T) {
	data := make([]int32, 20)
	for i := range data {
		data[i] = int32(i)
	}
	base, _ := FromHost(data, dense(t, 4, 20))
	a, _ := base.Slice(layout.Span(0, 10))
	b, _ := base.Slice(layout.Span(5, 15))
	if err := b.CopyFrom(a, nil); err != nil {
		t.Fatal(err)
	}
	for i := 5; i < 15; i++ {
		if data[i] != int32(i-5) {
			t.Fatalf("data[%d] = %d, want %d (%v)", i, data[i], i-5, data)
		}
	}
	if err := base.CopyFrom(base, nil); err != nil {
		t.Fatal(err)
	}
}

// TestExplain pins the dispatcher's decisions for a table of pairs: the
// path, the signature (from the pointers' real alignment) and the staging.
func TestExplain(t *testing.T) {
	d0 := new(cuda.Device)
	l := dense(t, 4, 4096, 4096)
	lT, _ := l.Permute(1, 0)
	dv := func(at uintptr, l layout.Layout) *StridedMemoryView {
		return fakeView(t, cuda.MemoryDevice, d0, at, l, layout.Float32)
	}
	pin := func(at uintptr, l layout.Layout) *StridedMemoryView {
		return fakeView(t, cuda.MemoryHost, d0, at, l, layout.Float32)
	}
	page := func(at uintptr, l layout.Layout) *StridedMemoryView {
		return fakeView(t, cuda.MemoryPageable, nil, at, l, layout.Float32)
	}
	sl, _, _ := mustNew(t, []int64{4096, 8192}, nil, 4).Slice(layout.All(), layout.Range{Start: layout.Omit, Stop: layout.Omit, Step: 2})
	rev, _, _ := l.Slice(layout.Range{Start: layout.Omit, Stop: layout.Omit, Step: -1})
	cases := []struct {
		name      string
		dst, src  *StridedMemoryView
		path      Path
		sig       string
		staged    bool
		temporary bool
	}{
		{"device transpose, aligned", dv(0x10000, l), dv(0x20000000, lT), PathDevice, "tile:nd=2,fast=0,item=4,vec=4,idx=32", false, false},
		{"device transpose, 4-byte aligned src: single floats in a box tile", dv(0x10000, l), dv(0x20000004, lT), PathDevice, "btile:nd=2,item=4,vec=1,idx=32", false, false},
		{"device copy, widened", dv(0x10000, l), dv(0x20000000, l), PathDevice, "memcpy:nd=1,item=16,vec=1,idx=32", false, false},
		{"device copy, 8-byte aligned", dv(0x10000, l), dv(0x20000008, l), PathDevice, "memcpy:nd=1,item=8,vec=1,idx=32", false, false},
		{"pinned dense upload: one DMA into dst", dv(0x10000, l), pin(0x20000000, l), PathHostToDevice, "memcpy:nd=1,item=16,vec=1,idx=32", false, false},
		{"pinned transposed upload: one DMA, a kernel", dv(0x10000, l), pin(0x20000000, lT), PathHostToDevice, "tile:nd=2,fast=0,item=4,vec=4,idx=32", false, true},
		{"pinned flipped upload: one DMA, a kernel", dv(0x10000, l), pin(0x20000000, rev), PathHostToDevice, "elem:nd=2,item=16,vec=1,idx=32", false, true},
		{"pageable upload: staged into dst", dv(0x10000, l), page(0x20000000, l), PathHostToDevice, "memcpy:nd=1,item=16,vec=1,idx=32", true, false},
		{"pinned slice upload: gathered, staged", dv(0x10000, mustNew(t, []int64{4096, 4096}, nil, 4)), pin(0x20000000, sl), PathHostToDevice, "memcpy:nd=1,item=16,vec=1,idx=32", true, false},
		{"pinned transposed download", pin(0x20000000, lT), dv(0x10000, l), PathDeviceToHost, "tile:nd=2,fast=0,item=4,vec=4,idx=32", false, true},
		{"self", dv(0x10000, l), dv(0x10000, l), PathSelf, "none:nd=0,item=0,vec=0,idx=32", false, false},
		{"host transpose", page(0x10000, l), page(0x20000000, lT), PathHost, "tile:nd=2,fast=0,item=4,vec=4,idx=32", false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cp, err := c.dst.Explain(c.src)
			if err != nil {
				t.Fatal(err)
			}
			if cp.Path != c.path || cp.Plan.Sig.String() != c.sig || cp.Staged != c.staged || cp.Temporary != c.temporary {
				t.Errorf("path %v sig %v staged %v temporary %v, want %v %v %v %v", cp.Path, cp.Plan.Sig, cp.Staged, cp.Temporary, c.path, c.sig, c.staged, c.temporary)
			}
		})
	}
	ov := dv(0x10000, dense(t, 4, 100))
	ov2 := dv(0x10000+40, dense(t, 4, 100))
	if cp, err := ov2.Explain(ov); err != nil || !cp.Snapshot {
		t.Errorf("overlapping device views: %+v %v", cp, err)
	}
}

// TestCompact checks the host views' compact forms: gap-free views are
// their own, gaps are squeezed out, broadcast dims stay at stride 0.
func TestCompact(t *testing.T) {
	for _, c := range []struct {
		in, want layout.Layout
	}{
		{dense(t, 4, 3, 5), dense(t, 4, 3, 5)},
		{mustNew(t, []int64{3, 5}, []int64{1, 3}, 4), mustNew(t, []int64{3, 5}, []int64{1, 3}, 4)},
		{mustNew(t, []int64{3, 5}, []int64{-5, 1}, 4), mustNew(t, []int64{3, 5}, []int64{-5, 1}, 4)},
		{mustNew(t, []int64{3, 5}, []int64{20, 2}, 4), mustNew(t, []int64{3, 5}, []int64{5, 1}, 4)},
		{mustNew(t, []int64{3, 5}, []int64{0, 1}, 4), mustNew(t, []int64{3, 5}, []int64{0, 1}, 4)},
		{mustNew(t, []int64{3, 5}, []int64{1, -7}, 2), mustNew(t, []int64{3, 5}, []int64{1, -3}, 2)},
	} {
		got, err := compact(c.in)
		if err != nil || !got.Equal(c.want) {
			t.Errorf("compact(%v) = %v (%v), want %v", c.in, got, err, c.want)
		}
	}
}

// The reference really is what hostcopy does for the views (a sanity check
// of naiveCopy itself).
func TestNaiveMatchesHostcopy(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 50; i++ {
		c := pairgen.Random(r, 16<<10)
		src := make([]byte, c.Src.RequiredSizeInBytes())
		pairgen.Fill(r, src)
		a := make([]byte, c.Dst.RequiredSizeInBytes())
		b := make([]byte, len(a))
		naiveCopy(a, c.Dst, src, c.Src)
		if err := hostcopy.Copy(b, c.Dst, src, c.Src); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a, b) {
			t.Fatalf("%v: naive copy and hostcopy differ", c)
		}
	}
}

// TestStagedPieces runs the chunking of staged host transfers on the CPU:
// gathering every piece of a host view into an image must give the view's
// compact image, and scattering the image back piece by piece must give the
// view's bytes (gaps untouched).
func TestStagedPieces(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	for i := 0; i < 200; i++ {
		c := pairgen.Random(r, 256<<10)
		hl := c.Src
		if i%2 == 0 {
			hl = c.Dst
		}
		cl, err := compact(hl)
		if err != nil {
			t.Fatal(err)
		}
		direct := cl.Equal(hl)
		ps, err := pieces(hl, cl, direct)
		if err != nil {
			t.Fatal(err)
		}
		host := make([]byte, hl.RequiredSizeInBytes())
		pairgen.Fill(r, host)
		want := make([]byte, cl.RequiredSizeInBytes())
		h1, c1, err := dropBroadcast(hl, cl)
		if err != nil {
			t.Fatal(err)
		}
		if err := hostcopy.Copy(want, c1, host, h1); err != nil {
			t.Fatal(err)
		}
		img := make([]byte, len(want))
		covered := int64(0)
		for _, p := range ps {
			b := img[p.off : p.off+p.n]
			if p.direct {
				copy(b, host[p.hoff:p.hoff+p.n])
			} else if err := hostcopy.Copy(b, p.subC, host[p.hoff:p.hoff+p.sub.RequiredSizeInBytes()], p.sub); err != nil {
				t.Fatal(err)
			}
			covered += p.n
		}
		if covered != int64(len(img)) || !bytes.Equal(img, want) {
			t.Fatalf("%v: gathered image differs (direct %v, %d pieces cover %d of %d)", hl, direct, len(ps), covered, len(img))
		}
		if !hl.IsUnique() {
			continue
		}
		back := make([]byte, len(host))
		pairgen.Poison(back)
		wantBack := bytes.Clone(back)
		if err := hostcopy.Copy(wantBack, hl, img, cl); err != nil {
			t.Fatal(err)
		}
		for _, p := range ps {
			b := img[p.off : p.off+p.n]
			if p.direct {
				copy(back[p.hoff:p.hoff+p.n], b)
			} else if err := hostcopy.Copy(back[p.hoff:p.hoff+p.sub.RequiredSizeInBytes()], p.sub, b, p.subC); err != nil {
				t.Fatal(err)
			}
		}
		if !bytes.Equal(back, wantBack) {
			t.Fatalf("%v: scattered bytes differ", hl)
		}
	}
}
