package memview

import (
	"testing"
	"time"
	"unsafe"

	"github.com/stridekit/stridekit/internal/layouttest"
	"github.com/stridekit/stridekit/internal/testenv"
	"github.com/stridekit/stridekit/layout"
	"github.com/stridekit/stridekit/runtime/cuda"
)

// The host time of a copy, per kernel class: a repeated CopyFrom (a cached
// binding), a held BoundCopy, the first copy of a new pair whose kernel is
// loaded (a binding made), and the driver's floor under them: cuda.Launch
// of the same kernel with the same packed arguments. Small copies, queued
// back to back, the stream synchronised every 256, so the time is the
// host's. Compare each against Floor of the same class in the same run.

// dispatchCase is a small copy of one kernel class: its views and the
// class its plan must have.
type dispatchCase struct {
	name     string
	class    layout.Class
	dst, src *StridedMemoryView
}

// dispatchCases returns one small copy of every kernel class, placed in a
// fresh device buffer.
func dispatchCases(tb testing.TB, dev *cuda.Device, s *cuda.Stream) []dispatchCase {
	buf, err := dev.Alloc(1<<20, s)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { buf.Close() })
	view := func(off int64, shape, strides []int64, item int) *StridedMemoryView {
		l, err := layout.New(shape, strides, item)
		if err != nil {
			tb.Fatal(err)
		}
		whole, err := FromBuffer(buf, bytesLayout(1<<20), layout.Uint8)
		if err != nil {
			tb.Fatal(err)
		}
		dt, _ := layout.Opaque(item)
		v, err := whole.ViewAt(off, l, dt)
		if err != nil {
			tb.Fatal(err)
		}
		return v
	}
	const half = 1 << 19
	var out []dispatchCase
	for _, c := range layouttest.DispatchCases() {
		out = append(out, dispatchCase{c.Name, c.Class, view(0, c.Shape, nil, c.Item), view(half, c.Shape, c.SrcStrides, c.Item)})
	}
	return out
}

// benchDispatch times, for each case, the copy function prepare returns
// for it, b.N times on s, after checking the case's class and copying it
// once (kernel loaded, binding cached).
func benchDispatch(b *testing.B, prepare func(c dispatchCase) (func(s *cuda.Stream) error, error)) {
	dev := testenv.NeedGPU(b)
	s := testenv.NewStream(b, dev)
	for _, c := range dispatchCases(b, dev, s) {
		b.Run(c.name, func(b *testing.B) {
			cp, err := c.dst.Explain(c.src)
			if err != nil || cp.Plan.Sig.Class != c.class {
				b.Fatalf("%s: plan %v (%v), want class %v", c.name, cp.Plan.Sig, err, c.class)
			}
			if err := c.dst.CopyFrom(c.src, s); err != nil {
				b.Fatal(err)
			}
			copy, err := prepare(c)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := copy(s); err != nil {
					b.Fatal(err)
				}
				if i%256 == 255 {
					s.Synchronize()
				}
			}
			b.StopTimer()
			if err := s.Synchronize(); err != nil {
				b.Fatal(err)
			}
		})
	}
}

// BenchmarkDispatch is a repeated CopyFrom of the same views.
func BenchmarkDispatch(b *testing.B) {
	benchDispatch(b, func(c dispatchCase) (func(*cuda.Stream) error, error) {
		return func(s *cuda.Stream) error { return c.dst.CopyFrom(c.src, s) }, nil
	})
}

// BenchmarkBoundCopy is a held BoundCopy's Copy.
func BenchmarkBoundCopy(b *testing.B) {
	benchDispatch(b, func(c dispatchCase) (func(*cuda.Stream) error, error) {
		bc, err := Bind(c.dst, c.src)
		if err != nil {
			return nil, err
		}
		return func(s *cuda.Stream) error { return bc.Copy(s) }, nil
	})
}

// BenchmarkFirstCopy is the first copy of a pair whose kernel is loaded:
// the pair's binding is dropped from the cache before each copy, so every
// copy plans, packs and caches its binding.
func BenchmarkFirstCopy(b *testing.B) {
	benchDispatch(b, func(c dispatchCase) (func(*cuda.Stream) error, error) {
		return firstCopy(c), nil
	})
}

// drop removes the binding of key from the cache, if any (benchmarks of
// the first copy of a pair).
func drop(key bindKey) {
	i := setOf(key.sum())
	for j := i; j < i+2; j++ {
		if b := bindings[j].Load(); b != nil && b.key == key {
			bindings[j].CompareAndSwap(b, nil)
		}
	}
}

// firstCopy returns the first copy of c's pair, a new pair whose kernel is
// loaded: it drops the pair's binding from the cache (two slot loads; the
// key is computed here, once) and copies.
func firstCopy(c dispatchCase) func(s *cuda.Stream) error {
	p, _ := route(c.dst, c.src)
	da, sa := aligns(c.dst, c.src, p)
	key := keyOf(c.dst, c.src, p, da, sa, execDevice(c.dst, c.src, p, nil))
	return func(s *cuda.Stream) error {
		drop(key)
		return c.dst.CopyFrom(c.src, s)
	}
}

// BenchmarkFloor is cuda.Launch of each case's kernel with its bound
// arguments and pointers: the driver's floor under a copy.
func BenchmarkFloor(b *testing.B) {
	benchDispatch(b, func(c dispatchCase) (func(*cuda.Stream) error, error) {
		bc, err := Bind(c.dst, c.src)
		if err != nil {
			return nil, err
		}
		k := bc.Kernel()
		d := cuda.DevicePtr(c.dst.low) + cuda.DevicePtr(k.Plan.DstOffset)
		sp := cuda.DevicePtr(c.src.low) + cuda.DevicePtr(k.Plan.SrcOffset)
		fn, err := k.Function()
		if err != nil {
			return nil, err
		}
		l := k.Launch
		return func(s *cuda.Stream) error {
			return cuda.Launch(fn, cuda.Dim3(l.Grid), cuda.Dim3(l.Block), l.Shared, s, unsafe.Pointer(&d), unsafe.Pointer(&sp), unsafe.Pointer(&k.Args[0]))
		}, nil
	})
}

// BenchmarkDispatchOverFloor alternates, within one timed loop, blocks of
// 256 repeated CopyFrom calls, of 256 held BoundCopy copies, of 256 first
// copies (BenchmarkFirstCopy's) and of 256 bare launches of the same
// kernel (BenchmarkFloor's), synchronising between blocks and timing each
// block alone, so that slow drift of the driver's launch cost falls on all
// alike. It reports the host ns of each (copy-ns, bound-ns, first-ns,
// floor-ns) and what each adds to the launch (over-ns, bound-over-ns,
// first-over-ns). Allocations are those of all four together.
func BenchmarkDispatchOverFloor(b *testing.B) {
	dev := testenv.NeedGPU(b)
	s := testenv.NewStream(b, dev)
	for _, c := range dispatchCases(b, dev, s) {
		b.Run(c.name, func(b *testing.B) {
			bc, err := Bind(c.dst, c.src)
			if err != nil {
				b.Fatal(err)
			}
			k := bc.Kernel()
			fn, err := k.Function()
			if err != nil {
				b.Fatal(err)
			}
			d := cuda.DevicePtr(c.dst.low) + cuda.DevicePtr(k.Plan.DstOffset)
			sp := cuda.DevicePtr(c.src.low) + cuda.DevicePtr(k.Plan.SrcOffset)
			l := k.Launch
			floor := func() error {
				return cuda.Launch(fn, cuda.Dim3(l.Grid), cuda.Dim3(l.Block), l.Shared, s, unsafe.Pointer(&d), unsafe.Pointer(&sp), unsafe.Pointer(&k.Args[0]))
			}
			copy := func() error { return c.dst.CopyFrom(c.src, s) }
			bound := func() error { return bc.Copy(s) }
			fc := firstCopy(c)
			first := func() error { return fc(s) }
			var tc, tb, t1, tf time.Duration
			n := 0
			b.ReportAllocs()
			b.ResetTimer()
			for n < b.N {
				for _, x := range []struct {
					f func() error
					t *time.Duration
				}{{copy, &tc}, {bound, &tb}, {first, &t1}, {floor, &tf}} {
					if err := s.Synchronize(); err != nil {
						b.Fatal(err)
					}
					t0 := time.Now()
					for range 256 {
						if err := x.f(); err != nil {
							b.Fatal(err)
						}
					}
					*x.t += time.Since(t0)
				}
				n += 256
			}
			b.StopTimer()
			s.Synchronize()
			per := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / float64(n) }
			b.ReportMetric(per(tc), "copy-ns")
			b.ReportMetric(per(tb), "bound-ns")
			b.ReportMetric(per(t1), "first-ns")
			b.ReportMetric(per(tf), "floor-ns")
			b.ReportMetric(per(tc-tf), "over-ns")
			b.ReportMetric(per(tb-tf), "bound-over-ns")
			b.ReportMetric(per(t1-tf), "first-over-ns")
		})
	}
}
