package dlpack_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stridekit/stridekit/runtime/cuda"
	"github.com/stridekit/stridekit/runtime/dlpack"
)

func TestDeviceTypes(t *testing.T) {
	all := map[dlpack.DLDeviceType]string{
		1: "kDLCPU", 2: "kDLCUDA", 3: "kDLCUDAHost", 4: "kDLOpenCL", 7: "kDLVulkan", 8: "kDLMetal",
		9: "kDLVPI", 10: "kDLROCM", 11: "kDLROCMHost", 12: "kDLExtDev", 13: "kDLCUDAManaged",
		14: "kDLOneAPI", 15: "kDLWebGPU", 16: "kDLHexagon", 17: "kDLMAIA", 18: "kDLTrn",
	}
	supported := map[dlpack.DLDeviceType]bool{dlpack.KDLCPU: true, dlpack.KDLCUDA: true, dlpack.KDLCUDAHost: true, dlpack.KDLCUDAManaged: true}
	for v := dlpack.DLDeviceType(-1); v <= 20; v++ {
		name, ok := all[v]
		if !ok {
			name = fmt.Sprintf("DLDeviceType(%d)", v)
		}
		if v.String() != name {
			t.Errorf("%d: String %q, want %q", int32(v), v.String(), name)
		}
		if v.Supported() != supported[v] {
			t.Errorf("%v: Supported %v", v, v.Supported())
		}
		err := dlpack.CheckDevice(dlpack.DLDevice{DeviceType: v})
		if supported[v] {
			if err != nil {
				t.Errorf("%v: %v", v, err)
			}
			continue
		}
		want := fmt.Sprintf("device_type %d (%s)", int32(v), name)
		if !errors.Is(err, dlpack.ErrUnsupportedDevice) || !strings.Contains(err.Error(), want) {
			t.Errorf("%v: error %v, want ErrUnsupportedDevice naming %q", v, err, want)
		}
		if _, err := v.MemoryKind(); !errors.Is(err, dlpack.ErrUnsupportedDevice) {
			t.Errorf("%v: MemoryKind error %v", v, err)
		}
	}
	if err := dlpack.CheckDevice(dlpack.DLDevice{DeviceType: dlpack.KDLCUDA, DeviceID: -2}); !errors.Is(err, dlpack.ErrDeviceID) {
		t.Errorf("device id -2: %v", err)
	}
}

func TestDeviceOf(t *testing.T) {
	for _, c := range []struct {
		kind    cuda.MemoryKind
		ordinal int
		want    dlpack.DLDevice
	}{
		{cuda.MemoryDevice, 3, dlpack.DLDevice{DeviceType: dlpack.KDLCUDA, DeviceID: 3}},
		{cuda.MemoryHost, 3, dlpack.DLDevice{DeviceType: dlpack.KDLCUDAHost}},
		{cuda.MemoryManaged, 1, dlpack.DLDevice{DeviceType: dlpack.KDLCUDAManaged}},
		{cuda.MemoryPageable, -1, dlpack.DLDevice{DeviceType: dlpack.KDLCPU}},
	} {
		got, err := dlpack.DeviceOf(c.kind, c.ordinal)
		if err != nil || got != c.want {
			t.Errorf("DeviceOf(%v, %d) = %+v, %v; want %+v", c.kind, c.ordinal, got, err, c.want)
			continue
		}
		if k, err := got.DeviceType.MemoryKind(); err != nil || k != c.kind {
			t.Errorf("%v.MemoryKind() = %v, %v; want %v", got.DeviceType, k, err, c.kind)
		}
	}
	if _, err := dlpack.DeviceOf(cuda.MemoryDevice, -1); !errors.Is(err, dlpack.ErrDeviceID) {
		t.Errorf("ordinal -1: %v", err)
	}
	if _, err := dlpack.DeviceOf(cuda.MemoryKind(42), 0); !errors.Is(err, dlpack.ErrUnsupportedDevice) {
		t.Errorf("kind 42: %v", err)
	}
}

// TestDeviceAndVersionString: devices and versions print as users write
// them, not as Go structs.
func TestDeviceAndVersionString(t *testing.T) {
	if got := fmt.Sprint(dlpack.DLDevice{DeviceType: dlpack.KDLCUDA, DeviceID: 3}); got != "kDLCUDA:3" {
		t.Errorf("DLDevice prints %q, want kDLCUDA:3", got)
	}
	if got := fmt.Sprintf("%v", dlpack.DLPackVersion{Major: 1, Minor: 3}); got != "1.3" {
		t.Errorf("DLPackVersion prints %q, want 1.3", got)
	}
}
