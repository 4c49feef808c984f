package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// fakeReport is a report of three cases: one passed with all three peers
// (JAX untrusted), one small case with latencies, one failed.
func fakeReport() *report {
	no := false
	rs := []*result{
		{Name: "t_f32", Case: "t_f32 float32 64x64 src=perm(1,0)", DType: "float32", Itemsize: 4, Shape: []int64{64, 64},
			Signature: "tile:nd=2,fast=0,item=4,vec=4,idx=32", Bytes: 16384, RoofBytes: 32768, Status: statusOK,
			TimeNs: 2000, GBps: 16.384, MemcpyNs: 1800, PctMemcpy: 90, RooflineNs: 1800, PctRoofline: 90, RoofPctMemcpy: 100,
			Reps: 20, Batch: 3, Pairs: 1,
			Peers: map[string]*peerResult{
				"torch": {Status: "ok", TimeS: 3e-6, MemcpyS: 1.8e-6, PctMemcpy: 60, Verified: true, HostS: 5e-6},
				"cupy":  {Status: "unsupported", Reason: "no"},
				"jax":   {Status: "ok", PctMemcpy: 45, Trusted: &no, IdentityPct: 50},
			}},
		{Name: "small", Case: "small u8 64x64 src=perm(1,0)", DType: "uint8", Itemsize: 1, Shape: []int64{64, 64},
			Signature: "btile:nd=2,item=1,vec=1,idx=32", Bytes: 4096, RoofBytes: 8192, Status: statusOK, Small: true,
			TimeNs: 3000, PctMemcpy: 40, PctRoofline: 40, RoofPctMemcpy: 100, Reps: 20, Batch: 70, HostNsPerCopy: 4500, FloorNsPerCopy: 2100},
		{Name: "broken", Case: "broken f32 4x4", DType: "float32", Itemsize: 4, Status: statusMismatch, Error: "dst byte 3 | differs"},
	}
	for _, r := range rs {
		fillRatios(r)
	}
	return &report{Tool: "stridebench", Device: deviceInfo{Kind: "gpu", Name: "Test GPU", Arch: 90, SMs: 132, L2Bytes: 50 << 20, Driver: 13000, Timing: "CUDA events"},
		Reps: 20, Warmup: 5, Cases: rs, Failed: 1, Peers: map[string]string{"torch": "2.11"}}
}

func TestFillRatios(t *testing.T) {
	rep := fakeReport()
	p := rep.Cases[0].Peers
	if p["torch"].Ratio != 1.5 || p["jax"].Ratio != 2 || p["cupy"].Ratio != 0 {
		t.Errorf("ratios torch %v jax %v cupy %v, want 1.5 2 0", p["torch"].Ratio, p["jax"].Ratio, p["cupy"].Ratio)
	}
}

func TestWriteBench(t *testing.T) {
	var out bytes.Buffer
	if err := writeBench(&out, fakeReport()); err != nil {
		t.Fatal(err)
	}
	bench := parseBenchLines(t, out.String())
	want := map[string]map[string]float64{
		"BenchmarkCopy/t_f32": {"ns/op": 2000, "MB/s": 16384, "pct-memcpy": 90, "pct-roofline": 90,
			"torch-pct-memcpy": 60, "jax-pct-memcpy": 45, "torch-host-ns/copy": 5000},
		"BenchmarkCopy/small": {"ns/op": 3000, "MB/s": 2730.67, "pct-memcpy": 40, "pct-roofline": 40,
			"host-ns/copy": 4500, "floor-ns/copy": 2100},
	}
	if !reflect.DeepEqual(bench, want) {
		t.Errorf("benchmark lines\n got %v\nwant %v\noutput:\n%s", bench, want, out.String())
	}
	if !strings.Contains(out.String(), "BenchmarkCopy/t_f32\t      60\t") {
		t.Errorf("iterations should be reps·batch = 60:\n%s", out.String())
	}
	for _, s := range []string{"goos: ", "goarch: ", "pkg: github.com/stridekit/stridekit/cmd/stridebench", "device: Test GPU",
		"--- FAIL: BenchmarkCopy/broken\n    mismatch: dst byte 3 | differs"} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("output has no %q", s)
		}
	}
}

func TestWriteJSON(t *testing.T) {
	rep := fakeReport()
	var out bytes.Buffer
	if err := writeJSON(&out, rep); err != nil {
		t.Fatal(err)
	}
	var back report
	if err := json.Unmarshal(out.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(&back, rep) {
		t.Errorf("JSON round trip differs:\n got %+v\nwant %+v", back, *rep)
	}
	var raw map[string]any
	json.Unmarshal(out.Bytes(), &raw)
	c0 := raw["cases"].([]any)[0].(map[string]any)
	for _, k := range []string{"name", "case", "signature", "time_ns", "gbps", "pct_memcpy", "pct_roofline", "roofline_bytes", "peers"} {
		if _, ok := c0[k]; !ok {
			t.Errorf("case JSON has no %q: %v", k, c0)
		}
	}
	if torch := c0["peers"].(map[string]any)["torch"].(map[string]any); torch["stridekit_ratio"] != 1.5 {
		t.Errorf("torch peer JSON %v", torch)
	}
}

func TestWriteMarkdown(t *testing.T) {
	var out bytes.Buffer
	if err := writeMarkdown(&out, fakeReport()); err != nil {
		t.Fatal(err)
	}
	md := out.String()
	checkMarkdownTable(t, md, 3)
	for _, s := range []string{"Test GPU (sm_90, 132 SMs, L2 50 MiB, driver 13000)", "| torch % | vs torch |", "| jax % | vs jax |",
		"| 60.0 | 1.50× |", "45.0 (untrusted)", "unsupported", "**mismatch**: dst byte 3 \\| differs",
		"## Small copies", "| small | 4096 | 4.50 µs | 2.10 µs | – |", "Peer versions: torch 2.11;"} {
		if !strings.Contains(md, s) {
			t.Errorf("markdown has no %q:\n%s", s, md)
		}
	}
	if strings.Contains(md, "## Random cases") {
		t.Error("random section without random cases")
	}
}

func TestSummarizeRandom(t *testing.T) {
	if summarizeRandom(fakeReport().Cases, 3) != nil {
		t.Error("summary without random cases")
	}
	var rs []*result
	for i := 1; i <= 20; i++ {
		rs = append(rs, &result{Name: fmt.Sprint("r", i), Random: true, Status: statusOK, PctMemcpy: float64(100 - i), PctRoofline: float64(200 - i), Signature: fmt.Sprint("sig", i)})
	}
	rs = append(rs, &result{Name: "bad", Random: true, Status: statusError}, &result{Name: "named", Status: statusOK, PctMemcpy: 1})
	s := summarizeRandom(rs, 3)
	if s.Cases != 21 || s.OK != 20 || s.MinPct != 80 || s.P10Pct != 81 || s.MedianPct != 89.5 || s.MinRoof != 180 || s.MedianRoof != 189.5 {
		t.Errorf("summary %+v", s)
	}
	if len(s.Slowest) != 3 || s.Slowest[0].Name != "r20" || s.Slowest[2].Name != "r18" || s.Slowest[0].Signature != "sig20" {
		t.Errorf("slowest %+v", s.Slowest)
	}
}

func TestWriteChart(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"c.png", "c.svg"} {
		p := filepath.Join(dir, name)
		if err := writeChart(p, fakeReport()); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if name == "c.png" && !bytes.HasPrefix(b, []byte("\x89PNG\r\n")) {
			t.Errorf("%s is not a PNG", name)
		}
		if name == "c.svg" && (!bytes.Contains(b, []byte("<svg")) || !bytes.Contains(b, []byte("roofline")) || !bytes.Contains(b, []byte("torch"))) {
			t.Errorf("%s is not an SVG with the roofline and the torch series", name)
		}
	}
	if err := writeChart(filepath.Join(dir, "c.gif"), fakeReport()); err == nil || !strings.Contains(err.Error(), ".png or .svg") {
		t.Errorf("gif: %v", err)
	}
}

func TestChartCasesCap(t *testing.T) {
	var rs []*result
	for i := range 10 {
		rs = append(rs, &result{Name: fmt.Sprint("n", i), Status: statusOK, PctMemcpy: 50})
	}
	for i := range 300 {
		rs = append(rs, &result{Name: fmt.Sprint("r", i), Random: true, Status: statusOK, PctMemcpy: float64(1000 - i)})
	}
	got, note := chartCases(rs)
	if len(got) != 10+chartSlowestRand || !strings.Contains(note, "60 of 310") {
		t.Fatalf("%d cases, note %q", len(got), note)
	}
	if got[10].Name != "r299" || got[len(got)-1].Name != fmt.Sprint("r", 300-chartSlowestRand) {
		t.Errorf("random cases charted: %s … %s, want the slowest", got[10].Name, got[len(got)-1].Name)
	}
	if small, note := chartCases(rs[:20]); len(small) != 20 || note != "" {
		t.Errorf("20 cases: %d charted, note %q", len(small), note)
	}
}

func TestSizes(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
	}{{"4096", 4096}, {"64KiB", 64 << 10}, {"64k", 64 << 10}, {"256MiB", 256 << 20}, {"256M", 256 << 20}, {"1GiB", 1 << 30}, {"2gb", 2 << 30}, {"0", 0}} {
		got, err := parseSize(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{"", "x", "-1", "1.5MiB", "12XB", "99999999999G"} {
		if _, err := parseSize(bad); err == nil {
			t.Errorf("parseSize(%q) gave no error", bad)
		}
	}
	for _, tc := range []struct {
		n    int64
		want string
	}{{300, "300 B"}, {4096, "4 KiB"}, {1 << 30, "1 GiB"}, {716_046_336, "682.9 MiB"}} {
		if got := humanSize(tc.n); got != tc.want {
			t.Errorf("humanSize(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
}

func TestBenchSummaryPeers(t *testing.T) {
	no := false
	peer := func(pct float64) map[string]*peerResult {
		return map[string]*peerResult{"jax": {Status: "ok", PctMemcpy: pct}}
	}
	untrusted := map[string]*peerResult{"jax": {Status: "ok", PctMemcpy: 200, Trusted: &no}}
	rep := &report{Cases: []*result{
		{Name: "r0", Random: true, Status: statusOK, PctMemcpy: 90, Peers: peer(60)},  // 1.5
		{Name: "r1", Random: true, Status: statusOK, PctMemcpy: 40, Peers: peer(50)},  // 0.8
		{Name: "r2", Random: true, Status: statusOK, PctMemcpy: 95, Peers: peer(100)}, // 0.95
		{Name: "r3", Random: true, Status: statusOK, PctMemcpy: 80},                   // no peer
		{Name: "r4", Random: true, Status: statusOK, PctMemcpy: 80, Peers: untrusted}, // left out
		{Name: "named", Status: statusOK, PctMemcpy: 10, Peers: peer(90)},             // not random
	}}
	for _, r := range rep.Cases {
		fillRatios(r)
	}
	rep.Random = summarizeRandom(rep.Cases, 0)
	var out bytes.Buffer
	if err := writeBenchSummary(&out, rep); err != nil {
		t.Fatal(err)
	}
	want := "# random cases against jax: stridekit faster on 1 of 3; ratio of % of memcpy (stridekit / jax) median 0.95, min 0.80; 1 under 0.9; 1 left out (timing untrusted)\n"
	if !strings.Contains(out.String(), want) {
		t.Errorf("summary lacks %q:\n%s", want, out.String())
	}
	if strings.Contains(out.String(), "against torch") {
		t.Errorf("summary has a peer that did not run:\n%s", out.String())
	}

	// A peer whose every timing is untrusted is still reported.
	rep.Cases = []*result{{Name: "r4", Random: true, Status: statusOK, PctMemcpy: 80, Peers: untrusted}}
	fillRatios(rep.Cases[0])
	rep.Random = summarizeRandom(rep.Cases, 0)
	out.Reset()
	if err := writeBenchSummary(&out, rep); err != nil {
		t.Fatal(err)
	}
	want = "# random cases against jax: no trusted timing; 1 left out (timing untrusted)\n"
	if !strings.Contains(out.String(), want) {
		t.Errorf("summary lacks %q:\n%s", want, out.String())
	}
}
