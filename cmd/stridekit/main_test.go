package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestRun(t *testing.T) {
	for _, c := range []struct {
		name   string
		args   []string
		status int
		want   string // substring of stdout (status 0) or stderr
	}{
		{"transpose of big matrices is a tile copy", []string{"plan", "-dst", "(128,64):(64,1)x4", "-src", "(128,64):(1,128)x4"}, 0, "signature  tile:nd=2,fast=0,item=4"},
		{"dtype names stand for item sizes", []string{"plan", "-dst", "(128,64)xfloat32", "-src", "(128,64):(1,128)xf32"}, 0, "signature  tile:nd=2,fast=0,item=4"},
		{"odd transposes are box tiles, runs shown", []string{"plan", "-dst", "(61,67)x2", "-src", "(61,67):(1,61)x2"}, 0, "tile       [61 67]"},
		{"same-order dense is a memcpy", []string{"plan", "-dst", "(8,8)x2", "-src", "(8,8)xbf16"}, 0, "class      memcpy"},
		{"dtypes must match", []string{"plan", "-dst", "(8,8)xf16", "-src", "(8,8)xbf16"}, 1, "dtypes differ"},
		{"shape mismatch is refused", []string{"plan", "-dst", "(8,8)x4", "-src", "(8,9)x4"}, 1, "shape"},
		{"overlapping dst is refused", []string{"plan", "-dst", "(8,8):(1,1)x4", "-src", "(8,8)x4"}, 1, "overlap"},
		{"bad layout text names the flag", []string{"plan", "-dst", "(8,8)", "-src", "(8,8)x4"}, 2, "-dst"},
		{"unknown dtype names the flag", []string{"plan", "-dst", "(8,8)xfloat7", "-src", "(8,8)x4"}, 2, "-dst"},
		{"missing -src names it", []string{"plan", "-dst", "(8,8)x4"}, 2, "-src is required"},
		{"bad alignment names the flag", []string{"plan", "-dst", "(8)x4", "-src", "(8)x4", "-src-align", "3"}, 2, "-src-align"},
		{"unknown flag names it", []string{"plan", "-bogus"}, 2, "-bogus"},
		{"plan -h exits 0 and explains LAYOUT", []string{"plan", "-h"}, 0, "(shape):(strides)xITEM"},
		{"copy -h exits 0", []string{"copy", "-h"}, 0, "-dtype"},
		{"copy with a bad dtype names the flag", []string{"copy", "-dtype", "nope"}, 2, "-dtype"},
		{"copy with a bad size names the flag", []string{"copy", "-n", "0"}, 2, "-n"},
		{"help exits 0", []string{"-h"}, 0, "usage"},
		{"no command is a usage error", nil, 2, "usage"},
		{"unknown command", []string{"frobnicate"}, 2, "unknown command"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			got := run(c.args, &out, &errb)
			if got != c.status {
				t.Fatalf("status %d, want %d; stdout %q stderr %q", got, c.status, out.String(), errb.String())
			}
			text := out.String()
			if c.status != 0 {
				text = errb.String()
			}
			if !strings.Contains(text, c.want) {
				t.Errorf("output %q does not contain %q", text, c.want)
			}
		})
	}
}

// TestCopyRuns runs the quick start's copy: on a GPU if there is one, else
// on the host; either way the result is checked by the command itself.
func TestCopyRuns(t *testing.T) {
	var out, errb bytes.Buffer
	if st := run([]string{"copy", "-n", "300", "-dtype", "f16", "-reps", "3"}, &out, &errb); st != 0 {
		t.Fatalf("status %d: %s", st, errb.String())
	}
	if !strings.Contains(out.String(), "transposed [300 300] float16") || !strings.Contains(out.String(), "checked") {
		t.Errorf("output %q", out.String())
	}
}
