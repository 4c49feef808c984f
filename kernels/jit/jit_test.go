package jit

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stridekit/stridekit/internal/testenv"
	"github.com/stridekit/stridekit/layout"
	"github.com/stridekit/stridekit/runtime/cuda"
)

// copyKernel is a small strided copy kernel of the kind the generator emits.
const copyKernel = `extern "C" __global__ void copy2d(float* __restrict__ dst, const float* __restrict__ src,
		int rows, int cols, long long dst_stride, long long src_stride) {
	int c = blockIdx.x * blockDim.x + threadIdx.x;
	int r = blockIdx.y;
	if (r < rows && c < cols) dst[r * dst_stride + c] = src[r * src_stride + c];
}
`

// testArch is an architecture every NVRTC from 11.8 on compiles for.
const testArch = 80

// useCacheDir points the disk cache at a fresh directory.
func useCacheDir(t *testing.T) string {
	dir := t.TempDir()
	t.Setenv("STRIDEKIT_CACHE_DIR", dir)
	t.Setenv("STRIDEKIT_CACHE", "")
	return dir
}

func TestTarget(t *testing.T) {
	testenv.NeedNVRTC(t)
	archs, _ := cuda.NVRTCSupportedArchs()
	hi := archs[len(archs)-1]
	for _, c := range []struct {
		in, want int
		ptx      bool
	}{
		{80, 80, false},
		{hi, hi, false},
		{hi + 1, hi, hi%10 == 9 || true}, // newer minor: CUBIN only if hi+1 has hi's major
		{(hi/10 + 1) * 10, hi, true},     // newer major: PTX
	} {
		got, ptx, err := Target(c.in)
		if c.in == hi+1 {
			c.ptx = (hi+1)/10 != hi/10
		}
		if err != nil || got != c.want || ptx != c.ptx {
			t.Errorf("Target(%d) = %d, %v, %v; want %d, %v", c.in, got, ptx, err, c.want, c.ptx)
		}
	}
	if _, _, err := Target(10); !errors.Is(err, ErrArch) {
		t.Errorf("Target(10): %v", err)
	}
}

func TestCompile(t *testing.T) {
	testenv.NeedNVRTC(t)
	img, err := Compile(copyKernel, Options{Arch: testArch})
	if err != nil {
		t.Fatal(err)
	}
	if img.PTX || img.Arch != testArch || !bytes.HasPrefix(img.Data, []byte("\x7fELF")) {
		t.Errorf("image: ptx %v arch %d, % x", img.PTX, img.Arch, img.Data[:4])
	}
	_, err = Compile("extern \"C\" __global__ void k(int* p) { *p = missing_name; }", Options{Arch: testArch, Name: "broken.cu"})
	var ne *cuda.NVRTCError
	if !errors.As(err, &ne) || !errors.Is(err, cuda.ErrCompilation) || !strings.Contains(ne.Log, "missing_name") {
		t.Fatalf("compile error = %v", err)
	}
	if !strings.Contains(err.Error(), "broken.cu") {
		t.Errorf("error does not carry the log: %v", err)
	}
	if _, err := Compile(copyKernel, Options{}); !errors.Is(err, ErrArch) {
		t.Errorf("no arch: %v", err)
	}
}

func TestDiskCacheHitMiss(t *testing.T) {
	testenv.NeedNVRTC(t)
	dir := useCacheDir(t)
	s0 := ReadStats()
	a, err := CompileCached(copyKernel, Options{Arch: testArch})
	if err != nil {
		t.Fatal(err)
	}
	s1 := ReadStats()
	if s1.Compiles-s0.Compiles != 1 || s1.DiskMisses-s0.DiskMisses != 1 || s1.DiskWrites-s0.DiskWrites != 1 {
		t.Errorf("first call: %+v → %+v", s0, s1)
	}
	b, err := CompileCached(copyKernel, Options{Arch: testArch})
	if err != nil {
		t.Fatal(err)
	}
	s2 := ReadStats()
	if s2.Compiles != s1.Compiles || s2.DiskHits-s1.DiskHits != 1 || !bytes.Equal(a.Data, b.Data) {
		t.Errorf("second call not a hit: %+v → %+v", s1, s2)
	}
	// Other options, other arch: other keys.
	if _, err := CompileCached(copyKernel, Options{Arch: testArch, Flags: []string{"-lineinfo"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := CompileCached(copyKernel, Options{Arch: 75}); err != nil {
		t.Fatal(err)
	}
	if s3 := ReadStats(); s3.Compiles-s2.Compiles != 2 {
		t.Errorf("flags/arch did not change the key: %d compiles", s3.Compiles-s2.Compiles)
	}
	entries, _ := filepath.Glob(filepath.Join(dir, "*.kernel"))
	tmps, _ := filepath.Glob(filepath.Join(dir, ".tmp-*"))
	if len(entries) != 3 || len(tmps) != 0 {
		t.Errorf("cache dir holds %d entries and %d temp files", len(entries), len(tmps))
	}
	// Off: no disk traffic.
	t.Setenv("STRIDEKIT_CACHE", "off")
	s4 := ReadStats()
	if _, err := CompileCached(copyKernel, Options{Arch: testArch}); err != nil {
		t.Fatal(err)
	}
	if s5 := ReadStats(); s5.Compiles-s4.Compiles != 1 || s5.DiskHits != s4.DiskHits {
		t.Errorf("STRIDEKIT_CACHE=off still used the disk")
	}
}

func TestCacheDirEnv(t *testing.T) {
	t.Setenv("STRIDEKIT_CACHE", "")
	t.Setenv("STRIDEKIT_CACHE_DIR", "")
	t.Setenv("XDG_CACHE_HOME", "/xdg")
	if d, on := CacheDir(); !on || d != "/xdg/stridekit" {
		t.Errorf("XDG: %q %v", d, on)
	}
	t.Setenv("XDG_CACHE_HOME", "")
	t.Setenv("HOME", "/home/u")
	if d, _ := CacheDir(); d != "/home/u/.cache/stridekit" {
		t.Errorf("HOME: %q", d)
	}
	t.Setenv("STRIDEKIT_CACHE_DIR", "/explicit")
	if d, _ := CacheDir(); d != "/explicit" {
		t.Errorf("explicit: %q", d)
	}
	t.Setenv("STRIDEKIT_CACHE", "off")
	if _, on := CacheDir(); on {
		t.Error("STRIDEKIT_CACHE=off did not disable")
	}
}

func TestDiskCacheBadEntries(t *testing.T) {
	testenv.NeedNVRTC(t)
	dir := useCacheDir(t)
	good, err := CompileCached(copyKernel, Options{Arch: testArch})
	if err != nil {
		t.Fatal(err)
	}
	entries, _ := filepath.Glob(filepath.Join(dir, "*.kernel"))
	if len(entries) != 1 {
		t.Fatalf("%d entries", len(entries))
	}
	path := entries[0]
	orig, _ := os.ReadFile(path)
	other := filepath.Join(t.TempDir(), "other")
	// A foreign entry: a valid file of another key.
	t.Setenv("STRIDEKIT_CACHE_DIR", other)
	if _, err := CompileCached(copyKernel+"// other\n", Options{Arch: testArch}); err != nil {
		t.Fatal(err)
	}
	foreignFiles, _ := filepath.Glob(filepath.Join(other, "*.kernel"))
	foreign, _ := os.ReadFile(foreignFiles[0])
	t.Setenv("STRIDEKIT_CACHE_DIR", dir)

	flip := bytes.Clone(orig)
	flip[len(flip)-10] ^= 0xff
	for name, content := range map[string][]byte{
		"truncated":        orig[:len(orig)/2],
		"header only":      orig[:headerSize-3],
		"corrupted":        flip,
		"foreign":          foreign,
		"not an entry":     []byte("hello, world"),
		"empty":            {},
		"longer than said": append(bytes.Clone(orig), 0),
	} {
		if err := os.WriteFile(path, content, 0o644); err != nil {
			t.Fatal(err)
		}
		s0 := ReadStats()
		img, err := CompileCached(copyKernel, Options{Arch: testArch})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		s1 := ReadStats()
		if s1.DiskBad-s0.DiskBad != 1 || s1.Compiles-s0.Compiles != 1 || !bytes.Equal(img.Data, good.Data) {
			t.Errorf("%s: bad %d compiles %d", name, s1.DiskBad-s0.DiskBad, s1.Compiles-s0.Compiles)
		}
		if now, _ := os.ReadFile(path); !bytes.Equal(now, orig) {
			t.Errorf("%s: entry not replaced", name)
		}
	}
}

func TestConcurrentCompileOneProcess(t *testing.T) {
	testenv.NeedNVRTC(t)
	useCacheDir(t)
	src := copyKernel + "// concurrent\n"
	s0 := ReadStats()
	var wg sync.WaitGroup
	imgs := make([]Image, 16)
	errs := make([]error, 16)
	for i := range imgs {
		wg.Go(func() { imgs[i], errs[i] = CompileCached(src, Options{Arch: testArch}) })
	}
	wg.Wait()
	for i := range imgs {
		if errs[i] != nil || !bytes.Equal(imgs[i].Data, imgs[0].Data) {
			t.Fatalf("goroutine %d: %v", i, errs[i])
		}
	}
	if n := ReadStats().Compiles - s0.Compiles; n != 1 {
		t.Errorf("%d compiles for 16 concurrent requests, want 1", n)
	}
}

// TestConcurrentCompileProcesses starts several copies of this test binary
// compiling the same kernel into one empty cache directory at once: all
// succeed and the entry left is valid.
func TestConcurrentCompileProcesses(t *testing.T) {
	testenv.NeedNVRTC(t)
	if os.Getenv("STRIDEKIT_JIT_CHILD") == "1" {
		if _, err := CompileCached(copyKernel+"// processes\n", Options{Arch: testArch}); err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			os.Exit(3)
		}
		return
	}
	dir := useCacheDir(t)
	var cmds []*exec.Cmd
	var outs []*bytes.Buffer
	for range 4 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestConcurrentCompileProcesses$", "-test.count=1")
		cmd.Env = append(os.Environ(), "STRIDEKIT_JIT_CHILD=1", "STRIDEKIT_CACHE_DIR="+dir, "STRIDEKIT_CACHE=")
		out := new(bytes.Buffer)
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds, outs = append(cmds, cmd), append(outs, out)
	}
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Errorf("child %d: %v\n%s", i, err, outs[i])
		}
	}
	s0 := ReadStats()
	if _, err := CompileCached(copyKernel+"// processes\n", Options{Arch: testArch}); err != nil {
		t.Fatal(err)
	}
	if s1 := ReadStats(); s1.DiskHits-s0.DiskHits != 1 {
		t.Errorf("entry the children left is not a valid hit: %+v", s1)
	}
	if tmps, _ := filepath.Glob(filepath.Join(dir, ".tmp-*")); len(tmps) != 0 {
		t.Errorf("temp files left: %q", tmps)
	}
}

func BenchmarkCompileCold(b *testing.B) {
	testenv.NeedNVRTC(b)
	for i := 0; b.Loop(); i++ {
		if _, err := Compile(copyKernel+fmt.Sprintf("// %d\n", i), Options{Arch: testArch}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDiskHit(b *testing.B) {
	testenv.NeedNVRTC(b)
	b.Setenv("STRIDEKIT_CACHE_DIR", b.TempDir())
	b.Setenv("STRIDEKIT_CACHE", "")
	if _, err := CompileCached(copyKernel, Options{Arch: testArch}); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := CompileCached(copyKernel, Options{Arch: testArch}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkForRendered is For on a signature no stub registers, after its
// first call rendered the kernel: the knobs' and the rendered source's
// lookups a binding pays when its kernel is not loaded yet on the device.
func BenchmarkForRendered(b *testing.B) {
	sig := layout.Signature{Class: layout.ClassBoxTile, NDim: 3, Itemsize: 1, Vec: 1}
	if _, ok := Lookup(sig); ok {
		b.Skipf("%v is registered", sig)
	}
	if _, err := For(sig, 90); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := For(sig, 90); err != nil {
			b.Fatal(err)
		}
	}
}
