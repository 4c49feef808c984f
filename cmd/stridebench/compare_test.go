package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeRun writes a run of cases to a JSON file in dir and returns its path.
func writeRun(t *testing.T, dir, name string, cases ...*result) string {
	t.Helper()
	data, err := json.Marshal(&report{Tool: "stridebench", Cases: cases})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// timed is a passed case of item bytes and signature sig that took ns at
// pct % of memcpy.
func timed(name string, item int, sig string, ns, pct float64) *result {
	return &result{Name: name, Case: name + " case", Itemsize: item, Signature: sig, Status: statusOK, TimeNs: ns, PctMemcpy: pct}
}

func TestCompare(t *testing.T) {
	dir := t.TempDir()
	old := writeRun(t, dir, "old.json",
		timed("a", 1, "btile:nd=3,item=1", 200, 40),
		timed("b", 1, "btile:nd=2,item=1", 100, 80),
		timed("c", 4, "tile:nd=2,fast=0,item=4", 100, 90),
		timed("gone", 4, "elem:nd=1,item=4", 100, 90),
		&result{Name: "broken", Status: "mismatch"})
	nw := writeRun(t, dir, "new.json",
		timed("a", 1, "btile:nd=3,item=1", 100, 80),       // 2x faster
		timed("b", 1, "btile:nd=2,item=1", 101, 79),       // within 3%
		timed("c", 4, "tile:nd=2,fast=0,item=4", 125, 72), // 0.8x
		&result{Name: "broken", Status: statusOK, TimeNs: 1},
		timed("extra", 2, "elem:nd=1,item=2", 100, 90))
	var out, errs bytes.Buffer
	if code := runMain([]string{"compare", "-old", old, "-new", nw}, &out, &errs); code != 0 {
		t.Fatalf("exit %d: %s", code, errs.String())
	}
	s := out.String()
	geo := math.Cbrt(2 * (100.0 / 101) * 0.8)
	for _, want := range []string{
		"# cases in both runs: 3 (left out: 3)",
		"geomean " + format3(geo) + ", min 0.800, max 2.000; 1 cases more than 3% faster, 1 slower",
		"before 40.0 / 40.0 / 80.0, after 72.0 / 72.0 / 79.0",
		"#   1 B         2   60.0 ->  79.5  " + format3(math.Sqrt(2*100.0/101)),
		"#   4 B         1   90.0 ->  72.0  0.800",
		"#   btile       2",
		"#   tile        1",
		"# slowest after:\n#   0.800   90.0 ->  72.0%  tile:nd=2,fast=0,item=4  c case",
		"# fastest after:\n#   2.000   40.0 ->  80.0%  btile:nd=3,item=1  a case",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q:\n%s", want, s)
		}
	}
}

// format3 is x as compare prints ratios.
func format3(x float64) string { return fmt.Sprintf("%.3f", x) }

func TestCompareErrors(t *testing.T) {
	dir := t.TempDir()
	ok := writeRun(t, dir, "ok.json", timed("a", 1, "btile:nd=3,item=1", 100, 50))
	other := writeRun(t, dir, "other.json", timed("b", 1, "btile:nd=3,item=1", 100, 50))
	notRun := filepath.Join(dir, "not.json")
	if err := os.WriteFile(notRun, []byte(`{"tool": "other"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"compare", "-new", ok}, 2, "-old: no run given"},
		{[]string{"compare", "-old", ok}, 2, "-new: no run given"},
		{[]string{"compare", "-old", ok, "-new", ok, "-threshold", "-1"}, 2, "-threshold -1"},
		{[]string{"compare", "-old", ok, "-new", ok, "-list", "-2"}, 2, "-list -2"},
		{[]string{"compare", "-old", filepath.Join(dir, "missing.json"), "-new", ok}, 1, "-old: "},
		{[]string{"compare", "-old", ok, "-new", notRun}, 1, "not a stridebench run"},
		{[]string{"compare", "-old", ok, "-new", other}, 1, "no case passed in both runs (2 left out)"},
	} {
		var out, errs bytes.Buffer
		code := runMain(c.args, &out, &errs)
		if code != c.code || !strings.Contains(errs.String(), c.msg) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d and %q", c.args, code, errs.String(), c.code, c.msg)
		}
	}
}
