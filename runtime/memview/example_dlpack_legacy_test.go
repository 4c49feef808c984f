package memview_test

import (
	"fmt"
	"unsafe"

	"github.com/stridekit/stridekit/layout"
	"github.com/stridekit/stridekit/runtime/dlpack"
	"github.com/stridekit/stridekit/runtime/memview"
)

// Take a tensor from a producer of DLPack before 1.0 (a legacy
// DLManagedTensor, as older NumPy and PyTorch hand out): here the columns
// of a 2×3 float64 matrix in host memory, last one first. Report says what
// the import found; closing the view gives the tensor back.
func ExampleFromDLPackLegacy() {
	data := []float64{1, 2, 3, 4, 5, 6} // 2×3, row-major
	// What the producer does:
	m, err := dlpack.ExportLegacy(dlpack.ExportRequest{
		Data:    uintptr(unsafe.Pointer(&data[2])), // element (0, 0) of the flipped view
		Device:  dlpack.DLDevice{DeviceType: dlpack.KDLCPU},
		DType:   layout.Float64,
		Shape:   []int64{2, 3},
		Strides: []int64{3, -1},
		Release: func() { fmt.Println("producer: tensor given back") },
	})
	if err != nil {
		fmt.Println(err)
		return
	}

	var info memview.ImportInfo
	v, err := memview.FromDLPackLegacy(m, memview.Report(&info))
	if err != nil {
		dlpack.CallLegacyDeleter(m) // refused: still ours to give back
		fmt.Println(err)
		return
	}
	fmt.Println(v.Layout(), v.DType(), info.Versioned, info.Device.DeviceType, info.Copied())

	out := make([]float64, 6)
	l, _ := layout.Dense(v.Shape(), 8, layout.C)
	dst, _ := memview.FromHost(out, l)
	if err := dst.CopyFrom(v, nil); err != nil {
		fmt.Println(err)
	}
	fmt.Println(out)
	v.Close() // runs the producer's deleter, once
	// Output:
	// (2,3):(3,-1)x8 float64 false kDLCPU false
	// [3 2 1 6 5 4]
	// producer: tensor given back
}
