package cuda_test

import (
	"errors"
	"fmt"
	"log"

	"github.com/stridekit/stridekit/runtime/cuda"
)

// GetDevice loads the driver on first use; without one it returns an error
// that wraps ErrNoDriver and lists the paths it tried. The output depends on
// the machine, so it is not checked.
func ExampleGetDevice() {
	dev, err := cuda.GetDevice(0)
	if errors.Is(err, cuda.ErrNoDriver) {
		fmt.Println("no CUDA driver on this machine")
		return
	}
	if err != nil {
		log.Fatal(err)
	}
	major, minor := dev.ComputeCapability()
	fmt.Printf("%s: sm_%d%d, %d SMs, %d GiB\n", dev.Name(), major, minor, dev.SMCount(), dev.TotalMemory()>>30)
}

// PointerAttributes tells device memory from host memory in one driver call.
func ExamplePointerAttributes() {
	dev, err := cuda.GetDevice(0)
	if err != nil {
		fmt.Println("no GPU:", err)
		return
	}
	buf, err := dev.Alloc(1<<20, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer buf.Close()
	info, err := cuda.PointerAttributes(uintptr(buf.Ptr()))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(info.Kind == cuda.MemoryDevice, info.Device == dev.Ordinal())
}

// ParamsOf lays out kernel parameters as the C compiler does: for
// k(float* dst, const float* src, int n, struct{int a[5];} args) the int
// follows the pointers, and the 20-byte struct is aligned to 8 bytes.
func ExampleParamsOf() {
	fmt.Println(cuda.ParamsOf(8, 8, 4, 20))
	// Output: [{0 8} {8 8} {16 4} {24 20}]
}

// FunctionWithParams gets a kernel with the parameter layout its source
// declares, asking the driver nothing about it. Without a GPU it prints why
// it stopped, so the output is not checked.
func ExampleModule_FunctionWithParams() {
	dev, err := cuda.GetDevice(0)
	if err != nil {
		fmt.Println("no GPU:", err)
		return
	}
	const src = `extern "C" __global__ void scale(float* x, float a, int n) {
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) x[i] *= a;
}`
	ptx, _, err := cuda.NVRTCCompile(src, "scale.cu", []string{fmt.Sprintf("--gpu-architecture=compute_%d", dev.Arch())}, false)
	if err != nil {
		fmt.Println("no NVRTC:", err)
		return
	}
	mod, err := dev.LoadModule(ptx)
	if err != nil {
		log.Fatal(err)
	}
	defer mod.Close()
	fn, err := mod.FunctionWithParams("scale", cuda.ParamsOf(8, 4, 4))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(fn.Name(), fn.NumParams())
}
