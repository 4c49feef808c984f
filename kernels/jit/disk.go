package jit

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"

	"golang.org/x/sync/singleflight"

	"github.com/stridekit/stridekit/runtime/cuda"
)

// ErrCacheUnusable is matched (errors.Is) by the error CacheStatus reports
// for a cache directory that proved unusable: a write to it failed, or it
// is not private to this user (see ErrCacheDirInsecure), so the disk cache
// is off for it for the rest of the process. The error also wraps the
// failure itself (an *fs.PathError, or ErrCacheDirInsecure).
var ErrCacheUnusable = errors.New("jit: disk cache directory unusable")

// ErrCacheDirInsecure is matched (errors.Is), along with ErrCacheUnusable,
// by the error CacheStatus reports for a cache directory CompileCached
// refuses to trust, since another user could plant entries in it (which
// would be loaded as GPU code): its last path component is a symbolic link
// or not a directory, it is group- or world-writable, or it belongs to a
// user other than the process's effective user. The error says which.
var ErrCacheDirInsecure = errors.New("jit: disk cache directory not private")

// unusable maps a directory to the error that turned the disk cache off
// for it.
var unusable sync.Map // string → error

// CacheDir returns the disk cache directory and whether the disk cache is
// on: $STRIDEKIT_CACHE_DIR, else $XDG_CACHE_HOME/stridekit, else
// ~/.cache/stridekit; off when STRIDEKIT_CACHE=off, when no directory can be
// named, and when the directory proved unusable earlier in this process
// (CacheStatus then says why). The environment is read at every call.
func CacheDir() (string, bool) {
	dir, on, _ := CacheStatus()
	return dir, on
}

// CacheStatus reports the disk cache: its directory, whether it is in use,
// and, when it was turned off because the directory proved unusable, the
// error that did so (matching ErrCacheUnusable; nil otherwise, including
// when STRIDEKIT_CACHE=off turned it off). A directory proves unusable when
// writing an entry to it fails (it cannot be created, is read-only, is
// full), or when it is not private (ErrCacheDirInsecure: checked once per
// directory per process, before its first read or write): from then on,
// for the rest of the process, CompileCached neither reads nor writes it
// and compiles succeed from NVRTC alone, with the in-memory caches above
// still in force. The package writes no log; a
// program that wants to tell its user calls CacheStatus, for instance after
// its first compile. Naming another directory in $STRIDEKIT_CACHE_DIR turns
// the disk cache on again for that one.
func CacheStatus() (dir string, on bool, err error) {
	dir, on = configuredCacheDir()
	if on {
		if e, bad := unusable.Load(dir); bad {
			return dir, false, e.(error)
		}
	}
	return dir, on, nil
}

// configuredCacheDir is the directory the environment names, and whether
// the environment leaves the disk cache on.
func configuredCacheDir() (string, bool) {
	if os.Getenv("STRIDEKIT_CACHE") == "off" {
		return "", false
	}
	if d := os.Getenv("STRIDEKIT_CACHE_DIR"); d != "" {
		return d, true
	}
	if d := os.Getenv("XDG_CACHE_HOME"); d != "" {
		return filepath.Join(d, "stridekit"), true
	}
	if h, err := os.UserHomeDir(); err == nil && h != "" {
		return filepath.Join(h, ".cache", "stridekit"), true
	}
	return "", false
}

// disable turns the disk cache off for dir because of err; the first
// error recorded for a directory is the one CacheStatus reports.
func disable(dir string, err error) {
	unusable.LoadOrStore(dir, fmt.Errorf("%w: %s: %w", ErrCacheUnusable, dir, err))
}

// Entry file layout: magic, version, flags (bit 0: PTX), arch, payload
// length, key, sha256 of the payload, payload. Integers little-endian.
const (
	entryMagic   = "STRDKJIT"
	entryVersion = 1
	headerSize   = 8 + 4 + 4 + 4 + 8 + 32 + 32
)

// maxImageSize is the largest image the disk cache holds: larger images
// are not written, and a larger entry is bad (recompiled and replaced)
// without being read.
const maxImageSize = 64 << 20

// dirLstat is os.Lstat, for checkDir; tests count its calls.
var dirLstat = os.Lstat

// privateDirs holds the cache directories found private in this process
// (string → struct{}); the ones found otherwise are in unusable.
var privateDirs sync.Map

// checkDir reports whether dir exists and is private (see
// ErrCacheDirInsecure), looking at it once per process: a directory found
// private is remembered, and one that is not returns the error saying why,
// which the caller gives to disable. A directory that does not exist yet
// is neither (exists false, err nil): it is checked again once created.
func checkDir(dir string) (exists bool, err error) {
	if _, ok := privateDirs.Load(dir); ok {
		return true, nil
	}
	fi, err := dirLstat(filepath.Clean(dir)) // Clean: a trailing slash would follow a link
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if err := private(dir, fi); err != nil {
		return false, err
	}
	privateDirs.Store(dir, struct{}{})
	return true, nil
}

// private checks what Lstat said of the cache directory dir.
func private(dir string, fi fs.FileInfo) error {
	mode := fi.Mode()
	switch {
	case mode&fs.ModeSymlink != 0:
		target, _ := os.Readlink(filepath.Clean(dir))
		return fmt.Errorf("%w: is a symbolic link (to %q), not a directory", ErrCacheDirInsecure, target)
	case !mode.IsDir():
		return fmt.Errorf("%w: is not a directory (mode %v)", ErrCacheDirInsecure, mode)
	case mode.Perm()&0o022 != 0:
		return fmt.Errorf("%w: is group- or world-writable (mode %v)", ErrCacheDirInsecure, mode)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fmt.Errorf("%w: its owner is unknown", ErrCacheDirInsecure)
	}
	if euid := os.Geteuid(); int64(st.Uid) != int64(euid) {
		return fmt.Errorf("%w: is owned by uid %d, not by this process's effective uid %d", ErrCacheDirInsecure, st.Uid, euid)
	}
	return nil
}

// diskKey is the sha256 over everything that changes the output.
func diskKey(source string, flags []string, arch int, ptx bool, nvMajor, nvMinor int) [32]byte {
	h := sha256.New()
	for _, s := range []string{"stridekit-jit/1", source, flagsKey(flags), targetOption(arch, ptx),
		"nvrtc " + strconv.Itoa(nvMajor) + "." + strconv.Itoa(nvMinor)} {
		// Length-prefix each field so no two inputs share a key.
		var n [8]byte
		binary.LittleEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	var k [32]byte
	h.Sum(k[:0])
	return k
}

func encodeEntry(key [32]byte, img Image) []byte {
	b := make([]byte, headerSize, headerSize+len(img.Data))
	copy(b, entryMagic)
	binary.LittleEndian.PutUint32(b[8:], entryVersion)
	if img.PTX {
		binary.LittleEndian.PutUint32(b[12:], 1)
	}
	binary.LittleEndian.PutUint32(b[16:], uint32(img.Arch))
	binary.LittleEndian.PutUint64(b[20:], uint64(len(img.Data)))
	copy(b[28:60], key[:])
	sum := sha256.Sum256(img.Data)
	copy(b[60:92], sum[:])
	return append(b, img.Data...)
}

// decodeEntry verifies a file's bytes against the key it must hold.
func decodeEntry(key [32]byte, b []byte) (Image, error) {
	switch {
	case len(b) < headerSize:
		return Image{}, fmt.Errorf("truncated header (%d bytes)", len(b))
	case string(b[:8]) != entryMagic:
		return Image{}, errors.New("not a stridekit cache entry")
	case binary.LittleEndian.Uint32(b[8:]) != entryVersion:
		return Image{}, fmt.Errorf("entry version %d", binary.LittleEndian.Uint32(b[8:]))
	case !bytes.Equal(b[28:60], key[:]):
		return Image{}, errors.New("entry holds another key")
	}
	n := binary.LittleEndian.Uint64(b[20:])
	if uint64(len(b)-headerSize) != n {
		return Image{}, fmt.Errorf("payload is %d bytes, header says %d", len(b)-headerSize, n)
	}
	data := b[headerSize:]
	if sum := sha256.Sum256(data); !bytes.Equal(sum[:], b[60:92]) {
		return Image{}, errors.New("checksum mismatch")
	}
	return Image{Data: data, PTX: binary.LittleEndian.Uint32(b[12:])&1 != 0, Arch: int(binary.LittleEndian.Uint32(b[16:]))}, nil
}

// readEntry reads and verifies the entry at path. It follows no symbolic
// link and opens without blocking (a FIFO there would block a plain open),
// takes only a regular file, and reads at most the header and maxImageSize
// bytes: anything else is an error, as is an absent file (fs.ErrNotExist).
func readEntry(path string, key [32]byte) (Image, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return Image{}, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return Image{}, err
	}
	const limit = headerSize + maxImageSize
	if !fi.Mode().IsRegular() {
		return Image{}, fmt.Errorf("%s is not a regular file (mode %v)", path, fi.Mode())
	}
	if fi.Size() > limit {
		return Image{}, fmt.Errorf("%s is %d bytes, over the %d of the largest entry", path, fi.Size(), limit)
	}
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return Image{}, err
	}
	if len(b) > limit {
		return Image{}, fmt.Errorf("%s grew past the %d bytes of the largest entry", path, limit)
	}
	return decodeEntry(key, b)
}

var diskFlight singleflight.Group

// CompileCached is Compile through the disk cache: it returns the verified
// entry for (source, opts.Flags, target, NVRTC version) if there is one,
// else compiles and writes the entry. Concurrent calls for one key in a
// process compile once (single-flight); processes race benignly (each
// renames a complete file into place). It needs NVRTC even on a hit, for the
// version in the key. When an entry cannot be written, or the directory is
// not private (ErrCacheDirInsecure), the disk cache turns off for its
// directory (see CacheStatus) and the compiled image is returned all the
// same. The directory is created with mode 0700. An entry is only ever read
// from a regular file (never through a symbolic link, never from a FIFO or
// device), and images over 64 MiB are not cached: a larger entry is bad,
// recompiled and replaced, without being read.
func CompileCached(source string, opts Options) (Image, error) {
	if opts.Arch <= 0 {
		return Image{}, fmt.Errorf("%w: Options.Arch must be set (e.g. 90 for sm_90)", ErrArch)
	}
	arch, ptx, err := Target(opts.Arch)
	if err != nil {
		return Image{}, err
	}
	dir, on := CacheDir()
	if !on {
		return compileFor(source, opts, arch, ptx)
	}
	major, minor, err := cuda.NVRTCVersion()
	if err != nil {
		return Image{}, err
	}
	exists, err := checkDir(dir)
	if err != nil {
		disable(dir, err)
		return compileFor(source, opts, arch, ptx)
	}
	key := diskKey(source, opts.Flags, arch, ptx, major, minor)
	name := hex.EncodeToString(key[:])
	path := filepath.Join(dir, name+".kernel")
	if !exists {
		stats.diskMisses.Add(1)
	} else if img, err := readEntry(path, key); err == nil {
		stats.diskHits.Add(1)
		return img, nil
	} else if errors.Is(err, fs.ErrNotExist) {
		stats.diskMisses.Add(1)
	} else {
		stats.diskBad.Add(1)
	}
	v, err, _ := diskFlight.Do(path, func() (any, error) {
		img, err := compileFor(source, opts, arch, ptx)
		if err != nil {
			return Image{}, err
		}
		if len(img.Data) > maxImageSize {
			return img, nil // too large to cache
		}
		if err := writeEntry(dir, path, encodeEntry(key, img)); err != nil {
			disable(dir, err) // the image is good: only the disk cache is lost
		} else {
			stats.diskWrites.Add(1)
		}
		return img, nil
	})
	return v.(Image), err
}

// writeEntry writes b to a temporary file in dir and renames it to path,
// creating dir (mode 0700) first if need be and checking it is private.
func writeEntry(dir, path string, b []byte) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	if _, err := checkDir(dir); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return err
	}
	_, werr := f.Write(b)
	cerr := f.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(f.Name())
		return err
	}
	if err := os.Rename(f.Name(), path); err != nil {
		os.Remove(f.Name())
		return err
	}
	return nil
}
