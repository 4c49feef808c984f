// Package dlib holds what the loaders of libraries opened with purego (the
// CUDA driver, NVRTC, NCCL) share: where a library is looked for, and the
// C strings it returns (error names and messages).
package dlib

import (
	"path/filepath"
	"strings"
	"unsafe"
)

// Candidates returns, in search order, the libraries to try: the one
// $envVar names, alone (named is true: a library the user named that cannot
// be loaded is an error, never a reason to fall back on another), else the
// sonames, then each of them in $CUDA_HOME/lib64 and /usr/local/cuda/lib64.
// getenv reads the environment.
func Candidates(getenv func(string) string, envVar string, sonames ...string) (c []string, named bool) {
	if p := getenv(envVar); p != "" {
		return []string{p}, true
	}
	c = append(c, sonames...)
	var dirs []string
	if h := getenv("CUDA_HOME"); h != "" {
		dirs = append(dirs, filepath.Join(h, "lib64"))
	}
	dirs = append(dirs, "/usr/local/cuda/lib64")
	for _, d := range dirs {
		for _, n := range sonames {
			c = append(c, filepath.Join(d, n))
		}
	}
	return c, false
}

// maxLen bounds how much of a string GoString reads: what these libraries
// return is a name or a message, and a pointer to something else must not
// walk memory for ever.
const maxLen = 64 << 10

// GoString copies the NUL-terminated C string at p (at most 64 KiB of it);
// "" for a null pointer.
func GoString(p uintptr) string {
	if p == 0 {
		return ""
	}
	ptr := *(*unsafe.Pointer)(unsafe.Pointer(&p))
	n := 0
	for n < maxLen && *(*byte)(unsafe.Add(ptr, n)) != 0 {
		n++
	}
	return string(unsafe.Slice((*byte)(ptr), n))
}

// FirstLine returns s up to its first newline (dlopen's errors can run on).
func FirstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
