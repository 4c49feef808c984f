package dlpack_test

import (
	"testing"
	"unsafe"

	"github.com/stridekit/stridekit/layout"
	"github.com/stridekit/stridekit/runtime/dlpack"
)

// metadataBytes is what Import reads of an n-dim tensor: the struct and its
// shape and strides arrays. The benchmarks report it as their bytes per
// operation, so MB/s reads as the rate metadata is validated.
func metadataBytes(n int) int64 {
	return int64(unsafe.Sizeof(dlpack.DLManagedTensorVersioned{})) + 16*int64(n)
}

// BenchmarkImport imports a 4-d strided (permuted and sliced) float32
// tensor of a DLPack 1.3 producer again and again, as a memory view's
// FromDLPack does on its hot path when a program exchanges tensors of the
// same shapes step after step.
func BenchmarkImport(b *testing.B) {
	x := newTensor(base, f32, []int64{8, 16, 32, 64}, []int64{2, 64 * 32 * 16 * 2, 64 * 2, 32 * 64 * 2 * 16 / 8})
	x.t.ByteOffset = 256
	m := dlpack.DLManagedTensorVersioned{Version: dlpack.Version, DLTensor: x.t}
	if _, err := dlpack.ImportVersioned(&m); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(metadataBytes(4))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := dlpack.ImportVersioned(&m); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkImportNewShapes imports 4-d strided tensors of 4096 different
// shapes in turn, so that Import's table of recent layouts (256 slots)
// rarely holds the one asked for: the cost of a tensor not seen lately.
func BenchmarkImportNewShapes(b *testing.B) {
	const shapes = 4096
	ms := make([]dlpack.DLManagedTensorVersioned, shapes)
	for i := range ms {
		x := newTensor(base, f32, []int64{8, 16, 32, int64(i + 1)}, []int64{2, 64 * 32 * 16 * 2, 64 * 2, 32 * 64 * 2 * 16 / 8})
		ms[i] = dlpack.DLManagedTensorVersioned{Version: dlpack.Version, DLTensor: x.t}
	}
	b.SetBytes(metadataBytes(4))
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, err := dlpack.ImportVersioned(&ms[i%shapes]); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkExport exports a 4-d strided float32 tensor and releases it
// through its deleter, as a consumer would.
func BenchmarkExport(b *testing.B) {
	r := dlpack.ExportRequest{Data: base, Device: dlpack.DLDevice{DeviceType: dlpack.KDLCUDA}, DType: layout.Float32,
		Shape: []int64{8, 16, 32, 64}, Strides: []int64{1, 8, 8 * 16 * 64, 8 * 16}, Release: func() {}}
	b.SetBytes(metadataBytes(4))
	b.ReportAllocs()
	for b.Loop() {
		m, err := dlpack.Export(r)
		if err != nil {
			b.Fatal(err)
		}
		dlpack.CallDeleter(m)
	}
}
