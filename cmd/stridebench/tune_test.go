package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stridekit/stridekit/gen"
	"github.com/stridekit/stridekit/internal/testenv"
	"github.com/stridekit/stridekit/kernels/jit"
	"github.com/stridekit/stridekit/layout"
)

func TestBeats(t *testing.T) {
	ok := func(tm, spread float64) score { return score{OK: true, Time: tm, Spread: spread} }
	for _, tc := range []struct {
		c, cur score
		want   bool
	}{
		{ok(0.97, 0.001), ok(1, 0.001), true},     // 3% faster, tight
		{ok(0.985, 0.001), ok(1, 0.001), false},   // 1.5%: under the 2% floor
		{ok(0.97, 0.016), ok(1, 0.001), false},    // 3%, but under twice the candidate's spread
		{ok(0.97, 0.001), ok(1, 0.02), false},     // 3%, but under twice the current value's spread
		{ok(0.95, 0.02), ok(1, 0.02), true},       // 5% > 2 × 2%
		{ok(1.2, 0.001), score{Err: "bad"}, true}, // anything that passes beats a failure
		{score{Err: "bad", Time: 0.1}, ok(1, 0), false},
		{ok(1, 0), ok(1, 0), false}, // a tie keeps the current value
	} {
		if got := beats(tc.c, tc.cur); got != tc.want {
			t.Errorf("beats(%+v, %+v) = %v, want %v", tc.c, tc.cur, got, tc.want)
		}
	}
}

// fakeCost is a stand-in for GPU timings: a separable cost with a minimum
// at opt per knob (each factor of two away costs 4%; wordcols and the
// other on/off knobs, and pipe, 4% a unit away), a deterministic jitter
// of ±noise, and a spread of 0.2%.
type fakeCost struct {
	opt   map[string]int
	noise float64
	flat  bool                 // every value costs the same (plus jitter)
	fail  func(gen.Knobs) bool // candidates that give wrong bytes
	r     *rand.Rand
	calls int
}

func (fc *fakeCost) time(k gen.Knobs) float64 {
	t := 1e-3
	if !fc.flat {
		for name, o := range fc.opt {
			v := knobValue(k, name)
			d := math.Abs(float64(v - o))
			if name != "wordcols" && name != "elemstore" && name != "overlaptables" && name != "calcoffsets" && name != "pipe" {
				d = math.Abs(math.Log2(float64(v) / float64(o)))
			}
			t *= 1 + 0.04*d
		}
	}
	return t * (1 + fc.noise*(2*fc.r.Float64()-1))
}

func (fc *fakeCost) measure(cands []gen.Knobs) ([]score, error) {
	fc.calls++
	out := make([]score, len(cands))
	for i, k := range cands {
		if fc.fail != nil && fc.fail(k) {
			out[i] = score{Err: "dst byte 0 is 0xe5, want 0x01 (never written)"}
			continue
		}
		tm := fc.time(k)
		out[i] = score{OK: true, Time: tm, Spread: 0.002 * tm}
	}
	return out, nil
}

func newFakeCost(opt map[string]int, noise float64, seed uint64) *fakeCost {
	return &fakeCost{opt: opt, noise: noise, r: rand.New(rand.NewPCG(seed, 1))}
}

var testBoxStart = gen.Knobs{Threads: 256, Rows: 1, Unroll: 1, BlockBytes: 16384, TileBytes: 16384, LoadLanes: 8, StoreLanes: 2}

func TestCoordinateSearch(t *testing.T) {
	opt := map[string]int{"threads": 512, "tilebytes": 32768, "loadlanes": 16, "storelanes": 1, "blockbytes": 65536}
	fc := newFakeCost(opt, 0.003, 1)
	res, err := coordinateSearch(testBoxStart, btileAxes, searchConfig{Rounds: 3}, fc.measure)
	if err != nil {
		t.Fatal(err)
	}
	for name, o := range opt {
		if v := knobValue(res.Best, name); v != o {
			t.Errorf("%s = %d, want the optimum %d (steps:\n%v)", name, v, o, res.Steps)
		}
	}
	if res.Gain >= 0.85 || res.Stopped != "" || res.StartFailed != "" {
		t.Errorf("gain %v, stopped %q, start failed %q", res.Gain, res.Stopped, res.StartFailed)
	}
	// The separable optimum is reached in round 1; round 2 changes nothing
	// and ends the search.
	if n := len(res.Steps); n != 2*len(btileAxes) || fc.calls != n {
		t.Errorf("%d steps, %d measurements; want %d", n, fc.calls, 2*len(btileAxes))
	}

	// Reproducibility: a re-run from the result, with other jitter, keeps
	// every value.
	for seed := uint64(2); seed < 12; seed++ {
		again, err := coordinateSearch(res.Best, btileAxes, searchConfig{Rounds: 2}, newFakeCost(opt, 0.003, seed).measure)
		if err != nil || again.Best != res.Best || len(again.Steps) != len(btileAxes) {
			t.Errorf("re-run %d moved to %+v from %+v (%v)", seed, again.Best, res.Best, err)
		}
	}

	// Noise alone (±1% around one cost) never moves a knob.
	flat := newFakeCost(opt, 0.01, 3)
	flat.flat = true
	res, err = coordinateSearch(testBoxStart, btileAxes, searchConfig{Rounds: 2}, flat.measure)
	if err != nil || res.Best != testBoxStart || res.Gain != 1 {
		t.Errorf("flat cost moved the knobs to %+v (gain %v, %v)", res.Best, res.Gain, err)
	}

	// A value that gives wrong bytes is never chosen, however fast.
	fc = newFakeCost(opt, 0, 4)
	fc.fail = func(k gen.Knobs) bool { return k.Threads == 512 }
	res, err = coordinateSearch(testBoxStart, btileAxes, searchConfig{Rounds: 2}, fc.measure)
	if err != nil || res.Best.Threads != 256 || res.Best.TileBytes != 32768 {
		t.Errorf("with threads=512 failing: %+v, %v", res.Best, err)
	}

	// Start knobs that fail are reported and left for the fastest value
	// that passes.
	fc = newFakeCost(opt, 0, 5)
	fc.fail = func(k gen.Knobs) bool { return k.Threads == 256 }
	res, err = coordinateSearch(testBoxStart, btileAxes, searchConfig{Rounds: 2}, fc.measure)
	if err != nil || res.StartFailed == "" || res.Best.Threads != 512 {
		t.Errorf("failing start: best %+v, start failed %q, %v", res.Best, res.StartFailed, err)
	}

	// The deadline is checked before each step.
	clock := time.Unix(0, 0)
	fc = newFakeCost(opt, 0, 6)
	cfg := searchConfig{Rounds: 2, Deadline: clock.Add(90 * time.Second), Now: func() time.Time { return clock }}
	res, err = coordinateSearch(testBoxStart, btileAxes, cfg, func(c []gen.Knobs) ([]score, error) {
		clock = clock.Add(time.Minute)
		return fc.measure(c)
	})
	if err != nil || len(res.Steps) != 2 || res.Stopped != "time budget" || res.Best.Threads != 512 || res.Best.TileBytes != 32768 {
		t.Errorf("deadline: %d steps, stopped %q, best %+v, %v", len(res.Steps), res.Stopped, res.Best, err)
	}

	// A measurement error stops the search and is returned.
	_, err = coordinateSearch(testBoxStart, btileAxes, searchConfig{Rounds: 1}, func([]gen.Knobs) ([]score, error) {
		return nil, fmt.Errorf("device lost")
	})
	if err == nil || err.Error() != "device lost" {
		t.Errorf("measure error: %v", err)
	}
}

func TestSearchStepString(t *testing.T) {
	st := searchStep{Round: 1, Axis: "threads", Values: []int{128, 256, 512}, From: 1, To: 2, Scores: []score{
		{OK: true, Time: 1.1e-3, Spread: 1e-6}, {OK: true, Time: 1e-3, Spread: 2e-6}, {Err: "dst byte 7 differs"},
	}}
	want := "round 1 threads     128 +10.0% *256 1.000 ms±2.00 µs  512 FAILED  -> 512\n      512 failed: dst byte 7 differs"
	if got := st.String(); got != want {
		t.Errorf("step line\n got %q\nwant %q", got, want)
	}
}

// TestTuneFamilies checks that every family has cases that plan as the
// family at sizes from 4 KiB to 1 GiB (box tiles at least two), with the
// knobs of every value of every axis (tile sizes change box-tile plans),
// that every value passes gen.CheckKnobs, that each family writes its own
// entry, and that the cases move about the size asked for.
func TestTuneFamilies(t *testing.T) {
	keys := map[entryKey]string{}
	for _, f := range tuneFamilies() {
		if prev, ok := keys[entryKey{f.Class, f.Item, f.Vec}]; ok {
			t.Errorf("%s and %s write the same entry", f.Name, prev)
		}
		keys[entryKey{f.Class, f.Item, f.Vec}] = f.Name
		for _, size := range []int64{4 << 10, 1 << 20, 16 << 20, defaultTuneBytes, 1 << 30} {
			bs, err := familyCases(f, size)
			if err != nil {
				t.Fatalf("%s at %d bytes: %v", f.Name, size, err)
			}
			if len(bs) < 1 || f.Class == layout.ClassBoxTile && len(bs) < 2 {
				t.Errorf("%s: %d cases", f.Name, len(bs))
			}
			for _, b := range bs {
				// Small sizes round to whole batches of a case's inner dims.
				tol := int64(10)
				if size < 16<<20 {
					tol = 35
				}
				if size >= 1<<20 && (b.Moved < size*(100-tol)/100 || b.Moved > size*(100+tol)/100) {
					t.Errorf("%s: %v moves %d bytes, asked %d", f.Name, b.Case, b.Moved, size)
				}
				for _, a := range f.Axes {
					for _, v := range a.Values {
						k := testBoxStart
						k.Set(a.Name, v)
						p, err := tunePlan(f, b, 256, 256, k.TileBytes)
						if err != nil {
							t.Fatalf("%s at %d bytes, %s=%d: %v", f.Name, size, a.Name, v, err)
						}
						if err := gen.CheckKnobs(p.Sig, k); err != nil {
							t.Errorf("%s %s=%d: %v", f.Name, a.Name, v, err)
						}
					}
				}
			}
		}
	}
}

// fakeTarget is a tuneTarget whose family benches measure fakeCost.
type fakeTarget struct {
	opt   func(f *tuneFamily) map[string]int
	fail  func(f *tuneFamily, k gen.Knobs) bool
	mu    sync.Mutex
	opens []string
}

func (ft *fakeTarget) info() deviceInfo {
	return deviceInfo{Kind: "gpu", Name: "Fake GPU", Arch: 90, SMs: 132, CUDA: "13.0", DriverRelease: "580.1"}
}
func (ft *fakeTarget) close() error { return nil }
func (ft *fakeTarget) open(f *tuneFamily, cases []*built) (familyBench, error) {
	ft.mu.Lock()
	ft.opens = append(ft.opens, f.Name)
	ft.mu.Unlock()
	fc := newFakeCost(ft.opt(f), 0.003, uint64(len(ft.opens)))
	if ft.fail != nil {
		fc.fail = func(k gen.Knobs) bool { return ft.fail(f, k) }
	}
	return fakeFamilyBench{fc}, nil
}

type fakeFamilyBench struct{ fc *fakeCost }

func (s fakeFamilyBench) measure(c []gen.Knobs) ([]score, error) { return s.fc.measure(c) }
func (s fakeFamilyBench) close() error                           { return nil }

// fakeOptimum gives each family an optimum that differs from the table's
// start: the last value of each axis.
func fakeOptimum(f *tuneFamily) map[string]int {
	opt := map[string]int{}
	for _, a := range f.Axes {
		opt[a.Name] = a.Values[len(a.Values)-1]
	}
	return opt
}

// untunedTable returns the table compiled into gen without its sm_90
// block (the entries and their "# sm_90:" note), the start the tune tests
// need whatever the committed table holds for the GPU they pretend to be.
func untunedTable() string {
	var keep []string
	for _, line := range strings.Split(gen.TuningTable(), "\n") {
		if !strings.HasPrefix(line, "sm_90 ") && !strings.HasPrefix(line, "# sm_90:") {
			keep = append(keep, line)
		}
	}
	return strings.TrimRight(strings.Join(keep, "\n"), "\n") + "\n"
}

// startFrom writes the untuned table to path, the tune command's -o.
func startFrom(t *testing.T, path string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(untunedTable()), 0o644); err != nil {
		t.Fatal(err)
	}
}

func withTarget(t *testing.T, ft tuneTarget) {
	old := newTuneTarget
	newTuneTarget = func(*tuneFlags) (tuneTarget, error) { return ft, nil }
	t.Cleanup(func() { newTuneTarget = old })
}

// TestTuneCmd runs "stridebench tune" on a stand-in target: it writes one
// entry per family with the optimum, keeps the rest of the table, and a
// re-run reproduces the table; -dry-run prints the same entries and writes
// nothing; -family tunes a subset and keeps the other entries.
func TestTuneCmd(t *testing.T) {
	ft := &fakeTarget{opt: fakeOptimum}
	withTarget(t, ft)
	out := filepath.Join(t.TempDir(), "tuning.txt")
	startFrom(t, out)
	run := func(args ...string) (int, string, string) {
		var stdout, stderr bytes.Buffer
		code := runMain(append([]string{"tune", "-o", out, "-bytes", "1MiB"}, args...), &stdout, &stderr)
		return code, stdout.String(), stderr.String()
	}
	code, stdout, stderr := run()
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	es := parseTable(t, text)
	if !strings.HasPrefix(text, untunedTable()) {
		t.Errorf("the old table is not kept at the head of the new one:\n%s", text)
	}
	fams := tuneFamilies()
	got := entriesOf(es, 90)
	if len(got) != len(fams) || !strings.Contains(stdout, fmt.Sprintf("wrote %d sm_90 entries to %s", len(fams), out)) {
		t.Fatalf("%d sm_90 entries for %d families; stdout:\n%s", len(got), len(fams), stdout)
	}
	for i, f := range fams {
		e := got[i]
		if e.Class != f.Class || e.Item != f.Item || e.Vec != f.Vec || len(e.Set) != len(f.Axes) {
			t.Errorf("entry %d %v is not family %s's", i, formatEntry(e), f.Name)
			continue
		}
		for name, v := range fakeOptimum(f) {
			if e.Set[name] != v {
				t.Errorf("%s: %s=%d, want %d", f.Name, name, e.Set[name], v)
			}
		}
	}
	for _, s := range []string{"# sm_90: tuned by `stridebench tune` on Fake GPU (132 SMs, CUDA 13.0, driver 580.1)",
		"faster by more than 2% and", "twice the samples' spread"} {
		if !strings.Contains(text, s) {
			t.Errorf("table has no %q", s)
		}
	}
	for _, s := range []string{"tune: Fake GPU (sm_90, 132 SMs), 17 families", "[1/17] btile/1: from threads=128 tilebytes=32768 loadlanes=8 storelanes=2 blockbytes=16384 unroll=1",
		"round 1 threads", "-> 512", "[17/17] fill: threads=512 rows=8"} {
		if !strings.Contains(stderr, s) {
			t.Errorf("progress has no %q:\n%s", s, stderr)
		}
	}

	// A re-run starts from the table it wrote and reproduces it.
	if code, _, stderr := run(); code != 0 {
		t.Fatalf("re-run: exit %d: %s", code, stderr)
	}
	if again, _ := os.ReadFile(out); string(again) != text {
		t.Errorf("the re-run changed the table:\n%s", again)
	}
	if !strings.Contains(stderr, "keep") {
		t.Errorf("no step kept its value")
	}

	// -dry-run prints the entries and leaves the file alone.
	code, stdout, _ = run("-dry-run")
	if code != 0 {
		t.Fatalf("-dry-run: exit %d", code)
	}
	for _, e := range got {
		if !strings.Contains(stdout, formatEntry(e)+"\n") {
			t.Errorf("-dry-run does not print %q:\n%s", formatEntry(e), stdout)
		}
	}
	if again, _ := os.ReadFile(out); string(again) != text {
		t.Error("-dry-run wrote the table")
	}

	// -family tunes one family; a new optimum changes its entry alone.
	ft.opt = func(f *tuneFamily) map[string]int {
		o := fakeOptimum(f)
		if f.Name == "elem" {
			o["threads"], o["rows"] = 128, 2
		}
		return o
	}
	ft.opens = nil
	if code, stdout, stderr := run("-family", "^elem$"); code != 0 || len(ft.opens) != 1 {
		t.Fatalf("-family elem: exit %d, opened %v\n%s\n%s", code, ft.opens, stdout, stderr)
	}
	data, _ = os.ReadFile(out)
	got2 := entriesOf(parseTable(t, string(data)), 90)
	for _, e := range got2 {
		want := fakeOptimum(fams[0])
		if e.Class == layout.ClassElementwise {
			if e.Set["threads"] != 128 || e.Set["rows"] != 2 {
				t.Errorf("elem entry %q", formatEntry(e))
			}
			continue
		}
		_ = want
		found := false
		for _, o := range got {
			found = found || formatEntry(o) == formatEntry(e)
		}
		if !found {
			t.Errorf("entry %q changed by -family elem", formatEntry(e))
		}
	}
	if len(got2) != len(got) {
		t.Errorf("%d entries after -family elem, want %d", len(got2), len(got))
	}
}

// TestTuneCmdFailures checks the exit status and the table when the
// table's knobs give wrong bytes, when the budget runs out, and on bad
// usage.
func TestTuneCmdFailures(t *testing.T) {
	out := filepath.Join(t.TempDir(), "tuning.txt")
	startFrom(t, out)
	// Wrong bytes from the start knobs fail the family, but the entry of
	// the fastest value that passes is written.
	withTarget(t, &fakeTarget{opt: fakeOptimum, fail: func(f *tuneFamily, k gen.Knobs) bool {
		return f.Name == "fill" && k.Threads == 256
	}})
	var stdout, stderr bytes.Buffer
	code := runMain([]string{"tune", "-o", out, "-family", "fill|bcast", "-bytes", "64KiB"}, &stdout, &stderr)
	if code != 1 || !strings.Contains(stderr.String(), "fill: FAILED: the table's knobs threads=256 rows=8 gave wrong results") {
		t.Errorf("exit %d, stderr:\n%s", code, stderr.String())
	}
	data, _ := os.ReadFile(out)
	es := entriesOf(parseTable(t, string(data)), 90)
	if len(es) != 2 || formatEntry(es[1]) != "sm_90 fill * * threads=512 rows=8" {
		t.Errorf("entries %v", es)
	}

	// A family none of whose cases plans as the family is skipped; the
	// others are tuned and written.
	old := allFamilies
	allFamilies = func() []*tuneFamily {
		return append(old(), &tuneFamily{Name: "bogus", Class: layout.ClassFill, Axes: []knobAxis{threads3},
			Cases: func(t int64) []string { return tileCases(4, 4, t) }})
	}
	stdout.Reset()
	stderr.Reset()
	code = runMain([]string{"tune", "-o", out, "-family", "^elem$|bogus", "-bytes", "64KiB"}, &stdout, &stderr)
	allFamilies = old
	data, _ = os.ReadFile(out)
	es = entriesOf(parseTable(t, string(data)), 90)
	if code != 1 || !strings.Contains(stderr.String(), "family bogus at -bytes 64 KiB is skipped: bad case: bogus: no case plans as the family") ||
		len(es) != 3 || formatEntry(es[0]) != "sm_90 elem * * threads=512 rows=8" || !strings.Contains(string(data), "Not tuned in that run (old entries kept): bogus.") {
		t.Errorf("bogus family: exit %d, entries %v, stderr:\n%s", code, es, stderr.String())
	}

	// A budget spent before the first family: nothing tuned, nothing
	// written.
	stdout.Reset()
	stderr.Reset()
	before, _ := os.ReadFile(out)
	code = runMain([]string{"tune", "-o", out, "-budget", "1ns"}, &stdout, &stderr)
	after, _ := os.ReadFile(out)
	if code != 1 || !strings.Contains(stderr.String(), "not reached: time budget spent") || !strings.Contains(stderr.String(), "no family was tuned") || !bytes.Equal(before, after) {
		t.Errorf("budget 1ns: exit %d, stderr:\n%s", code, stderr.String())
	}

	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"-device", "cpu"}, `-device "cpu": want gpu or gpu:N`},
		{[]string{"-device", "gpu:-1"}, `-device "gpu:-1"`},
		{[]string{"-budget", "0s"}, "-budget 0s"},
		{[]string{"-reps", "9"}, "-reps 9: must be in 10..10000"},
		{[]string{"-warmup", "0"}, "-warmup 0"},
		{[]string{"-rounds", "0"}, "-rounds 0"},
		{[]string{"-bytes", "100"}, "-bytes 100"},
		{[]string{"-family", "nothing"}, `-family "nothing" matches no family (btile/1`},
		{[]string{"-family", "("}, `-family "("`},
		{[]string{"-o", ""}, "-o: empty"},
		{[]string{"extra"}, `unexpected argument "extra"`},
	} {
		stderr.Reset()
		if code := runMain(append([]string{"tune"}, tc.args...), &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), tc.msg) {
			t.Errorf("tune %v: exit %d, stderr %q, want 2 and %q", tc.args, code, stderr.String(), tc.msg)
		}
	}
}

func TestTuneHelpAndList(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := runMain([]string{"tune", "-h"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, s := range []string{"-o", "-dry-run", "-budget", "-bytes", "-reps", "-rounds", "-family", "coordinate-wise",
		"faster by", "more than 2% and by more than twice the spread", "ties keep the current value", "btile/S", "tile/SxV", "elem, bcast, fill"} {
		if !strings.Contains(stderr.String(), s) {
			t.Errorf("tune -h does not mention %q", s)
		}
	}
	stdout.Reset()
	if code := runMain([]string{"tune", "-list", "-family", "^btile/3$|^fill$", "-bytes", "1MiB"}, &stdout, &stderr); code != 0 {
		t.Fatalf("-list: exit %d: %s", code, stderr.String())
	}
	for _, s := range []string{"btile/3  (entry: btile 3 *)", "tilebytes  8192 16384 24576 32768", "bt3_t13 opaque3", "btile:nd=2,item=3",
		"bt3_p5", "btile:nd=4,item=3", "fill  (entry: fill * *)", "fill:nd=1,item=4"} {
		if !strings.Contains(stdout.String(), s) {
			t.Errorf("-list has no %q:\n%s", s, stdout.String())
		}
	}
}

// TestTuneKernelsCompile compiles with NVRTC, for sm_90, the kernels the
// tuner's first round needs: every family's cases with the table's knobs,
// and the first case with each value of the knobs that change the source.
// It goes through the disk cache (jit.CompileCached), whose key holds the
// source and the NVRTC version, so a re-run compiles only what changed.
func TestTuneKernelsCompile(t *testing.T) {
	testenv.NeedNVRTC(t)
	type job struct {
		name string
		sig  layout.Signature
		k    gen.Knobs
	}
	var jobs []job
	seen := map[string]bool{}
	add := func(name string, sig layout.Signature, k gen.Knobs) {
		src, err := gen.Source(sig, k)
		if err != nil {
			t.Fatalf("%s %v %+v: %v", name, sig, k, err)
		}
		if !seen[src] {
			seen[src] = true
			jobs = append(jobs, job{name, sig, k})
		}
	}
	for _, f := range tuneFamilies() {
		bs, err := familyCases(f, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		var sigs []layout.Signature
		for _, b := range bs {
			p, err := tunePlan(f, b, 256, 256, 0)
			if err != nil {
				t.Fatal(err)
			}
			sigs = append(sigs, p.Sig)
			add(f.Name, p.Sig, gen.KnobsFor(p.Sig, 90))
		}
		for _, a := range f.Axes {
			for _, v := range a.Values {
				k := gen.KnobsFor(sigs[0], 90)
				k.Set(a.Name, v)
				add(fmt.Sprintf("%s %s=%d", f.Name, a.Name, v), sigs[0], k)
			}
		}
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, runtime.NumCPU())
	errs := make([]error, len(jobs))
	for i, j := range jobs {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			src, _ := gen.Source(j.sig, j.k)
			_, errs[i] = jit.CompileCached(src, jit.Options{Arch: 90})
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("%s (%v, %+v): %v", jobs[i].name, jobs[i].sig, jobs[i].k, err)
		}
	}
	t.Logf("%d kernels compiled", len(jobs))
}

func TestInterleaved(t *testing.T) {
	var order []int
	calls := map[int]int{}
	got, err := interleaved(3, 4, func(k int) (float64, error) {
		order = append(order, k)
		calls[k]++
		return float64(10*k + calls[k]), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := []int{0, 1, 2, 3, 1, 2, 3, 0, 2, 3, 0, 1}; !slices.Equal(order, want) {
		t.Errorf("order %v, want %v", order, want)
	}
	for k, xs := range got {
		if want := []float64{float64(10*k + 1), float64(10*k + 2), float64(10*k + 3)}; !slices.Equal(xs, want) {
			t.Errorf("candidate %d: samples %v, want %v", k, xs, want)
		}
	}
	n := 0
	_, err = interleaved(3, 2, func(int) (float64, error) {
		if n++; n == 4 {
			return 0, fmt.Errorf("launch failed")
		}
		return 1, nil
	})
	if err == nil || n != 4 {
		t.Errorf("error after %d samples: %v", n, err)
	}
}

func TestMedianIQR(t *testing.T) {
	med, iqr := medianIQR([]float64{5, 1, 4, 2, 3, 100, 6, 7})
	// Sorted 1 2 3 4 5 6 7 100: median 4.5, 75th percentile 6, 25th 2.
	if med != 4.5 || iqr != 4 {
		t.Errorf("median %v, IQR %v; want 4.5, 4", med, iqr)
	}
	if med, iqr := medianIQR(nil); med != 0 || iqr != 0 {
		t.Errorf("no samples: %v %v", med, iqr)
	}
}

// TestTuneFlagLimits checks the upper bounds of tune's counts and sizes:
// past them, a usage error naming the flag and value.
func TestTuneFlagLimits(t *testing.T) {
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"-reps", "9000000000000000000"}, "-reps 9000000000000000000: must be in 10..10000"},
		{[]string{"-warmup", "10001"}, "-warmup 10001: must be in 1..10000"},
		{[]string{"-rounds", "1000000"}, "-rounds 1000000: must be in 1..100"},
		{[]string{"-bytes", "1024GiB"}, "-bytes 1024 GiB: must be at most 16 GiB"},
	} {
		_, err := parseTuneFlags(tc.args, io.Discard)
		if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("tune %v: %v, want a usage error naming %q", tc.args, err, tc.msg)
		}
	}
	if _, err := parseTuneFlags([]string{"-reps", "10000", "-warmup", "10000", "-rounds", "100", "-bytes", "16GiB"}, io.Discard); err != nil {
		t.Errorf("the limits: %v", err)
	}
}
