package dlpack

import (
	"fmt"
	"strconv"

	"github.com/stridekit/stridekit/runtime/cuda"
)

// DLDeviceType is C's DLDeviceType (an int32 enum): the kind of memory a
// tensor lives in.
type DLDeviceType int32

// Every DLDeviceType of DLPack 1.3. stridekit copies the memory of kDLCPU,
// kDLCUDA, kDLCUDAHost and kDLCUDAManaged; CheckDevice refuses the others.
const (
	// KDLCPU (kDLCPU, 1) is host memory.
	KDLCPU DLDeviceType = 1

	// KDLCUDA (kDLCUDA, 2) is CUDA device memory.
	KDLCUDA DLDeviceType = 2

	// KDLCUDAHost (kDLCUDAHost, 3) is page-locked (pinned) host memory
	// from cudaMallocHost.
	KDLCUDAHost DLDeviceType = 3

	// KDLOpenCL (kDLOpenCL, 4) is an OpenCL buffer.
	KDLOpenCL DLDeviceType = 4

	// KDLVulkan (kDLVulkan, 7) is a Vulkan buffer.
	KDLVulkan DLDeviceType = 7

	// KDLMetal (kDLMetal, 8) is an Apple Metal buffer.
	KDLMetal DLDeviceType = 8

	// KDLVPI (kDLVPI, 9) is a Verilog simulator buffer.
	KDLVPI DLDeviceType = 9

	// KDLROCM (kDLROCM, 10) is AMD ROCm device memory.
	KDLROCM DLDeviceType = 10

	// KDLROCMHost (kDLROCMHost, 11) is page-locked host memory from
	// hipMallocHost.
	KDLROCMHost DLDeviceType = 11

	// KDLExtDev (kDLExtDev, 12) is reserved for testing extension devices.
	KDLExtDev DLDeviceType = 12

	// KDLCUDAManaged (kDLCUDAManaged, 13) is CUDA managed (unified)
	// memory from cudaMallocManaged.
	KDLCUDAManaged DLDeviceType = 13

	// KDLOneAPI (kDLOneAPI, 14) is oneAPI unified shared memory.
	KDLOneAPI DLDeviceType = 14

	// KDLWebGPU (kDLWebGPU, 15) is a WebGPU buffer.
	KDLWebGPU DLDeviceType = 15

	// KDLHexagon (kDLHexagon, 16) is Qualcomm Hexagon DSP memory.
	KDLHexagon DLDeviceType = 16

	// KDLMAIA (kDLMAIA, 17) is Microsoft MAIA device memory.
	KDLMAIA DLDeviceType = 17

	// KDLTrn (kDLTrn, 18) is AWS Trainium device memory.
	KDLTrn DLDeviceType = 18
)

var deviceNames = [...]string{
	KDLCPU:         "kDLCPU",
	KDLCUDA:        "kDLCUDA",
	KDLCUDAHost:    "kDLCUDAHost",
	KDLOpenCL:      "kDLOpenCL",
	KDLVulkan:      "kDLVulkan",
	KDLMetal:       "kDLMetal",
	KDLVPI:         "kDLVPI",
	KDLROCM:        "kDLROCM",
	KDLROCMHost:    "kDLROCMHost",
	KDLExtDev:      "kDLExtDev",
	KDLCUDAManaged: "kDLCUDAManaged",
	KDLOneAPI:      "kDLOneAPI",
	KDLWebGPU:      "kDLWebGPU",
	KDLHexagon:     "kDLHexagon",
	KDLMAIA:        "kDLMAIA",
	KDLTrn:         "kDLTrn",
}

// String returns the C name of t ("kDLCUDA"), or "DLDeviceType(N)" for a
// value DLPack 1.3 does not define.
func (t DLDeviceType) String() string {
	if t >= 0 && int(t) < len(deviceNames) && deviceNames[t] != "" {
		return deviceNames[t]
	}
	return "DLDeviceType(" + strconv.Itoa(int(t)) + ")"
}

// String returns the device as "kDLCUDA:0": its type's C name and its id.
func (d DLDevice) String() string {
	return d.DeviceType.String() + ":" + strconv.Itoa(int(d.DeviceID))
}

// Supported reports whether stridekit can copy memory of device type t:
// kDLCPU, kDLCUDA, kDLCUDAHost or kDLCUDAManaged.
func (t DLDeviceType) Supported() bool {
	switch t {
	case KDLCPU, KDLCUDA, KDLCUDAHost, KDLCUDAManaged:
		return true
	}
	return false
}

// CheckDevice returns nil when stridekit can copy the memory of d: a
// supported device type (see Supported) and a device id ≥ 0. Otherwise it
// returns an ErrUnsupportedDevice error naming the type by name and number,
// or an ErrDeviceID error.
func CheckDevice(d DLDevice) error {
	if !d.DeviceType.Supported() {
		return fmt.Errorf("%w: device_type %d (%v): stridekit copies kDLCPU, kDLCUDA, kDLCUDAHost and kDLCUDAManaged memory",
			ErrUnsupportedDevice, int32(d.DeviceType), d.DeviceType)
	}
	if d.DeviceID < 0 {
		return fmt.Errorf("%w: device_id %d of %v is negative", ErrDeviceID, d.DeviceID, d.DeviceType)
	}
	return nil
}

// DeviceOf returns the DLDevice for memory of the given kind, as the CUDA
// driver reports it (cuda.PointerAttributes, cuda.Buffer.Kind): device
// memory is (kDLCUDA, ordinal), pinned host memory (kDLCUDAHost, 0), managed
// memory (kDLCUDAManaged, 0) and pageable host memory (kDLCPU, 0), following
// DLPack's rule that device_id is 0 for all but device memory. ordinal is
// used for device memory only and must then be ≥ 0 (else ErrDeviceID); an
// unknown kind is an ErrUnsupportedDevice error.
func DeviceOf(kind cuda.MemoryKind, ordinal int) (DLDevice, error) {
	switch kind {
	case cuda.MemoryDevice:
		if ordinal < 0 || int64(ordinal) > 1<<31-1 {
			return DLDevice{}, fmt.Errorf("%w: device ordinal %d of device memory", ErrDeviceID, ordinal)
		}
		return DLDevice{DeviceType: KDLCUDA, DeviceID: int32(ordinal)}, nil
	case cuda.MemoryHost:
		return DLDevice{DeviceType: KDLCUDAHost}, nil
	case cuda.MemoryManaged:
		return DLDevice{DeviceType: KDLCUDAManaged}, nil
	case cuda.MemoryPageable:
		return DLDevice{DeviceType: KDLCPU}, nil
	}
	return DLDevice{}, fmt.Errorf("%w: memory kind %v has no DLPack device type", ErrUnsupportedDevice, kind)
}

// MemoryKind returns the cuda.MemoryKind of a supported device type
// (kDLCPU is cuda.MemoryPageable) or an ErrUnsupportedDevice error.
func (t DLDeviceType) MemoryKind() (cuda.MemoryKind, error) {
	switch t {
	case KDLCPU:
		return cuda.MemoryPageable, nil
	case KDLCUDA:
		return cuda.MemoryDevice, nil
	case KDLCUDAHost:
		return cuda.MemoryHost, nil
	case KDLCUDAManaged:
		return cuda.MemoryManaged, nil
	}
	return 0, CheckDevice(DLDevice{DeviceType: t})
}
