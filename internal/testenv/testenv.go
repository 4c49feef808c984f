// Package testenv holds the checks that tests needing NVRTC or a GPU start
// with, so every package skips and fails for the same reasons: a missing
// NVRTC or GPU skips the test with a one-line reason, unless
// STRIDEKIT_REQUIRE_NVRTC=1 (CI) or STRIDEKIT_REQUIRE_GPU=1 (the GPU runner,
// gpubin/run.sh) is set, which turns the skip into a failure.
//
// runtime/cuda's own tests keep a copy of these checks: they cannot import
// this package, which imports runtime/cuda.
package testenv

import (
	"errors"
	"os"
	"strconv"
	"testing"

	"github.com/stridekit/stridekit/runtime/cuda"
)

// NeedNVRTC skips tb where NVRTC cannot be loaded, or fails it with
// STRIDEKIT_REQUIRE_NVRTC=1.
func NeedNVRTC(tb testing.TB) {
	tb.Helper()
	_, _, err := cuda.NVRTCVersion()
	if err == nil {
		return
	}
	if os.Getenv("STRIDEKIT_REQUIRE_NVRTC") == "1" {
		tb.Fatalf("NVRTC required (STRIDEKIT_REQUIRE_NVRTC=1): %v", err)
	}
	tb.Skipf("no NVRTC: %.200s", err)
}

// NeedGPU returns device 0. Where there is no driver or no device it skips tb,
// or fails it with STRIDEKIT_REQUIRE_GPU=1; any other error fails tb.
func NeedGPU(tb testing.TB) *cuda.Device {
	tb.Helper()
	d, err := cuda.GetDevice(0)
	if err == nil {
		return d
	}
	if os.Getenv("STRIDEKIT_REQUIRE_GPU") == "1" {
		tb.Fatalf("GPU required (STRIDEKIT_REQUIRE_GPU=1): %v", err)
	}
	if errors.Is(err, cuda.ErrNoDriver) || errors.Is(err, cuda.ErrNoDevice) || errors.Is(err, cuda.ErrInvalidDevice) {
		tb.Skipf("no GPU: %.200s", err)
	}
	tb.Fatal(err)
	return nil
}

// NewStream returns a new non-blocking stream on dev, closed when tb and
// its subtests end (a failure to close fails tb); an error creating it
// fails tb.
func NewStream(tb testing.TB, dev *cuda.Device) *cuda.Stream {
	tb.Helper()
	s, err := dev.NewStream(true)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := s.Close(); err != nil {
			tb.Errorf("closing a test stream: %v", err)
		}
	})
	return s
}

// NeedGPUs returns devices 0 to n-1. Where there are fewer it skips tb, or
// fails it with STRIDEKIT_REQUIRE_GPUS set to n or more (the single-GPU
// suite's STRIDEKIT_REQUIRE_GPU=1 does not require a second device).
func NeedGPUs(tb testing.TB, n int) []*cuda.Device {
	tb.Helper()
	d0 := NeedGPU(tb)
	have, err := cuda.DeviceCount()
	if err != nil {
		tb.Fatal(err)
	}
	if have < n {
		if want, _ := strconv.Atoi(os.Getenv("STRIDEKIT_REQUIRE_GPUS")); want >= n {
			tb.Fatalf("%d GPUs required (STRIDEKIT_REQUIRE_GPUS=%d), have %d", n, want, have)
		}
		tb.Skipf("needs %d GPUs, have %d", n, have)
	}
	devs := []*cuda.Device{d0}
	for i := 1; i < n; i++ {
		d, err := cuda.GetDevice(i)
		if err != nil {
			tb.Fatal(err)
		}
		devs = append(devs, d)
	}
	return devs
}
