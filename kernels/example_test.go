package kernels_test

import (
	"fmt"
	"log"

	"github.com/stridekit/stridekit/kernels"
	"github.com/stridekit/stridekit/layout"
	"github.com/stridekit/stridekit/runtime/cuda"
	"github.com/stridekit/stridekit/runtime/jit"
)

// For finds the kernel of a plan's signature: a transpose of float32
// matrices is served by a committed kernel of the default set, a rank-7
// permutation by one rendered at run time.
func ExampleFor() {
	dst, _ := layout.Dense([]int64{4096, 4096}, 4, layout.C)
	src, _ := layout.Dense([]int64{4096, 4096}, 4, layout.F)
	p, err := layout.PlanCopy(dst, src, layout.PlanOptions{DstAlign: 256, SrcAlign: 256})
	if err != nil {
		log.Fatal(err)
	}
	k, err := kernels.For(p.Sig)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(k.Name, "generated at run time:", kernels.Generated(p.Sig))

	shape := []int64{17, 17, 17, 17, 17, 17, 17}
	dst7, _ := layout.Dense(shape, 2, layout.C)
	src7, _ := layout.Dense(shape, 2, layout.Perm(6, 4, 2, 0, 5, 3, 1))
	p7, _ := layout.PlanCopy(dst7, src7, layout.PlanOptions{})
	k7, _ := kernels.For(p7.Sig)
	fmt.Println(k7.Name, "generated at run time:", kernels.Generated(p7.Sig))
	// Output:
	// sk_tile_nd2_f0_i4_v4_i32 generated at run time: false
	// sk_tile_nd7_f1_i2_v1_i32 generated at run time: true
}

// Example_transposeOnGPU is the whole path of a strided copy on a GPU: plan,
// kernel, compile (or load from the caches), launch, read back. It needs a
// GPU and so has no checked output.
func Example_transposeOnGPU() {
	const n = 1024
	dev, err := cuda.GetDevice(0)
	if err != nil {
		fmt.Println("no GPU:", err)
		return
	}
	dst, _ := layout.Dense([]int64{n, n}, 4, layout.C)
	src, _ := layout.Dense([]int64{n, n}, 4, layout.F) // the transpose
	p, err := layout.PlanCopy(dst, src, layout.PlanOptions{DstAlign: 256, SrcAlign: 256})
	if err != nil {
		log.Fatal(err)
	}
	db, err := dev.Alloc(int(dst.RequiredSizeInBytes()), nil)
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	sb, err := dev.Alloc(int(src.RequiredSizeInBytes()), nil)
	if err != nil {
		log.Fatal(err)
	}
	defer sb.Close()
	host := make([]byte, src.RequiredSizeInBytes())
	for i := range host {
		host[i] = byte(i)
	}
	if err := sb.CopyFromHost(host); err != nil {
		log.Fatal(err)
	}

	k, err := kernels.For(p.Sig)
	if err != nil {
		log.Fatal(err)
	}
	fn, err := jit.Default.Function(dev, k.Source, k.Name, jit.Options{}, k.Cubin)
	if err != nil {
		log.Fatal(err)
	}
	if err := k.Launch(fn, nil, db.Ptr(), sb.Ptr(), &p); err != nil {
		log.Fatal(err)
	}
	if err := db.CopyToHost(host); err != nil { // synchronous: waits for the kernel
		log.Fatal(err)
	}
	fmt.Println("copied", p.Bytes, "bytes with", k.Name)
}
