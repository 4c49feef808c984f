package cuda

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestErrorFormatAndIs(t *testing.T) {
	e := &Error{Call: "cuMemAlloc_v2", Code: 2, Name: "CUDA_ERROR_OUT_OF_MEMORY", Desc: "out of memory"}
	if got, want := e.Error(), "cuda: cuMemAlloc_v2: CUDA_ERROR_OUT_OF_MEMORY (2): out of memory"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	wrapped := fmt.Errorf("alloc: %w", e)
	if !errors.Is(wrapped, ErrOutOfMemory) || errors.Is(wrapped, ErrInvalidValue) {
		t.Errorf("errors.Is mismatch for %v", wrapped)
	}
	ne := &NVRTCError{Call: "nvrtcCompileProgram", Code: 6, Name: "NVRTC_ERROR_COMPILATION", Log: "x.cu(1): error"}
	if !errors.Is(ne, ErrCompilation) || !strings.Contains(ne.Error(), "x.cu(1): error") {
		t.Errorf("NVRTCError %q", ne)
	}
}

func TestNVRTCCandidatesOrder(t *testing.T) {
	env := map[string]string{"CUDA_HOME": "/opt/cuda"}
	getenv := func(k string) string { return env[k] }
	c, named := nvrtcCandidates(getenv)
	want := []string{"libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2", "/opt/cuda/lib64/libnvrtc.so"}
	if named || len(c) < len(want) {
		t.Fatalf("candidates %q, named %v", c, named)
	}
	for i, w := range want {
		if c[i] != w {
			t.Fatalf("candidate %d = %q, want %q (all: %q)", i, c[i], w, c)
		}
	}
	if !strings.Contains(strings.Join(c, " "), "/usr/local/cuda/lib64/libnvrtc.so.13") {
		t.Errorf("no /usr/local/cuda/lib64 in %q", c)
	}
	// A library named in $STRIDEKIT_NVRTC is the only candidate.
	env["STRIDEKIT_NVRTC"] = "/opt/x/libnvrtc.so.99"
	if c, named := nvrtcCandidates(getenv); !named || len(c) != 1 || c[0] != "/opt/x/libnvrtc.so.99" {
		t.Errorf("with STRIDEKIT_NVRTC: candidates %q, named %v", c, named)
	}
}

// TestNoDriver checks the error where there is no driver: it wraps
// ErrNoDriver and names what was tried; nothing panics.
func TestNoDriver(t *testing.T) {
	_, err := DeviceCount()
	if err == nil {
		t.Skip("a CUDA driver is present")
	}
	if !errors.Is(err, ErrNoDriver) {
		t.Fatalf("DeviceCount error %v does not wrap ErrNoDriver", err)
	}
	if !strings.Contains(err.Error(), "libcuda.so.1") {
		t.Errorf("error %q does not say what was tried", err)
	}
	if _, err := GetDevice(0); !errors.Is(err, ErrNoDriver) {
		t.Errorf("GetDevice: %v", err)
	}
	if _, err := PointerAttributes(0); !errors.Is(err, ErrNoDriver) {
		t.Errorf("PointerAttributes: %v", err)
	}
}

const addOne = `extern "C" __global__ void add_one(float* x, int n) {
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) x[i] += 1.0f;
}
`

func highestArch(t testing.TB) int {
	archs, err := NVRTCSupportedArchs()
	if err != nil {
		t.Fatal(err)
	}
	if len(archs) == 0 {
		t.Fatal("NVRTC lists no architectures")
	}
	return archs[len(archs)-1]
}

func TestNVRTCCompile(t *testing.T) {
	needNVRTC(t)
	major, minor, _ := NVRTCVersion()
	path, _ := NVRTCPath()
	arch := highestArch(t)
	t.Logf("NVRTC %d.%d from %s, highest arch sm_%d", major, minor, path, arch)
	cubin, _, err := NVRTCCompile(addOne, "add_one.cu", []string{fmt.Sprintf("--gpu-architecture=sm_%d", arch)}, true)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(cubin), "\x7fELF") {
		t.Errorf("CUBIN does not start with ELF magic: % x", cubin[:8])
	}
	ptx, _, err := NVRTCCompile(addOne, "add_one.cu", []string{fmt.Sprintf("--gpu-architecture=compute_%d", arch)}, false)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(ptx), ".entry add_one") || ptx[len(ptx)-1] != 0 {
		t.Errorf("PTX lacks the entry or the NUL: %.200q", ptx)
	}
}

func TestNVRTCCompileError(t *testing.T) {
	needNVRTC(t)
	_, log, err := NVRTCCompile("extern \"C\" __global__ void k() { undeclared_thing = 1; }", "bad.cu", nil, false)
	var ne *NVRTCError
	if !errors.As(err, &ne) || !errors.Is(err, ErrCompilation) {
		t.Fatalf("err = %v, want an NVRTCError matching ErrCompilation", err)
	}
	if !strings.Contains(ne.Log, "undeclared_thing") || ne.Log != log || !strings.Contains(err.Error(), "bad.cu") {
		t.Errorf("log does not name the error: %q", ne.Log)
	}
}
