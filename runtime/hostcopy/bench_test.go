package hostcopy_test

import (
	"testing"

	"github.com/stridekit/stridekit/internal/layouttest"
	"github.com/stridekit/stridekit/layout"
	"github.com/stridekit/stridekit/runtime/hostcopy"
)

// benchCopy times Copy from sl into dl; the bytes per op are dst's bytes.
func benchCopy(b *testing.B, dl, sl layout.Layout) {
	dst := make([]byte, dl.RequiredSizeInBytes())
	src := make([]byte, sl.RequiredSizeInBytes())
	for i := range src {
		src[i] = byte(i)
	}
	for i := range dst {
		dst[i] = 1 // fault the pages in before timing
	}
	b.SetBytes(dl.Volume() * int64(dl.Itemsize()))
	b.ReportAllocs()
	for b.Loop() {
		if err := hostcopy.Copy(dst, dl, src, sl); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBuiltinCopy64MiB is the yardstick: Go's copy of 64 MiB.
func BenchmarkBuiltinCopy64MiB(b *testing.B) {
	dst, src := make([]byte, 64<<20), make([]byte, 64<<20)
	for i := range dst {
		dst[i], src[i] = 1, byte(i)
	}
	b.SetBytes(64 << 20)
	for b.Loop() {
		copy(dst, src)
	}
}

func BenchmarkContiguous64MiB(b *testing.B) {
	l := layouttest.MustNew(b, layouttest.S64(4096, 4096), nil, 4)
	benchCopy(b, l, l)
}

func BenchmarkTransposeF32(b *testing.B) {
	benchCopy(b, layouttest.MustNew(b, layouttest.S64(4096, 4096), nil, 4), layouttest.MustNew(b, layouttest.S64(4096, 4096), layouttest.S64(1, 4096), 4))
}

func BenchmarkTransposeU8(b *testing.B) {
	benchCopy(b, layouttest.MustNew(b, layouttest.S64(4096, 4096), nil, 1), layouttest.MustNew(b, layouttest.S64(4096, 4096), layouttest.S64(1, 4096), 1))
}

// BenchmarkSliceStep2 copies src[:, ::2] of a 4096×8192 float32 matrix.
func BenchmarkSliceStep2(b *testing.B) {
	benchCopy(b, layouttest.MustNew(b, layouttest.S64(4096, 4096), nil, 4), layouttest.MustNew(b, layouttest.S64(4096, 4096), layouttest.S64(8192, 2), 4))
}

// BenchmarkSliceRows copies src[:, :4096] of a 4096×8192 float32 matrix:
// contiguous rows with a gap.
func BenchmarkSliceRows(b *testing.B) {
	benchCopy(b, layouttest.MustNew(b, layouttest.S64(4096, 4096), nil, 4), layouttest.MustNew(b, layouttest.S64(4096, 4096), layouttest.S64(8192, 1), 4))
}

// BenchmarkBroadcastRow writes one 4096-float row into 4096 rows.
func BenchmarkBroadcastRow(b *testing.B) {
	benchCopy(b, layouttest.MustNew(b, layouttest.S64(4096, 4096), nil, 4), layouttest.MustNew(b, layouttest.S64(4096), nil, 4))
}

// BenchmarkBroadcastColumn repeats each of 4096 floats along a row.
func BenchmarkBroadcastColumn(b *testing.B) {
	benchCopy(b, layouttest.MustNew(b, layouttest.S64(4096, 4096), nil, 4), layouttest.MustNew(b, layouttest.S64(4096, 1), nil, 4))
}

func BenchmarkFill(b *testing.B) {
	benchCopy(b, layouttest.MustNew(b, layouttest.S64(4096, 4096), nil, 4), layouttest.MustNew(b, nil, nil, 4))
}
