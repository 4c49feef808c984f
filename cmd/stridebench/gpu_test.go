package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stridekit/stridekit/gen"
	"github.com/stridekit/stridekit/internal/testenv"
)

// TestRunGPU runs the harness on the GPU: every kind of case passes its
// correctness check and gets sane figures; small cases rotate over several
// array pairs and get their latencies.
func TestRunGPU(t *testing.T) {
	testenv.NeedGPU(t)
	testenv.NeedNVRTC(t)
	suite := writeFile(t, "suite.txt", smallSuite+"big_t f32 2048x2048 src=perm(1,0)\n")
	jsonPath := filepath.Join(t.TempDir(), "r.json")
	var stdout, stderr bytes.Buffer
	code := runMain([]string{"-device", "gpu", "-suite", suite, "-random", "4", "-random-views", "-random-bytes", "1MiB",
		"-quiet", "-reps", "20", "-latency-iters", "200", "-json", jsonPath}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d; stderr:\n%s\nstdout:\n%s", code, stderr.String(), stdout.String())
	}
	t.Logf("\n%s", stdout.String())
	var rep report
	data, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Device.Kind != "gpu" || rep.Device.L2Bytes <= 0 || len(rep.Cases) != 11+4 || rep.Device.CUDA == "" || rep.Device.NVRTC == "" {
		t.Fatalf("device %+v, %d cases", rep.Device, len(rep.Cases))
	}
	for _, r := range rep.Cases {
		if r.Status != statusOK {
			t.Errorf("%s: %s: %s", r.Name, r.Status, r.Error)
			continue
		}
		if !(r.TimeNs > 0 && r.MemcpyNs > 0 && r.PctMemcpy > 0 && r.PctRoofline > 0) {
			t.Errorf("%s: figures %+v", r.Name, r)
		}
		if r.Path != "device" || r.Signature == "" {
			t.Errorf("%s: memview path %q, signature %q", r.Name, r.Path, r.Signature)
		}
		if r.Small && (r.Pairs < 2 || r.HostNsPerCopy <= 0 || r.FloorNsPerCopy <= 0) {
			t.Errorf("%s: small case with %d pairs, host %v ns, floor %v ns", r.Name, r.Pairs, r.HostNsPerCopy, r.FloorNsPerCopy)
		}
	}
}

// TestTuneGPU tunes a few families on the GPU with small cases and one
// round, into a new table: every family tuned gets an entry of the GPU's
// architecture with values from its sweep, and the table keeps the
// compiled-in one whole.
func TestTuneGPU(t *testing.T) {
	dev := testenv.NeedGPU(t)
	testenv.NeedNVRTC(t)
	out := filepath.Join(t.TempDir(), "tuning.txt")
	fams := "^(btile/3|btile/16|tile/4x4|elem|fill)$"
	var stdout, stderr bytes.Buffer
	code := runMain([]string{"tune", "-o", out, "-family", fams, "-bytes", "16MiB", "-budget", "90s", "-reps", "10", "-rounds", "1"}, &stdout, &stderr)
	t.Logf("stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(data), gen.TuningTable()) {
		t.Error("the compiled-in table is not kept whole")
	}
	es := entriesOf(parseTable(t, string(data)), dev.Arch())
	var want []*tuneFamily
	for _, f := range tuneFamilies() {
		if regexp.MustCompile(fams).MatchString(f.Name) {
			want = append(want, f)
		}
	}
	if len(es) != len(want) {
		t.Fatalf("%d entries for %d families", len(es), len(want))
	}
	for i, f := range want {
		e := es[i]
		if e.Class != f.Class || e.Item != f.Item || e.Vec != f.Vec {
			t.Errorf("entry %s is not family %s's", formatEntry(e), f.Name)
		}
		for _, a := range f.Axes {
			if v, ok := e.Set[a.Name]; !ok || !slices.Contains(a.Values, v) {
				t.Errorf("%s: %s=%d (set %v) is not a value of the sweep %v", f.Name, a.Name, v, ok, a.Values)
			}
		}
	}
	if strings.Contains(stderr.String(), "FAILED") {
		t.Error("a candidate failed its check")
	}
}
