package dlpack_test

import (
	"errors"
	"fmt"
	"unsafe"

	"github.com/stridekit/stridekit/layout"
	"github.com/stridekit/stridekit/runtime/dlpack"
)

// A consumer's view of a tensor handed over by a DLPack 1.3 producer: the
// transpose of a 2×3 float32 matrix, starting 8 bytes into its buffer.
func ExampleImport() {
	shape := []int64{3, 2}
	strides := []int64{1, 3} // elements, not bytes
	t := dlpack.DLTensor{
		Data:       0x10000,
		Device:     dlpack.DLDevice{DeviceType: dlpack.KDLCUDA, DeviceID: 0},
		NDim:       2,
		DType:      dlpack.DLDataType{Code: layout.KDLFloat, Bits: 32, Lanes: 1},
		Shape:      &shape[0],
		Strides:    &strides[0],
		ByteOffset: 8,
	}
	d, err := dlpack.Import(&t, dlpack.Producer{Versioned: true, Version: dlpack.Version, Flags: dlpack.FlagReadOnly})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%v %v at %#x on %v:%d, read-only %v\n", d.Layout, d.DType, d.Ptr, d.Device.DeviceType, d.Device.DeviceID, d.ReadOnly)

	// The same tensor without strides is refused from a 1.3 producer, and
	// read as C order from a 1.1 one.
	t.Strides = nil
	_, err = dlpack.Import(&t, dlpack.Producer{Versioned: true, Version: dlpack.Version})
	fmt.Println(errors.Is(err, dlpack.ErrStrides))
	d, _ = dlpack.Import(&t, dlpack.Producer{Versioned: true, Version: dlpack.DLPackVersion{Major: 1, Minor: 1}})
	fmt.Println(d.Layout)
	// Output:
	// (3,2):(1,3)x4 float32 at 0x10008 on kDLCUDA:0, read-only true
	// true
	// (3,2):(2,1)x4
}

// fp4 tensors are packed two elements to a byte unless the producer says
// they are padded to a byte each.
func ExampleLayoutOf() {
	shape := []int64{4, 6}
	packed, _ := dlpack.LayoutOf(shape, nil, layout.Float4E2M1, 0)
	padded, _ := dlpack.LayoutOf(shape, nil, layout.Float4E2M1, dlpack.FlagIsSubbyteTypePadded)
	fmt.Println(packed, padded)
	_, err := dlpack.LayoutOf([]int64{4, 5}, nil, layout.Float4E2M1, 0)
	fmt.Println(err)
	// Output:
	// (4,3):(3,1)x1 (4,6):(6,1)x1
	// dlpack: packed sub-byte tensor not expressible in whole bytes: layout: bad dtype: float4_e2m1fn: extent 5 of packing dim 1 is not a multiple of 2: elements would straddle bytes
}

func ExampleDLDataType_DType() {
	for _, t := range []dlpack.DLDataType{
		{Code: layout.KDLBfloat, Bits: 16, Lanes: 1},
		{Code: layout.KDLFloat8E4M3FN, Bits: 8, Lanes: 1},
		{Code: layout.KDLFloat, Bits: 32, Lanes: 4},
	} {
		d, err := t.DType()
		fmt.Println(d, err)
	}
	// Output:
	// bfloat16 <nil>
	// float8_e4m3fn <nil>
	// invalid dlpack: unsupported dtype: dtype float32x4 (code 2, bits 32, lanes 4): lanes must be 1
}

func ExampleCheckDevice() {
	fmt.Println(dlpack.CheckDevice(dlpack.DLDevice{DeviceType: dlpack.KDLCUDAManaged}))
	fmt.Println(dlpack.CheckDevice(dlpack.DLDevice{DeviceType: dlpack.KDLROCM}))
	// Output:
	// <nil>
	// dlpack: unsupported device type: device_type 10 (kDLROCM): stridekit copies kDLCPU, kDLCUDA, kDLCUDAHost and kDLCUDAManaged memory
}

// Export hands a tensor to a consumer, which calls its deleter when done;
// the deleter runs the exporter's release function once.
func ExampleExport() {
	m, err := dlpack.Export(dlpack.ExportRequest{
		Data:    0x20000,
		Device:  dlpack.DLDevice{DeviceType: dlpack.KDLCUDA, DeviceID: 1},
		DType:   layout.Float16,
		Shape:   []int64{2, 3},
		Release: func() { fmt.Println("released") },
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	t := &m.DLTensor
	fmt.Println(m.Version, t.NDim, unsafe.Slice(t.Shape, t.NDim), unsafe.Slice(t.Strides, t.NDim), dlpack.LiveExports())
	dlpack.CallDeleter(m) // what the consumer does, in C or in Go
	fmt.Println(dlpack.LiveExports())
	// Output:
	// 1.3 2 [2 3] [3 1] 1
	// released
	// 0
}

func ExampleParseCUDAStream() {
	for _, v := range []int64{-1, 1, 2, 0x7f3a5c001230, 0} {
		r, err := dlpack.ParseCUDAStream(v)
		if err != nil {
			fmt.Println(err)
			continue
		}
		fmt.Printf("%v %#x sync=%v\n", r.Kind, r.Handle, r.Sync())
	}
	// Output:
	// no-sync 0x0 sync=false
	// legacy-default 0x1 sync=true
	// per-thread-default 0x2 sync=true
	// handle 0x7f3a5c001230 sync=true
	// dlpack: bad stream: stream 0 is ambiguous for CUDA (pass 1 for the legacy default stream, 2 for the per-thread one)
}
