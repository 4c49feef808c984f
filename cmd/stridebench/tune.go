package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/stridekit/stridekit/gen"
	"github.com/stridekit/stridekit/kernels"
)

// This file is "stridebench tune": it sweeps the launch knobs of each
// kernel family on the GPU and writes the winners into the tuning table.

// Defaults of the tune flags.
const (
	defaultTuneTable  = "gen/tuning.txt"
	defaultTuneBudget = 4 * time.Minute
	defaultTuneBytes  = 192 << 20
	defaultTuneReps   = 20
	minTuneReps       = 10
	maxTuneReps       = 10000
	defaultTuneWarmup = 3
	maxTuneWarmup     = 10000
	defaultTuneRounds = 2
	maxTuneRounds     = 100
	minTuneBytes      = 4096
	maxTuneBytes      = maxArrayBytes / 2
)

// tuneFlags are the flags of "stridebench tune".
type tuneFlags struct {
	ordinal  int
	out      string
	dryRun   bool
	budget   time.Duration
	bytes    int64
	reps     int
	warmup   int
	rounds   int
	list     bool
	quiet    bool
	families []*tuneFamily
}

const tuneHelpHead = `usage: stridebench tune [flags]

Sweeps the launch knobs of stridekit's copy kernels on the GPU and writes
the winners, as entries of the GPU's architecture (sm_90 ...), into the
tuning table (gen/tuning.txt; its header documents the format).

Families, one table entry each, and the knobs swept:
  btile/S   box tiles of S-byte items, S in 1 2 3 4 8 12 16:
            threads 128 256 512, tilebytes 8192 16384 24576 32768,
            loadlanes 4 8 16 32, storelanes 1 2 4 8, blockbytes 1 16384 65536,
            elemstore 0 1, overlaptables 0 1, calcoffsets 0 1,
            loadgrain 4 16, cutfirst 0 16MiB 64MiB 256MiB (in bytes);
            cases: the first three of a 2-d transpose with odd extents,
            NCHW->NHWC with 3 channels, a 5-d permutation of short dims and
            a 2-d transpose with a 13-item fast dim that plan as box tiles
  tile/SxV  the vectorised tile kernel, S-byte items in vectors of V (1x16,
            2x8, 4x4, 8x2, 3x4, 8x1, 2x2):
            threads 128 256, pipe 0 2, wordcols 0 1 (items under 4
            bytes);
            cases: a 2-d transpose, a batch of 256x384 transposes
  elem, bcast, fill   threads 128 256 512, rows 2 4 8

The search is coordinate-wise: from the table's current knobs, one knob at a
time, each of its values is measured with the others as they are (the
current value too, in the same run), for -rounds rounds or until a round
changes nothing. Every candidate is checked once per case (its result
against runtime/hostcopy's, on the check windows of 'stridebench run'), then
timed with CUDA events: -reps samples per case after -warmup launches, the
candidates interleaved; its time is the sum over the cases of the median.

Reproducibility: a value replaces the current one only if it is faster by
more than 2% and by more than twice the spread of the samples (the larger
interquartile range of the two); ties keep the current value. So re-running
the tune on the same GPU keeps the table's choices within noise.

The whole tune stops at -budget (each family gets a share, by its number
of cases and knob values); families it did not reach keep their old
entries. Progress goes to stderr.

Flags:
`

const tuneHelpTail = `
Output: with -dry-run, the entries (and their comment) on stdout; otherwise
the table at -o is rewritten: the lines of this GPU's architecture are
replaced (old entries of it that the tune did not rewrite are kept), the
header, comments, the "any" heuristic and other architectures stay as they
were. A missing -o file is created from the table compiled into stridebench.

Limits: -bytes 4096 to 16GiB, -reps 10..10000, -warmup 1..10000,
-rounds 1..100, -budget positive.

Exit status: 0 when every family was tuned, 1 when one failed (a candidate
that gave wrong bytes is only skipped, but wrong bytes from the table's
current knobs fail the family) or the GPU could not be used, 2 on bad usage.
`

// parseTuneFlags reads the flags of "stridebench tune".
func parseTuneFlags(args []string, stderr io.Writer) (*tuneFlags, error) {
	f := &tuneFlags{bytes: defaultTuneBytes}
	fs := newFlagSet("stridebench tune", stderr, tuneHelpHead, tuneHelpTail)
	device := fs.String("device", "gpu", "the `GPU`: gpu or gpu:N (device ordinal N)")
	fs.StringVar(&f.out, "o", defaultTuneTable, "tuning table `file` to rewrite (relative to the working directory)")
	fs.BoolVar(&f.dryRun, "dry-run", false, "print the entries instead of writing them")
	fs.DurationVar(&f.budget, "budget", defaultTuneBudget, "wall-clock `time` the whole tune may take")
	fs.Var(sizeValue{&f.bytes}, "bytes", "about how many bytes each case writes (`size`: 64MiB, 192MiB, 1GiB; 4096 to 16GiB)")
	fs.IntVar(&f.reps, "reps", defaultTuneReps, fmt.Sprintf("timed samples per candidate and case, the median is used (`N`: %d..%d)", minTuneReps, maxTuneReps))
	fs.IntVar(&f.warmup, "warmup", defaultTuneWarmup, fmt.Sprintf("untimed launches per candidate and case first (`N`: 1..%d)", maxTuneWarmup))
	fs.IntVar(&f.rounds, "rounds", defaultTuneRounds, fmt.Sprintf("rounds of the coordinate-wise search (`N`: 1..%d)", maxTuneRounds))
	family := fs.String("family", "", "tune only the families whose name matches this `regexp` (btile/3, tile/4x4, elem, ...)")
	fs.BoolVar(&f.list, "list", false, "print the families, their knobs and cases, and exit (needs no GPU)")
	fs.BoolVar(&f.quiet, "quiet", false, "no per-step progress lines")
	if err := parseArgs(fs, args); err != nil {
		return nil, err
	}
	var err error
	if _, f.ordinal, err = parseDevice(*device, false); err != nil {
		return nil, err
	}
	if f.out == "" {
		return nil, usageErr("-o: empty file name")
	}
	if f.budget <= 0 {
		return nil, usageErr("-budget %v: must be positive", f.budget)
	}
	if f.bytes < minTuneBytes {
		return nil, usageErr("-bytes %d: must be at least %d", f.bytes, minTuneBytes)
	}
	if f.bytes > maxTuneBytes {
		return nil, usageErr("-bytes %s: must be at most %s", sizeString(f.bytes), sizeString(maxTuneBytes))
	}
	for _, c := range []flagRange{
		{"-reps", f.reps, minTuneReps, maxTuneReps}, {"-warmup", f.warmup, 1, maxTuneWarmup},
		{"-rounds", f.rounds, 1, maxTuneRounds},
	} {
		if err := c.check(); err != nil {
			return nil, err
		}
	}
	familyRE, err := regexp.Compile(*family)
	if err != nil {
		return nil, usageErr("-family %q: %v", *family, err)
	}
	var names []string
	for _, fam := range allFamilies() {
		names = append(names, fam.Name)
		if familyRE.MatchString(fam.Name) {
			f.families = append(f.families, fam)
		}
	}
	if len(f.families) == 0 {
		return nil, usageErr("-family %q matches no family (%s)", *family, strings.Join(names, " "))
	}
	return f, nil
}

// allFamilies returns the families tune knows; tests replace it.
var allFamilies = tuneFamilies

// newTuneTarget opens the GPU the tune runs on; tests replace it.
var newTuneTarget = func(f *tuneFlags) (tuneTarget, error) {
	return newGPUTuner(f.ordinal, f.reps, f.warmup)
}

// familyOutcome is what tuning one family gave.
type familyOutcome struct {
	f   *tuneFamily
	res searchResult // its Steps are empty when the search did not run
	err error
}

// tuneCmd is "stridebench tune".
func tuneCmd(args []string, stdout, stderr io.Writer) int {
	f, err := parseTuneFlags(args, stderr)
	if status, stop := flagsStatus(stderr, "stridebench tune", err); stop {
		return status
	}
	// Each family's cases are built and planned before any GPU time is
	// spent; a family none of whose cases plans as the family (the planner
	// changed) is skipped, and the others are tuned.
	cases := map[*tuneFamily][]*built{}
	caseErr := map[*tuneFamily]error{}
	for _, fam := range f.families {
		bs, err := familyCases(fam, f.bytes)
		if err != nil {
			caseErr[fam] = err
			fmt.Fprintf(stderr, "stridebench tune: family %s at -bytes %s is skipped: %v\n", fam.Name, humanSize(f.bytes), err)
			continue
		}
		cases[fam] = bs
	}
	if f.list {
		code := listFamilies(stdout, f, cases)
		if len(caseErr) > 0 {
			code = 1
		}
		return code
	}
	if len(cases) == 0 {
		return 1
	}
	text, from, err := readTable(f.out)
	if err != nil {
		fmt.Fprintf(stderr, "stridebench tune: -o %s: %v\n", f.out, err)
		return 1
	}
	entries, err := gen.ParseTuning(from, strings.NewReader(text))
	if err != nil {
		fmt.Fprintf(stderr, "stridebench tune: -o %s: %v\n", f.out, err)
		return 1
	}

	t0 := time.Now()
	deadline := t0.Add(f.budget)
	target, err := newTuneTarget(f)
	if err != nil {
		fmt.Fprintf(stderr, "stridebench tune: -device gpu:%d: %v\n", f.ordinal, err)
		return 1
	}
	defer target.close()
	dev := target.info()
	arch := dev.Arch
	if arch <= 0 {
		fmt.Fprintf(stderr, "stridebench tune: the device reports no compute capability\n")
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	fmt.Fprintf(stderr, "tune: %s (%s, %d SMs), %d families, cases of about %s, budget %v; start values from %s\n",
		dev.Name, archName(arch), dev.SMs, len(f.families), humanSize(f.bytes), f.budget, from)

	weight := func(fam *tuneFamily) float64 {
		n := 0
		for _, a := range fam.Axes {
			n += len(a.Values)
		}
		return float64(len(cases[fam]) * n)
	}
	left := 0.0
	for _, fam := range f.families {
		if caseErr[fam] == nil {
			left += weight(fam)
		}
	}
	var outs []*familyOutcome
	for i, fam := range f.families {
		o := &familyOutcome{f: fam}
		outs = append(outs, o)
		if err := caseErr[fam]; err != nil {
			o.err = err
			continue
		}
		w := weight(fam)
		share := time.Duration(float64(time.Until(deadline)) * w / left)
		left -= w
		if ctx.Err() != nil || !time.Now().Before(deadline) {
			o.err = errors.New("not reached: " + stopReason(ctx))
			fmt.Fprintf(stderr, "[%d/%d] %s: %v\n", i+1, len(f.families), fam.Name, o.err)
			continue
		}
		tuneFamilyOn(ctx, target, f, fam, cases[fam], entries, arch, time.Now().Add(share), o, stderr, fmt.Sprintf("[%d/%d]", i+1, len(f.families)))
		if len(o.res.Steps) == 0 && o.err == nil {
			o.err = errors.New("its share of the time budget was spent before its first step")
		}
	}
	fmt.Fprintf(stderr, "tune: done in %v\n", time.Since(t0).Round(time.Second))

	// The entries, in family order; a family that did not run keeps its old
	// entry (rewriteTuning carries entries no new one replaces).
	var newEntries []gen.TuningEntry
	status := 0
	var notTuned []string
	for _, o := range outs {
		if o.err != nil {
			status = 1
			notTuned = append(notTuned, o.f.Name)
		}
		if len(o.res.Steps) == 0 || o.res.StartFailed != "" && o.res.Best == o.res.Start {
			continue
		}
		e := gen.TuningEntry{Arch: arch, Class: o.f.Class, Item: o.f.Item, Vec: o.f.Vec, Set: map[string]int{}}
		for _, a := range o.f.Axes {
			e.Set[a.Name] = knobValue(o.res.Best, a.Name)
		}
		newEntries = append(newEntries, e)
	}
	note := tuneNote(dev, f, t0, notTuned)
	if f.dryRun {
		for _, n := range note {
			fmt.Fprintln(stdout, strings.TrimRight(blockPrefix(arch)+n, " "))
		}
		for _, e := range newEntries {
			fmt.Fprintln(stdout, formatEntry(e))
		}
		return status
	}
	if len(newEntries) == 0 {
		fmt.Fprintf(stderr, "stridebench tune: no family was tuned; %s left as it was\n", f.out)
		return 1
	}
	newText, err := rewriteTuning(text, arch, note, newEntries)
	if err == nil {
		err = writeTable(f.out, newText)
	}
	if err != nil {
		fmt.Fprintf(stderr, "stridebench tune: -o %s: %v\n", f.out, err)
		return 1
	}
	fmt.Fprintf(stdout, "wrote %d %s entries to %s\n", len(newEntries), archName(arch), f.out)
	for _, e := range newEntries {
		fmt.Fprintln(stdout, formatEntry(e))
	}
	return status
}

func stopReason(ctx context.Context) string {
	if ctx.Err() != nil {
		return "interrupted"
	}
	return "time budget spent"
}

// tuneFamilyOn tunes one family on target until deadline, filling o and
// printing progress to log.
func tuneFamilyOn(ctx context.Context, target tuneTarget, f *tuneFlags, fam *tuneFamily, bs []*built, entries []gen.TuningEntry, arch int, deadline time.Time, o *familyOutcome, log io.Writer, tag string) {
	p0, _ := tunePlan(fam, bs[0], kernels.PtrAlign(uintptr(bs[0].DstStart)), kernels.PtrAlign(uintptr(bs[0].SrcStart)), 0)
	start := gen.LookupKnobs(entries, p0.Sig, arch)
	var sigs []string
	for _, b := range bs {
		p, _ := tunePlan(fam, b, kernels.PtrAlign(uintptr(b.DstStart)), kernels.PtrAlign(uintptr(b.SrcStart)), start.TileBytes)
		sigs = append(sigs, p.Sig.String())
	}
	fmt.Fprintf(log, "%s %s: from %s; cases %s (%s)\n", tag, fam.Name, knobsString(start, fam.Axes), caseNames(bs), strings.Join(sigs, ", "))
	t := time.Now()
	bench, err := target.open(fam, bs)
	setup := time.Since(t)
	if err != nil {
		o.err = fmt.Errorf("setup: %w", err)
		fmt.Fprintf(log, "%s %s: %v\n", tag, fam.Name, o.err)
		return
	}
	defer bench.close()
	cfg := searchConfig{Rounds: f.rounds, Deadline: deadline, Indent: "    "}
	if !f.quiet {
		cfg.Log = log
	}
	cfg.Now = func() time.Time {
		if ctx.Err() != nil {
			return deadline.Add(time.Hour) // stop as at the deadline
		}
		return time.Now()
	}
	t = time.Now()
	o.res, err = coordinateSearch(start, fam.Axes, cfg, bench.measure)
	search := time.Since(t)
	if err != nil {
		o.err = err
		fmt.Fprintf(log, "%s %s: %v\n", tag, fam.Name, err)
		return
	}
	if o.res.StartFailed != "" {
		o.err = fmt.Errorf("the table's knobs %s gave wrong results: %s", knobsString(start, fam.Axes), o.res.StartFailed)
		fmt.Fprintf(log, "%s %s: FAILED: %v\n", tag, fam.Name, o.err)
	}
	stopped := ""
	if o.res.Stopped != "" {
		stopped = " (stopped: " + stopReason(ctx) + ")"
		if ctx.Err() != nil {
			o.err = errors.New("interrupted")
		}
	}
	fmt.Fprintf(log, "%s %s: %s, %+.1f%% time vs the start, %d steps in %v (setup %v)%s\n", tag, fam.Name,
		knobsString(o.res.Best, fam.Axes), 100*(o.res.Gain-1), len(o.res.Steps), search.Round(10*time.Millisecond), setup.Round(10*time.Millisecond), stopped)
}

func caseNames(bs []*built) string {
	names := make([]string, len(bs))
	for i, b := range bs {
		names[i] = b.Case.Name
	}
	return strings.Join(names, " ")
}

// tuneNote is the comment written above the entries.
func tuneNote(dev deviceInfo, f *tuneFlags, t0 time.Time, notTuned []string) []string {
	gpu := fmt.Sprintf("%s (%d SMs", dev.Name, dev.SMs)
	if dev.CUDA != "" {
		gpu += ", CUDA " + dev.CUDA
	}
	if dev.DriverRelease != "" {
		gpu += ", driver " + dev.DriverRelease
	}
	gpu += ")"
	note := []string{
		"tuned by `stridebench tune` on " + gpu + ", " + t0.UTC().Format("2006-01-02") + ":",
		fmt.Sprintf("cases of about %s, the median of %d CUDA-event samples per", humanSize(f.bytes), f.reps),
		fmt.Sprintf("candidate and case, coordinate-wise from the previous values (%d rounds).", f.rounds),
		"A knob left its previous value only for one faster by more than 2% and",
		"by more than twice the samples' spread (interquartile range), so a",
		"re-run on this GPU keeps these values within noise.",
	}
	if len(notTuned) > 0 {
		note = append(note, "Not tuned in that run (old entries kept): "+strings.Join(notTuned, " ")+".")
	}
	return note
}

// listFamilies prints each family's knobs and cases (-list).
func listFamilies(w io.Writer, f *tuneFlags, cases map[*tuneFamily][]*built) int {
	bw := &errWriter{w: w}
	for _, fam := range f.families {
		if cases[fam] == nil {
			continue
		}
		bw.printf("%s  (entry: %s %s %s)\n", fam.Name, fam.Class, starOr(fam.Item), starOr(fam.Vec))
		for _, a := range fam.Axes {
			vals := make([]string, len(a.Values))
			for i, v := range a.Values {
				vals[i] = strconv.Itoa(v)
			}
			bw.printf("    %-10s %s\n", a.Name, strings.Join(vals, " "))
		}
		for _, b := range cases[fam] {
			p, _ := tunePlan(fam, b, kernels.PtrAlign(uintptr(b.DstStart)), kernels.PtrAlign(uintptr(b.SrcStart)), 0)
			bw.printf("    %s\t# writes %s, %v\n", b.Case, humanSize(b.Moved), p.Sig)
		}
	}
	if bw.err != nil {
		return 1
	}
	return 0
}
