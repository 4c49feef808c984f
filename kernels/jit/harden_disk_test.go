package jit

import (
	"bytes"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stridekit/stridekit/internal/testenv"
	"github.com/stridekit/stridekit/runtime/cuda"
)

// plantedEntry returns the file name CompileCached gives the entry of
// (src, opts) and a self-consistent entry for it whose payload is data: what
// someone able to write the cache directory could plant.
func plantedEntry(t *testing.T, src string, opts Options, data []byte) (string, []byte) {
	t.Helper()
	arch, ptx, err := Target(opts.Arch)
	if err != nil {
		t.Fatal(err)
	}
	major, minor, err := cuda.NVRTCVersion()
	if err != nil {
		t.Fatal(err)
	}
	key := diskKey(src, opts.Flags, arch, ptx, major, minor)
	return hex.EncodeToString(key[:]) + ".kernel", encodeEntry(key, Image{Data: data, PTX: ptx, Arch: arch})
}

// compileWithin runs CompileCached in a goroutine and fails t if it does
// not return within d (a read blocked on a FIFO, say); unblock, if not
// nil, is called then to release the goroutine.
func compileWithin(t *testing.T, d time.Duration, src string, unblock func()) (Image, error) {
	t.Helper()
	type result struct {
		img Image
		err error
	}
	done := make(chan result, 1)
	go func() {
		img, err := CompileCached(src, Options{Arch: testArch})
		done <- result{img, err}
	}()
	select {
	case r := <-done:
		return r.img, r.err
	case <-time.After(d):
		if unblock != nil {
			unblock()
		}
		t.Fatalf("CompileCached did not return within %v", d)
		return Image{}, nil
	}
}

// TestHardenDiskEntryNotRegular puts at an entry's path what is no regular
// file: a FIFO (a plain open blocks on it forever), a symbolic link to
// /dev/zero (endless), a symbolic link to a valid entry elsewhere. Each is
// a bad entry: CompileCached returns at once with a fresh compile and
// replaces it with a regular file holding the right entry.
func TestHardenDiskEntryNotRegular(t *testing.T) {
	testenv.NeedNVRTC(t)
	dir := useCacheDir(t)
	want, err := Compile(copyKernel, Options{Arch: testArch})
	if err != nil {
		t.Fatal(err)
	}
	outside := t.TempDir()
	for _, c := range []struct {
		name string
		make func(src, path string) (unblock func(), err error)
	}{
		{"fifo", func(src, path string) (func(), error) {
			unblock := func() {
				// Opening the write end releases a reader blocked in open.
				if f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
					f.Close()
				}
			}
			return unblock, syscall.Mkfifo(path, 0o600)
		}},
		{"symlink to /dev/zero", func(src, path string) (func(), error) {
			if _, err := os.Stat("/dev/zero"); err != nil {
				t.Skip("no /dev/zero")
			}
			return nil, os.Symlink("/dev/zero", path)
		}},
		{"symlink to a valid entry", func(src, path string) (func(), error) {
			_, b := plantedEntry(t, src, Options{Arch: testArch}, []byte("planted"))
			target := filepath.Join(outside, "planted")
			if err := os.WriteFile(target, b, 0o600); err != nil {
				return nil, err
			}
			return nil, os.Symlink(target, path)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := copyKernel + "// not regular: " + c.name + "\n"
			name, _ := plantedEntry(t, src, Options{Arch: testArch}, nil)
			path := filepath.Join(dir, name)
			unblock, err := c.make(src, path)
			if err != nil {
				t.Fatal(err)
			}
			s0 := ReadStats()
			img, err := compileWithin(t, 20*time.Second, src, unblock)
			if err != nil {
				t.Fatal(err)
			}
			s1 := ReadStats()
			if bad, compiles := s1.DiskBad-s0.DiskBad, s1.Compiles-s0.Compiles; bad != 1 || compiles != 1 {
				t.Errorf("%d bad entries, %d compiles; want 1, 1", bad, compiles)
			}
			if bytes.Equal(img.Data, []byte("planted")) || img.PTX != want.PTX || len(img.Data) == 0 {
				t.Errorf("CompileCached returned %d bytes %.20q, not a fresh compile", len(img.Data), img.Data)
			}
			fi, err := os.Lstat(path)
			if err != nil || !fi.Mode().IsRegular() {
				t.Fatalf("entry not replaced by a regular file: %v, %v", fi, err)
			}
			if _, err := readEntry(path, mustKey(t, src)); err != nil {
				t.Errorf("replacement entry: %v", err)
			}
		})
	}
}

// mustKey is the disk key of src for testArch.
func mustKey(t *testing.T, src string) [32]byte {
	t.Helper()
	name, _ := plantedEntry(t, src, Options{Arch: testArch}, nil)
	b, err := hex.DecodeString(strings.TrimSuffix(name, ".kernel"))
	if err != nil || len(b) != 32 {
		t.Fatalf("entry name %q", name)
	}
	return [32]byte(b)
}

// TestHardenDiskEntryTooLarge: a self-consistent entry whose image is one
// byte over the maximum is bad, recompiled and replaced, and never loaded.
func TestHardenDiskEntryTooLarge(t *testing.T) {
	testenv.NeedNVRTC(t)
	dir := useCacheDir(t)
	src := copyKernel + "// too large\n"
	name, b := plantedEntry(t, src, Options{Arch: testArch}, make([]byte, maxImageSize+1))
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	b = nil
	s0 := ReadStats()
	img, err := CompileCached(src, Options{Arch: testArch})
	if err != nil {
		t.Fatal(err)
	}
	s1 := ReadStats()
	if len(img.Data) > maxImageSize || s1.DiskBad-s0.DiskBad != 1 || s1.Compiles-s0.Compiles != 1 {
		t.Errorf("oversized entry: got %d bytes, %d bad, %d compiles; want a fresh compile", len(img.Data),
			s1.DiskBad-s0.DiskBad, s1.Compiles-s0.Compiles)
	}
	if fi, err := os.Stat(path); err != nil || fi.Size() > headerSize+maxImageSize {
		t.Errorf("oversized entry not replaced: %v, %v", fi, err)
	}
	// At the limit, an entry is read.
	if _, err := readEntry(path, mustKey(t, src)); err != nil {
		t.Errorf("replacement entry: %v", err)
	}
}

// TestHardenDiskDirRefused points the disk cache at directories another user
// could plant entries in, each holding a self-consistent planted entry where
// possible: the entry is never loaded, the compile succeeds from NVRTC,
// nothing is written there, and CacheStatus reports the cache off with an
// error matching ErrCacheUnusable and ErrCacheDirInsecure that names the
// directory and what is wrong.
func TestHardenDiskDirRefused(t *testing.T) {
	testenv.NeedNVRTC(t)
	t.Setenv("STRIDEKIT_CACHE", "")
	for _, c := range []struct {
		name, why string
		// make returns the cache directory and the directory to plant
		// the entry in ("" for none).
		make func(t *testing.T) (dir, plant string)
	}{
		{"world-writable", "group- or world-writable", func(t *testing.T) (string, string) {
			d := t.TempDir()
			if err := os.Chmod(d, 0o777); err != nil {
				t.Fatal(err)
			}
			return d, d
		}},
		{"group-writable", "group- or world-writable", func(t *testing.T) (string, string) {
			d := t.TempDir()
			if err := os.Chmod(d, 0o770); err != nil {
				t.Fatal(err)
			}
			return d, d
		}},
		{"symlink", "symbolic link", func(t *testing.T) (string, string) {
			target := t.TempDir() // private, but reached through a link
			link := filepath.Join(t.TempDir(), "link")
			if err := os.Symlink(target, link); err != nil {
				t.Fatal(err)
			}
			return link, target
		}},
		{"symlink with a trailing slash", "symbolic link", func(t *testing.T) (string, string) {
			target := t.TempDir()
			link := filepath.Join(t.TempDir(), "link")
			if err := os.Symlink(target, link); err != nil {
				t.Fatal(err)
			}
			return link + "/", target
		}},
		{"regular file", "not a directory", func(t *testing.T) (string, string) {
			f := filepath.Join(t.TempDir(), "file")
			if err := os.WriteFile(f, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			return f, ""
		}},
		{"another owner", "owned by uid", func(t *testing.T) (string, string) {
			if os.Geteuid() != 0 {
				// Any directory of another user will do; nothing can
				// be planted in it.
				fi, err := os.Lstat("/")
				if st, ok := fi.Sys().(*syscall.Stat_t); err != nil || !ok || int(st.Uid) == os.Geteuid() {
					t.Skip("no directory of another user to use")
				}
				return "/", ""
			}
			d := t.TempDir()
			if err := os.Chown(d, 65534, 65534); err != nil {
				t.Skipf("chown: %v", err)
			}
			return d, d
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir, plant := c.make(t)
			t.Setenv("STRIDEKIT_CACHE_DIR", dir)
			src := copyKernel + "// refused: " + c.name + "\n"
			if plant != "" {
				name, b := plantedEntry(t, src, Options{Arch: testArch}, []byte("planted"))
				if err := os.WriteFile(filepath.Join(plant, name), b, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			before, _ := filepath.Glob(filepath.Join(dir, "*"))
			s0 := ReadStats()
			img, err := CompileCached(src, Options{Arch: testArch})
			if err != nil {
				t.Fatal(err)
			}
			s1 := ReadStats()
			if bytes.Equal(img.Data, []byte("planted")) || len(img.Data) == 0 {
				t.Errorf("CompileCached loaded the planted entry")
			}
			if n := s1.Compiles - s0.Compiles; n != 1 {
				t.Errorf("%d compiles, want 1", n)
			}
			if n := s1.DiskHits + s1.DiskMisses + s1.DiskBad + s1.DiskWrites - s0.DiskHits - s0.DiskMisses - s0.DiskBad - s0.DiskWrites; n != 0 {
				t.Errorf("%d disk reads or writes in a refused directory", n)
			}
			if after, _ := filepath.Glob(filepath.Join(dir, "*")); len(after) != len(before) {
				t.Errorf("directory held %d files, now %d", len(before), len(after))
			}
			d, on, err := CacheStatus()
			if d != dir || on || !errors.Is(err, ErrCacheUnusable) || !errors.Is(err, ErrCacheDirInsecure) ||
				!strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), c.why) {
				t.Errorf("CacheStatus = %q, %v, %v; want %q, false, ErrCacheDirInsecure saying %q", d, on, err, dir, c.why)
			}
		})
	}
}

// TestHardenDiskDirAccepted: a private directory of mode 0755 (what earlier
// versions created) stays in use; one the cache creates, with its missing
// parents, is 0700.
func TestHardenDiskDirAccepted(t *testing.T) {
	testenv.NeedNVRTC(t)
	t.Setenv("STRIDEKIT_CACHE", "")
	old := t.TempDir()
	if err := os.Chmod(old, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("STRIDEKIT_CACHE_DIR", old)
	s0 := ReadStats()
	if _, err := CompileCached(copyKernel+"// 0755\n", Options{Arch: testArch}); err != nil {
		t.Fatal(err)
	}
	if _, on, err := CacheStatus(); !on || err != nil || ReadStats().DiskWrites-s0.DiskWrites != 1 {
		t.Errorf("0755 directory: on %v, %v", on, err)
	}

	base := t.TempDir()
	fresh := filepath.Join(base, "a", "b")
	t.Setenv("STRIDEKIT_CACHE_DIR", fresh)
	defer syscall.Umask(syscall.Umask(0o022))
	if _, err := CompileCached(copyKernel+"// fresh\n", Options{Arch: testArch}); err != nil {
		t.Fatal(err)
	}
	if _, on, err := CacheStatus(); !on || err != nil {
		t.Errorf("fresh directory: on %v, %v", on, err)
	}
	for _, d := range []string{filepath.Join(base, "a"), fresh} {
		if fi, err := os.Lstat(d); err != nil || fi.Mode() != fs.ModeDir|0o700 {
			t.Errorf("%s: %v, %v; want drwx------", d, fi.Mode(), err)
		}
	}
	if entries, _ := filepath.Glob(filepath.Join(fresh, "*.kernel")); len(entries) != 1 {
		t.Errorf("%d entries in the fresh directory", len(entries))
	}
}

// TestHardenDiskDirCheckedOnce: the directory is looked at once per
// process, not at every compile.
func TestHardenDiskDirCheckedOnce(t *testing.T) {
	testenv.NeedNVRTC(t)
	dir := useCacheDir(t)
	var calls atomic.Int64
	orig := dirLstat
	dirLstat = func(name string) (fs.FileInfo, error) {
		if name == filepath.Clean(dir) {
			calls.Add(1)
		}
		return orig(name)
	}
	defer func() { dirLstat = orig }()
	for i := range 4 {
		src := copyKernel + strings.Repeat("// once\n", i%2+1)
		if _, err := CompileCached(src, Options{Arch: testArch}); err != nil {
			t.Fatal(err)
		}
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("directory looked at %d times in 4 compiles, want 1", n)
	}
}
