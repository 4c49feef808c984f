package cuda

import (
	"errors"
	"os"
	"testing"

	"github.com/stridekit/stridekit/internal/dlib"
)

// needGPU returns device 0, or skips the test with a one-line reason where
// there is no driver or device. With STRIDEKIT_REQUIRE_GPU=1 it fails
// instead (the GPU runner sets it).
func needGPU(tb testing.TB) *Device {
	tb.Helper()
	d, err := GetDevice(0)
	if err == nil {
		return d
	}
	if os.Getenv("STRIDEKIT_REQUIRE_GPU") == "1" {
		tb.Fatalf("GPU required (STRIDEKIT_REQUIRE_GPU=1): %v", err)
	}
	if errors.Is(err, ErrNoDriver) || errors.Is(err, ErrNoDevice) || errors.Is(err, ErrInvalidDevice) {
		tb.Skipf("no GPU: %s", dlib.FirstLine(err.Error()))
	}
	tb.Fatal(err)
	return nil
}

// needNVRTC skips where NVRTC is missing, or fails with
// STRIDEKIT_REQUIRE_NVRTC=1 (CI sets it).
func needNVRTC(tb testing.TB) {
	tb.Helper()
	_, _, err := NVRTCVersion()
	if err == nil {
		return
	}
	if os.Getenv("STRIDEKIT_REQUIRE_NVRTC") == "1" {
		tb.Fatalf("NVRTC required (STRIDEKIT_REQUIRE_NVRTC=1): %v", err)
	}
	tb.Skipf("no NVRTC: %.200s", err)
}
