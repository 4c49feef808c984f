package cuda

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ebitengine/purego"
)

// buildFakeLib compiles a shared library from C source with the system C
// compiler, skipping t where there is none.
func buildFakeLib(t *testing.T, name, src string) string {
	t.Helper()
	cc, err := exec.LookPath("cc")
	if err != nil {
		t.Skip("no C compiler to build a test library")
	}
	dir := t.TempDir()
	c := filepath.Join(dir, "lib.c")
	if err := os.WriteFile(c, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	lib := filepath.Join(dir, name)
	if out, err := exec.Command(cc, "-shared", "-fPIC", "-o", lib, c).CombinedOutput(); err != nil {
		t.Skipf("cannot build a test library: %v\n%s", err, out)
	}
	return lib
}

// mapped reports whether the file at path is mapped into this process.
func mapped(t *testing.T, path string) bool {
	t.Helper()
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Skipf("no /proc/self/maps: %v", err)
	}
	return strings.Contains(string(maps), path)
}

// partialNVRTC has two of NVRTC's entry points and none of the others.
const partialNVRTC = `
int nvrtcVersion(int *major, int *minor) { *major = 99; *minor = 9; return 0; }
const char *nvrtcGetErrorString(int r) { return "fake"; }
`

// TestHardenOpenLibClosesOnMissingSymbol: a library that loads but lacks a
// required symbol is closed again, and the symbols it has are not bound.
func TestHardenOpenLibClosesOnMissingSymbol(t *testing.T) {
	lib := buildFakeLib(t, "libhjpartial.so", partialNVRTC)
	var version, create uintptr
	err := openLib(lib, purego.RTLD_NOW|purego.RTLD_LOCAL, []symbol{
		{"nvrtcVersion", &version, false},
		{"nvrtcCreateProgram", &create, false},
	})
	if err == nil || !strings.Contains(err.Error(), lib+" lacks nvrtcCreateProgram") {
		t.Errorf("openLib: %v; want an error naming the library and the missing symbol", err)
	}
	if version != 0 || create != 0 {
		t.Errorf("slots bound from a library that failed: %#x, %#x", version, create)
	}
	if mapped(t, lib) {
		t.Errorf("%s is still loaded after failing to bind", lib)
	}
	// Optional symbols that are missing do not fail it.
	var opt uintptr
	if err := openLib(lib, purego.RTLD_NOW|purego.RTLD_LOCAL, []symbol{
		{"nvrtcVersion", &version, false}, {"nvrtcCreateProgram", &opt, true},
	}); err != nil || version == 0 || opt != 0 {
		t.Errorf("with the missing symbol optional: %v, %#x, %#x", err, version, opt)
	}
}

// TestHardenOpenNVRTCPartialLibrary runs this test binary again (so the
// NVRTC this process may use is not disturbed) to point openNVRTC at a
// library with only some of NVRTC's symbols: it must fail naming the
// missing ones, leave the library unloaded and bind none of its symbols.
func TestHardenOpenNVRTCPartialLibrary(t *testing.T) {
	if lib := os.Getenv("STRIDEKIT_TEST_PARTIAL_NVRTC"); lib != "" {
		err := openNVRTC(lib)
		fmt.Printf("err=%v\nmapped=%v\nbound=%v\n", err, mapped(t, lib), nv.nvrtcVersion != 0 || nv.nvrtcGetErrorString != 0)
		return
	}
	lib := buildFakeLib(t, "libhjnvrtc.so", partialNVRTC)
	cmd := exec.Command(os.Args[0], "-test.run=^TestHardenOpenNVRTCPartialLibrary$", "-test.count=1")
	cmd.Env = append(os.Environ(), "STRIDEKIT_TEST_PARTIAL_NVRTC="+lib)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	s := string(out)
	for _, want := range []string{"err=" + lib + " lacks nvrtcCreateProgram", "mapped=false", "bound=false"} {
		if !strings.Contains(s, want) {
			t.Errorf("child does not say %q:\n%s", want, s)
		}
	}
}

// TestHardenNVRTCLoadedLocal: in a fresh process, NVRTC once loaded (and
// compiling) is not in the global symbol namespace.
func TestHardenNVRTCLoadedLocal(t *testing.T) {
	if os.Getenv("STRIDEKIT_TEST_NVRTC_LOCAL") == "1" {
		_, _, err := NVRTCVersion()
		if err != nil {
			fmt.Printf("no NVRTC: %v\n", err)
			return
		}
		_, _, cerr := NVRTCCompile(`extern "C" __global__ void k(int* p) { *p = 1; }`, "k.cu", []string{"--gpu-architecture=compute_75"}, false)
		_, serr := purego.Dlsym(purego.RTLD_DEFAULT, "nvrtcCompileProgram")
		fmt.Printf("compile=%v\nglobal=%v\n", cerr, serr == nil)
		return
	}
	needNVRTC(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestHardenNVRTCLoadedLocal$", "-test.count=1")
	cmd.Env = append(os.Environ(), "STRIDEKIT_TEST_NVRTC_LOCAL=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	s := string(out)
	if !strings.Contains(s, "compile=<nil>") || !strings.Contains(s, "global=false") {
		t.Errorf("child says\n%s", s)
	}
}
