// Package meminfo reads the host's memory figures from /proc/meminfo, for
// the size checks made before large host allocations (memview's host
// copies, the commands' matrices and cases).
package meminfo

import (
	"math"
	"os"
	"strconv"
	"strings"
)

// Total returns MemTotal in bytes, or 0 where it is not known (not Linux,
// or not readable).
func Total() uint64 { return field("MemTotal:") }

// Available returns MemAvailable in bytes, or 0 where it is not known.
func Available() uint64 { return field("MemAvailable:") }

// field returns the named /proc/meminfo field (in kB there) in bytes, or
// 0.
func field(name string) uint64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	return parse(string(b), name)
}

// parse returns field name of a /proc/meminfo text in bytes, or 0 when it
// is missing, malformed or would overflow.
func parse(text, name string) uint64 {
	for line := range strings.Lines(text) {
		rest, ok := strings.CutPrefix(line, name)
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			return 0
		}
		kb, err := strconv.ParseUint(f[0], 10, 64)
		if err != nil || kb > math.MaxUint64/1024 {
			return 0
		}
		return kb * 1024
	}
	return 0
}
