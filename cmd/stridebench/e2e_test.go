package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stridekit/stridekit/layout"
	"github.com/stridekit/stridekit/runtime/hostcopy"
)

// smallSuite is a suite of every kind of case, small enough for the host.
const smallSuite = `# test suite
contig    float32  64x64
t_f32     float32  256x256        src=perm(1,0)
t_x3      x3       40x56          src=perm(1,0)
p3210     float32  8x8x16x16      src=perm(3,2,1,0)
nchw      f16      2x16x8x8       dst=perm(0,3,1,2)
step3     float32  64x96          src=slice(:,::3)
flip      float32  64x64          src=flip(1)
bcast     float32  1x512          src=bcast(512,512)
slice_t   float32  128x256        src=slice(:,::2).perm(1,0)
rgb       uint8    64x32x3        src=perm(1,0,2)
`

func writeFile(t *testing.T, name, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// benchLine matches a Go benchmark line: name, iterations, then
// value-unit pairs.
var benchLine = regexp.MustCompile(`^(Benchmark\S+)\t *(\d+)((?:\t *[-0-9.e+]+ \S+)+)$`)

// parseBenchLines returns, per benchmark name, its metrics by unit, and
// checks that every line is a benchmark line, a "key: value" header, a
// failure report or a '#' comment.
func parseBenchLines(t *testing.T, out string) map[string]map[string]float64 {
	t.Helper()
	got := map[string]map[string]float64{}
	header := regexp.MustCompile(`^[a-z][a-zA-Z0-9_-]*: \S`)
	for _, line := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		if m := benchLine.FindStringSubmatch(line); m != nil {
			metrics := map[string]float64{}
			f := strings.Fields(m[3])
			if len(f)%2 != 0 {
				t.Fatalf("odd value/unit fields in %q", line)
			}
			for i := 0; i < len(f); i += 2 {
				v, err := strconv.ParseFloat(f[i], 64)
				if err != nil {
					t.Fatalf("value %q in %q: %v", f[i], line, err)
				}
				metrics[f[i+1]] = v
			}
			got[m[1]] = metrics
			continue
		}
		if header.MatchString(line) || strings.HasPrefix(line, "--- FAIL: ") || strings.HasPrefix(line, "    ") || strings.HasPrefix(line, "# ") {
			continue
		}
		t.Errorf("stdout line is no benchmark, header, failure or comment: %q", line)
	}
	return got
}

// TestRunCPUEndToEnd runs the whole pipeline with -device cpu: named and
// random cases, the correctness check, timings and every output.
func TestRunCPUEndToEnd(t *testing.T) {
	suite := writeFile(t, "suite.txt", smallSuite)
	dir := t.TempDir()
	jsonPath, mdPath, chartPath := filepath.Join(dir, "r.json"), filepath.Join(dir, "r.md"), filepath.Join(dir, "r.svg")
	var stdout, stderr bytes.Buffer
	code := runMain([]string{"run", "-device", "cpu", "-suite", suite, "-shrink", "256KiB", "-reps", "20", "-warmup", "1",
		"-latency-iters", "50", "-random", "4", "-random-views", "-seed", "9", "-quiet",
		"-json", jsonPath, "-md", mdPath, "-chart", chartPath}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d; stderr:\n%s\nstdout:\n%s", code, stderr.String(), stdout.String())
	}

	var rep report
	data, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Cases) != 10+4 || rep.Failed != 0 || rep.Device.Kind != "cpu" || rep.Reps != 20 {
		t.Fatalf("report: %d cases, %d failed, device %+v, reps %d", len(rep.Cases), rep.Failed, rep.Device, rep.Reps)
	}
	bench := parseBenchLines(t, stdout.String())
	for _, r := range rep.Cases {
		if r.Status != statusOK || r.Signature == "" || r.Path != "host" || r.Bytes <= 0 || r.Bytes > 256<<10 {
			t.Errorf("%s: status %s (%s), signature %q, bytes %d", r.Name, r.Status, r.Error, r.Signature, r.Bytes)
		}
		if !(r.TimeNs > 0 && r.MemcpyNs > 0 && r.PctMemcpy > 0 && r.PctRoofline > 0 && r.RoofBytes >= r.Bytes/2) {
			t.Errorf("%s: figures %+v", r.Name, r)
		}
		if r.Small && r.HostNsPerCopy <= 0 {
			t.Errorf("%s: small case without host time per copy", r.Name)
		}
		if r.Random != strings.HasPrefix(r.Name, "randv-s9-i") {
			t.Errorf("%s: random = %v", r.Name, r.Random)
		}
		m := bench["BenchmarkCopy/"+r.Name]
		if m == nil {
			t.Errorf("no benchmark line for %s", r.Name)
			continue
		}
		if m["ns/op"] != roundTo(r.TimeNs, 1) || m["pct-memcpy"] != roundTo(r.PctMemcpy, 2) || m["pct-roofline"] != roundTo(r.PctRoofline, 2) {
			t.Errorf("%s: benchmark line %v disagrees with JSON %v ns, %v%%, %v%%", r.Name, m, r.TimeNs, r.PctMemcpy, r.PctRoofline)
		}
		if mb := 2 * float64(r.Bytes) / r.TimeNs * 1e3; m["MB/s"] != roundTo(mb, 2) {
			t.Errorf("%s: MB/s %v, want %v", r.Name, m["MB/s"], mb)
		}
	}
	if !strings.Contains(stdout.String(), "# random cases: 4, 4 passed") {
		t.Errorf("no random summary on stdout:\n%s", stdout.String())
	}
	if s := rep.Random; s == nil || s.Cases != 4 || s.OK != 4 || len(s.Slowest) != 4 || s.MinPct > s.P10Pct || s.P10Pct > s.MedianPct {
		t.Errorf("random summary %+v", rep.Random)
	} else if s.Slowest[0].PctMemcpy != s.MinPct || s.Slowest[0].Signature == "" {
		t.Errorf("slowest %+v does not start at the minimum %v", s.Slowest[0], s.MinPct)
	}

	md, err := os.ReadFile(mdPath)
	if err != nil {
		t.Fatal(err)
	}
	checkMarkdownTable(t, string(md), len(rep.Cases))
	for _, s := range []string{"## Small copies", "## Random cases", "Slowest:"} {
		if !strings.Contains(string(md), s) {
			t.Errorf("markdown has no %q", s)
		}
	}
	if fi, err := os.Stat(chartPath); err != nil || fi.Size() < 1000 {
		t.Errorf("chart: %v, %v", fi, err)
	}
}

func roundTo(v float64, digits int) float64 {
	f, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'f', digits, 64), 64)
	return f
}

// checkMarkdownTable checks that the first table has a header, a rule and
// rows rows, all with the same number of cells.
func checkMarkdownTable(t *testing.T, md string, rows int) {
	t.Helper()
	var table []string
	for _, line := range strings.Split(md, "\n") {
		if strings.HasPrefix(line, "|") {
			table = append(table, line)
		} else if len(table) > 0 {
			break
		}
	}
	if len(table) != rows+2 {
		t.Fatalf("markdown table has %d lines, want %d:\n%s", len(table), rows+2, strings.Join(table, "\n"))
	}
	cells := strings.Count(strings.ReplaceAll(table[0], `\|`, ""), "|")
	for _, line := range table {
		if n := strings.Count(strings.ReplaceAll(line, `\|`, ""), "|"); n != cells {
			t.Errorf("row has %d cell borders, header %d: %q", n, cells, line)
		}
	}
}

// TestRunMismatch checks that a copy that writes wrong bytes fails its case
// with a description of the first difference, and that the run goes on.
func TestRunMismatch(t *testing.T) {
	cs, err := parseSuite(strings.NewReader("bad f32 32x32 src=perm(1,0)\nskip u8 64x64 src=perm(1,0)\ngood f32 32x32 src=perm(1,0)\n"), "s")
	if err != nil {
		t.Fatal(err)
	}
	be := newCPUBackend()
	calls := 0
	be.copy = func(dst []byte, dl layout.Layout, src []byte, sl layout.Layout) error {
		calls++
		switch {
		case dl.Itemsize() == 1: // leaves the destination unwritten
			return nil
		case calls == 1: // the first float32 copy writes one wrong byte
			err := hostcopy.Copy(dst, dl, src, sl)
			dst[40] ^= 1
			return err
		}
		return hostcopy.Copy(dst, dl, src, sl)
	}
	var done []string
	rs := runCases(context.Background(), prepare(cs, nil), be, runConfig{Reps: 20, Warmup: 1}, func(r *result) { done = append(done, r.Name) })
	if len(rs) != 3 || strings.Join(done, ",") != "bad,skip,good" {
		t.Fatalf("results %d, progress %v", len(rs), done)
	}
	if rs[0].Status != statusMismatch || !strings.Contains(rs[0].Error, "dst byte 40") {
		t.Errorf("bad: %s %q", rs[0].Status, rs[0].Error)
	}
	if rs[1].Status != statusMismatch || !strings.Contains(rs[1].Error, "never written") {
		t.Errorf("skip: %s %q", rs[1].Status, rs[1].Error)
	}
	if rs[2].Status != statusOK || rs[2].TimeNs <= 0 {
		t.Errorf("good: %s %q", rs[2].Status, rs[2].Error)
	}
	if rs[0].TimeNs != 0 {
		t.Errorf("a failed case was timed")
	}
	var out bytes.Buffer
	if err := writeBench(&out, &report{Cases: rs}); err != nil {
		t.Fatal(err)
	}
	bench := parseBenchLines(t, out.String())
	if len(bench) != 1 || bench["BenchmarkCopy/good"] == nil || !strings.Contains(out.String(), "--- FAIL: BenchmarkCopy/bad") {
		t.Errorf("benchmark output:\n%s", out.String())
	}
}

// TestRunBadCase checks that a case that cannot be built fails alone and
// the exit status says so.
func TestRunBadCase(t *testing.T) {
	suite := writeFile(t, "s.txt", "ok f32 16x16 src=perm(1,0)\nwrong f32 16x16 src=perm(0,1,2)\n")
	var stdout, stderr bytes.Buffer
	code := runMain([]string{"-device", "cpu", "-suite", suite, "-quiet", "-latency-iters", "0"}, &stdout, &stderr)
	if code != 1 {
		t.Fatalf("exit %d, want 1; stderr %s", code, stderr.String())
	}
	if !strings.Contains(stdout.String(), "BenchmarkCopy/ok\t") || !strings.Contains(stdout.String(), "--- FAIL: BenchmarkCopy/wrong") ||
		!strings.Contains(stdout.String(), "permutation") || !strings.Contains(stderr.String(), "1 of 2 cases failed") {
		t.Errorf("stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	}
}

func TestRunUsageErrors(t *testing.T) {
	suite := writeFile(t, "s.txt", "a f32 4x4\n")
	bad := writeFile(t, "bad.txt", "a f32 4x4\nb f32 4x4 src=perm(1,0\n")
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"-reps", "5"}, "-reps 5"},
		{[]string{"-reps", "x"}, "-reps"},
		{[]string{"-warmup", "0"}, "-warmup 0"},
		{[]string{"-device", "tpu"}, `-device "tpu"`},
		{[]string{"-device", "gpu:x"}, `-device "gpu:x"`},
		{[]string{"-chart", "c.jpg"}, `-chart "c.jpg"`},
		{[]string{"-case", "("}, `-case "("`},
		{[]string{"-frameworks", "torch,mxnet"}, `-frameworks: unknown framework "mxnet"`},
		{[]string{"-compare", "-frameworks", ""}, "-frameworks: empty list"},
		{[]string{"-shrink", "12XB"}, "-shrink"},
		{[]string{"-random", "-1"}, "-random -1"},
		{[]string{"-random", "2", "-random-bytes", "0"}, "-random-bytes 0"},
		{[]string{"-slowest", "-1"}, "-slowest -1"},
		{[]string{"-nosuchflag"}, "-nosuchflag"},
		{[]string{"extra"}, `unknown command "extra"`},
		{[]string{"run", "extra"}, `unexpected argument "extra"`},
		{[]string{"-suite", filepath.Join(t.TempDir(), "missing.txt")}, "-suite"},
		{[]string{"-suite", bad}, "-suite: " + bad + ":2"},
		{[]string{"-case", "nomatch"}, "no cases selected"},
	} {
		args := append([]string{"-device", "cpu", "-quiet", "-suite", suite}, tc.args...)
		if tc.args[0] == "frobnicate" || tc.args[0] == "extra" || tc.args[0] == "run" {
			args = tc.args
		}
		var stdout, stderr bytes.Buffer
		if code := runMain(args, &stdout, &stderr); code != 2 {
			t.Errorf("%v: exit %d, want 2", tc.args, code)
		}
		if !strings.Contains(stderr.String(), tc.msg) {
			t.Errorf("%v: stderr %q does not name %q", tc.args, stderr.String(), tc.msg)
		}
	}
}

func TestHelp(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := runMain([]string{"-h"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d", code)
	}
	help := stderr.String()
	for _, s := range []string{"-suite", "-case", "-random", "-seed", "-random-views", "-random-bytes", "-device", "-reps",
		"-warmup", "-latency-iters", "-shrink", "-compare", "-python", "-peers", "-frameworks", "-json", "-md", "-chart",
		"-slowest", "-quiet", "-list", "Case syntax", "perm(1,0)", "slice(:, ::2)", "bcast(", "flip(", "roofline",
		"32-byte sector", "Exit status", "stridebench tune", "stridebench report", "memview"} {
		if !strings.Contains(help, s) {
			t.Errorf("-h does not mention %q", s)
		}
	}
}

func TestList(t *testing.T) {
	suite := writeFile(t, "s.txt", smallSuite)
	var stdout, stderr bytes.Buffer
	if code := runMain([]string{"-suite", suite, "-case", "^t_", "-list", "-random", "2", "-seed", "3"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "t_f32 float32 256x256 src=perm(1,0)\t# moves 256 KiB") || !strings.HasPrefix(lines[1], "t_x3 opaque3 40x56") {
		t.Errorf("-list printed:\n%s", stdout.String())
	}
	// -random without -suite runs only random cases; -case picks one.
	stdout.Reset()
	if code := runMain([]string{"-list", "-random", "3", "-seed", "3", "-case", "i2$"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if !strings.HasPrefix(stdout.String(), "rand-s3-i2 ") || strings.Count(stdout.String(), "\n") != 1 {
		t.Errorf("-list -random printed:\n%s", stdout.String())
	}
}

func TestRunTooBig(t *testing.T) {
	cs, err := parseSuite(strings.NewReader("huge u8 262144x262144 src=perm(1,0)\n"), "s")
	if err != nil {
		t.Fatal(err)
	}
	be := newCPUBackend()
	be.copy = func([]byte, layout.Layout, []byte, layout.Layout) error {
		t.Fatal("a case past the size limit was run")
		return nil
	}
	rs := runCases(context.Background(), prepare(cs, nil), be, runConfig{Reps: 20, Warmup: 1}, nil)
	if rs[0].Status != statusError || !strings.Contains(rs[0].Error, "128 GiB, more than the 32 GiB") {
		t.Errorf("%s: %q", rs[0].Status, rs[0].Error)
	}
	var buf bytes.Buffer
	if n, err := writePeerCases(&buf, prepare(cs, nil)); n != 0 || err != nil || strings.TrimSpace(buf.String()) != "[]" {
		t.Errorf("the peers were sent %d cases (%v): %s", n, err, buf.String())
	}
}
