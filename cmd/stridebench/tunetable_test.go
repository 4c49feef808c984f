package main

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/stridekit/stridekit/gen"
	"github.com/stridekit/stridekit/layout"
)

func parseTable(t *testing.T, text string) []gen.TuningEntry {
	t.Helper()
	es, err := gen.ParseTuning("test", strings.NewReader(text))
	if err != nil {
		t.Fatalf("table does not parse: %v\n%s", err, text)
	}
	return es
}

func entry(arch int, class layout.Class, item, vec int, kv ...any) gen.TuningEntry {
	e := gen.TuningEntry{Arch: arch, Class: class, Item: item, Vec: vec, Set: map[string]int{}}
	for i := 0; i < len(kv); i += 2 {
		e.Set[kv[i].(string)] = kv[i+1].(int)
	}
	return e
}

// header returns the lines of a table before its first entry.
func header(text string) string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		if _, ok := entryArch(line); ok {
			break
		}
		out = append(out, line)
	}
	return strings.Join(out, "\n")
}

// otherLines returns the lines of text that are neither entries of arch nor
// the tuner's comments for it.
func otherLines(text string, arch int) []string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		if a, ok := entryArch(line); ok && a == archName(arch) || strings.HasPrefix(line, strings.TrimSpace(blockPrefix(arch))) {
			continue
		}
		out = append(out, line)
	}
	return out
}

// TestRewriteTuning rewrites the table compiled into gen, less its sm_90
// block, and checks that
// the result parses back (gen.ParseTuning) to the old entries plus the new
// ones, keeps the header, the comments and the "any" lines byte for byte,
// and that a second rewrite (a re-run) replaces the first one's block in
// place without touching another architecture or an entry it does not
// rewrite.
func TestRewriteTuning(t *testing.T) {
	old := untunedTable()
	oldEntries := parseTable(t, old)
	tuned := []gen.TuningEntry{
		entry(90, layout.ClassElementwise, 0, 0, "threads", 512, "rows", 4),
		entry(90, layout.ClassTile, 2, 8, "threads", 128, "wordcols", 1),
		entry(90, layout.ClassBoxTile, 3, 0, "threads", 256, "tilebytes", 24576, "loadlanes", 16, "storelanes", 4, "blockbytes", 8192),
	}
	note := []string{"first line of the note,", "second."}
	text, err := rewriteTuning(old, 90, note, tuned)
	if err != nil {
		t.Fatal(err)
	}
	got := parseTable(t, text)
	if want := append(oldEntries[:len(oldEntries):len(oldEntries)], tuned...); !reflect.DeepEqual(got, want) {
		t.Errorf("entries after the rewrite\n got %v\nwant %v", got, want)
	}
	if header(text) != header(old) {
		t.Errorf("header changed:\n%s", header(text))
	}
	if !strings.HasPrefix(text, old) {
		t.Errorf("the old table is not kept whole before the new block:\n%s", text)
	}
	for _, line := range []string{
		"# sm_90: first line of the note,", "# sm_90: second.",
		"sm_90 elem * * threads=512 rows=4",
		"sm_90 tile 2 8 threads=128 wordcols=1",
		"sm_90 btile 3 * threads=256 blockbytes=8192 tilebytes=24576 loadlanes=16 storelanes=4",
	} {
		if !strings.Contains(text, "\n"+line+"\n") {
			t.Errorf("rewritten table has no line %q:\n%s", line, text)
		}
	}

	// A table with another architecture and an sm_90 entry the re-run
	// does not rewrite; the re-run's block replaces the first in place.
	withOthers := strings.Replace(text, "# sm_90: second.\n", "# sm_90: second.\nsm_90 btile 5 * threads=128\n", 1) +
		"\n# Hand-tuned for an A100.\nsm_80 elem * * threads=128 rows=2\n"
	parseTable(t, withOthers)
	rerun := []gen.TuningEntry{
		entry(90, layout.ClassBoxTile, 3, 0, "threads", 512, "tilebytes", 16384, "loadlanes", 8, "storelanes", 2, "blockbytes", 32768),
		entry(90, layout.ClassElementwise, 0, 0, "threads", 256, "rows", 2),
	}
	text2, err := rewriteTuning(withOthers, 90, []string{"re-run."}, rerun)
	if err != nil {
		t.Fatal(err)
	}
	got2 := parseTable(t, text2)
	if !reflect.DeepEqual(otherLines(text2, 90), otherLines(withOthers, 90)) {
		t.Errorf("lines other than sm_90's changed:\n%s", text2)
	}
	// The new entries first, then the old ones no new entry replaces, in
	// their order.
	want90 := append(rerun, entry(90, layout.ClassBoxTile, 5, 0, "threads", 128), tuned[1])
	if g := entriesOf(got2, 90); !reflect.DeepEqual(g, want90) {
		t.Errorf("sm_90 entries after the re-run\n got %v\nwant %v", g, want90)
	}
	if g := entriesOf(got2, 80); len(g) != 1 || g[0].Set["rows"] != 2 {
		t.Errorf("sm_80 entries %v", g)
	}
	if strings.Contains(text2, "first line of the note") || strings.Count(text2, "# sm_90: re-run.") != 1 {
		t.Errorf("the old note was not replaced:\n%s", text2)
	}
	if i, j := strings.Index(text2, "# sm_90: re-run."), strings.Index(text2, "# Hand-tuned for an A100."); i < 0 || j < i {
		t.Errorf("the block moved past the sm_80 lines:\n%s", text2)
	}
	// Rewriting with the same entries is a fixed point.
	text3, err := rewriteTuning(text2, 90, []string{"re-run."}, rerun)
	if err != nil || text3 != text2 {
		t.Errorf("a second identical rewrite changed the table (%v):\n%s", err, text3)
	}

	// A table without the arch's entries gets the block at its end, after a
	// blank line.
	plain := "# a table\nany elem * * threads=256 rows=4"
	text4, err := rewriteTuning(plain, 90, nil, tuned[:1])
	if want := plain + "\n\nsm_90 elem * * threads=512 rows=4\n"; err != nil || text4 != want {
		t.Errorf("rewrite of a table without sm_90 = %q, %v; want %q", text4, err, want)
	}
}

func TestRewriteTuningErrors(t *testing.T) {
	good := []gen.TuningEntry{entry(90, layout.ClassElementwise, 0, 0, "threads", 128)}
	for _, tc := range []struct {
		old     string
		arch    int
		entries []gen.TuningEntry
		msg     string
	}{
		{"any elem * * threads=x\n", 90, good, "threads=x"},
		{"any elem * * threads=256\n", 0, good, "arch 0"},
		{"any elem * * threads=256\n", 90, []gen.TuningEntry{entry(80, layout.ClassElementwise, 0, 0, "threads", 128)}, "not of sm_90"},
		{"any elem * * threads=256\n", 90, append(good, good...), "two entries for sm_90 elem * *"},
		{"any elem * * threads=256\n", 90, []gen.TuningEntry{entry(90, layout.ClassElementwise, 0, 0, "rows", -1)}, "does not parse"},
	} {
		_, err := rewriteTuning(tc.old, tc.arch, nil, tc.entries)
		if !errors.Is(err, errTable) || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("rewrite of %q for arch %d with %v: %v, want an errTable naming %q", tc.old, tc.arch, tc.entries, err, tc.msg)
		}
	}
}

// TestTableKnobs checks the lookup against gen.KnobsFor on the table
// compiled into gen, and the specificity rules on a table with an arch of
// its own.
func TestTableKnobs(t *testing.T) {
	gen.ClearOverrides()
	embedded := parseTable(t, gen.TuningTable())
	for _, c := range []layout.Class{layout.ClassElementwise, layout.ClassTile, layout.ClassBroadcast, layout.ClassFill, layout.ClassBoxTile} {
		for _, item := range []uint8{1, 2, 3, 4, 8, 12, 16} {
			for _, vec := range []uint8{1, 2, 4, 8, 16} {
				for _, arch := range []int{0, 80, 90, 100} {
					sig := layout.Signature{Class: c, NDim: 2, Itemsize: item, Vec: vec}
					if got, want := gen.LookupKnobs(embedded, sig, arch), gen.KnobsFor(sig, arch); got != want {
						t.Errorf("%v on arch %d: %+v, gen.KnobsFor %+v", sig, arch, got, want)
					}
				}
			}
		}
	}
	es := parseTable(t, `any tile * * threads=256 wordcols=0
any tile * 8 threads=128
sm_90 tile * * wordcols=1
sm_90 tile 2 * threads=512
sm_90 tile 2 8 threads=64
`)
	for _, tc := range []struct {
		item, vec, arch int
		threads         int
		wordcols        bool
	}{
		{4, 4, 80, 256, false}, {4, 8, 80, 128, false}, {4, 8, 90, 128, true},
		{2, 4, 90, 512, true}, {2, 8, 90, 64, true}, {2, 8, 80, 128, false},
	} {
		k := gen.LookupKnobs(es, layout.Signature{Class: layout.ClassTile, NDim: 2, Itemsize: uint8(tc.item), Vec: uint8(tc.vec)}, tc.arch)
		if k.Threads != tc.threads || k.WordCols != tc.wordcols || k.Rows != 1 || k.TileBytes != layout.DefaultTileBytes {
			t.Errorf("tile item %d vec %d on %d: %+v, want threads %d wordcols %v", tc.item, tc.vec, tc.arch, k, tc.threads, tc.wordcols)
		}
	}
}

func TestKnobNames(t *testing.T) {
	var k gen.Knobs
	for i, name := range gen.KnobNames() {
		if !k.Set(name, i+1) {
			t.Errorf("Set(%q) = false", name)
		}
	}
	want := gen.Knobs{Threads: 1, Rows: 2, Unroll: 3, BlockBytes: 4, WordCols: true, StageStores: true, Pipe: 7, TileBytes: 8, LoadLanes: 9, StoreLanes: 10, ElemStore: true, Siblings: true, GatherWord: 13, Specialise: true, WordStore: 15, TripleStore: 16, SpecialiseDims: 17, OverlapTables: true, CalcOffsets: true, LoadGrain: 20, CutFirst: 21, SpecialiseSrcRun: 22, CutRuns: 23}
	if k != want {
		t.Errorf("Set: %+v, want %+v", k, want)
	}
	for i, name := range gen.KnobNames() {
		v := i + 1
		if name == "wordcols" || name == "stagestores" || name == "elemstore" || name == "overlaptables" || name == "calcoffsets" || name == "siblings" || name == "specialise" {
			v = 1
		}
		if got := knobValue(k, name); got != v {
			t.Errorf("knobValue(%s) = %d, want %d", name, got, v)
		}
	}
	if got := formatEntry(entry(0, layout.ClassBoxTile, 12, 0, "storelanes", 2, "threads", 128)); got != "any btile 12 * threads=128 storelanes=2" {
		t.Errorf("formatEntry: %q", got)
	}
}

func TestReadWriteTable(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "t.txt")
	text, from, err := readTable(p)
	if err != nil || text != gen.TuningTable() || !strings.Contains(from, "compiled into") {
		t.Fatalf("missing file: %q from %q, %v", text, from, err)
	}
	if err := writeTable(p, "any elem * * threads=128\n"); err != nil {
		t.Fatal(err)
	}
	text, from, err = readTable(p)
	if err != nil || text != "any elem * * threads=128\n" || from != p {
		t.Errorf("read back %q from %q, %v", text, from, err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("temporary files left: %v", ents)
	}
	if err := writeTable(filepath.Join(dir, "no", "such", "t.txt"), "x"); !errors.Is(err, errTable) {
		t.Errorf("write into a missing directory: %v", err)
	}
}

// entriesOf returns the entries of arch in entries, in table order.
func entriesOf(entries []gen.TuningEntry, arch int) []gen.TuningEntry {
	var out []gen.TuningEntry
	for _, e := range entries {
		if e.Arch == arch {
			out = append(out, e)
		}
	}
	return slices.Clip(out)
}
