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
