package memview_test

import (
	"fmt"
	"unsafe"

	"github.com/stridekit/stridekit/layout"
	"github.com/stridekit/stridekit/runtime/cuda"
	"github.com/stridekit/stridekit/runtime/dlpack"
	"github.com/stridekit/stridekit/runtime/memview"
)

// producerTensor stands in for a tensor a DLPack producer (PyTorch, CuPy,
// a C library) hands over: the transpose of a 2×3 int32 matrix in host
// memory, whose deleter says when it runs.
func producerTensor(data []int32) *dlpack.DLManagedTensorVersioned {
	m, err := dlpack.Export(dlpack.ExportRequest{
		Data:    uintptr(unsafe.Pointer(&data[0])),
		Device:  dlpack.DLDevice{DeviceType: dlpack.KDLCPU},
		DType:   layout.Int32,
		Shape:   []int64{3, 2},
		Strides: []int64{1, 3},
		Release: func() { fmt.Println("producer: tensor given back") },
	})
	if err != nil {
		panic(err)
	}
	return m
}

// Take a tensor from a DLPack producer, copy it into Go memory, and give it
// back by closing the view.
func ExampleFromDLPack() {
	data := []int32{1, 2, 3, 4, 5, 6}
	m := producerTensor(data)

	v, err := memview.FromDLPack(m)
	if err != nil {
		dlpack.CallDeleter(m) // refused: still ours to give back
		fmt.Println(err)
		return
	}
	fmt.Println(v.Shape(), v.Strides(), v.DType(), v.Kind())

	out := make([]int32, 6)
	l, _ := layout.Dense(v.Shape(), 4, layout.C)
	dst, _ := memview.FromHost(out, l)
	if err := dst.CopyFrom(v, nil); err != nil {
		fmt.Println(err)
	}
	fmt.Println(out)
	v.Close() // runs the producer's deleter, once
	v.Close()
	// Output:
	// [3 2] [1 3] int32 pageable
	// [1 4 2 5 3 6]
	// producer: tensor given back
}

// Hand a view of Go memory to a DLPack consumer. Here the consumer is
// FromDLPack itself; a C consumer reads the same struct and calls its
// deleter when done.
func ExampleStridedMemoryView_ToDLPack() {
	data := []float32{0, 1, 2, 3, 4, 5}
	l, _ := layout.Dense([]int64{2, 3}, 4, layout.C)
	v, _ := memview.FromHost(data, l)
	flipped, _ := v.Slice(layout.All(), layout.Range{Start: layout.Omit, Stop: layout.Omit, Step: -1})

	// -1: host memory has no stream to order work on.
	m, err := flipped.AsReadOnly().ToDLPack(dlpack.StreamNoSync)
	if err != nil {
		fmt.Println(err)
		return
	}
	t := m.DLTensor
	fmt.Println(t.Device.DeviceType, unsafe.Slice(t.Shape, t.NDim), unsafe.Slice(t.Strides, t.NDim), m.Flags.Has(dlpack.FlagReadOnly))
	fmt.Println("live exports:", dlpack.LiveExports())

	w, _ := memview.FromDLPack(m) // the consumer
	out := make([]float32, 6)
	dst, _ := memview.FromHost(out, l)
	_ = dst.CopyFrom(w, nil)
	fmt.Println(out)
	w.Close() // the consumer is done: the export's deleter runs
	fmt.Println("live exports:", dlpack.LiveExports())
	// Output:
	// kDLCPU [2 3] [3 -1] true
	// live exports: 1
	// [2 1 0 5 4 3]
	// live exports: 0
}

// Use a DLTensor someone else keeps ownership of, such as the dl_tensor of
// a managed tensor that will be given back elsewhere: the view calls no
// deleter.
func ExampleFromDLTensor() {
	data := []int32{10, 20, 30, 40}
	shape := []int64{2, 2}
	t := dlpack.DLTensor{
		Data:   uintptr(unsafe.Pointer(&data[0])),
		Device: dlpack.DLDevice{DeviceType: dlpack.KDLCPU},
		NDim:   2,
		DType:  dlpack.DLDataType{Code: layout.KDLInt, Bits: 32, Lanes: 1},
		Shape:  &shape[0],
		// NULL strides: C order, from a producer older than DLPack 1.2.
	}
	v, err := memview.FromDLTensor(&t, dlpack.Producer{Versioned: true, Version: dlpack.DLPackVersion{Major: 1, Minor: 1}})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(v.Layout(), v.ReadOnly())
	// Output:
	// (2,2):(2,1)x4 false
}

// Ask for a device tensor on the host in one call (DLPack's
// from_dlpack(x, device=CPU)), ordering the producer's pending work on its
// stream before the copy. It needs a GPU, so it only compiles here.
func ExampleToHost() {
	var m *dlpack.DLManagedTensorVersioned // from a producer, on the GPU
	var producer *cuda.Stream              // where it queued the tensor's writes

	var info memview.ImportInfo
	v, err := memview.FromDLPack(m, memview.ToHost(), memview.ProducerStream(producer), memview.Report(&info))
	if err != nil {
		dlpack.CallDeleter(m)
		fmt.Println(err)
		return
	}
	defer v.Close()
	// The tensor was given back to its producer; info.HostCopy holds its
	// elements, dense in C order.
	fmt.Println(info.Copied(), len(info.HostCopy), v.Kind())
}

// Import a device tensor for use on one's own stream: the producer's work,
// queued on its stream, is made visible on the consumer's stream by an
// event, without waiting on the host. It needs a GPU, so it only compiles
// here.
func ExampleOnStream() {
	dev, _ := cuda.GetDevice(0)
	mine, _ := dev.NewStream(true)
	var m *dlpack.DLManagedTensorVersioned // from a producer
	var theirs *cuda.Stream                // the producer's stream

	v, err := memview.FromDLPack(m, memview.OnStream(mine), memview.ProducerStream(theirs))
	if err != nil {
		dlpack.CallDeleter(m)
		fmt.Println(err)
		return
	}
	defer v.Close()
	// ... v.CopyTo(dst, mine) reads what the producer wrote.
}
