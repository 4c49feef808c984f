package main

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stridekit/stridekit/runtime/hostcopy"
)

// findPython returns a python3 that can import every module of mods, or
// skips t.
func findPython(t *testing.T, mods ...string) string {
	t.Helper()
	var cands []string
	if p, err := exec.LookPath("python3"); err == nil {
		cands = append(cands, p)
	}
	cands = append(cands, "/usr/bin/python3")
	for _, py := range cands {
		args := []string{"-c", "import sys"}
		for _, m := range mods {
			args[1] += "; import " + m
		}
		if exec.Command(py, args...).Run() == nil {
			return py
		}
	}
	t.Skipf("no python3 with %v", append([]string{"the standard library"}, mods...))
	return ""
}

func TestPeersScriptCompiles(t *testing.T) {
	py := findPython(t)
	out, err := exec.Command(py, "-c", "import py_compile, sys; py_compile.compile(sys.argv[1], cfile=sys.argv[2], doraise=True)",
		"peers.py", filepath.Join(t.TempDir(), "peers.pyc")).CombinedOutput()
	if err != nil {
		t.Fatalf("peers.py does not compile: %v\n%s", err, out)
	}
	disk, err := os.ReadFile("peers.py")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(disk, peersScript) {
		t.Error("the embedded peers.py differs from the file")
	}
}

func TestToPeerOps(t *testing.T) {
	b := mustBuild(t, "p f32 1x6x8 src=bcast(4,6,8).flip(-1).slice(1:3,-2,::-2).perm(1,0)")
	pc, err := toPeerCase(b)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(pc.Src)
	want := `[{"op":"bcast","shape":[4,6,8]},{"op":"flip","dims":[2]},` +
		`{"op":"slice","items":[{"start":1,"stop":3,"step":1},{"index":-2,"start":null,"stop":null,"step":0},{"start":null,"stop":null,"step":-2}]},` +
		`{"op":"perm","dims":[1,0]}]`
	if string(got) != want {
		t.Errorf("src ops\n got %s\nwant %s", got, want)
	}
	if pc.Name != "p" || pc.DType != "float32" || pc.Itemsize != 4 || pc.Bytes != 2*4*4 || !pc.Small || pc.Seed != caseSeed("p") ||
		len(pc.Dst) != 0 || shapeString(pc.DstBase) != "4x2" || shapeString(pc.Base) != "1x6x8" {
		t.Errorf("peer case %+v", pc)
	}
}

// peerTestCases are the cases the peer tests send: the small suite and
// random cases with views, shrunk to 64 KiB.
func peerTestCases(t *testing.T) []prepared {
	t.Helper()
	cs, err := parseSuite(strings.NewReader(smallSuite+"idx u8 6x7x5 src=slice(1:-1,3,::-2).perm(1,0)\ndsl f32 8x8 dst=slice(::-1,::2)\n"), "s")
	if err != nil {
		t.Fatal(err)
	}
	cs = append(cs, randomCases(randomSpec{N: 12, Seed: 4, Views: true, Bytes: 64 << 10})...)
	for i, c := range cs {
		if cs[i], err = shrinkCase(c, 64<<10); err != nil {
			t.Fatal(err)
		}
	}
	ps := prepare(cs, nil)
	for _, p := range ps {
		if p.Err != nil {
			t.Fatal(p.Err)
		}
	}
	return ps
}

// TestPeersSelfcheck checks that peers.py builds every case's views as
// this package does: the SHA-256 of its NumPy reference destination must
// equal that of runtime/hostcopy's copy of the same source pattern.
func TestPeersSelfcheck(t *testing.T) {
	py := findPython(t, "numpy")
	ps := peerTestCases(t)
	casesPath := filepath.Join(t.TempDir(), "cases.json")
	f, err := os.Create(casesPath)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := writePeerCases(f, ps); err != nil || n != len(ps) {
		t.Fatalf("wrote %d of %d cases: %v", n, len(ps), err)
	}
	f.Close()
	out, err := exec.Command(py, "peers.py", "--cases", casesPath, "--selfcheck").Output()
	if err != nil {
		t.Fatalf("peers.py --selfcheck: %v", err)
	}
	got := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		var line struct{ Name, Sha256 string }
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		got[line.Name] = line.Sha256
	}
	for _, p := range ps {
		b := p.Built
		src := make([]byte, b.SrcBytes)
		fillPattern(src, caseSeed(b.Case.Name))
		dst := make([]byte, b.DstBytes)
		fillBytes(dst, poisonByte)
		if err := hostcopy.Copy(dst[b.DstStart:b.DstStart+b.Dst.RequiredSizeInBytes()], b.Dst, src[b.SrcStart:b.SrcStart+b.Src.RequiredSizeInBytes()], b.Src); err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(dst)
		if want := hex.EncodeToString(sum[:]); got[b.Case.Name] != want {
			t.Errorf("%v: NumPy reference %s, hostcopy %s", b.Case, got[b.Case.Name], want)
		}
	}
}

// fakePeers stands in for peers.py: it answers for every case in the list
// with fixed figures, and reports the arguments it was given as versions.
const fakePeers = `import argparse, json, os, sys
ap = argparse.ArgumentParser()
for a in ("--cases", "--reps", "--warmup", "--latency-iters", "--frameworks"):
    ap.add_argument(a)
a = ap.parse_args()
print(json.dumps({"versions": {"reps": a.reps, "warmup": a.warmup, "latency": a.latency_iters, "frameworks": a.frameworks}}))
print("a line that is not JSON")
print("warming up", file=sys.stderr)
for c in json.load(open(a.cases)):
    torch = {"status": "ok", "time_s": 2e-6, "memcpy_s": 1e-6, "pct_memcpy": 50.0, "verified": True}
    if c["small"]:
        torch["host_s_per_copy"] = 7e-6
    print(json.dumps({"name": c["name"], "peers": {
        "torch": torch,
        "cupy": {"status": "error", "reason": "CUDARuntimeError: boom"},
        "jax": {"status": "ok", "pct_memcpy": 25.0, "trusted": False, "identity_pct_memcpy": 60.0}}}), flush=True)
if os.environ.get("FAKE_PEERS_FAIL"):
    sys.exit(3)
`

// TestPeersPlumbing runs -compare with a stand-in for peers.py and checks
// that its results reach every output.
func TestPeersPlumbing(t *testing.T) {
	py := findPython(t)
	script := writeFile(t, "fake_peers.py", fakePeers)
	suite := writeFile(t, "s.txt", "t f32 64x64 src=perm(1,0)\nf f32 64x64 src=flip(0)\n")
	jsonPath := filepath.Join(t.TempDir(), "r.json")
	mdPath := filepath.Join(t.TempDir(), "r.md")
	var stdout, stderr bytes.Buffer
	code := runMain([]string{"-device", "cpu", "-suite", suite, "-quiet", "-compare", "-python", py, "-peers", script,
		"-frameworks", "torch,cupy,jax", "-latency-iters", "10", "-json", jsonPath, "-md", mdPath}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	var rep report
	data, _ := os.ReadFile(jsonPath)
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatal(err)
	}
	if v := rep.Peers; v["reps"] != "30" || v["warmup"] != "5" || v["latency"] != "10" || v["frameworks"] != "torch,cupy,jax" {
		t.Errorf("script got %v", v)
	}
	bench := parseBenchLines(t, stdout.String())
	for _, r := range rep.Cases {
		torch, cupy, jax := r.Peers["torch"], r.Peers["cupy"], r.Peers["jax"]
		if torch == nil || cupy == nil || jax == nil {
			t.Fatalf("%s: peers %v", r.Name, r.Peers)
		}
		if torch.Ratio != r.PctMemcpy/50 || jax.Ratio != r.PctMemcpy/25 || cupy.Ratio != 0 || cupy.Reason != "CUDARuntimeError: boom" {
			t.Errorf("%s: ratios torch %v jax %v cupy %v for %v%% of memcpy", r.Name, torch.Ratio, jax.Ratio, cupy.Ratio, r.PctMemcpy)
		}
		if torch.HostS != 7e-6 {
			t.Errorf("%s: torch host time %v", r.Name, torch.HostS)
		}
		m := bench["BenchmarkCopy/"+r.Name]
		if m["torch-pct-memcpy"] != 50 || m["jax-pct-memcpy"] != 25 || m["torch-host-ns/copy"] != 7000 {
			t.Errorf("%s: benchmark metrics %v", r.Name, m)
		}
		if _, ok := m["cupy-pct-memcpy"]; ok {
			t.Errorf("%s: a failed peer has a metric", r.Name)
		}
	}
	md, _ := os.ReadFile(mdPath)
	for _, s := range []string{"| torch % | vs torch |", "25.0 (untrusted)", "| error |"} {
		if !strings.Contains(string(md), s) {
			t.Errorf("markdown has no %q", s)
		}
	}

	// A script that fails is reported, with its stderr, and fails the run;
	// the results it printed are kept.
	stdout.Reset()
	stderr.Reset()
	t.Setenv("FAKE_PEERS_FAIL", "1")
	code = runMain([]string{"-device", "cpu", "-suite", suite, "-quiet", "-compare", "-python", py, "-peers", script,
		"-frameworks", "torch,cupy", "-json", jsonPath}, &stdout, &stderr)
	if code != 1 || !strings.Contains(stderr.String(), "exit status 3") || !strings.Contains(stderr.String(), "warming up") {
		t.Errorf("failing script: exit %d, stderr %q", code, stderr.String())
	}
	data, _ = os.ReadFile(jsonPath)
	rep = report{}
	json.Unmarshal(data, &rep)
	if rep.PeersErr == "" || rep.Cases[0].Peers["torch"] == nil {
		t.Errorf("failing script: peer error %q, peers %v", rep.PeersErr, rep.Cases[0].Peers)
	}
}
