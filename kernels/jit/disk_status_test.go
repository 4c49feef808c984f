package jit

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"log"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stridekit/stridekit/internal/testenv"
)

// TestCacheStatusUnusableDir points the disk cache at a directory that
// cannot be created (a path below a regular file, which stops root too):
// compiles succeed, the first failed write turns the cache off for that
// directory, CacheStatus and CacheDir say so, later compiles leave the disk
// alone, nothing is logged, and another directory is used normally.
func TestCacheStatusUnusableDir(t *testing.T) {
	testenv.NeedNVRTC(t)
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(file, "cache")
	t.Setenv("STRIDEKIT_CACHE_DIR", dir)
	t.Setenv("STRIDEKIT_CACHE", "")
	var logged bytes.Buffer
	log.SetOutput(&logged)
	defer log.SetOutput(os.Stderr)

	if d, on, err := CacheStatus(); d != dir || !on || err != nil {
		t.Fatalf("before any write: CacheStatus = %q, %v, %v; want %q, true, nil", d, on, err, dir)
	}
	s0 := ReadStats()
	for i := range 3 {
		img, err := CompileCached(copyKernel+fmt.Sprintf("// unusable %d\n", i), Options{Arch: testArch})
		if err != nil || len(img.Data) == 0 {
			t.Fatalf("compile %d: %d bytes, %v", i, len(img.Data), err)
		}
	}
	s1 := ReadStats()
	if c := s1.Compiles - s0.Compiles; c != 3 {
		t.Errorf("%d compiles, want 3", c)
	}
	if w := s1.DiskWrites - s0.DiskWrites; w != 0 {
		t.Errorf("%d disk writes into an uncreatable directory", w)
	}
	if h := s1.DiskHits + s1.DiskMisses + s1.DiskBad - s0.DiskHits - s0.DiskMisses - s0.DiskBad; h > 1 {
		t.Errorf("%d disk lookups after the cache turned off, want at most the first", h)
	}
	d, on, err := CacheStatus()
	if d != dir || on || !errors.Is(err, ErrCacheUnusable) || !errors.Is(err, syscall.ENOTDIR) || !strings.Contains(err.Error(), dir) {
		t.Errorf("after a failed write: CacheStatus = %q, %v, %v; want %q, false, an ErrCacheUnusable naming it", d, on, err, dir)
	}
	var pe *fs.PathError
	if !errors.As(err, &pe) {
		t.Errorf("CacheStatus error %v does not wrap the *fs.PathError", err)
	}
	if d, on := CacheDir(); d != dir || on {
		t.Errorf("CacheDir = %q, %v; want %q, false", d, on, dir)
	}
	if logged.Len() != 0 {
		t.Errorf("the package logged: %q", logged.String())
	}

	// Another directory is not affected.
	good := t.TempDir()
	t.Setenv("STRIDEKIT_CACHE_DIR", good)
	if d, on, err := CacheStatus(); d != good || !on || err != nil {
		t.Errorf("new directory: CacheStatus = %q, %v, %v", d, on, err)
	}
	s2 := ReadStats()
	if _, err := CompileCached(copyKernel+"// usable\n", Options{Arch: testArch}); err != nil {
		t.Fatal(err)
	}
	if w := ReadStats().DiskWrites - s2.DiskWrites; w != 1 {
		t.Errorf("%d writes into a usable directory, want 1", w)
	}
	// Back to the unusable one: still off, same error.
	t.Setenv("STRIDEKIT_CACHE_DIR", dir)
	if _, on, err2 := CacheStatus(); on || err2 == nil || err2.Error() != err.Error() {
		t.Errorf("unusable directory again: on %v, %v", on, err2)
	}
}

// TestCacheStatusOff: STRIDEKIT_CACHE=off turns the cache off with no error.
func TestCacheStatusOff(t *testing.T) {
	t.Setenv("STRIDEKIT_CACHE_DIR", t.TempDir())
	t.Setenv("STRIDEKIT_CACHE", "off")
	if d, on, err := CacheStatus(); d != "" || on || err != nil {
		t.Errorf("CacheStatus = %q, %v, %v; want \"\", false, nil", d, on, err)
	}
}

// TestDisableKeepsFirstError: of two failures for one directory, the first
// is reported; each directory has its own.
func TestDisableKeepsFirstError(t *testing.T) {
	a, b := filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b")
	disable(a, fs.ErrPermission)
	disable(a, fs.ErrExist)
	t.Setenv("STRIDEKIT_CACHE", "")
	t.Setenv("STRIDEKIT_CACHE_DIR", a)
	if _, on, err := CacheStatus(); on || !errors.Is(err, fs.ErrPermission) || errors.Is(err, fs.ErrExist) {
		t.Errorf("%s: on %v, %v; want the first error", a, on, err)
	}
	t.Setenv("STRIDEKIT_CACHE_DIR", b)
	if _, on, err := CacheStatus(); !on || err != nil {
		t.Errorf("%s: on %v, %v; want on", b, on, err)
	}
}
