package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestMain lets the test binary stand in for the stridebench command (for
// TestBenchGPUScript) when $STRIDEBENCH_TEST_AS_COMMAND is 1.
func TestMain(m *testing.M) {
	if os.Getenv("STRIDEBENCH_TEST_AS_COMMAND") == "1" {
		os.Exit(runMain(os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// TestBenchGPUScript runs scripts/bench-gpu with this test binary standing
// in for gpubin/stridebench, its runs moved to the host (-device cpu, small
// cases, a stand-in for peers.py): every step runs under its timeout, the
// outputs land in $OUT, a failing step (the tune: no GPU here) does not
// stop the others, and the summary comes last.
func TestBenchGPUScript(t *testing.T) {
	for _, tool := range []string{"bash", "timeout", "diff"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("no %s", tool)
		}
	}
	py := findPython(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	peers := writeFile(t, "fake_peers.py", fakePeers)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	wrapper := filepath.Join(dir, "stridebench")
	script := `#!/bin/sh
cmd=$1; shift
if [ "$cmd" = run ]; then
	set -- run -device cpu -shrink 256KiB -latency-iters 10 -reps 20 -peers '` + peers + `' "$@"
else
	set -- "$cmd" "$@"
fi
STRIDEBENCH_TEST_AS_COMMAND=1 exec '` + self + `' "$@"
`
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", filepath.Join("..", "..", "scripts", "bench-gpu"),
		"-random", "5", "-seed", "7", "-random-bytes", "128KiB", "-tune-budget", "5s", "-python", py)
	cmd.Env = append(os.Environ(), "OUT="+out, "STRIDEBENCH="+wrapper)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("bench-gpu: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	for _, f := range []string{"named.json", "named.md", "named.png", "named.txt", "random.json", "random.txt",
		"tuning.txt", "tune.txt", "benchmarks.md", "benchmarks.png", "summary.txt", "bench.log"} {
		if fi, err := os.Stat(filepath.Join(out, f)); err != nil || fi.Size() == 0 && f != "tune.txt" {
			t.Errorf("%s: %v", f, err)
		}
	}
	table, _ := os.ReadFile(filepath.Join(out, "tuning.txt"))
	repoTable, _ := os.ReadFile(filepath.Join("..", "..", "gen", "tuning.txt"))
	if !bytes.Equal(table, repoTable) {
		t.Error("the tune changed the table without a GPU")
	}
	log, _ := os.ReadFile(filepath.Join(out, "bench.log"))
	for _, s := range []string{"== named: " + wrapper + " run -compare -python " + py + " -quiet -json " + out + "/named.json",
		"== random: " + wrapper + " run -random 5 -seed 7 -random-bytes 128KiB -compare", "== tune: " + wrapper + " tune -o " + out + "/tuning.txt -budget 5s",
		"stridebench tune: -device gpu:0:"} {
		if !strings.Contains(string(log), s) {
			t.Errorf("bench.log has no %q:\n%s", s, log)
		}
	}
	md, _ := os.ReadFile(filepath.Join(out, "benchmarks.md"))
	for _, s := range []string{"## Named cases", "| torch % | vs torch |", "## Random cases", "seed 7", "## Cases short of 90%", "](benchmarks.png)"} {
		if !strings.Contains(string(md), s) {
			t.Errorf("benchmarks.md has no %q", s)
		}
	}
	// The summary comes last: the record's, then what each step returned.
	got := stdout.String()
	i := strings.Index(got, "== summary")
	if i < 0 {
		t.Fatalf("no summary:\n%s", got)
	}
	tail := got[i:]
	for _, s := range []string{"named cases (% of memcpy):", "\n  transpose_f32 ", "random (seed 7): 5 cases, 5 passed; % of memcpy: median ",
		"\nnamed: ok\n", "\nrandom: ok\n", "\ntune: exit 1\n", "\nreport: ok\n"} {
		if !strings.Contains(tail, s) {
			t.Errorf("summary has no %q:\n%s", s, tail)
		}
	}
	if !strings.HasSuffix(got, "report: ok\n") {
		t.Errorf("stdout does not end with the steps' results:\n%s", got)
	}
}

// TestABRunScript runs scripts/ab-run.sh (gpubin/ab/run.sh) with this test
// binary standing in for both builds, its runs moved to the host (-device
// cpu, small cases): each build runs the seed's cases and the named suite,
// and the comparison of each pair comes last.
func TestABRunScript(t *testing.T) {
	for _, tool := range []string{"bash", "timeout", "paste"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("no %s", tool)
		}
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	wrapper := `#!/bin/sh
cmd=$1; shift
if [ "$cmd" = run ]; then
	set -- run -shrink 256KiB -latency-iters 10 "$@"
else
	set -- "$cmd" "$@"
fi
STRIDEBENCH_TEST_AS_COMMAND=1 exec '` + self + `' "$@"
`
	for _, b := range []string{"old", "new"} {
		if err := os.WriteFile(filepath.Join(dir, b), []byte(wrapper), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "revisions.txt"), []byte("old aaaa\nnew bbbb\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	script, err := os.ReadFile(filepath.Join("..", "..", "scripts", "ab-run.sh"))
	if err != nil {
		t.Fatal(err)
	}
	run := filepath.Join(dir, "run.sh")
	if err := os.WriteFile(run, script, 0o755); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	cmd := exec.Command("bash", run, "-device", "cpu", "-seeds", "3", "-random", "4", "-bytes", "64KiB")
	cmd.Env = append(os.Environ(), "OUT="+out)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("ab-run.sh: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	for _, s := range []string{"seed3 old: exit 0; # random cases: 4, 4 passed", "seed3 new: exit 0", "named old: exit 0", "named new: exit 0",
		"== compare-seed3 (old aaaa new bbbb)\n# cases in both runs: 4 (left out: 0)", "== compare-named (old aaaa new bbbb)\n# cases in both runs: "} {
		if !strings.Contains(stdout.String(), s) {
			t.Errorf("output lacks %q:\n%s", s, stdout.String())
		}
	}
	for _, f := range []string{"seed3-old.json", "seed3-new.json", "named-old.json", "named-new.json", "compare-seed3.txt", "compare-named.txt"} {
		if fi, err := os.Stat(filepath.Join(out, f)); err != nil || fi.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
}
