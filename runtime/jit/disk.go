package jit

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"golang.org/x/sync/singleflight"

	"github.com/stridekit/stridekit/runtime/cuda"
)

// CacheDir returns the disk cache directory and whether the disk cache is
// on: $STRIDEKIT_CACHE_DIR, else $XDG_CACHE_HOME/stridekit, else
// ~/.cache/stridekit; off when STRIDEKIT_CACHE=off or no directory can be
// named.
func CacheDir() (string, bool) {
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

// Entry file layout: magic, version, flags (bit 0: PTX), arch, payload
// length, key, sha256 of the payload, payload. Integers little-endian.
const (
	entryMagic   = "STRDKJIT"
	entryVersion = 1
	headerSize   = 8 + 4 + 4 + 4 + 8 + 32 + 32
)

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

var (
	diskFlight singleflight.Group
	warned     sync.Map // dir → struct{}: warned once about it
)

// warnOnce logs, once per directory, that the disk cache cannot be used.
func warnOnce(dir string, err error) {
	if _, loaded := warned.LoadOrStore(dir, struct{}{}); !loaded {
		log.Printf("stridekit: jit: disk cache %s unusable, caching in memory only: %v", dir, err)
	}
}

// CompileCached is Compile through the disk cache: it returns the verified
// entry for (source, opts.Flags, target, NVRTC version) if there is one,
// else compiles and writes the entry. Concurrent calls for one key in a
// process compile once (single-flight); processes race benignly (each
// renames a complete file into place). It needs NVRTC even on a hit, for the
// version in the key.
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
	key := diskKey(source, opts.Flags, arch, ptx, major, minor)
	name := hex.EncodeToString(key[:])
	path := filepath.Join(dir, name+".kernel")
	if b, err := os.ReadFile(path); err == nil {
		if img, err := decodeEntry(key, b); err == nil {
			stats.diskHits.Add(1)
			return img, nil
		}
		stats.diskBad.Add(1)
	} else if errors.Is(err, fs.ErrNotExist) {
		stats.diskMisses.Add(1)
	}
	v, err, _ := diskFlight.Do(path, func() (any, error) {
		img, err := compileFor(source, opts, arch, ptx)
		if err != nil {
			return Image{}, err
		}
		if err := writeEntry(dir, path, encodeEntry(key, img)); err != nil {
			warnOnce(dir, err)
		} else {
			stats.diskWrites.Add(1)
		}
		return img, nil
	})
	return v.(Image), err
}

// writeEntry writes b to a temporary file in dir and renames it to path.
func writeEntry(dir, path string, b []byte) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
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
