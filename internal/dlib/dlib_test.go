package dlib

import (
	"slices"
	"testing"
	"unsafe"
)

func TestGoString(t *testing.T) {
	b := []byte("CUDA_ERROR_INVALID_VALUE\x00tail")
	if got := GoString(uintptr(unsafe.Pointer(&b[0]))); got != "CUDA_ERROR_INVALID_VALUE" {
		t.Errorf("GoString = %q", got)
	}
	if GoString(0) != "" {
		t.Error("GoString(0) is not empty")
	}
}

func TestFirstLine(t *testing.T) {
	for in, want := range map[string]string{"a\nb": "a", "ab": "ab", "": "", "\nx": ""} {
		if got := FirstLine(in); got != want {
			t.Errorf("FirstLine(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestCandidates(t *testing.T) {
	env := map[string]string{"CUDA_HOME": "/opt/cuda"}
	c, named := Candidates(func(k string) string { return env[k] }, "LIB", "liba.so.1", "liba.so")
	want := []string{"liba.so.1", "liba.so", "/opt/cuda/lib64/liba.so.1", "/opt/cuda/lib64/liba.so",
		"/usr/local/cuda/lib64/liba.so.1", "/usr/local/cuda/lib64/liba.so"}
	if named || !slices.Equal(c, want) {
		t.Errorf("Candidates = %v, %v; want %v", c, named, want)
	}
	env["LIB"] = "/x/liba.so.9"
	if c, named := Candidates(func(k string) string { return env[k] }, "LIB", "liba.so"); !named || !slices.Equal(c, []string{"/x/liba.so.9"}) {
		t.Errorf("named: %v, %v", c, named)
	}
}
