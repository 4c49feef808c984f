package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestPlanCmd(t *testing.T) {
	for _, c := range []struct {
		name   string
		args   []string
		status int
		want   string // substring of stdout (status 0) or stderr
	}{
		{"transpose is a tile copy", []string{"-dst", "(64,32):(32,1)x4", "-src", "(64,32):(1,64)x4"}, 0, "signature  tile:nd=2,fast=0,item=4"},
		{"same-order dense is a memcpy", []string{"-dst", "(8,8)x2", "-src", "(8,8)x2"}, 0, "class      memcpy"},
		{"shape mismatch is refused", []string{"-dst", "(8,8)x4", "-src", "(8,9)x4"}, 1, "shape"},
		{"overlapping dst is refused", []string{"-dst", "(8,8):(1,1)x4", "-src", "(8,8)x4"}, 1, "overlap"},
		{"bad layout text is a usage error", []string{"-dst", "(8,8)", "-src", "(8,8)x4"}, 2, "-dst"},
		{"missing -src is a usage error", []string{"-dst", "(8,8)x4"}, 2, "required"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			got := planCmd(c.args, &out, &errb)
			if got != c.status {
				t.Fatalf("status %d, want %d; stderr: %s", got, c.status, errb.String())
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
