package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// section returns the markdown of the section titled title ("## title"),
// up to the next section.
func section(md, title string) string {
	i := strings.Index(md, "\n## "+title+"\n")
	if i < 0 {
		return ""
	}
	rest := md[i+1:]
	if j := strings.Index(rest[3:], "\n## "); j >= 0 {
		return rest[:j+4]
	}
	return rest
}

// tableRows returns the first cell of each data row of the first table in
// md.
func tableRows(md string) []string {
	var out []string
	rows := 0
	for _, line := range strings.Split(md, "\n") {
		if !strings.HasPrefix(line, "|") {
			if rows > 0 {
				break
			}
			continue
		}
		rows++
		if rows <= 2 {
			continue // header and rule
		}
		out = append(out, strings.TrimSpace(strings.Split(line, "|")[1]))
	}
	return out
}

// TestReportCPU makes the record from two -device cpu runs (the small suite
// with a stand-in for the peers, and random cases) and checks every section
// against the JSON it was made from.
func TestReportCPU(t *testing.T) {
	py := findPython(t)
	dir := t.TempDir()
	suite := writeFile(t, "suite.txt", smallSuite)
	script := writeFile(t, "fake_peers.py", fakePeers)
	named, random := filepath.Join(dir, "named.json"), filepath.Join(dir, "random.json")
	var stdout, stderr bytes.Buffer
	if code := runMain([]string{"run", "-device", "cpu", "-suite", suite, "-shrink", "256KiB", "-quiet", "-latency-iters", "20",
		"-compare", "-python", py, "-peers", script, "-json", named}, &stdout, &stderr); code != 0 {
		t.Fatalf("named run: exit %d: %s", code, stderr.String())
	}
	if code := runMain([]string{"run", "-device", "cpu", "-random", "12", "-seed", "5", "-random-bytes", "128KiB", "-quiet",
		"-latency-iters", "0", "-slowest", "4", "-json", random}, &stdout, &stderr); code != 0 {
		t.Fatalf("random run: exit %d: %s", code, stderr.String())
	}
	smi := writeFile(t, "smi.txt", "name, driver_version\nFake GPU, 580.1\n")
	md := filepath.Join(dir, "docs", "benchmarks.md")
	os.MkdirAll(filepath.Dir(md), 0o755)
	stdout.Reset()
	stderr.Reset()
	if code := runMain([]string{"report", "-json", named, "-json2", random, "-smi", smi, "-o", md}, &stdout, &stderr); code != 0 {
		t.Fatalf("report: exit %d: %s", code, stderr.String())
	}
	data, err := os.ReadFile(md)
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	rn, err := readReport(named)
	if err != nil {
		t.Fatal(err)
	}
	rr, err := readReport(random)
	if err != nil {
		t.Fatal(err)
	}

	// Setup and commands.
	setup := section(text, "Setup")
	for _, s := range []string{"| date | " + rn.Started.UTC().Format("2006-01-02 15:04 UTC") + " |", "| device | " + rn.Device.Name,
		"| NVRTC |", "| CUDA (driver API) |", "| NVIDIA driver |", "| peers | ", "Fake GPU, 580.1"} {
		if !strings.Contains(setup, s) {
			t.Errorf("setup has no %q:\n%s", s, setup)
		}
	}
	if !strings.Contains(text, "**Not a GPU measurement.**") {
		t.Error("a -device cpu record is not marked")
	}
	cmds := section(text, "Commands")
	wantCmd := "stridebench run -device cpu -suite " + suite + " -shrink 256KiB -quiet -latency-iters 20 -compare -python " + py + " -peers " + script + " -json " + named
	if !strings.Contains(cmds, wantCmd+"\n") || !strings.Contains(cmds, "stridebench run -device cpu -random 12 -seed 5 -random-bytes 128KiB") {
		t.Errorf("commands:\n%s\nwant %s", cmds, wantCmd)
	}

	// The named table: one row per named case, in order, with every peer.
	nt := section(text, "Named cases")
	var names []string
	for _, r := range rn.Cases {
		names = append(names, r.Name)
	}
	if got := tableRows(nt); !slices.Equal(got, names) {
		t.Errorf("named rows %v, want %v", got, names)
	}
	for _, s := range []string{"| torch % | vs torch | cupy % | vs cupy | jax % | vs jax |", "25.0 (untrusted)", "![", "](benchmarks.png)"} {
		if !strings.Contains(nt, s) {
			t.Errorf("named section has no %q:\n%s", s, nt)
		}
	}
	for _, r := range rn.Cases {
		row := fmt.Sprintf("| %s | %s | %s | %.1f | %.1f | %.1f |", r.Name, r.Signature, mib(r.Bytes), r.PctMemcpy, r.PctRoofline, r.RoofPctMemcpy)
		if !strings.Contains(nt, row) {
			t.Errorf("no row %q", row)
		}
	}
	if b, err := os.ReadFile(filepath.Join(dir, "docs", "benchmarks.png")); err != nil || !bytes.HasPrefix(b, []byte("\x89PNG")) {
		t.Errorf("chart: %v", err)
	}

	// The random sweep, from the second run.
	rs := section(text, "Random cases")
	s := rr.Random
	for _, want := range []string{"12 random permutations (seed 5, about 128 KiB each",
		fmt.Sprintf("| %% of memcpy | %.1f | %.1f | %.1f |", s.MinPct, s.P10Pct, s.MedianPct),
		fmt.Sprintf("| %% of roofline | %.1f | %.1f | %.1f |", s.MinRoof, s.P10Roof, s.MedianRoof), "The 4 slowest:"} {
		if !strings.Contains(rs, want) {
			t.Errorf("random section has no %q:\n%s", want, rs)
		}
	}
	for _, e := range s.Slowest {
		if !strings.Contains(rs, "| "+e.Name+" | "+e.Signature+" |") {
			t.Errorf("slowest %s missing", e.Name)
		}
	}

	// Where a peer is faster: exactly the cases whose torch (50%) or jax
	// (25%) figure beats stridekit's.
	var wantWins []string
	all := append(slices.Clone(rn.Cases), rr.Cases...)
	for _, r := range all {
		for _, p := range []struct {
			n   string
			pct float64
		}{{"torch", 50}, {"jax", 25}} {
			if r.Peers[p.n] != nil && r.Status == statusOK && r.PctMemcpy < p.pct {
				wantWins = append(wantWins, r.Name+"/"+p.n)
			}
		}
	}
	var gotWins []string
	for _, line := range strings.Split(section(text, "Where a peer is faster"), "\n") {
		if c := strings.Split(line, "|"); len(c) > 5 && c[1] != " case " && !strings.HasPrefix(c[1], "---") {
			gotWins = append(gotWins, strings.TrimSpace(c[1])+"/"+strings.TrimSpace(c[4]))
		}
	}
	if !slices.Equal(gotWins, wantWins) {
		t.Errorf("peer wins %v, want %v", gotWins, wantWins)
	}

	// Short of 90%: every case under 90% of memcpy, or of its roofline
	// where the roofline is more than 1% below memcpy.
	var wantShort []string
	for _, r := range all {
		ref := r.PctMemcpy
		if r.RoofBytes > 2*r.Bytes*100/99 {
			ref = r.PctRoofline
		}
		if r.Status == statusOK && ref < 90 {
			wantShort = append(wantShort, r.Name)
		}
	}
	short := section(text, "Cases short of 90%")
	gotShort := tableRows(short)
	slices.Sort(gotShort)
	slices.Sort(wantShort)
	if !slices.Equal(gotShort, wantShort) {
		t.Errorf("short of 90%%: %v, want %v", gotShort, wantShort)
	}
	for _, r := range all {
		if slices.Contains(wantShort, r.Name) {
			if !regexp.MustCompile(fmt.Sprintf(`\| %s \| %s \| %d \| %d \| %d \| `, regexp.QuoteMeta(r.Name), regexp.QuoteMeta(r.Signature), r.Bytes, r.SrcSectors, r.DstSectors)).MatchString(short) {
				t.Errorf("short row of %s lacks its signature, bytes or sectors", r.Name)
			}
			if r.SrcSectors <= 0 || r.DstSectors <= 0 || 32*(r.SrcSectors+r.DstSectors) != r.RoofBytes {
				t.Errorf("%s: sectors %d + %d for %d roofline bytes", r.Name, r.SrcSectors, r.DstSectors, r.RoofBytes)
			}
		}
	}

	// The summary: each named case's % of memcpy and the distribution.
	sum := stdout.String()
	for _, r := range rn.Cases {
		if !regexp.MustCompile(fmt.Sprintf(`(?m)^  %s +%.1f$`, regexp.QuoteMeta(r.Name), r.PctMemcpy)).MatchString(sum) {
			t.Errorf("summary has no line for %s:\n%s", r.Name, sum)
		}
	}
	if want := fmt.Sprintf("random (seed 5): 12 cases, 12 passed; %% of memcpy: median %.1f, p10 %.1f, min %.1f", s.MedianPct, s.P10Pct, s.MinPct); !strings.Contains(sum, want) {
		t.Errorf("summary:\n%s\nwant %q", sum, want)
	}
	if want := fmt.Sprintf("short of 90%%: %d cases; a peer faster: %d; failed: 0", len(wantShort), len(wantWins)); !strings.Contains(sum, want) {
		t.Errorf("summary:\n%s\nwant %q", sum, want)
	}
}

func TestReference(t *testing.T) {
	for _, tc := range []struct {
		roof      float64
		want, ref string
	}{
		{66.7, "roof", "roofline"},  // a[:, ::2]: twice the sectors
		{99.99, "memcpy", "memcpy"}, // a transpose whose rows end mid-sector
		{199.8, "memcpy", "memcpy"}, // a broadcast reads less than memcpy
		{0, "memcpy", "memcpy"},
	} {
		r := &result{PctMemcpy: 10, PctRoofline: 20, RoofPctMemcpy: tc.roof}
		pct, ref := reference(r)
		if want := map[string]float64{"roof": 20, "memcpy": 10}[tc.want]; pct != want || ref != tc.ref {
			t.Errorf("roofline at %v%% of memcpy: %v %s, want %v %s", tc.roof, pct, ref, want, tc.ref)
		}
	}
}

// TestReportMarks checks the banners of interrupted and failed runs, the
// failed-cases section and the shell quoting of commands.
func TestReportMarks(t *testing.T) {
	rep := fakeReport()
	rep.Interrupted = "interrupted after 3 of 7 cases"
	rep.PeersErr = "peer frameworks: exit status 3"
	rep.Args = []string{"-case", "t_f32|small", "-json", "it's.json"}
	var out bytes.Buffer
	if err := (&record{main: rep, shortOf: 90}).write(&out); err != nil {
		t.Fatal(err)
	}
	md := out.String()
	for _, s := range []string{"**Incomplete run.** `stridebench run -case 't_f32|small' -json 'it'\\''s.json'` was interrupted after 3 of 7 cases.",
		"**The peer run failed**", "## Failed cases", "| broken | mismatch | dst byte 3 \\| differs |",
		"| GPU | Test GPU (sm_90, 132 SMs, L2 50 MiB) |", "| CUDA (driver API) | – (cuDriverGetVersion 13000) |"} {
		if !strings.Contains(md, s) {
			t.Errorf("record has no %q:\n%s", s, md)
		}
	}
	if strings.Contains(md, "Not a GPU measurement") || strings.Contains(md, "## Random cases") || strings.Contains(md, "![") {
		t.Errorf("unexpected banner, random section or chart:\n%s", md)
	}
	// A peer's better figure on t_f32 (torch 60% against 90%) is no win;
	// small (40%) is short of 90%.
	if !strings.Contains(section(md, "Where a peer is faster"), "No case") || !slices.Equal(tableRows(section(md, "Cases short of 90%")), []string{"small"}) {
		t.Errorf("peer wins or short cases wrong:\n%s", md)
	}
}

func TestReportUsage(t *testing.T) {
	notRun := writeFile(t, "x.json", `{"tool": "other"}`)
	bad := writeFile(t, "bad.json", `{`)
	for _, tc := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{}, 2, "-json: no run given"},
		{[]string{"-json", "a", "-chart", "c.gif"}, 2, `-chart "c.gif"`},
		{[]string{"-json", "a", "-short-of", "0"}, 2, "-short-of 0"},
		{[]string{"-json", "a", "-o", ""}, 2, "-o: empty"},
		{[]string{"-json", "a", "x"}, 2, `unexpected argument "x"`},
		{[]string{"-json", filepath.Join(t.TempDir(), "missing.json")}, 1, "no such file"},
		{[]string{"-json", notRun}, 1, `not a stridebench run (tool "other")`},
		{[]string{"-json", bad}, 1, "bad.json"},
	} {
		var stdout, stderr bytes.Buffer
		if code := runMain(append([]string{"report"}, tc.args...), &stdout, &stderr); code != tc.code || !strings.Contains(stderr.String(), tc.msg) {
			t.Errorf("report %v: exit %d, stderr %q; want %d and %q", tc.args, code, stderr.String(), tc.code, tc.msg)
		}
	}
	var stdout, stderr bytes.Buffer
	if code := runMain([]string{"report", "-h"}, &stdout, &stderr); code != 0 || !strings.Contains(stderr.String(), "Cases short of") {
		t.Errorf("report -h: exit %d: %s", code, stderr.String())
	}
}

// TestRunCasesInterrupted checks that a cancelled context stops the run
// between cases and keeps the results so far.
func TestRunCasesInterrupted(t *testing.T) {
	cs, err := parseSuite(strings.NewReader("a f32 8x8 src=perm(1,0)\nb f32 8x8 src=perm(1,0)\nc f32 8x8\n"), "s")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	rs := runCases(ctx, prepare(cs, nil), newCPUBackend(), runConfig{Reps: 20, Warmup: 1}, func(r *result) {
		if r.Name == "b" {
			cancel()
		}
	})
	if len(rs) != 2 || rs[0].Name != "a" || rs[1].Name != "b" || rs[1].Status != statusOK {
		t.Errorf("results after the cancel: %d", len(rs))
	}
}

// TestDriverRelease keeps a recorded version, falls back to nvidia-smi's
// driver_version column for a recorded word, and gives "" without either.
func TestDriverRelease(t *testing.T) {
	smi := "name, driver_version, memory.total [MiB]\nNVIDIA H200, 580.159.04, 143771 MiB\n"
	for _, c := range []struct{ rec, smi, want string }{
		{"580.65.06", smi, "580.65.06"},
		{"for", smi, "580.159.04"},
		{"", smi, "580.159.04"},
		{"for", "", ""},
		{"for", "name, memory.total [MiB]\nNVIDIA H200, 143771 MiB\n", ""},
		{"for", "name, driver_version\nNVIDIA H200, N/A\n", ""},
	} {
		if got := driverRelease(c.rec, c.smi); got != c.want {
			t.Errorf("driverRelease(%q, %q) = %q, want %q", c.rec, c.smi, got, c.want)
		}
	}
}
