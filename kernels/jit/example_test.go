package jit_test

import (
	"fmt"
	"log"

	"github.com/stridekit/stridekit/kernels/jit"
)

// CompileCached compiles CUDA C for a named architecture with NVRTC, which
// needs no GPU, and keeps the image in the disk cache: the second call reads
// it back. The output depends on whether NVRTC is installed, so it is not
// checked.
func ExampleCompileCached() {
	const src = `extern "C" __global__ void scale(float* x, float a, int n) {
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) x[i] *= a;
}`
	img, err := jit.CompileCached(src, jit.Options{Arch: 90})
	if err != nil {
		fmt.Println("cannot compile:", err)
		return
	}
	again, err := jit.CompileCached(src, jit.Options{Arch: 90})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("sm", img.Arch, "PTX:", img.PTX, "same image:", string(img.Data) == string(again.Data))
}
