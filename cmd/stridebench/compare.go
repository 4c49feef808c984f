package main

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strings"
)

// compareFlags are the flags of "stridebench compare".
type compareFlags struct {
	old, new  string
	threshold float64
	list      int
}

const compareHelpHead = `usage: stridebench compare -old BEFORE.json -new AFTER.json [flags]

Compares two runs of the same cases ('stridebench run -json', the same
-random, -seed and -random-bytes or the same suite), such as two builds run
one after the other on one GPU: for every case that passed in both, the
ratio of its time before to its time after (above 1: faster after). It
prints the geometric mean of the ratios, the cases more than -threshold
percent faster and slower, the min, p10 and median % of memcpy of both
runs, the same by item size and by kernel class, each tier's geomean
ratio (generic and specialised kernels, where both runs timed them) and
the cases that moved most either way. Compare runs taken in one session
on one device: the figures are ratios of times, and a GPU's clocks and
memory differ from one machine to the next.

Flags:
`

// parseCompareFlags reads the flags of "stridebench compare".
func parseCompareFlags(args []string, stderr io.Writer) (*compareFlags, error) {
	f := &compareFlags{}
	fs := newFlagSet("stridebench compare", stderr, compareHelpHead, "")
	fs.StringVar(&f.old, "old", "", "`file` of the run before ('stridebench run -json')")
	fs.StringVar(&f.new, "new", "", "`file` of the run after")
	fs.Float64Var(&f.threshold, "threshold", 3, "`percent` of time a case must gain or lose to count as faster or slower")
	fs.IntVar(&f.list, "list", 6, "list this many `cases` that moved most each way (0: none)")
	if err := parseArgs(fs, args); err != nil {
		return nil, err
	}
	switch {
	case f.old == "":
		return nil, usageErr("-old: no run given")
	case f.new == "":
		return nil, usageErr("-new: no run given")
	case !(f.threshold >= 0 && f.threshold < 100):
		return nil, usageErr("-threshold %v: must be in [0, 100)", f.threshold)
	case f.list < 0 || f.list > maxRandom:
		return nil, usageErr("-list %d: must be in [0, %d]", f.list, maxRandom)
	}
	return f, nil
}

// compareCmd is "stridebench compare".
func compareCmd(args []string, stdout, stderr io.Writer) int {
	f, err := parseCompareFlags(args, stderr)
	if status, stop := flagsStatus(stderr, "stridebench compare", err); stop {
		return status
	}
	old, err := readReport(f.old)
	if err != nil {
		fmt.Fprintf(stderr, "stridebench compare: -old: %v\n", err)
		return 1
	}
	nw, err := readReport(f.new)
	if err != nil {
		fmt.Fprintf(stderr, "stridebench compare: -new: %v\n", err)
		return 1
	}
	pairs, unmatched := matchCases(old, nw)
	if len(pairs) == 0 {
		fmt.Fprintf(stderr, "stridebench compare: no case passed in both runs (%d left out)\n", unmatched)
		return 1
	}
	writeComparison(stdout, pairs, unmatched, f.threshold, f.list)
	return 0
}

// casePair is one case that passed in both runs: before, after, and the
// ratio of the times (before / after: above 1 is faster after).
type casePair struct {
	old, new *result
	ratio    float64
}

// matchCases pairs the cases of two runs by name, those that passed in both
// with a time, in the order of the old run; unmatched counts the names left
// out (in one run only, or failed in either).
func matchCases(old, nw *report) (pairs []casePair, unmatched int) {
	byName := map[string]*result{}
	for _, r := range nw.Cases {
		byName[r.Name] = r
	}
	for _, o := range old.Cases {
		n, ok := byName[o.Name]
		delete(byName, o.Name)
		if !ok || o.failed() || n.failed() || o.TimeNs <= 0 || n.TimeNs <= 0 {
			unmatched++
			continue
		}
		pairs = append(pairs, casePair{o, n, o.TimeNs / n.TimeNs})
	}
	return pairs, unmatched + len(byName)
}

// writeComparison prints the comparison of pairs (see compareHelpHead).
func writeComparison(w io.Writer, pairs []casePair, unmatched int, threshold float64, list int) {
	ratios := make([]float64, len(pairs))
	faster, slower := 0, 0
	for i, p := range pairs {
		ratios[i] = p.ratio
		if p.ratio > 1+threshold/100 {
			faster++
		} else if p.ratio < 1/(1+threshold/100) {
			slower++
		}
	}
	sorted := slices.Sorted(slices.Values(ratios))
	fmt.Fprintf(w, "# cases in both runs: %d (left out: %d)\n", len(pairs), unmatched)
	fmt.Fprintf(w, "# time before / after: geomean %.3f, min %.3f, max %.3f; %d cases more than %g%% faster, %d slower\n",
		geomean(ratios), sorted[0], sorted[len(sorted)-1], faster, threshold, slower)
	o, n := spreads(pairs)
	fmt.Fprintf(w, "# %% of memcpy (min, p10, median): before %s, after %s\n", o, n)
	writeGroups(w, "item size", pairs, func(r *result) string { return fmt.Sprintf("%d B", r.Itemsize) })
	writeGroups(w, "class", pairs, func(r *result) string { return classOf(r.Signature) })
	writeTiers(w, pairs)
	if list > 0 {
		byRatio := slices.Clone(pairs)
		slices.SortStableFunc(byRatio, func(a, b casePair) int { return cmp.Compare(a.ratio, b.ratio) })
		k := min(list, len(byRatio))
		writeCases(w, "slowest after", byRatio[:k])
		slices.Reverse(byRatio)
		writeCases(w, "fastest after", byRatio[:k])
	}
}

// spreads returns the min, p10 and median % of memcpy of both runs over
// pairs, formatted.
func spreads(pairs []casePair) (old, nw string) {
	o, n := make([]float64, len(pairs)), make([]float64, len(pairs))
	for i, p := range pairs {
		o[i], n[i] = p.old.PctMemcpy, p.new.PctMemcpy
	}
	f := func(xs []float64) string {
		slices.Sort(xs)
		return fmt.Sprintf("%.1f / %.1f / %.1f", percentile(xs, 0), percentile(xs, 10), median(xs))
	}
	return f(o), f(n)
}

// writeGroups prints, for each group of pairs by key (of the old run's
// case), its count, median % of memcpy before and after and the geomean of
// its ratios.
func writeGroups(w io.Writer, what string, pairs []casePair, key func(*result) string) {
	groups := map[string][]casePair{}
	for _, p := range pairs {
		k := key(p.old)
		groups[k] = append(groups[k], p)
	}
	keys := slices.SortedFunc(maps.Keys(groups), compareKeys)
	fmt.Fprintf(w, "# by %s: cases, median %% of memcpy before -> after, geomean ratio\n", what)
	for _, k := range keys {
		g := groups[k]
		o, n, r := make([]float64, len(g)), make([]float64, len(g)), make([]float64, len(g))
		for i, p := range g {
			o[i], n[i], r[i] = p.old.PctMemcpy, p.new.PctMemcpy, p.ratio
		}
		fmt.Fprintf(w, "#   %-8s %4d  %5.1f -> %5.1f  %.3f\n", k, len(g), median(o), median(n), geomean(r))
	}
}

// compareKeys orders group keys: by their leading number where both have
// one ("2 B" before "12 B"), else as strings.
func compareKeys(a, b string) int {
	var x, y int
	_, ea := fmt.Sscanf(a, "%d", &x)
	_, eb := fmt.Sscanf(b, "%d", &y)
	if ea == nil && eb == nil && x != y {
		return cmp.Compare(x, y)
	}
	return strings.Compare(a, b)
}

// writeTiers prints the geomean ratio (after / before) of each tier's % of
// memcpy over the cases where both runs timed it.
func writeTiers(w io.Writer, pairs []casePair) {
	var g, s []float64
	for _, p := range pairs {
		if p.old.GenericPct > 0 && p.new.GenericPct > 0 {
			g = append(g, p.new.GenericPct/p.old.GenericPct)
		}
		if p.old.SpecialisedPct > 0 && p.new.SpecialisedPct > 0 {
			s = append(s, p.new.SpecialisedPct/p.old.SpecialisedPct)
		}
	}
	if len(g) == 0 && len(s) == 0 {
		return
	}
	fmt.Fprintf(w, "# tiers, geomean ratio after / before of %% of memcpy: generic %.3f (%d cases), specialised %.3f (%d cases)\n",
		geomean(g), len(g), geomean(s), len(s))
}

// writeCases lists pairs, one a line.
func writeCases(w io.Writer, title string, pairs []casePair) {
	fmt.Fprintf(w, "# %s:\n", title)
	for _, p := range pairs {
		fmt.Fprintf(w, "#   %.3f  %5.1f -> %5.1f%%  %s  %s\n", p.ratio, p.old.PctMemcpy, p.new.PctMemcpy, p.old.Signature, p.old.Case)
	}
}

// classOf returns the class of a signature ("btile" of
// "btile:nd=3,item=1,...", "" as "-").
func classOf(sig string) string {
	c, _, _ := strings.Cut(sig, ":")
	return cmp.Or(c, "-")
}

// geomean returns the geometric mean of xs (all positive); 0 for none.
func geomean(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := 0.0
	for _, x := range xs {
		s += math.Log(x)
	}
	return math.Exp(s / float64(len(xs)))
}
