package kernels

import (
	"testing"

	"github.com/stridekit/stridekit/internal/layouttest"
	"github.com/stridekit/stridekit/internal/testenv"
	"github.com/stridekit/stridekit/layout"
	"github.com/stridekit/stridekit/runtime/cuda"
)

// benchBuffers allocates a benchmark's dst buffer of nD bytes and src
// buffer of max(nS, nD) bytes (memcpy of the bytes written reads nD), both
// freed when b ends.
func benchBuffers(b *testing.B, dev *cuda.Device, nD, nS int) (db, sb *cuda.Buffer) {
	db, err := dev.Alloc(nD, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	sb, err = dev.Alloc(max(nS, nD), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { sb.Close() })
	return db, sb
}

// benchCopy times copies of sl into dl (1 GiB cases) with CUDA events after
// a warm-up, next to cuMemcpyDtoD of the same bytes in the same run, and
// reports GB/s (2 × bytes written per second) and the ratio to memcpy.
func benchCopy(b *testing.B, dl, sl layout.Layout) {
	dev := testenv.NeedGPU(b)
	st := testenv.NewStream(b, dev)
	nD, nS := int(dl.RequiredSizeInBytes()), int(sl.RequiredSizeInBytes())
	db, sb := benchBuffers(b, dev, nD, nS)
	if err := dev.MemsetAsync(sb.Ptr(), 1, max(nS, nD), st); err != nil {
		b.Fatal(err)
	}
	p, err := layout.PlanCopy(dl, sl, layout.PlanOptions{DstAlign: 256, SrcAlign: 256})
	if err != nil {
		b.Fatal(err)
	}
	run := func() error {
		if p.Sig.Class == layout.ClassMemcpy {
			return dev.MemcpyAsync(db.Ptr()+cuda.DevicePtr(p.DstOffset), sb.Ptr()+cuda.DevicePtr(p.SrcOffset), int(p.Bytes), st)
		}
		return launchPlan(dev, st, db.Ptr(), sb.Ptr(), &p)
	}
	memcpy := func() error { return dev.MemcpyAsync(db.Ptr(), sb.Ptr(), int(p.Bytes), st) }
	e0, _ := dev.NewEvent(true)
	e1, _ := dev.NewEvent(true)
	defer e0.Close()
	defer e1.Close()
	timeIt := func(f func() error, n int) float64 {
		for i := 0; i < 3; i++ { // warm-up
			if err := f(); err != nil {
				b.Fatal(err)
			}
		}
		if err := e0.Record(st); err != nil {
			b.Fatal(err)
		}
		for i := 0; i < n; i++ {
			if err := f(); err != nil {
				b.Fatal(err)
			}
		}
		if err := e1.Record(st); err != nil {
			b.Fatal(err)
		}
		if err := e1.Synchronize(); err != nil {
			b.Fatal(err)
		}
		d, err := cuda.ElapsedTime(e0, e1)
		if err != nil {
			b.Fatal(err)
		}
		return 2 * float64(p.Bytes) * float64(n) / d.Seconds() / 1e9
	}
	b.SetBytes(p.Bytes)
	b.ResetTimer()
	gbs := timeIt(run, b.N)
	b.StopTimer()
	mem := timeIt(memcpy, max(b.N, 5))
	b.ReportMetric(gbs, "GB/s")
	b.ReportMetric(mem, "memcpyGB/s")
	b.ReportMetric(100*gbs/mem, "%memcpy")
	b.Logf("%v: %.0f GB/s, memcpy %.0f GB/s, %.1f%%", p.Sig, gbs, mem, 100*gbs/mem)
}

func must(b *testing.B, shape, strides []int64, item int) layout.Layout {
	l, err := layout.New(shape, strides, item)
	if err != nil {
		b.Fatal(err)
	}
	return l
}

func benchTranspose(b *testing.B, n int64, item int) {
	dl := must(b, []int64{n, n}, nil, item)
	sl := must(b, []int64{n, n}, []int64{1, n}, item)
	benchCopy(b, dl, sl)
}

func BenchmarkTransposeF32(b *testing.B) { benchTranspose(b, 16384, 4) }
func BenchmarkTransposeU8(b *testing.B)  { benchTranspose(b, 32768, 1) }
func BenchmarkTransposeF16(b *testing.B) { benchTranspose(b, 16384, 2) }

func BenchmarkPermute3210(b *testing.B) {
	sl := must(b, []int64{256, 256, 64, 64}, []int64{1, 256, 65536, 64 * 65536}, 4)
	dl := must(b, []int64{256, 256, 64, 64}, nil, 4)
	benchCopy(b, dl, sl)
}

func BenchmarkSliceStep2(b *testing.B) {
	sl := must(b, []int64{16384, 16384}, []int64{32768, 2}, 4)
	dl := must(b, []int64{16384, 16384}, nil, 4)
	benchCopy(b, dl, sl)
}

// BenchmarkSliceStep3 is a[:, ::3] of a 16384×32768 f32: an elementwise
// copy of 2 dims (the slice does not merge), src inner stride 3.
func BenchmarkSliceStep3(b *testing.B) {
	sl := must(b, []int64{16384, 10923}, []int64{32768, 3}, 4)
	dl := must(b, []int64{16384, 10923}, nil, 4)
	benchCopy(b, dl, sl)
}

// BenchmarkSliceRows is a[::2, :] of a 16384×32768 f32: a 2-d elementwise
// copy of contiguous rows (widened to 16-byte items).
func BenchmarkSliceRows(b *testing.B) {
	sl := must(b, []int64{8192, 32768}, []int64{65536, 1}, 4)
	dl := must(b, []int64{8192, 32768}, nil, 4)
	benchCopy(b, dl, sl)
}

// BenchmarkPermute0213 is permute (0,2,1,3) of a 64×64×256×256 f32: the
// innermost dim stays, so it is a 4-d elementwise copy of 16-byte items.
func BenchmarkPermute0213(b *testing.B) {
	sl := must(b, []int64{64, 256, 64, 256}, []int64{64 * 65536, 256, 65536, 1}, 4)
	dl := must(b, []int64{64, 256, 64, 256}, nil, 4)
	benchCopy(b, dl, sl)
}

func BenchmarkBroadcastRow(b *testing.B) {
	sl := must(b, []int64{16384, 16384}, []int64{0, 1}, 4)
	dl := must(b, []int64{16384, 16384}, nil, 4)
	benchCopy(b, dl, sl)
}

func BenchmarkFill(b *testing.B) {
	sl := must(b, []int64{16384, 16384}, []int64{0, 0}, 4)
	dl := must(b, []int64{16384, 16384}, nil, 4)
	benchCopy(b, dl, sl)
}

// BenchmarkBind is the host work of the first copy of a new pair whose
// kernel is loaded, without memview: Bind's plan, kernel lookup and
// packing, for a tile and a box-tile case (memview's dispatch cases).
func BenchmarkBind(b *testing.B) {
	dev := testenv.NeedGPU(b)
	for _, c := range layouttest.DispatchCases()[:2] { // the tile and the box tile
		b.Run(c.Name, func(b *testing.B) {
			dl, sl := layouttest.MustNew(b, c.Shape, nil, c.Item), layouttest.MustNew(b, c.Shape, c.SrcStrides, c.Item)
			k, err := Bind(dev, dl, sl, 16, 16)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := k.Function(); err != nil { // loaded: Bind finds it
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Bind(dev, dl, sl, 16, 16); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
