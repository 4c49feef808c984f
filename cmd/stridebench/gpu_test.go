package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

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
