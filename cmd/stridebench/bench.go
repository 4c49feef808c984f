package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/stridekit/stridekit/kernels"
	"github.com/stridekit/stridekit/layout"
	"github.com/stridekit/stridekit/runtime/cuda"
	"github.com/stridekit/stridekit/runtime/hostcopy"
	"github.com/stridekit/stridekit/runtime/memview"
)

// This file runs the cases on a backend (the GPU, or the host for -device
// cpu): the correctness check, the timings, and the figures derived from
// them.

// smallBytes is the largest case (bytes moved) that also gets the
// end-to-end host latency measurements.
const smallBytes = 1 << 20

// minBatchTime is the least time one timed sample covers: shorter copies
// are timed in batches of back-to-back copies and divided.
const minBatchTime = 200 * time.Microsecond

// maxBatch bounds the number of copies in one timed sample.
const maxBatch = 1 << 14

// deviceInfo describes where the cases ran.
type deviceInfo struct {
	Kind    string `json:"kind"` // "gpu" or "cpu"
	Name    string `json:"name"`
	Arch    int    `json:"arch,omitempty"` // compute capability, e.g. 90
	SMs     int    `json:"sms,omitempty"`
	L2Bytes int    `json:"l2_bytes,omitempty"`
	// Driver is cuDriverGetVersion: the CUDA version the driver supports,
	// e.g. 13000 (CUDA is the same as "13.0").
	Driver int    `json:"driver,omitempty"`
	CUDA   string `json:"cuda,omitempty"`
	// DriverRelease is the NVIDIA kernel module's version, e.g. 580.65.06
	// (from /proc/driver/nvidia/version).
	DriverRelease string `json:"driver_release,omitempty"`
	NVRTC         string `json:"nvrtc,omitempty"` // NVRTC's version, e.g. "13.0"
	Timing        string `json:"timing"`          // how times were taken
}

// addVersions records the CUDA driver's, the NVIDIA driver's and NVRTC's
// versions, where they can be found.
func (d *deviceInfo) addVersions() {
	if v, err := cuda.DriverVersion(); err == nil && v > 0 {
		d.Driver = v
		d.CUDA = fmt.Sprintf("%d.%d", v/1000, v%1000/10)
	}
	if maj, min, err := cuda.NVRTCVersion(); err == nil {
		d.NVRTC = fmt.Sprintf("%d.%d", maj, min)
	}
	d.DriverRelease = nvidiaRelease(nvidiaVersionFile)
}

// nvidiaVersionFile is where Linux's NVIDIA kernel module states its
// version.
const nvidiaVersionFile = "/proc/driver/nvidia/version"

// nvidiaRelease reads the driver release (e.g. 580.65.06) from the NVIDIA
// kernel module's version file, whose first line reads "NVRM version:
// NVIDIA UNIX x86_64 Kernel Module  580.65.06  Sun Jul 27 …"; "" where
// there is none.
func nvidiaRelease(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return parseNvidiaRelease(string(data))
}

// parseNvidiaRelease returns the first dotted number after "Kernel Module"
// on the first line of /proc/driver/nvidia/version's text, which reads
// "... Kernel Module  580.65.06  Release Build ..." or, for the open
// module, "... Open Kernel Module for x86_64  580.159.04  Release Build
// ...", or "" when there is none.
func parseNvidiaRelease(text string) string {
	line, _, _ := strings.Cut(text, "\n")
	_, rest, ok := strings.Cut(line, "Kernel Module")
	if !ok {
		return ""
	}
	for _, f := range strings.Fields(rest) {
		if isDottedNumber(f) {
			return f
		}
	}
	return ""
}

// isDottedNumber reports whether s is digits with at least one inner dot.
func isDottedNumber(s string) bool {
	if !strings.Contains(s, ".") || s[0] == '.' || s[len(s)-1] == '.' {
		return false
	}
	for _, r := range s {
		if r != '.' && (r < '0' || r > '9') {
			return false
		}
	}
	return true
}

// backend runs cases on one device.
type backend interface {
	info() deviceInfo
	// planOptions returns the planner options the backend's copy uses for
	// b, so that the signature reported is the one that runs.
	planOptions(b *built) layout.PlanOptions
	// setup allocates the buffers of a case.
	setup(b *built) (instance, error)
	close() error
}

// instance is one case set up on a backend. Its arrays come in pairs (a
// src array and a dst array); pair 0 is the one checked, and timings rotate
// over all pairs so that a case not much larger than the L2 cache is still
// timed from DRAM.
type instance interface {
	// upload writes the src array of pair 0.
	upload(src []byte) error
	// poison fills the dst array of pair 0 with poisonByte.
	poison() error
	// copyOnce runs the stridekit copy once on pair 0 and waits for it.
	copyOnce() error
	// readDst reads len(p) bytes at off of the dst array of pair 0.
	readDst(off int64, p []byte) error
	// timeCopy and timeMemcpy time the stridekit copy and a plain memcpy of
	// the bytes the copy writes.
	timeCopy(reps, warmup int) (timing, error)
	timeMemcpy(reps, warmup int) (timing, error)
	// latency measures end-to-end host time per copy and the launch floor.
	latency(iters int) (latencies, error)
	// pairs returns the number of array pairs the timings rotate over.
	pairs() int
	// copyPlan returns memview's Explain of the copy of pair 0: the path
	// and the plan (its signature names the kernel) the copy runs.
	copyPlan() memview.CopyPlan
	// specialise switches the copy to the kernel specialised to its plan
	// and waits for it (memview.BoundCopy.Specialise): ok is false when the
	// copy has no kernel to specialise; settles reports whether a repeated
	// CopyFrom would switch to it by itself (the tuning table's knob).
	specialise() (ok, settles bool, err error)
	close() error
}

// timing is the result of timing one operation.
type timing struct {
	Median float64 // seconds per operation, the median of the samples
	Batch  int     // operations per sample
	Reps   int     // samples
}

// latencies are the small-case figures, in seconds per copy.
type latencies struct {
	Host  float64 // stridekit copies back to back from Go, synchronised at the end
	Floor float64 // bare launches of the same kernel (0: not measured)
}

// measure times an operation: warmup runs, then a calibration sample that
// sets the batch size (enough back-to-back operations to cover
// minBatchTime), then reps samples; run(n) performs n operations and
// returns the time they took.
func measure(reps, warmup int, run func(n int) (time.Duration, error)) (timing, error) {
	if warmup > 0 {
		if _, err := run(warmup); err != nil {
			return timing{}, err
		}
	}
	t1, err := run(1)
	if err != nil {
		return timing{}, err
	}
	batch := 1
	if t1 < minBatchTime {
		batch = int(min(maxBatch, int64(minBatchTime)/max(int64(t1), 1)+1))
	}
	samples := make([]float64, reps)
	for i := range samples {
		d, err := run(batch)
		if err != nil {
			return timing{}, err
		}
		samples[i] = d.Seconds() / float64(batch)
	}
	return timing{Median: median(samples), Batch: batch, Reps: reps}, nil
}

// median returns the median of xs (the mean of the middle two for an even
// count); 0 for none.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// runConfig holds the settings of a run that the cases share.
type runConfig struct {
	Reps, Warmup int
	LatencyIters int
}

// Result statuses.
const (
	statusOK       = "ok"
	statusMismatch = "mismatch" // the copy wrote wrong bytes
	statusError    = "error"    // the case could not be built, planned or run
)

// result is everything measured for one case.
type result struct {
	Name      string  `json:"name"`
	Case      string  `json:"case"` // the case in suite syntax
	Random    bool    `json:"random,omitempty"`
	DType     string  `json:"dtype"`
	Itemsize  int     `json:"itemsize"`
	Shape     []int64 `json:"shape,omitempty"` // of the views
	SrcLayout string  `json:"src_layout,omitempty"`
	DstLayout string  `json:"dst_layout,omitempty"`
	// Signature is that of the plan memview's Explain gives for the views
	// the copy runs on (before they exist: layout.PlanCopy's with the same
	// alignments); Path is Explain's path (device, host).
	Signature  string `json:"signature,omitempty"`
	Path       string `json:"path,omitempty"`
	Bytes      int64  `json:"bytes"`          // bytes the copy writes
	RoofBytes  int64  `json:"roofline_bytes"` // bytes DRAM must move
	SrcSectors int64  `json:"src_sectors,omitempty"`
	DstSectors int64  `json:"dst_sectors,omitempty"` // 32-byte sectors each view touches
	Status     string `json:"status"`
	Error      string `json:"error,omitempty"`

	TimeNs        float64 `json:"time_ns,omitempty"`
	GBps          float64 `json:"gbps,omitempty"` // (bytes read + written) / time
	MemcpyNs      float64 `json:"memcpy_ns,omitempty"`
	PctMemcpy     float64 `json:"pct_memcpy,omitempty"`
	RooflineNs    float64 `json:"roofline_ns,omitempty"`
	PctRoofline   float64 `json:"pct_roofline,omitempty"`
	RoofPctMemcpy float64 `json:"roofline_pct_memcpy,omitempty"` // the roofline as a % of memcpy
	Reps          int     `json:"reps,omitempty"`
	Batch         int     `json:"batch,omitempty"`
	Pairs         int     `json:"pairs,omitempty"`
	Small         bool    `json:"small,omitempty"`
	// The tiers: GenericPct is the copy's % of memcpy on the signature's
	// generic kernel, SpecialisedPct on the kernel specialised to its plan
	// (timed after that compile finished; 0 when the copy launches no
	// kernel), CompileMs that compile's time. Tier is the one a repeated
	// CopyFrom settles on (the tuning table's specialise knob); the
	// headline figures above are that tier's.
	GenericPct     float64 `json:"generic_pct_memcpy,omitempty"`
	SpecialisedPct float64 `json:"specialised_pct_memcpy,omitempty"`
	CompileMs      float64 `json:"compile_ms,omitempty"`
	Tier           string  `json:"tier,omitempty"`
	HostNsPerCopy  float64 `json:"host_ns_per_copy,omitempty"`
	FloorNsPerCopy float64 `json:"launch_floor_ns,omitempty"`

	Peers map[string]*peerResult `json:"peers,omitempty"`
}

// failed reports whether the case did not pass.
func (r *result) failed() bool { return r.Status != statusOK }

// prepared is a case ready to run: built, or with the error that stopped it.
type prepared struct {
	Case   *Case
	Built  *built
	Err    error
	Random bool
}

// prepare builds every case.
func prepare(cases []*Case, random map[*Case]bool) []prepared {
	out := make([]prepared, len(cases))
	for i, c := range cases {
		b, err := buildCase(c)
		out[i] = prepared{Case: c, Built: b, Err: err, Random: random[c]}
	}
	return out
}

// newResult fills the parts of a result that need no device run; opt
// gives the planner options for the case's signature (nil: the arrays'
// alignments alone).
func newResult(p prepared, opt func(*built) layout.PlanOptions) *result {
	c := p.Case
	r := &result{Name: c.Name, Case: c.String(), Random: p.Random, DType: c.DType.Name(), Itemsize: c.DType.Itemsize(), Status: statusOK}
	if p.Err != nil {
		r.Status, r.Error = statusError, p.Err.Error()
		return r
	}
	b := p.Built
	r.Shape = b.Dst.Shape()
	r.SrcLayout, r.DstLayout = b.Src.String(), b.Dst.String()
	r.Bytes = b.Moved
	r.Small = b.Moved <= smallBytes
	po := layout.PlanOptions{DstAlign: kernels.PtrAlign(uintptr(b.DstStart)), SrcAlign: kernels.PtrAlign(uintptr(b.SrcStart))}
	if opt != nil {
		po = opt(b)
	}
	plan, err := layout.PlanCopy(b.Dst, b.Src, po)
	if err != nil {
		r.Status, r.Error = statusError, fmt.Sprintf("%s: plan: %v", c.where(), err)
		return r
	}
	r.Signature = plan.Sig.String()
	if err := checkSize(b); err != nil {
		r.Status, r.Error = statusError, err.Error()
		return r
	}
	r.SrcSectors, r.DstSectors = sectors(b)
	r.RoofBytes = sectorBytes * (r.SrcSectors + r.DstSectors)
	return r
}

// runCases runs the prepared cases on be and returns one result each, in
// order. A case that fails is reported in its result; the run goes on. When
// ctx is cancelled (an interrupt), it stops before the next case and
// returns the results so far.
func runCases(ctx context.Context, ps []prepared, be backend, cfg runConfig, done func(*result)) []*result {
	out := make([]*result, 0, len(ps))
	for _, p := range ps {
		if ctx.Err() != nil {
			break
		}
		r := newResult(p, be.planOptions)
		if r.Status == statusOK {
			if err := runCase(p.Built, be, cfg, r); err != nil {
				r.Status, r.Error = statusError, err.Error()
			}
		}
		out = append(out, r)
		if done != nil {
			done(r)
		}
	}
	return out
}

// maxArrayBytes bounds the source and destination arrays of one case
// together: the check keeps host copies of both, so a case past it is
// refused rather than left to exhaust host memory.
const maxArrayBytes = 32 << 30

// checkSize refuses a case whose arrays exceed maxArrayBytes.
func checkSize(b *built) error {
	if n := b.SrcBytes + b.DstBytes; n > maxArrayBytes || n < 0 {
		return fmt.Errorf("%w: %s: its arrays take %s, more than the %s a case may use", errCase, b.Case.where(), humanSize(n), humanSize(maxArrayBytes))
	}
	return nil
}

// runCase checks and times one case on be, filling r.
func runCase(b *built, be backend, cfg runConfig, r *result) error {
	inst, err := be.setup(b)
	if err != nil {
		return fmt.Errorf("setup: %w", err)
	}
	defer inst.close()
	r.Pairs = inst.pairs()
	cp := inst.copyPlan()
	r.Signature, r.Path = cp.Plan.Sig.String(), cp.Path.String()

	mismatch, err := checkCase(b, inst)
	if err != nil {
		return err
	}
	if mismatch != "" {
		r.Status, r.Error = statusMismatch, mismatch
		return nil
	}

	tc, err := inst.timeCopy(cfg.Reps, cfg.Warmup)
	if err != nil {
		return fmt.Errorf("timing the copy: %w", err)
	}
	tm, err := inst.timeMemcpy(cfg.Reps, cfg.Warmup)
	if err != nil {
		return fmt.Errorf("timing memcpy: %w", err)
	}
	if tc, err = timeTiers(b, inst, cfg, r, tc, tm); err != nil || r.failed() {
		return err
	}
	fillTimes(r, tc, tm)
	if r.Small && cfg.LatencyIters > 0 {
		l, err := inst.latency(cfg.LatencyIters)
		if err != nil {
			return fmt.Errorf("latency: %w", err)
		}
		r.HostNsPerCopy, r.FloorNsPerCopy = l.Host*1e9, l.Floor*1e9
	}
	return nil
}

// timeTiers records the generic tier's time tc (what the copy ran on so
// far), switches the copy to its specialised kernel, checks it as
// checkCase does (a difference fails the case) and times it, and returns
// the time of the tier a repeated CopyFrom settles on.
func timeTiers(b *built, inst instance, cfg runConfig, r *result, tc, tm timing) (timing, error) {
	r.Tier = inst.copyPlan().Tier.String()
	if tc.Median > 0 {
		r.GenericPct = 100 * tm.Median / tc.Median
	}
	t0 := time.Now()
	ok, settles, err := inst.specialise()
	if err != nil || !ok {
		return tc, err
	}
	r.CompileMs = float64(time.Since(t0).Microseconds()) / 1000
	mismatch, err := checkCase(b, inst)
	if err != nil {
		return tc, fmt.Errorf("specialised copy: %w", err)
	}
	if mismatch != "" {
		r.Status, r.Error = statusMismatch, "specialised kernel: "+mismatch
		return tc, nil
	}
	ts, err := inst.timeCopy(cfg.Reps, cfg.Warmup)
	if err != nil {
		return tc, fmt.Errorf("timing the specialised copy: %w", err)
	}
	if ts.Median > 0 {
		r.SpecialisedPct = 100 * tm.Median / ts.Median
	}
	if settles {
		r.Tier = kernels.TierSpecialised.String()
		return ts, nil
	}
	return tc, nil
}

// fillTimes derives the reported figures from the two timings.
func fillTimes(r *result, tc, tm timing) {
	r.TimeNs, r.MemcpyNs = tc.Median*1e9, tm.Median*1e9
	r.Reps, r.Batch = tc.Reps, tc.Batch
	if tc.Median > 0 {
		r.GBps = 2 * float64(r.Bytes) / tc.Median / 1e9
		r.PctMemcpy = 100 * tm.Median / tc.Median
	}
	if r.Bytes > 0 && tm.Median > 0 {
		// memcpy moves 2·Bytes (a read and a write of each byte) in
		// tm.Median: the roofline moves RoofBytes at that rate.
		roof := float64(r.RoofBytes) * tm.Median / (2 * float64(r.Bytes))
		r.RooflineNs = roof * 1e9
		r.RoofPctMemcpy = 100 * tm.Median / roof
		if tc.Median > 0 {
			r.PctRoofline = 100 * roof / tc.Median
		}
	}
}

// checkCase runs the copy once into a poisoned destination and compares it
// with runtime/hostcopy's copy of the same source on the host, in the
// windows checkWindowsFor picks. It returns a description of the first
// difference, or "".
func checkCase(b *built, inst instance) (string, error) {
	src := sourcePattern(b)
	if err := inst.upload(src); err != nil {
		return "", fmt.Errorf("upload: %w", err)
	}
	if err := inst.poison(); err != nil {
		return "", fmt.Errorf("poison: %w", err)
	}
	if err := inst.copyOnce(); err != nil {
		return "", fmt.Errorf("copy: %w", err)
	}
	want, err := referenceDst(b, src)
	if err != nil {
		return "", err
	}
	return compareDst(b, inst.readDst, want)
}

// sourcePattern returns the src array of b filled with its case's pattern.
func sourcePattern(b *built) []byte {
	src := make([]byte, b.SrcBytes)
	fillPattern(src, caseSeed(b.Case.Name))
	return src
}

// referenceDst returns the dst array a correct copy of src leaves: poison
// outside the dst view, runtime/hostcopy's copy inside it.
func referenceDst(b *built, src []byte) ([]byte, error) {
	want := make([]byte, b.DstBytes)
	fillBytes(want, poisonByte)
	sv := src[b.SrcStart : b.SrcStart+b.Src.RequiredSizeInBytes()]
	dv := want[b.DstStart : b.DstStart+b.Dst.RequiredSizeInBytes()]
	if err := hostcopy.Copy(dv, b.Dst, sv, b.Src); err != nil {
		return nil, fmt.Errorf("reference copy: %w", err)
	}
	return want, nil
}

// compareDst reads the check windows of b's dst array with read and
// compares them with want, the reference dst array. It returns a
// description of the first difference, or "".
func compareDst(b *built, read func(off int64, p []byte) error, want []byte) (string, error) {
	for _, w := range checkWindowsFor(b.DstBytes, caseSeed(b.Case.Name)) {
		got := make([]byte, w.Len)
		if err := read(w.Off, got); err != nil {
			return "", fmt.Errorf("reading dst: %w", err)
		}
		if msg := compareWindow(w, got, want[w.Off:w.Off+w.Len]); msg != "" {
			return msg, nil
		}
	}
	return "", nil
}

// fillBytes sets every byte of b to v.
func fillBytes(b []byte, v byte) {
	if len(b) == 0 {
		return
	}
	b[0] = v
	for n := 1; n < len(b); n *= 2 {
		copy(b[n:], b[:n])
	}
}
