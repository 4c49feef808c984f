package cuda

import (
	"errors"
	"strings"
	"testing"
)

// TestHardenNVRTCCompileNUL: a NUL byte in the source (which C would read
// as its end, compiling only what comes before), the name or an option is
// an error matching ErrInvalidValue that names the argument and the
// offset, returned before NVRTC is loaded or called.
func TestHardenNVRTCCompileNUL(t *testing.T) {
	const kernel = `extern "C" __global__ void k(int* p) { *p = 1; }` + "\n"
	for _, c := range []struct {
		what, source, name string
		options            []string
		want               string
	}{
		{"source", kernel + "\x00this is not C", "k.cu", []string{"--gpu-architecture=sm_80"}, "source holds a NUL byte at offset 49 "},
		{"leading NUL", "\x00" + kernel, "k.cu", nil, "source holds a NUL byte at offset 0 "},
		{"name", kernel, "k.cu\x00x", nil, "name holds a NUL byte at offset 4 "},
		{"option", kernel, "k.cu", []string{"--gpu-architecture=sm_80", "-lineinfo\x00-G"}, "options[1] holds a NUL byte at offset 9 "},
	} {
		img, _, err := NVRTCCompile(c.source, c.name, c.options, true)
		if !errors.Is(err, ErrInvalidValue) || !strings.Contains(err.Error(), c.want) || img != nil {
			t.Errorf("%s: %d bytes, %v; want ErrInvalidValue saying %q", c.what, len(img), err, c.want)
		}
	}
}
