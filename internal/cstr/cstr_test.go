package cstr

import (
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
