//go:build cgo

package dlpack_test

import (
	"testing"
	"unsafe"

	"github.com/stridekit/stridekit/internal/dlpackc"
	"github.com/stridekit/stridekit/runtime/dlpack"
)

// TestABI checks every size, alignment and field offset of the Go structs
// against the C compiler's, for the C declarations written from the DLPack
// 1.3 specification in package dlpackc.
func TestABI(t *testing.T) {
	var (
		ver  dlpack.DLPackVersion
		dev  dlpack.DLDevice
		dt   dlpack.DLDataType
		ten  dlpack.DLTensor
		leg  dlpack.DLManagedTensor
		vers dlpack.DLManagedTensorVersioned
		dtyp dlpack.DLDeviceType
	)
	goABI := map[string]uintptr{
		"DLPackVersion.size":  unsafe.Sizeof(ver),
		"DLPackVersion.align": unsafe.Alignof(ver),
		"DLPackVersion.major": unsafe.Offsetof(ver.Major),
		"DLPackVersion.minor": unsafe.Offsetof(ver.Minor),

		"DLDeviceType.size":  unsafe.Sizeof(dtyp),
		"DLDeviceType.align": unsafe.Alignof(dtyp),

		"DLDevice.size":        unsafe.Sizeof(dev),
		"DLDevice.align":       unsafe.Alignof(dev),
		"DLDevice.device_type": unsafe.Offsetof(dev.DeviceType),
		"DLDevice.device_id":   unsafe.Offsetof(dev.DeviceID),

		"DLDataType.size":  unsafe.Sizeof(dt),
		"DLDataType.align": unsafe.Alignof(dt),
		"DLDataType.code":  unsafe.Offsetof(dt.Code),
		"DLDataType.bits":  unsafe.Offsetof(dt.Bits),
		"DLDataType.lanes": unsafe.Offsetof(dt.Lanes),

		"DLTensor.size":        unsafe.Sizeof(ten),
		"DLTensor.align":       unsafe.Alignof(ten),
		"DLTensor.data":        unsafe.Offsetof(ten.Data),
		"DLTensor.device":      unsafe.Offsetof(ten.Device),
		"DLTensor.ndim":        unsafe.Offsetof(ten.NDim),
		"DLTensor.dtype":       unsafe.Offsetof(ten.DType),
		"DLTensor.shape":       unsafe.Offsetof(ten.Shape),
		"DLTensor.strides":     unsafe.Offsetof(ten.Strides),
		"DLTensor.byte_offset": unsafe.Offsetof(ten.ByteOffset),

		"DLManagedTensor.size":        unsafe.Sizeof(leg),
		"DLManagedTensor.align":       unsafe.Alignof(leg),
		"DLManagedTensor.dl_tensor":   unsafe.Offsetof(leg.DLTensor),
		"DLManagedTensor.manager_ctx": unsafe.Offsetof(leg.ManagerCtx),
		"DLManagedTensor.deleter":     unsafe.Offsetof(leg.Deleter),

		"DLManagedTensorVersioned.size":        unsafe.Sizeof(vers),
		"DLManagedTensorVersioned.align":       unsafe.Alignof(vers),
		"DLManagedTensorVersioned.version":     unsafe.Offsetof(vers.Version),
		"DLManagedTensorVersioned.manager_ctx": unsafe.Offsetof(vers.ManagerCtx),
		"DLManagedTensorVersioned.deleter":     unsafe.Offsetof(vers.Deleter),
		"DLManagedTensorVersioned.flags":       unsafe.Offsetof(vers.Flags),
		"DLManagedTensorVersioned.dl_tensor":   unsafe.Offsetof(vers.DLTensor),
	}
	seen := map[string]bool{}
	for _, e := range dlpackc.ABI() {
		seen[e.Name] = true
		g, ok := goABI[e.Name]
		if !ok {
			t.Errorf("C has %s = %d, the test has no Go value for it", e.Name, e.Value)
			continue
		}
		if g != e.Value {
			t.Errorf("%s: Go %d, C %d", e.Name, g, e.Value)
		}
	}
	for name := range goABI {
		if !seen[name] {
			t.Errorf("%s has no C value", name)
		}
	}
	// The sizes of 64-bit DLPack, as a cross-check of the C side.
	if unsafe.Sizeof(ten) != 48 || unsafe.Sizeof(leg) != 64 || unsafe.Sizeof(vers) != 80 {
		t.Errorf("sizes %d, %d, %d; want 48, 64, 80", unsafe.Sizeof(ten), unsafe.Sizeof(leg), unsafe.Sizeof(vers))
	}
}
