package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// This file is "stridebench report": it turns the JSON of one or two runs
// (the named suite, and a random sweep) into the benchmark record,
// docs/benchmarks.md, with its chart, and prints a short summary.

// Defaults of the report flags.
const (
	defaultRecord  = "docs/benchmarks.md"
	defaultShortOf = 90.0
)

// reportFlags are the flags of "stridebench report".
type reportFlags struct {
	json1, json2 string
	smi          string
	notes        string
	out          string
	chart        string
	noChart      bool
	shortOf      float64
}

const reportHelpHead = `usage: stridebench report -json RUN.json [-json2 RANDOM.json] [flags]

Writes the benchmark record (markdown, default docs/benchmarks.md) from the
JSON of 'stridebench run -json': the date, GPU, NVIDIA driver, CUDA and
NVRTC versions; the commands; the named cases (stridekit's % of memcpy and
of the roofline, each peer's % of its own memcpy and stridekit's ratio to
it); the chart (a PNG beside the markdown); the random sweep (min, p10 and
median of % of memcpy and of the roofline, the seed, the slowest cases with
their signatures); the cases where a peer is faster; and "Cases short of
90%": every case under -short-of % of its reference (memcpy, or its
roofline where that is more than 1% slower than memcpy: strided sources),
with its signature, bytes and sectors, and a notes column. The notes are
a person's explanations, read from the -notes file: lines before the first
"match" line are printed above the table; each "match REGEXP" line starts a
rule whose note is the text up to the next "match" line, and a case takes
the note of the first rule whose expression matches its name, signature or
case line; "#" lines are comments. Everything else is generated from the
figures. A summary goes to stdout.

Flags:
`

// parseReportFlags reads the flags of "stridebench report".
func parseReportFlags(args []string, stderr io.Writer) (*reportFlags, error) {
	f := &reportFlags{}
	fs := newFlagSet("stridebench report", stderr, reportHelpHead, "")
	fs.StringVar(&f.json1, "json", "", "`file` written by 'stridebench run -json' (the named suite, or any run)")
	fs.StringVar(&f.json2, "json2", "", "a second run's JSON `file` (the random sweep)")
	fs.StringVar(&f.smi, "smi", "", "a `file` of nvidia-smi output to include")
	fs.StringVar(&f.notes, "notes", "", "a `file` of notes on the cases short of -short-of (format above)")
	fs.StringVar(&f.out, "o", defaultRecord, "markdown `file` to write")
	fs.StringVar(&f.chart, "chart", "", "chart `file` (.png or .svg; default: -o's name with .png)")
	fs.BoolVar(&f.noChart, "no-chart", false, "write no chart")
	fs.Float64Var(&f.shortOf, "short-of", defaultShortOf, "list the cases under this `percent` of their reference")
	if err := parseArgs(fs, args); err != nil {
		return nil, err
	}
	switch {
	case f.json1 == "":
		return nil, usageErr("-json: no run given")
	case f.out == "":
		return nil, usageErr("-o: empty file name")
	case f.shortOf <= 0:
		return nil, usageErr("-short-of %v: must be positive", f.shortOf)
	}
	if f.chart == "" {
		f.chart = strings.TrimSuffix(f.out, filepath.Ext(f.out)) + ".png"
	}
	if !f.noChart && !chartExt(f.chart) {
		return nil, usageErr("-chart %q: the file name must end in .png or .svg", f.chart)
	}
	return f, nil
}

// readReport reads a run's JSON.
func readReport(path string) (*report, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var rep report
	if err := json.Unmarshal(data, &rep); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if rep.Tool != "stridebench" {
		return nil, fmt.Errorf("%s: not a stridebench run (tool %q)", path, rep.Tool)
	}
	return &rep, nil
}

// reportCmd is "stridebench report".
func reportCmd(args []string, stdout, stderr io.Writer) int {
	f, err := parseReportFlags(args, stderr)
	if status, stop := flagsStatus(stderr, "stridebench report", err); stop {
		return status
	}
	rec := &record{shortOf: f.shortOf}
	if rec.main, err = readReport(f.json1); err != nil {
		fmt.Fprintf(stderr, "stridebench report: -json: %v\n", err)
		return 1
	}
	if f.json2 != "" {
		if rec.second, err = readReport(f.json2); err != nil {
			fmt.Fprintf(stderr, "stridebench report: -json2: %v\n", err)
			return 1
		}
	}
	if f.smi != "" {
		data, err := os.ReadFile(f.smi)
		if err != nil {
			fmt.Fprintf(stderr, "stridebench report: -smi: %v\n", err)
			return 1
		}
		rec.smi = string(data)
	}
	if f.notes != "" {
		file, err := os.Open(f.notes)
		if err == nil {
			rec.notes, err = readNotes(f.notes, file)
			file.Close()
		}
		if err != nil {
			fmt.Fprintf(stderr, "stridebench report: -notes: %v\n", err)
			return 1
		}
	}
	if !f.noChart {
		named := rec.named()
		if len(named) == 0 {
			named = rec.all()
		}
		if len(named) > 0 {
			cr := *rec.main
			cr.Cases = named
			if err := writeChart(f.chart, &cr); err != nil {
				fmt.Fprintf(stderr, "stridebench report: -chart: %v\n", err)
				return 1
			}
			rel, err := filepath.Rel(filepath.Dir(f.out), f.chart)
			if err != nil {
				rel = f.chart
			}
			rec.chart = filepath.ToSlash(rel)
		}
	}
	fh, err := os.Create(f.out)
	if err == nil {
		err = rec.write(fh)
		if cerr := fh.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "stridebench report: -o: %v\n", err)
		return 1
	}
	if err := rec.summary(stdout); err != nil {
		fmt.Fprintf(stderr, "stridebench report: stdout: %v\n", err)
		return 1
	}
	return 0
}

// record is what the benchmark record is written from.
type record struct {
	main, second *report
	smi          string
	notes        *caseNotes // explanations of the short cases (nil: none)
	chart        string     // the chart's path relative to the markdown ("": none)
	shortOf      float64
}

func (rec *record) runs() []*report {
	if rec.second != nil {
		return []*report{rec.main, rec.second}
	}
	return []*report{rec.main}
}

// all returns every case of every run, in order.
func (rec *record) all() []*result {
	var out []*result
	for _, r := range rec.runs() {
		out = append(out, r.Cases...)
	}
	return out
}

// named returns the named (not random) cases of every run.
func (rec *record) named() []*result {
	var out []*result
	for _, r := range rec.all() {
		if !r.Random {
			out = append(out, r)
		}
	}
	return out
}

// randomRun returns the run whose random cases the record summarises: the
// second run's if it has any, else the first's.
func (rec *record) randomRun() *report {
	for _, r := range slices.Backward(rec.runs()) {
		if r.Random != nil {
			return r
		}
	}
	return nil
}

// roofSlowerPct is how far (in % of memcpy) the roofline must be below
// memcpy for a case to be measured against its roofline: views whose
// sectors memcpy's bytes fill all but partly (odd rows of a transpose) stay
// measured against memcpy.
const roofSlowerPct = 99

// reference returns a case's % of its reference speed and the reference's
// name: memcpy, or the roofline where it is more than 1% slower than memcpy
// (a strided source, which reads more sectors than the copy writes).
func reference(r *result) (float64, string) {
	if r.RoofPctMemcpy > 0 && r.RoofPctMemcpy < roofSlowerPct {
		return r.PctRoofline, "roofline"
	}
	return r.PctMemcpy, "memcpy"
}

// shellQuote quotes an argument for a POSIX shell where it needs it.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=:,+@%", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// commandLine is the command a run was made with.
func commandLine(rep *report) string {
	parts := []string{"stridebench", "run"}
	args := rep.Args
	if len(args) > 0 && args[0] == "run" {
		args = args[1:]
	}
	for _, a := range args {
		parts = append(parts, shellQuote(a))
	}
	return strings.Join(parts, " ")
}

func mib(n int64) string { return fmt.Sprintf("%.1f", float64(n)/(1<<20)) }

func orDash(s string) string {
	if s == "" {
		return "–"
	}
	return s
}

// write writes the record as markdown.
func (rec *record) write(w io.Writer) error {
	bw := &errWriter{w: w}
	m := rec.main
	d := m.Device
	bw.printf("# Benchmarks\n\n")
	bw.printf("<!-- Generated by `stridebench report` from the JSON of `stridebench run`; regenerate it rather than editing it. -->\n\n")
	bw.printf("stridekit's strided copies against `cuMemcpyDtoD` of the same bytes, against the roofline of each case, and against PyTorch, CuPy and JAX, " +
		"all timed in the same run. What each figure means is in `stridebench -h`; the commands below reproduce the runs. " +
		"Copies between two GPUs and resharding over NCCL (`stridebench peer`, `stridebench reshard`) are in " +
		"[benchmarks-multigpu.md](benchmarks-multigpu.md).\n\n")
	for _, r := range rec.runs() {
		if r.Device.Kind != "gpu" {
			bw.printf("> **Not a GPU measurement.** `%s` ran with `-device %s`: the copy ran on the host (timing: %s). "+
				"Its figures test the harness and say nothing about GPU performance.\n\n", commandLine(r), r.Device.Kind, mdEscape(r.Device.Timing))
		}
		if r.Interrupted != "" {
			bw.printf("> **Incomplete run.** `%s` was %s.\n\n", commandLine(r), r.Interrupted)
		}
		if r.PeersErr != "" {
			bw.printf("> **The peer run failed** in `%s`: %s\n\n", commandLine(r), mdEscape(oneLine(r.PeersErr)))
		}
	}

	bw.printf("## Setup\n\n| | |\n|---|---|\n")
	bw.printf("| date | %s |\n", m.Started.UTC().Format("2006-01-02 15:04 UTC"))
	if d.Kind == "gpu" {
		bw.printf("| GPU | %s (sm_%d, %d SMs, L2 %s) |\n", mdEscape(d.Name), d.Arch, d.SMs, sizeString(int64(d.L2Bytes)))
	} else {
		bw.printf("| device | %s (%s) |\n", mdEscape(d.Name), d.Kind)
	}
	bw.printf("| NVIDIA driver | %s |\n", orDash(driverRelease(d.DriverRelease, rec.smi)))
	cudaV := orDash(d.CUDA)
	if d.Driver > 0 {
		cudaV += fmt.Sprintf(" (cuDriverGetVersion %d)", d.Driver)
	}
	bw.printf("| CUDA (driver API) | %s |\n| NVRTC | %s |\n", cudaV, orDash(d.NVRTC))
	if len(m.Peers) > 0 {
		var ks []string
		for k := range m.Peers {
			ks = append(ks, k)
		}
		slices.Sort(ks)
		var vs []string
		for _, k := range ks {
			vs = append(vs, k+" "+m.Peers[k])
		}
		bw.printf("| peers | %s |\n", mdEscape(strings.Join(vs, "; ")))
	}
	bw.printf("| timing | %s; median of %d samples after %d warm-up copies |\n\n", mdEscape(d.Timing), m.Reps, m.Warmup)
	if rec.smi != "" {
		bw.printf("nvidia-smi:\n\n```text\n%s\n```\n\n", strings.TrimRight(rec.smi, "\n"))
	}

	bw.printf("## Commands\n\n```sh\n")
	for _, r := range rec.runs() {
		bw.printf("%s\n", commandLine(r))
	}
	bw.printf("```\n\n")

	rec.writeNamed(bw)
	rec.writeRandom(bw)
	rec.writePeerWins(bw)
	rec.writeShort(bw)
	rec.writeFailed(bw)
	return bw.err
}

// writeNamed writes the table of named cases and the chart.
func (rec *record) writeNamed(bw *errWriter) {
	named := rec.named()
	if len(named) == 0 {
		return
	}
	peers := hasPeers(named)
	bw.printf("## Named cases\n\n")
	bw.printf("%% memcpy: memcpy's time for the bytes the copy writes over the copy's time. %% roofline: the time memcpy's bandwidth needs for the " +
		"32-byte sectors both views touch, over the copy's time; \"roof\" is that roofline as a %% of memcpy (the best %% memcpy the case can reach). " +
		"A peer's %% is of its own memcpy of the same bytes; \"vs\" is stridekit's %% memcpy over the peer's (above 1: stridekit is faster).\n\n")
	bw.printf("| case | signature | MiB | %% memcpy | %% roofline | roof |")
	for _, p := range peers {
		bw.printf(" %s %% | vs %s |", p, p)
	}
	bw.printf("\n|---|---|---:|---:|---:|---:|")
	for range peers {
		bw.printf("---:|---:|")
	}
	bw.printf("\n")
	for _, r := range named {
		bw.printf("| %s | %s | %s |", r.Name, orDash(r.Signature), mib(r.Bytes))
		if r.failed() {
			bw.printf(" **%s** | | |", r.Status)
		} else {
			bw.printf(" %.1f | %.1f | %.1f |", r.PctMemcpy, r.PctRoofline, r.RoofPctMemcpy)
		}
		for _, p := range peers {
			bw.printf(" %s | %s |", peerCell(r.Peers[p]), ratioCell(r.Peers[p]))
		}
		bw.printf("\n")
	}
	bw.printf("\n")
	if rec.chart != "" {
		bw.printf("![stridekit and the peers as a %% of memcpy per named case; black bars: the roofline](%s)\n\n", rec.chart)
	}
	var small []*result
	for _, r := range named {
		if r.Small && !r.failed() && r.HostNsPerCopy > 0 {
			small = append(small, r)
		}
	}
	if len(small) > 0 {
		bw.printf("Small copies, host time per copy (back-to-back copies from Go, synchronised at the end; the floor is bare launches of the same kernel):\n\n")
		bw.printf("| case | bytes | stridekit | launch floor | torch copy_ |\n|---|---:|---:|---:|---:|\n")
		for _, r := range small {
			floor, torch := "–", "–"
			if r.FloorNsPerCopy > 0 {
				floor = durString(r.FloorNsPerCopy)
			}
			if p := r.Peers["torch"]; p != nil && p.HostS > 0 {
				torch = durString(p.HostS * 1e9)
			}
			bw.printf("| %s | %d | %s | %s | %s |\n", r.Name, r.Bytes, durString(r.HostNsPerCopy), floor, torch)
		}
		bw.printf("\n")
	}
}

// writeRandom writes the random sweep's distribution and slowest cases.
func (rec *record) writeRandom(bw *errWriter) {
	r := rec.randomRun()
	if r == nil {
		return
	}
	s := r.Random
	bw.printf("## Random cases\n\n")
	if sp := r.RandomSpec; sp != nil {
		views := "permutations"
		if sp.Views {
			views = "permutations with slices and flips"
		}
		bw.printf("%d random %s (seed %d, about %s each; `-case` with a name reproduces one), %d passed.\n\n", s.Cases, views, sp.Seed, humanSize(sp.Bytes), s.OK)
	} else {
		bw.printf("%d random cases, %d passed.\n\n", s.Cases, s.OK)
	}
	bw.printf("| | min | p10 | median |\n|---|---:|---:|---:|\n")
	bw.printf("| %% of memcpy | %.1f | %.1f | %.1f |\n", s.MinPct, s.P10Pct, s.MedianPct)
	bw.printf("| %% of roofline | %.1f | %.1f | %.1f |\n", s.MinRoof, s.P10Roof, s.MedianRoof)
	bw.printf("| %% of memcpy, generic kernels | %.1f | %.1f | %.1f |\n", s.Generic[0], s.Generic[1], s.Generic[2])
	bw.printf("| %% of memcpy, specialised kernels | %.1f | %.1f | %.1f |\n\n", s.Specialised[0], s.Specialised[1], s.Specialised[2])
	if len(s.Slowest) > 0 {
		bw.printf("The %d slowest:\n\n| case | signature | %% memcpy | %% roofline | case line |\n|---|---|---:|---:|---|\n", len(s.Slowest))
		for _, e := range s.Slowest {
			bw.printf("| %s | %s | %.1f | %.1f | `%s` |\n", e.Name, e.Signature, e.PctMemcpy, e.PctRoofline, e.Case)
		}
		bw.printf("\n")
	}
}

// peerWin is a case where a peer beat stridekit.
type peerWin struct {
	r    *result
	peer string
	p    *peerResult
}

func (rec *record) peerWins() []peerWin {
	var out []peerWin
	for _, r := range rec.all() {
		for _, n := range peerNames {
			if p := r.Peers[n]; p != nil && p.Ratio > 0 && p.Ratio < 1 {
				out = append(out, peerWin{r, n, p})
			}
		}
	}
	return out
}

// writePeerWins lists every case where a peer's % of memcpy beats
// stridekit's.
func (rec *record) writePeerWins(bw *errWriter) {
	if len(hasPeers(rec.all())) == 0 {
		return
	}
	wins := rec.peerWins()
	bw.printf("## Where a peer is faster\n\n")
	if len(wins) == 0 {
		bw.printf("No case: stridekit's %% of memcpy is at least every peer's wherever both ran.\n\n")
		return
	}
	bw.printf("Cases where a peer's %% of its own memcpy is above stridekit's (%d).\n\n", len(wins))
	bw.printf("| case | signature | stridekit %% | peer | peer %% | vs |\n|---|---|---:|---|---:|---:|\n")
	for _, w := range wins {
		bw.printf("| %s | %s | %.1f | %s | %s | %.2f× |\n", w.r.Name, w.r.Signature, w.r.PctMemcpy, w.peer, peerCell(w.p), w.p.Ratio)
	}
	bw.printf("\n")
}

// shortCases returns the cases that ran and reached less than shortOf % of
// their reference.
func (rec *record) shortCases() []*result {
	var out []*result
	for _, r := range rec.all() {
		if r.failed() {
			continue
		}
		if pct, _ := reference(r); pct < rec.shortOf {
			out = append(out, r)
		}
	}
	slices.SortStableFunc(out, func(a, b *result) int {
		pa, _ := reference(a)
		pb, _ := reference(b)
		return cmp.Compare(pa, pb)
	})
	return out
}

// writeShort writes "Cases short of 90%".
func (rec *record) writeShort(bw *errWriter) {
	short := rec.shortCases()
	bw.printf("## Cases short of %g%%\n\n", rec.shortOf)
	bw.printf("Every case under %g%% of its reference: memcpy, or its roofline where that is more than 1%% slower than memcpy (a strided source, which "+
		"touches more sectors than the copy writes). Sectors are the distinct 32-byte sectors each view touches.\n\n", rec.shortOf)
	if rec.notes != nil && rec.notes.preamble != "" {
		bw.printf("%s\n\n", rec.notes.preamble)
	}
	if len(short) == 0 {
		bw.printf("None.\n\n")
		return
	}
	bw.printf("| case | signature | bytes moved | src sectors | dst sectors | %% memcpy | %% roofline | %% of reference | notes |\n")
	bw.printf("|---|---|---:|---:|---:|---:|---:|---:|---|\n")
	for _, r := range short {
		pct, ref := reference(r)
		ss, ds := "–", "–"
		if r.SrcSectors > 0 || r.DstSectors > 0 {
			ss, ds = fmt.Sprint(r.SrcSectors), fmt.Sprint(r.DstSectors)
		}
		bw.printf("| %s | %s | %d | %s | %s | %.1f | %.1f | %.1f (%s) | %s |\n", r.Name, r.Signature, r.Bytes, ss, ds, r.PctMemcpy, r.PctRoofline, pct, ref,
			mdEscape(rec.notes.noteFor(r)))
	}
	bw.printf("\n")
}

// writeFailed lists the cases that did not pass.
func (rec *record) writeFailed(bw *errWriter) {
	var failed []*result
	for _, r := range rec.all() {
		if r.failed() {
			failed = append(failed, r)
		}
	}
	if len(failed) == 0 {
		return
	}
	bw.printf("## Failed cases\n\n| case | status | error |\n|---|---|---|\n")
	for _, r := range failed {
		bw.printf("| %s | %s | %s |\n", r.Name, r.Status, mdEscape(oneLine(r.Error)))
	}
	bw.printf("\n")
}

// summary prints the record's headline figures: the random distribution
// and each named case's % of memcpy.
func (rec *record) summary(w io.Writer) error {
	bw := &errWriter{w: w}
	named := rec.named()
	if len(named) > 0 {
		bw.printf("named cases (%% of memcpy):\n")
		for _, r := range named {
			if r.failed() {
				bw.printf("  %-24s %s\n", r.Name, strings.ToUpper(r.Status))
			} else {
				bw.printf("  %-24s %6.1f\n", r.Name, r.PctMemcpy)
			}
		}
	}
	if r := rec.randomRun(); r != nil {
		s := r.Random
		seed := ""
		if r.RandomSpec != nil {
			seed = fmt.Sprintf(" (seed %d)", r.RandomSpec.Seed)
		}
		bw.printf("random%s: %d cases, %d passed; %% of memcpy: median %.1f, p10 %.1f, min %.1f\n", seed, s.Cases, s.OK, s.MedianPct, s.P10Pct, s.MinPct)
	}
	failed := 0
	for _, r := range rec.all() {
		if r.failed() {
			failed++
		}
	}
	bw.printf("short of %g%%: %d cases; a peer faster: %d; failed: %d\n", rec.shortOf, len(rec.shortCases()), len(rec.peerWins()), failed)
	return bw.err
}

// driverRelease returns the NVIDIA driver release to report: the run's
// own when it is a version number, else the driver_version column of the
// nvidia-smi CSV output smi (records of runs before the version file's
// open-module line was parsed right hold a word there), else "".
func driverRelease(recorded, smi string) string {
	if isDottedNumber(recorded) {
		return recorded
	}
	lines := strings.Split(strings.TrimSpace(smi), "\n")
	if len(lines) < 2 {
		return ""
	}
	for i, h := range strings.Split(lines[0], ",") {
		if strings.TrimSpace(h) != "driver_version" {
			continue
		}
		if f := strings.Split(lines[1], ","); i < len(f) && isDottedNumber(strings.TrimSpace(f[i])) {
			return strings.TrimSpace(f[i])
		}
	}
	return ""
}
