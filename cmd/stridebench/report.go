package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"runtime"
	"slices"
	"strings"
	"time"
)

// This file writes the results: Go benchmark lines (for benchstat), the
// JSON report, the markdown tables and the summary of random cases.

// report is everything a run produced, as the JSON file holds it.
type report struct {
	Tool     string            `json:"tool"`
	Started  time.Time         `json:"started"`
	Args     []string          `json:"args"`
	Device   deviceInfo        `json:"device"`
	Reps     int               `json:"reps"`
	Warmup   int               `json:"warmup"`
	Peers    map[string]string `json:"peer_versions,omitempty"`
	PeersErr string            `json:"peer_error,omitempty"`
	// RandomSpec is what -random asked for (the size is the one generated
	// at: -random-bytes, or -shrink where smaller); nil without -random.
	RandomSpec *randomSpec `json:"random_spec,omitempty"`
	// Interrupted says that a signal stopped the run before every case ran.
	Interrupted string         `json:"interrupted,omitempty"`
	Cases       []*result      `json:"cases"`
	Failed      int            `json:"failed"`
	Random      *randomSummary `json:"random_summary,omitempty"`
}

// randomSummary is the distribution of the random cases' figures and the
// slowest of them.
type randomSummary struct {
	Cases      int     `json:"cases"`
	OK         int     `json:"ok"`
	MinPct     float64 `json:"min_pct_memcpy"`
	P10Pct     float64 `json:"p10_pct_memcpy"`
	MedianPct  float64 `json:"median_pct_memcpy"`
	MinRoof    float64 `json:"min_pct_roofline"`
	P10Roof    float64 `json:"p10_pct_roofline"`
	MedianRoof float64 `json:"median_pct_roofline"`
	// Generic and Specialised are the % of memcpy of each tier alone
	// (min, p10, median); a case without a kernel counts its one figure in
	// both.
	Generic     [3]float64  `json:"generic_pct_memcpy"`
	Specialised [3]float64  `json:"specialised_pct_memcpy"`
	Slowest     []slowEntry `json:"slowest"`
	// Peers is stridekit against each peer run with -compare (peerVersus).
	Peers []versus `json:"peers,omitempty"`
}

// slowEntry is one of the slowest random cases.
type slowEntry struct {
	Name        string  `json:"name"`
	PctMemcpy   float64 `json:"pct_memcpy"`
	PctRoofline float64 `json:"pct_roofline"`
	Signature   string  `json:"signature"`
	Case        string  `json:"case"`
}

// percentile returns the p-th percentile (0–100) of sorted xs by the
// nearest-rank method.
func percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	k := int(math.Ceil(p/100*float64(len(sorted)))) - 1
	return sorted[min(max(k, 0), len(sorted)-1)]
}

// tierSpread returns the min, p10 and median % of memcpy of each tier
// over rs.
func tierSpread(rs []*result) (generic, spec [3]float64) {
	g, sp := make([]float64, len(rs)), make([]float64, len(rs))
	for i, r := range rs {
		g[i] = cmp.Or(r.GenericPct, r.PctMemcpy)
		sp[i] = cmp.Or(r.SpecialisedPct, g[i])
	}
	slices.Sort(g)
	slices.Sort(sp)
	return [3]float64{percentile(g, 0), percentile(g, 10), median(g)}, [3]float64{percentile(sp, 0), percentile(sp, 10), median(sp)}
}

// summarizeRandom summarises the random cases of rs; nil when there are
// none. slowest is how many of the slowest to list.
func summarizeRandom(rs []*result, slowest int) *randomSummary {
	var ok []*result
	n := 0
	for _, r := range rs {
		if !r.Random {
			continue
		}
		n++
		if r.Status == statusOK {
			ok = append(ok, r)
		}
	}
	if n == 0 {
		return nil
	}
	s := &randomSummary{Cases: n, OK: len(ok)}
	pct := make([]float64, len(ok))
	roof := make([]float64, len(ok))
	for i, r := range ok {
		pct[i], roof[i] = r.PctMemcpy, r.PctRoofline
	}
	slices.Sort(pct)
	slices.Sort(roof)
	s.MinPct, s.P10Pct, s.MedianPct = percentile(pct, 0), percentile(pct, 10), median(pct)
	s.MinRoof, s.P10Roof, s.MedianRoof = percentile(roof, 0), percentile(roof, 10), median(roof)
	s.Generic, s.Specialised = tierSpread(ok)
	slices.SortStableFunc(ok, func(a, b *result) int {
		return cmp.Compare(a.PctMemcpy, b.PctMemcpy)
	})
	for _, r := range ok[:min(slowest, len(ok))] {
		s.Slowest = append(s.Slowest, slowEntry{r.Name, r.PctMemcpy, r.PctRoofline, r.Signature, r.Case})
	}
	for _, n := range hasPeers(ok) {
		if v := peerVersus(ok, n); v.Cases > 0 || v.Untrusted > 0 {
			s.Peers = append(s.Peers, v)
		}
	}
	return s
}

// benchName is the benchmark name of a case.
func benchName(r *result) string { return "BenchmarkCopy/" + r.Name }

// writeBench writes the results in the Go benchmark format: a header of
// "key: value" lines, then for each case that passed
//
//	BenchmarkCopy/<case>  N  T ns/op  X MB/s  P pct-memcpy  R pct-roofline …
//
// where N is the number of timed copies, MB/s counts bytes read plus bytes
// written, and the further metrics are each tier's % of memcpy
// (generic-pct-memcpy, specialised-pct-memcpy: pct-memcpy is the tier a
// repeated copy settles on), each peer's % of its memcpy
// (<peer>-pct-memcpy) and, for small cases, host-ns/copy, floor-ns/copy and
// torch-host-ns/copy. Failed cases get a "--- FAIL:" line and the reason,
// and the random summary comes as '#' lines; benchstat ignores both. It is
// writeBenchHeader, writeBenchLine for each case and writeBenchSummary.
func writeBench(w io.Writer, rep *report) error {
	if err := writeBenchHeader(w, rep.Device); err != nil {
		return err
	}
	for _, r := range rep.Cases {
		if err := writeBenchLine(w, r); err != nil {
			return err
		}
	}
	return writeBenchSummary(w, rep)
}

// writeBenchHeader writes the "key: value" lines that start the benchmark
// output.
func writeBenchHeader(w io.Writer, d deviceInfo) error {
	dev := oneLine(d.Name)
	if dev == "" {
		dev = "unknown"
	}
	_, err := fmt.Fprintf(w, "goos: %s\ngoarch: %s\npkg: github.com/stridekit/stridekit/cmd/stridebench\ndevice: %s\n", runtime.GOOS, runtime.GOARCH, dev)
	return err
}

// writeBenchLine writes the benchmark line of one case, or its failure.
func writeBenchLine(w io.Writer, r *result) error {
	bw := &errWriter{w: w}
	if r.failed() {
		bw.printf("--- FAIL: %s\n    %s: %s\n", benchName(r), r.Status, oneLine(r.Error))
		return bw.err
	}
	bw.printf("%s\t%8d\t%14.1f ns/op\t%10.2f MB/s\t%7.2f pct-memcpy\t%7.2f pct-roofline",
		benchName(r), r.Reps*r.Batch, r.TimeNs, 2*float64(r.Bytes)/r.TimeNs*1e3, r.PctMemcpy, r.PctRoofline)
	if r.SpecialisedPct > 0 {
		bw.printf("\t%7.2f generic-pct-memcpy\t%7.2f specialised-pct-memcpy", r.GenericPct, r.SpecialisedPct)
	}
	for _, n := range peerNames {
		if p := r.Peers[n]; p != nil && p.Status == "ok" {
			bw.printf("\t%7.2f %s-pct-memcpy", p.PctMemcpy, n)
		}
	}
	if r.HostNsPerCopy > 0 {
		bw.printf("\t%10.1f host-ns/copy", r.HostNsPerCopy)
	}
	if r.FloorNsPerCopy > 0 {
		bw.printf("\t%10.1f floor-ns/copy", r.FloorNsPerCopy)
	}
	if p := r.Peers["torch"]; p != nil && p.HostS > 0 {
		bw.printf("\t%10.1f torch-host-ns/copy", p.HostS*1e9)
	}
	bw.printf("\n")
	return bw.err
}

// writeBenchSummary writes the random-case summary as '#' lines.
func writeBenchSummary(w io.Writer, rep *report) error {
	s := rep.Random
	if s == nil {
		return nil
	}
	bw := &errWriter{w: w}
	bw.printf("# random cases: %d, %d passed; %% of memcpy: min %.1f, p10 %.1f, median %.1f; %% of roofline: min %.1f, p10 %.1f, median %.1f\n",
		s.Cases, s.OK, s.MinPct, s.P10Pct, s.MedianPct, s.MinRoof, s.P10Roof, s.MedianRoof)
	bw.printf("# by tier, %% of memcpy (min, p10, median): generic %.1f, %.1f, %.1f; specialised %.1f, %.1f, %.1f\n",
		s.Generic[0], s.Generic[1], s.Generic[2], s.Specialised[0], s.Specialised[1], s.Specialised[2])
	for _, e := range s.Slowest {
		bw.printf("# slowest: %s %.1f%% of memcpy, %.1f%% of roofline, %s: %s\n", e.Name, e.PctMemcpy, e.PctRoofline, e.Signature, e.Case)
	}
	for _, v := range s.Peers {
		if v.Cases == 0 {
			bw.printf("# random cases against %s: no trusted timing; %d left out (timing untrusted)\n", v.Peer, v.Untrusted)
			continue
		}
		bw.printf("# random cases against %s: stridekit faster on %d of %d; ratio of %% of memcpy (stridekit / %s) median %.2f, min %.2f; %d under 0.9; %d left out (timing untrusted)\n",
			v.Peer, v.Faster, v.Cases, v.Peer, v.Median, v.Min, v.Under90, v.Untrusted)
	}
	return bw.err
}

// versus is how stridekit fared against one peer over the random cases
// where both passed and the peer's timing is trusted: on how many it was
// faster, the median and least ratio of its % of memcpy to the peer's, how
// many of those ratios are under 0.9, and how many cases were left out
// because the peer's timing is not trusted (JAX's identity copy outside
// 85-115% of memcpy).
type versus struct {
	Peer      string  `json:"peer"`
	Cases     int     `json:"cases"`
	Faster    int     `json:"faster"`
	Median    float64 `json:"median_ratio"`
	Min       float64 `json:"min_ratio"`
	Under90   int     `json:"under_0_9"`
	Untrusted int     `json:"untrusted"`
}

// peerVersus is versus of peer over rs; Cases is 0 where the peer has no
// trusted ratio (the summary then says only how many were left out).
func peerVersus(rs []*result, peer string) versus {
	var ratios []float64
	v := versus{Peer: peer}
	for _, r := range rs {
		p := r.Peers[peer]
		if p == nil || p.Ratio <= 0 {
			continue
		}
		if p.Trusted != nil && !*p.Trusted {
			v.Untrusted++
			continue
		}
		ratios = append(ratios, p.Ratio)
		if p.Ratio > 1 {
			v.Faster++
		}
		if p.Ratio < 0.9 {
			v.Under90++
		}
	}
	if v.Cases = len(ratios); v.Cases > 0 {
		v.Median, v.Min = median(ratios), slices.Min(ratios)
	}
	return v
}

// writeJSON writes the report as indented JSON.
func writeJSON(w io.Writer, rep *report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rep)
}

// hasPeers reports which peers appear in any result.
func hasPeers(rs []*result) []string {
	var out []string
	for _, n := range peerNames {
		for _, r := range rs {
			if r.Peers[n] != nil {
				out = append(out, n)
				break
			}
		}
	}
	return out
}

// writeMarkdown writes the results as markdown: the device, one table row
// per case, a latency table for small cases and the random summary.
func writeMarkdown(w io.Writer, rep *report) error {
	bw := &errWriter{w: w}
	d := rep.Device
	bw.printf("# stridebench\n\n")
	bw.printf("Device: %s", d.Name)
	if d.Kind == "gpu" {
		bw.printf(" (sm_%d, %d SMs, L2 %s, driver %d)", d.Arch, d.SMs, sizeString(int64(d.L2Bytes)), d.Driver)
	}
	bw.printf(". Timing: %s, median of %d samples after %d warm-up copies.\n\n", d.Timing, rep.Reps, rep.Warmup)
	bw.printf("GB/s counts bytes read plus bytes written. %% memcpy is memcpy's time for the bytes the copy writes over the copy's time; " +
		"the roofline is the time memcpy's bandwidth needs for the 32-byte sectors the two views touch. " +
		"A peer's column is its own %% of its own memcpy; \"vs\" is stridekit's %% of memcpy over the peer's (above 1: stridekit is faster).\n\n")
	peers := hasPeers(rep.Cases)
	bw.printf("| case | dtype | shape | signature | time | GB/s | %% memcpy | %% roofline | roofline %% memcpy |")
	for _, p := range peers {
		bw.printf(" %s %% | vs %s |", p, p)
	}
	bw.printf(" check |\n|---|---|---|---|---:|---:|---:|---:|---:|")
	for range peers {
		bw.printf("---:|---:|")
	}
	bw.printf("---|\n")
	for _, r := range rep.Cases {
		bw.printf("| %s | %s | %s | %s |", r.Name, r.DType, shapeString(r.Shape), r.Signature)
		if r.failed() {
			bw.printf(" | | | | |")
		} else {
			bw.printf(" %s | %.1f | %.1f | %.1f | %.1f |", durString(r.TimeNs), r.GBps, r.PctMemcpy, r.PctRoofline, r.RoofPctMemcpy)
		}
		for _, n := range peers {
			bw.printf(" %s | %s |", peerCell(r.Peers[n]), ratioCell(r.Peers[n]))
		}
		check := "ok"
		if r.failed() {
			check = "**" + r.Status + "**: " + mdEscape(oneLine(r.Error))
		}
		bw.printf(" %s |\n", check)
	}
	var small []*result
	for _, r := range rep.Cases {
		if r.Small && !r.failed() && r.HostNsPerCopy > 0 {
			small = append(small, r)
		}
	}
	if len(small) > 0 {
		bw.printf("\n## Small copies: host time per copy\n\n")
		bw.printf("Back-to-back copies from the calling thread, synchronised at the end. The floor is bare launches of the same kernel with its arguments packed once.\n\n")
		bw.printf("| case | bytes | stridekit | launch floor | torch copy_ |\n|---|---:|---:|---:|---:|\n")
		for _, r := range small {
			torch := "–"
			if p := r.Peers["torch"]; p != nil && p.HostS > 0 {
				torch = durString(p.HostS * 1e9)
			}
			floor := "–"
			if r.FloorNsPerCopy > 0 {
				floor = durString(r.FloorNsPerCopy)
			}
			bw.printf("| %s | %d | %s | %s | %s |\n", r.Name, r.Bytes, durString(r.HostNsPerCopy), floor, torch)
		}
	}
	if s := rep.Random; s != nil {
		bw.printf("\n## Random cases\n\n%d cases, %d passed.\n\n", s.Cases, s.OK)
		bw.printf("| | min | p10 | median |\n|---|---:|---:|---:|\n")
		bw.printf("| %% of memcpy | %.1f | %.1f | %.1f |\n", s.MinPct, s.P10Pct, s.MedianPct)
		bw.printf("| %% of roofline | %.1f | %.1f | %.1f |\n", s.MinRoof, s.P10Roof, s.MedianRoof)
		if len(s.Slowest) > 0 {
			bw.printf("\nSlowest:\n\n| case | %% memcpy | %% roofline | signature | case line |\n|---|---:|---:|---|---|\n")
			for _, e := range s.Slowest {
				bw.printf("| %s | %.1f | %.1f | %s | `%s` |\n", e.Name, e.PctMemcpy, e.PctRoofline, e.Signature, e.Case)
			}
		}
	}
	if len(rep.Peers) > 0 {
		var ks []string
		for k := range rep.Peers {
			ks = append(ks, k)
		}
		slices.Sort(ks)
		bw.printf("\nPeer versions:")
		for _, k := range ks {
			bw.printf(" %s %s;", k, rep.Peers[k])
		}
		bw.printf("\n")
	}
	if rep.PeersErr != "" {
		bw.printf("\nPeer run failed: %s\n", mdEscape(oneLine(rep.PeersErr)))
	}
	return bw.err
}

// peerCell is a peer's % of memcpy, or its status; an untrusted JAX figure
// is marked with "(untrusted)".
func peerCell(p *peerResult) string {
	switch {
	case p == nil:
		return "–"
	case p.Status != "ok":
		return p.Status
	case p.Trusted != nil && !*p.Trusted:
		return fmt.Sprintf("%.1f (untrusted)", p.PctMemcpy)
	}
	return fmt.Sprintf("%.1f", p.PctMemcpy)
}

func ratioCell(p *peerResult) string {
	if p == nil || p.Ratio == 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f×", p.Ratio)
}

// durString prints nanoseconds with a unit that keeps 3–4 digits.
func durString(ns float64) string {
	switch {
	case ns >= 1e6:
		return fmt.Sprintf("%.3f ms", ns/1e6)
	case ns >= 1e3:
		return fmt.Sprintf("%.2f µs", ns/1e3)
	}
	return fmt.Sprintf("%.0f ns", ns)
}

// sizeString prints a byte count in KiB, MiB or GiB when it divides evenly.
func sizeString(n int64) string {
	for _, u := range []struct {
		s string
		v int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.v && n%u.v == 0 {
			return fmt.Sprintf("%d %s", n/u.v, u.s)
		}
	}
	return fmt.Sprintf("%d B", n)
}

// humanSize prints a byte count with a binary unit and one decimal where
// needed: "1 GiB", "682.7 MiB", "4 KiB", "300 B".
func humanSize(n int64) string {
	for _, u := range []struct {
		s string
		v int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.v {
			if n%u.v == 0 {
				return fmt.Sprintf("%d %s", n/u.v, u.s)
			}
			return fmt.Sprintf("%.1f %s", float64(n)/float64(u.v), u.s)
		}
	}
	return fmt.Sprintf("%d B", n)
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func mdEscape(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

// errWriter keeps the first write error.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) printf(format string, args ...any) {
	if e.err == nil {
		_, e.err = fmt.Fprintf(e.w, format, args...)
	}
}
