package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/stridekit/stridekit/gen"
)

// This file is the tuner's search: coordinate-wise, one knob at a time from
// the current values, with a rule for when a value replaces the current one
// that makes a re-run reproduce the choices within noise.

// The replacement rule: a candidate replaces the current value only when
// it is faster by more than minGain (a fraction) and by more than
// spreadFactor times the spread of the two measurements.
const (
	minGain      = 0.02
	spreadFactor = 2
)

// score is what measuring one candidate (a set of knobs) on every case of a
// family gave.
type score struct {
	// OK is false when the candidate failed on some case: wrong bytes, a
	// launch error, knobs gen refuses. Err says why.
	OK  bool
	Err string
	// Time is the sum over the cases of the median seconds per copy.
	Time float64
	// Spread is the sum over the cases of the interquartile range of the
	// samples, in seconds per copy.
	Spread float64
}

// beats reports whether candidate c replaces the current value's
// measurement cur: c passed and cur did not, or c is faster than cur by
// more than minGain and by more than spreadFactor times the larger of the
// two spreads.
func beats(c, cur score) bool {
	if !c.OK {
		return false
	}
	if !cur.OK {
		return true
	}
	gain := cur.Time - c.Time
	return gain > minGain*cur.Time && gain > spreadFactor*max(c.Spread, cur.Spread)
}

// measureFunc measures candidates (knob sets) on a family's cases, all in
// one run, interleaved so drift affects them alike; an error stops the
// tuning of the family (a candidate's own failure is its score's).
type measureFunc func(cands []gen.Knobs) ([]score, error)

// searchStep is one coordinate step: the values of one knob tried from the
// knobs then current, their scores, and the value chosen.
type searchStep struct {
	Round  int
	Axis   string
	Values []int
	Scores []score
	From   int // the current value's index in Values
	To     int // the chosen value's index
}

// searchResult is the outcome of a family's search.
type searchResult struct {
	Start, Best gen.Knobs
	Steps       []searchStep
	// Gain is the product over the steps of the chosen value's time over
	// the current value's, both measured in the same step: below 1 is
	// faster than the start.
	Gain float64
	// Stopped says why the search ended before its rounds were done ("":
	// it finished, or a round changed nothing).
	Stopped string
	// StartFailed holds the start knobs' failure, when they failed.
	StartFailed string
}

// searchConfig bounds a search.
type searchConfig struct {
	Rounds   int
	Deadline time.Time        // zero: none
	Now      func() time.Time // nil: time.Now
	Log      io.Writer        // per-step lines; nil: none
	Indent   string
}

// coordinateSearch tunes the knobs of axes from start: each round, for one
// axis after the other, it measures every value of the axis with the other
// knobs as they are (the current value included, so each step compares
// measurements of one run), and moves to the fastest value that beats the
// current one (ties keep the current value). It stops after cfg.Rounds
// rounds, after a round that changed nothing, or at the deadline (checked
// before each step), and returns the best knobs found.
func coordinateSearch(start gen.Knobs, axes []knobAxis, cfg searchConfig, measure measureFunc) (searchResult, error) {
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	res := searchResult{Start: start, Best: start, Gain: 1}
	cur := start
	for round := 1; round <= cfg.Rounds; round++ {
		changed := false
		for _, ax := range axes {
			if !cfg.Deadline.IsZero() && now().After(cfg.Deadline) {
				res.Stopped = "time budget"
				res.Best = cur
				return res, nil
			}
			vals := slices.Clone(ax.Values)
			curVal := knobValue(cur, ax.Name)
			if !slices.Contains(vals, curVal) {
				vals = append(vals, curVal)
				slices.Sort(vals)
			}
			if len(vals) < 2 {
				continue
			}
			cands := make([]gen.Knobs, len(vals))
			from := 0
			for i, v := range vals {
				cands[i] = cur
				cands[i].Set(ax.Name, v)
				if v == curVal {
					from = i
				}
			}
			scores, err := measure(cands)
			if err != nil {
				res.Best = cur
				return res, err
			}
			if len(scores) != len(cands) {
				return res, fmt.Errorf("measured %d of %d candidates", len(scores), len(cands))
			}
			if round == 1 && len(res.Steps) == 0 && !scores[from].OK {
				res.StartFailed = scores[from].Err
			}
			to := from
			for i, s := range scores {
				if i != from && beats(s, scores[from]) && (to == from || s.Time < scores[to].Time) {
					to = i
				}
			}
			st := searchStep{Round: round, Axis: ax.Name, Values: vals, Scores: scores, From: from, To: to}
			res.Steps = append(res.Steps, st)
			if to != from {
				if scores[from].OK {
					res.Gain *= scores[to].Time / scores[from].Time
				}
				cur.Set(ax.Name, vals[to])
				changed = true
			}
			if cfg.Log != nil {
				fmt.Fprintf(cfg.Log, "%s%s\n", cfg.Indent, st)
			}
		}
		if !changed {
			break
		}
	}
	res.Best = cur
	return res, nil
}

// String describes a step on one line: each value's time relative to the
// current value's (and its spread), and the choice.
func (st searchStep) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "round %d %-10s", st.Round, st.Axis)
	base := st.Scores[st.From]
	for i, v := range st.Values {
		s := st.Scores[i]
		mark := " "
		if i == st.From {
			mark = "*"
		}
		switch {
		case !s.OK:
			fmt.Fprintf(&b, " %s%d FAILED", mark, v)
		case !base.OK || i == st.From:
			fmt.Fprintf(&b, " %s%d %s±%s", mark, v, durString(s.Time*1e9), durString(s.Spread*1e9))
		default:
			fmt.Fprintf(&b, " %s%d %+.1f%%", mark, v, 100*(s.Time/base.Time-1))
		}
	}
	if st.To == st.From {
		fmt.Fprintf(&b, "  keep %d", st.Values[st.From])
	} else {
		fmt.Fprintf(&b, "  -> %d", st.Values[st.To])
	}
	for i, s := range st.Scores {
		if !s.OK {
			fmt.Fprintf(&b, "\n      %d failed: %s", st.Values[i], oneLine(s.Err))
		}
	}
	return b.String()
}

// knobsString writes the knobs of axes as "threads=256 rows=4".
func knobsString(k gen.Knobs, axes []knobAxis) string {
	parts := make([]string, len(axes))
	for i, a := range axes {
		parts[i] = fmt.Sprintf("%s=%d", a.Name, knobValue(k, a.Name))
	}
	return strings.Join(parts, " ")
}
