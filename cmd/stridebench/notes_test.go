package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadNotes parses a notes file: the preamble, rules in order, notes
// joined into one line, comments skipped; and the first matching rule
// wins, by name, signature or case line.
func TestReadNotes(t *testing.T) {
	text := `# a comment
Why the box tile is slow:
issue bound.

match ^btile:.*item=1,
Items of one byte:
gathered | byte by byte.
# not part of the note
match ^btile:
Other box tiles.
match src=slice
Strided sources.
`
	n, err := readNotes("notes.txt", strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	if n.preamble != "Why the box tile is slow:\nissue bound." {
		t.Errorf("preamble %q", n.preamble)
	}
	for _, c := range []struct {
		r    result
		want string
	}{
		{result{Name: "a", Signature: "btile:nd=2,item=1,vec=1,idx=32"}, "Items of one byte: gathered | byte by byte."},
		{result{Name: "b", Signature: "btile:nd=2,item=12,vec=1,idx=32"}, "Other box tiles."},
		{result{Name: "c", Signature: "elem:nd=1,item=4,vec=1,idx=32", Case: "c float32 8x8 src=slice(:,::2)"}, "Strided sources."},
		{result{Name: "d", Signature: "tile:nd=2,fast=0,item=4,vec=4,idx=32"}, ""},
	} {
		if got := n.noteFor(&c.r); got != c.want {
			t.Errorf("note for %s = %q, want %q", c.r.Name, got, c.want)
		}
	}
	if got := (*caseNotes)(nil).noteFor(&result{Name: "a"}); got != "" {
		t.Errorf("nil notes gave %q", got)
	}

	for _, c := range []struct{ text, want string }{
		{"match (\nnote\n", `notes.txt:1: match "(":`},
		{"pre\nmatch\nnote\n", "notes.txt:2: match: no expression"},
		{"match a\nnote a\nmatch b\n\n", `notes.txt: match "b" (rule 2): no note`},
	} {
		if _, err := readNotes("notes.txt", strings.NewReader(c.text)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("readNotes(%q) error %v, want %q", c.text, err, c.want)
		}
	}
}

// TestReportNotes writes a record with -notes and finds the preamble above
// the short cases' table and each short case's note in its row; a bad
// notes file is a usage failure that names the flag.
func TestReportNotes(t *testing.T) {
	dir := t.TempDir()
	run := filepath.Join(dir, "run.json")
	data, err := json.Marshal(fakeReport())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(run, data, 0o644); err != nil {
		t.Fatal(err)
	}
	notes := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(notes, []byte("Measured with ncu.\nmatch ^btile:.*item=1,\nByte gathers | per element.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "bench.md")
	var stdout, stderr bytes.Buffer
	if code := runMain([]string{"report", "-json", run, "-notes", notes, "-no-chart", "-o", out}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	data, err = os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	short := section(string(data), "Cases short of 90%")
	if !strings.Contains(short, "\nMeasured with ncu.\n") {
		t.Errorf("no preamble in:\n%s", short)
	}
	var row string
	for _, line := range strings.Split(short, "\n") {
		if strings.HasPrefix(line, "| small |") {
			row = line
		}
	}
	if !strings.HasSuffix(row, `| Byte gathers \| per element. |`) {
		t.Errorf("row of the short case: %q", row)
	}

	if err := os.WriteFile(notes, []byte("match [\nx\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	stderr.Reset()
	if code := runMain([]string{"report", "-json", run, "-notes", notes, "-no-chart", "-o", out}, &stdout, &stderr); code != 1 || !strings.Contains(stderr.String(), "-notes: ") {
		t.Errorf("bad notes: exit %d, stderr %q", code, stderr.String())
	}
}
