// Package cstr reads the C strings that libraries loaded with purego
// return (error names and messages), and trims loader errors to one line.
package cstr

import (
	"strings"
	"unsafe"
)

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
