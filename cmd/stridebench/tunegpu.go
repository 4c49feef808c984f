package main

import (
	"fmt"
	"runtime"
	"slices"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/stridekit/stridekit/gen"
	"github.com/stridekit/stridekit/kernels"
	"github.com/stridekit/stridekit/kernels/jit"
	"github.com/stridekit/stridekit/layout"
	"github.com/stridekit/stridekit/runtime/cuda"
)

// This file measures tuning candidates on the GPU. A candidate's kernel is
// rendered with its knobs (gen.Source), loaded (jit.Default.Function: the
// memory and disk caches key on the source, so each knob set is its own
// kernel) and launched with those knobs (jit.Launch), on plans made with
// its tile size (layout.PlanOptions.TileBytes): jit.Default.Kernel and
// kernels.Launch would serve the table's knobs instead.

// tuneTarget is where candidates are measured.
type tuneTarget interface {
	info() deviceInfo
	// open sets up a family's cases (arrays, source pattern, reference
	// result) and returns the bench that measures candidates on them.
	open(f *tuneFamily, cases []*built) (familyBench, error)
	close() error
}

// familyBench measures candidates on one family's cases.
type familyBench interface {
	measure(cands []gen.Knobs) ([]score, error)
	close() error
}

// gpuTuner is the tuneTarget of one GPU.
type gpuTuner struct {
	g            *gpuBackend
	reps, warmup int
}

func newGPUTuner(ordinal, reps, warmup int) (tuneTarget, error) {
	g, err := newGPUBackend(ordinal)
	if err != nil {
		return nil, err
	}
	return &gpuTuner{g: g, reps: reps, warmup: warmup}, nil
}

func (t *gpuTuner) info() deviceInfo { return t.g.info() }
func (t *gpuTuner) close() error     { return t.g.close() }

// tuneCase is one case of a family bench: its arrays on the GPU, the reference
// dst array, and what is known per candidate.
type tuneCase struct {
	b    *built
	in   *gpuInstance
	want []byte
	// checked holds the correctness check's verdict per knob set ("": the
	// bytes were right), so each candidate is checked once.
	checked map[gen.Knobs]string
}

// gpuFamilyBench is a familyBench on a gpuTuner.
type gpuFamilyBench struct {
	t     *gpuTuner
	f     *tuneFamily
	cases []*tuneCase
	fns   map[fnKey]cuda.Function
}

// fnKey identifies a loaded kernel: a signature rendered with knobs (the
// source depends on some knobs only, but keying on all is simple and
// the cache dedups identical sources).
type fnKey struct {
	sig   layout.Signature
	knobs gen.Knobs
}

func (t *gpuTuner) open(f *tuneFamily, cases []*built) (familyBench, error) {
	s := &gpuFamilyBench{t: t, f: f, fns: map[fnKey]cuda.Function{}}
	for _, b := range cases {
		if err := checkSize(b); err != nil {
			s.close()
			return nil, err
		}
		inst, err := t.g.setup(b)
		if err != nil {
			s.close()
			return nil, fmt.Errorf("%s: setup: %w", b.Case.Name, err)
		}
		tc := &tuneCase{b: b, in: inst.(*gpuInstance), checked: map[gen.Knobs]string{}}
		s.cases = append(s.cases, tc)
		src := sourcePattern(b)
		if err := tc.in.upload(src); err != nil {
			s.close()
			return nil, fmt.Errorf("%s: upload: %w", b.Case.Name, err)
		}
		if tc.want, err = referenceDst(b, src); err != nil {
			s.close()
			return nil, fmt.Errorf("%s: %w", b.Case.Name, err)
		}
	}
	return s, nil
}

func (s *gpuFamilyBench) close() error {
	var first error
	for _, tc := range s.cases {
		if err := tc.in.close(); first == nil {
			first = err
		}
	}
	s.cases = nil
	return first
}

// lowPair returns the lowest bytes of the dst and src views of pair i.
func (tc *tuneCase) lowPair(i int) (dst, src cuda.DevicePtr) {
	return tc.in.dstArray(i) + cuda.DevicePtr(tc.b.DstStart), tc.in.srcArray(i) + cuda.DevicePtr(tc.b.SrcStart)
}

// launchable is one candidate on one case: its plan and its kernel.
type launchable struct {
	plan  layout.Plan
	knobs gen.Knobs
	fn    cuda.Function
	bound *kernels.Bound // the plan bound to fn: what launch enqueues
	err   error
}

// plans returns each candidate's plan on case tc, or why it cannot run
// (knobs gen refuses, a plan of another family).
func (s *gpuFamilyBench) plans(tc *tuneCase, cands []gen.Knobs) []*launchable {
	d, sp := tc.lowPair(0)
	dev := s.t.g.dev
	opt := kernels.PlanOptions(dev, d, sp, tc.b.Item)
	out := make([]*launchable, len(cands))
	for i, k := range cands {
		l := &launchable{knobs: k}
		out[i] = l
		if l.plan, l.err = tunePlan(s.f, tc.b, opt.DstAlign, opt.SrcAlign, k.TileBytes); l.err == nil {
			l.err = gen.CheckKnobs(l.plan.Sig, k)
		}
	}
	return out
}

// load loads the kernels of every launchable that has none yet, compiling
// in parallel (NVRTC runs on the CPU; the jit cache serves repeats).
func (s *gpuFamilyBench) load(ls []*launchable) {
	var todo []fnKey
	for _, l := range ls {
		if l.err != nil {
			continue
		}
		k := fnKey{l.plan.Sig, l.knobs}
		if _, ok := s.fns[k]; !ok && !slices.Contains(todo, k) {
			todo = append(todo, k)
		}
	}
	fns := make([]cuda.Function, len(todo))
	errs := make([]error, len(todo))
	var g errgroup.Group
	g.SetLimit(max(1, runtime.NumCPU()))
	dev := s.t.g.dev
	for i, k := range todo {
		g.Go(func() error {
			src, err := gen.Source(k.sig, k.knobs)
			if err == nil {
				fns[i], err = jit.Default.Function(dev, src, gen.Name(k.sig), cuda.ParamsOf(8, 8, gen.ArgsSize(k.sig)), jit.Options{}, nil)
			}
			errs[i] = err
			return nil
		})
	}
	g.Wait()
	failed := map[fnKey]error{}
	for i, k := range todo {
		if errs[i] != nil {
			failed[k] = errs[i]
		} else {
			s.fns[k] = fns[i]
		}
	}
	for _, l := range ls {
		if l.err != nil {
			continue
		}
		k := fnKey{l.plan.Sig, l.knobs}
		if err := failed[k]; err != nil {
			l.err = fmt.Errorf("loading %v: %w", k.sig, err)
		} else {
			l.fn = s.fns[k]
			l.bound, l.err = kernels.BindPlan(&l.plan, l.fn, gen.Name(k.sig), l.knobs)
		}
	}
}

// launch runs l on pair i of tc.
func (s *gpuFamilyBench) launch(tc *tuneCase, l *launchable, pair int) error {
	d, sp := tc.lowPair(pair)
	return l.bound.Enqueue(s.t.g.st, d, sp)
}

// check runs l once into a poisoned dst and compares the check windows
// with the reference; "" when the bytes are right.
func (s *gpuFamilyBench) check(tc *tuneCase, l *launchable) (string, error) {
	if msg, ok := tc.checked[l.knobs]; ok {
		return msg, nil
	}
	if err := tc.in.poison(); err != nil {
		return "", err
	}
	if err := s.launch(tc, l, 0); err != nil {
		tc.checked[l.knobs] = "launch: " + err.Error()
		return tc.checked[l.knobs], nil
	}
	if err := s.t.g.st.Synchronize(); err != nil {
		// A kernel that faults leaves the context unusable: stop.
		return "", fmt.Errorf("%s with %+v: %w", tc.b.Case.Name, l.knobs, err)
	}
	msg, err := compareDst(tc.b, tc.in.readDst, tc.want)
	if err != nil {
		return "", err
	}
	tc.checked[l.knobs] = msg
	return msg, nil
}

// measure checks each candidate once per case, then times the candidates
// that passed: warm-up launches, then reps samples per candidate, the
// candidates interleaved (sample r of each before sample r+1 of any,
// starting at a different candidate each round), each sample one batch of
// back-to-back launches between two CUDA events, enough to cover
// minBatchTime.
func (s *gpuFamilyBench) measure(cands []gen.Knobs) ([]score, error) {
	out := make([]score, len(cands))
	for i := range out {
		out[i].OK = true
	}
	fail := func(i int, msg string) {
		if out[i].OK {
			out[i] = score{Err: msg}
		}
	}
	for _, tc := range s.cases {
		ls := s.plans(tc, cands)
		s.load(ls)
		var live []int
		for i, l := range ls {
			if l.err != nil {
				fail(i, fmt.Sprintf("%s: %v", tc.b.Case.Name, l.err))
				continue
			}
			msg, err := s.check(tc, l)
			if err != nil {
				return nil, err
			}
			if msg != "" {
				fail(i, fmt.Sprintf("%s: %s", tc.b.Case.Name, msg))
				continue
			}
			live = append(live, i)
		}
		if len(live) == 0 {
			continue
		}
		samples, err := s.time(tc, ls, live)
		if err != nil {
			return nil, err
		}
		for j, i := range live {
			med, iqr := medianIQR(samples[j])
			if out[i].OK {
				out[i].Time += med
				out[i].Spread += iqr
			}
		}
	}
	return out, nil
}

// time returns the samples (seconds per launch) of the live launchables
// of ls on tc, interleaved.
func (s *gpuFamilyBench) time(tc *tuneCase, ls []*launchable, live []int) ([][]float64, error) {
	in := tc.in
	run := func(l *launchable, n int) (time.Duration, error) {
		return in.events(n, func(pair int) error { return s.launch(tc, l, pair) })
	}
	for _, i := range live {
		if _, err := run(ls[i], s.t.warmup); err != nil {
			return nil, err
		}
	}
	t1, err := run(ls[live[0]], 1)
	if err != nil {
		return nil, err
	}
	batch := 1
	if t1 < minBatchTime {
		batch = int(min(maxBatch, int64(minBatchTime)/max(int64(t1), 1)+1))
	}
	return interleaved(s.t.reps, len(live), func(k int) (float64, error) {
		d, err := run(ls[live[k]], batch)
		return d.Seconds() / float64(batch), err
	})
}

// interleaved takes reps samples of each of n candidates with sample(k),
// round by round: round r samples every candidate once, starting at
// candidate r mod n, so no candidate always follows the same one. It
// returns the samples of each candidate in the order taken.
func interleaved(reps, n int, sample func(k int) (float64, error)) ([][]float64, error) {
	out := make([][]float64, n)
	for r := range reps {
		for j := range n {
			k := (r + j) % n
			v, err := sample(k)
			if err != nil {
				return nil, err
			}
			out[k] = append(out[k], v)
		}
	}
	return out, nil
}

// medianIQR returns the median of xs and their interquartile range (the
// 75th minus the 25th percentile, nearest rank).
func medianIQR(xs []float64) (med, iqr float64) {
	if len(xs) == 0 {
		return 0, 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return median(s), percentile(s, 75) - percentile(s, 25)
}
