package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"time"

	"github.com/stridekit/stridekit/runtime/cuda"
)

// "stridebench peer" measures copies between the views of two GPUs of one
// host (memview's PathPeer): each case's source on -src, its destination on
// -dst, against cuMemcpyPeerAsync of the bytes the copy writes, timed the
// same way in the same run. Per case: the copy queued on a stream of the
// source's device ("push") and on one of the destination's ("pull"); for
// copies under 1 MiB the kernel runs on that stream's device, for larger
// ones memview picks the device and the two columns differ only by the
// events that order the other device's stream. And both directions at
// once (the case copied A→B and B→A together, each on the faster of the
// two streams' devices) against both peer memcpys at once. Each copy is checked once, pushed and pulled, against
// runtime/hostcopy. -compare runs PyTorch's cross-device dst.copy_(src)
// (peers.py, framework torch-peer) on the same cases, as a % of its own
// contiguous cross-device copy of the same bytes, both timed with CUDA
// events on the source device's stream, where PyTorch queues them.

// defaultPeerCases selects the named cases a peer run takes by default.
const defaultPeerCases = `^(contig_f32|transpose_(f32|f16|u8|f64)|perm(0213|3210)_f32|nchw_nhwc_f16|nhwc_nchw_f16|slice_step[23]_f32|slice_t_f32|batched_t30_f32|rgb_t_u8)$`

// peerCaseResult is one case of a peer run; times in seconds per copy.
type peerCaseResult struct {
	Name      string      `json:"name"`
	Case      string      `json:"case"`
	Random    bool        `json:"random,omitempty"`
	Itemsize  int         `json:"itemsize"`
	Bytes     int64       `json:"bytes"`
	Status    string      `json:"status"`
	Reason    string      `json:"reason,omitempty"`
	Plan      string      `json:"plan,omitempty"`
	MemcpyS   float64     `json:"memcpy_peer_s,omitempty"`
	PushS     float64     `json:"push_s,omitempty"`
	PullS     float64     `json:"pull_s,omitempty"`
	BothS     float64     `json:"both_s,omitempty"`
	BothMemS  float64     `json:"both_memcpy_peer_s,omitempty"`
	PctPush   float64     `json:"pct_push,omitempty"`
	PctPull   float64     `json:"pct_pull,omitempty"`
	PctBest   float64     `json:"pct_best,omitempty"`
	PctBoth   float64     `json:"pct_both,omitempty"`
	Torch     *peerResult `json:"torch,omitempty"`
	TorchRate float64     `json:"torch_ratio,omitempty"` // stridekit's best % / PyTorch's % (each of its own memcpy)
	// TorchTime is PyTorch's time over stridekit's best one way, both
	// timed with CUDA events on one device's stream: above 1 stridekit is
	// faster. Unlike TorchRate it shares one clock and no baseline, where
	// PyTorch's contiguous cross-device copy ran 1-9% slower than
	// cuMemcpyPeer (H200s, 2026-11-27), which raises PyTorch's % by as
	// much.
	TorchTime float64 `json:"torch_time_ratio,omitempty"`
}

// peerEnv is the two devices of a peer run, a stream and two timing
// events on each, and an untimed event on each for cross-device waits.
type peerEnv struct {
	dev      [2]*cuda.Device
	st       [2]*cuda.Stream
	e0, e1   [2]*cuda.Event
	cross    [2]*cuda.Event
	reps, wu int
}

func peerCmd(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("stridebench peer", stderr, "usage: stridebench peer [flags]\n\nCopies between two GPUs of one host against cuMemcpyPeer.\n\n", "")
	src := fs.Int("src", 0, "ordinal of the source views' device")
	dst := fs.Int("dst", 1, "ordinal of the destination views' device")
	caseRE := fs.String("case", defaultPeerCases, "named cases to run (regexp; \"\" for none)")
	random := fs.Int("random", 0, "random permutation cases to add")
	seed := fs.Uint64("seed", 1, "seed of the random cases")
	views := fs.Bool("random-views", false, "add slices and flips to the random cases")
	target := fs.Int64("bytes", 64<<20, "bytes each random case moves (about)")
	shrink := fs.Int64("shrink", 256<<20, "shrink named cases moving more than this")
	reps := fs.Int("reps", 20, "timed samples per figure (median)")
	warmup := fs.Int("warmup", 3, "untimed copies first")
	jsonOut := fs.String("json", "", "write the results as JSON to this file")
	compare := fs.Bool("compare", false, "also run PyTorch's cross-device copy (peers.py)")
	python := fs.String("python", "python3", "the Python of -compare")
	if st, stop := flagsStatus(stderr, "stridebench peer", parseArgs(fs, args)); stop {
		return st
	}
	re, err := regexp.Compile(*caseRE)
	if err != nil {
		fmt.Fprintf(stderr, "stridebench peer: -case: %v\n", err)
		return 2
	}
	ps, err := peerCases(re, *caseRE == "", randomSpec{N: *random, Seed: *seed, Views: *views, Bytes: *target}, *shrink)
	if err == nil && len(ps) == 0 {
		err = usageErr("no case selected")
	}
	var env *peerEnv
	if err == nil {
		env, err = newPeerEnv(*src, *dst, *reps, *warmup)
	}
	if err != nil {
		fmt.Fprintf(stderr, "stridebench peer: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "peer copies %v → %v\n%-28s %7s %7s %7s %7s %7s  %s\n", env.dev[0], env.dev[1], "case", "GB/s", "push%", "pull%", "best%", "both%", "plan")
	var results []*peerCaseResult
	for _, p := range ps {
		r := env.run(p)
		results = append(results, r)
		fmt.Fprintln(stdout, r.line())
	}
	if *compare {
		if err := comparePeers(ps, results, *python, *reps, *warmup, stderr); err != nil {
			fmt.Fprintf(stderr, "stridebench peer: -compare: %v\n", err)
		}
	}
	peerSummary(stdout, results)
	if *jsonOut != "" {
		if err := writePeerJSON(*jsonOut, env, results); err != nil {
			fmt.Fprintf(stderr, "stridebench peer: %v\n", err)
			return 1
		}
	}
	return 0
}

// peerCases returns the named cases matching re (none when noNamed), shrunk
// to shrink bytes, and the random ones of spec.
func peerCases(re *regexp.Regexp, noNamed bool, spec randomSpec, shrink int64) ([]prepared, error) {
	var cases []*Case
	if !noNamed {
		named, err := parseSuite(bytes.NewReader(defaultSuiteText), defaultSuiteName)
		if err != nil {
			return nil, err
		}
		for _, c := range named {
			if !re.MatchString(c.Name) {
				continue
			}
			if c, err = shrinkCase(c, shrink); err != nil {
				return nil, err
			}
			cases = append(cases, c)
		}
	}
	rnd := map[*Case]bool{}
	if spec.N > 0 {
		for _, c := range randomCases(spec) {
			rnd[c] = true
			cases = append(cases, c)
		}
	}
	return prepare(cases, rnd), nil
}

// newPeerEnv gets the two devices, their streams and events.
func newPeerEnv(src, dst, reps, warmup int) (*peerEnv, error) {
	if src == dst {
		return nil, usageErr("-src and -dst are both %d: a peer copy needs two devices", src)
	}
	if reps < minReps || reps > maxReps {
		return nil, usageErr("-reps %d: want %d..%d", reps, minReps, maxReps)
	}
	env := &peerEnv{reps: reps, wu: warmup}
	for i, o := range []int{src, dst} {
		d, err := cuda.GetDevice(o)
		if err != nil {
			return nil, err
		}
		env.dev[i] = d
		if env.st[i], err = d.NewStream(true); err != nil {
			return nil, err
		}
		for _, e := range []**cuda.Event{&env.e0[i], &env.e1[i], &env.cross[i]} {
			if *e, err = d.NewEvent(e != &env.cross[i]); err != nil {
				return nil, err
			}
		}
	}
	return env, nil
}

// timeOn times n runs of op per sample on device i's stream, with that
// device's events (see measure).
func (env *peerEnv) timeOn(i int, op func() error) (float64, error) {
	t, err := measure(env.reps, env.wu, func(n int) (time.Duration, error) {
		if err := env.e0[i].Record(env.st[i]); err != nil {
			return 0, err
		}
		for range n {
			if err := op(); err != nil {
				return 0, err
			}
		}
		if err := env.e1[i].Record(env.st[i]); err != nil {
			return 0, err
		}
		if err := env.e1[i].Synchronize(); err != nil {
			return 0, err
		}
		return cuda.ElapsedTime(env.e0[i], env.e1[i])
	})
	return t.Median, err
}

// timeBoth times ops a (queued on device 0's stream) and b (on device 1's)
// run together: device 1's stream starts after device 0's start event and
// device 0's end event waits for device 1's work. Each is queued by a
// goroutine of its own, as a program driving each GPU from its own thread
// would: from one goroutine, b's work would start only once all of a's is
// queued, which for a staged copy (several launches, copies and events a
// chunk) is a good part of its time on the GPU.
func (env *peerEnv) timeBoth(a, b func() error) (float64, error) {
	t, err := measure(env.reps, env.wu, func(n int) (time.Duration, error) {
		if err := env.e0[0].Record(env.st[0]); err != nil {
			return 0, err
		}
		if err := env.st[1].WaitEvent(env.e0[0]); err != nil {
			return 0, err
		}
		if err := both(n, a, b); err != nil {
			return 0, err
		}
		if err := env.cross[1].Record(env.st[1]); err != nil {
			return 0, err
		}
		if err := env.st[0].WaitEvent(env.cross[1]); err != nil {
			return 0, err
		}
		if err := env.e1[0].Record(env.st[0]); err != nil {
			return 0, err
		}
		if err := env.e1[0].Synchronize(); err != nil {
			return 0, err
		}
		return cuda.ElapsedTime(env.e0[0], env.e1[0])
	})
	return t.Median, err
}

// both calls a and b n times each, a on a goroutine of its own, and
// returns their first errors.
func both(n int, a, b func() error) error {
	done := make(chan error, 1)
	go func() {
		for range n {
			if err := a(); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	var errB error
	for range n {
		if errB = b(); errB != nil {
			break
		}
	}
	return errors.Join(<-done, errB)
}

func (r *peerCaseResult) line() string {
	if r.Status != statusOK {
		return fmt.Sprintf("%-28s %s: %s", r.Name, r.Status, r.Reason)
	}
	gbs := 2 * float64(r.Bytes) / min(r.PushS, r.PullS) / 1e9
	return fmt.Sprintf("%-28s %7.1f %7.1f %7.1f %7.1f %7.1f  %s", r.Name, gbs, r.PctPush, r.PctPull, r.PctBest, r.PctBoth, r.Plan)
}

// peerSummary prints the distribution of the best one-way % and the
// both-ways %, and how the cases compare with PyTorch.
func peerSummary(w io.Writer, rs []*peerCaseResult) {
	var best, both []float64
	faster, byPct, torch := 0, 0, 0
	for _, r := range rs {
		if r.Status != statusOK {
			continue
		}
		best, both = append(best, r.PctBest), append(both, r.PctBoth)
		if r.TorchRate > 0 {
			torch++
			if r.TorchTime > 1 {
				faster++
			}
			if r.TorchRate > 1 {
				byPct++
			}
		}
	}
	if len(best) == 0 {
		fmt.Fprintln(w, "no case passed")
		return
	}
	slices.Sort(best)
	slices.Sort(both)
	fmt.Fprintf(w, "%d cases: best one way %% of cuMemcpyPeer min %.1f median %.1f; both ways at once min %.1f median %.1f; faster than PyTorch on %d of %d (time; %d by %% of each one's own memcpy)\n",
		len(best), best[0], median(best), both[0], median(both), faster, torch, byPct)
}

func writePeerJSON(path string, env *peerEnv, rs []*peerCaseResult) error {
	out := struct {
		Src, Dst string
		Cases    []*peerCaseResult `json:"cases"`
	}{env.dev[0].String(), env.dev[1].String(), rs}
	b, err := json.MarshalIndent(out, "", " ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

// comparePeers runs peers.py's torch-peer on the cases and attaches its
// figures to the results.
func comparePeers(ps []prepared, rs []*peerCaseResult, python string, reps, warmup int, stderr io.Writer) error {
	stubs := make([]*result, len(rs))
	for i, r := range rs {
		stubs[i] = &result{Name: r.Name}
	}
	opt := peerOptions{Python: python, Frameworks: []string{"torch-peer"}, Reps: reps, Warmup: warmup, Stderr: stderr}
	if _, err := runPeers(context.Background(), opt, ps, stubs, nil); err != nil {
		return err
	}
	for i, r := range rs {
		t := stubs[i].Peers["torch-peer"]
		if t == nil {
			continue
		}
		r.Torch = t
		if t.Status == statusOK && t.PctMemcpy > 0 && r.PctBest > 0 {
			r.TorchRate = r.PctBest / t.PctMemcpy
			r.TorchTime = t.TimeS / min(r.PushS, r.PullS)
		}
	}
	return nil
}

// run measures one case (see the file comment).
func (env *peerEnv) run(p prepared) *peerCaseResult {
	r := &peerCaseResult{Name: p.Case.Name, Case: p.Case.String(), Random: p.Random, Status: statusOK}
	if p.Built == nil {
		r.Status, r.Reason = "error", fmt.Sprint(p.Err)
		return r
	}
	b := p.Built
	r.Itemsize, r.Bytes = b.Item, b.Moved
	if err := env.measure(b, r); err != nil {
		r.Status, r.Reason = "error", err.Error()
	}
	return r
}
