package main

import (
	"cmp"
	"fmt"
	"image/color"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// This file draws the chart: one group of bars per case (stridekit and each
// peer as a % of its memcpy) with the case's roofline marked across the
// group.

// maxChartCases bounds the groups in one chart; a larger run charts its
// named cases and the slowest random ones.
const (
	maxChartCases    = 150
	chartSlowestRand = 50
)

// chartExt reports whether path names a chart format writeChart supports.
func chartExt(path string) bool {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".png", ".svg":
		return true
	}
	return false
}

// chartCases picks the results to chart.
func chartCases(rs []*result) ([]*result, string) {
	if len(rs) <= maxChartCases {
		return rs, ""
	}
	var named, random []*result
	for _, r := range rs {
		if r.Random {
			random = append(random, r)
		} else {
			named = append(named, r)
		}
	}
	slices.SortStableFunc(random, func(a, b *result) int {
		return cmp.Compare(pctOrZero(a), pctOrZero(b))
	})
	keep := min(len(random), chartSlowestRand, max(0, maxChartCases-len(named)))
	out := append(named[:min(len(named), maxChartCases)], random[:keep]...)
	return out, fmt.Sprintf(" (%d of %d cases: the named ones and the %d slowest random ones)", len(out), len(rs), keep)
}

func pctOrZero(r *result) float64 {
	if r.failed() {
		return 0
	}
	return r.PctMemcpy
}

// writeChart draws the results into path (.png or .svg).
func writeChart(path string, rep *report) error {
	if !chartExt(path) {
		return fmt.Errorf("chart %q: the name must end in .png or .svg", path)
	}
	rs, note := chartCases(rep.Cases)
	if len(rs) == 0 {
		return fmt.Errorf("chart %q: no cases to draw", path)
	}
	p := plot.New()
	p.Title.Text = "stridebench on " + rep.Device.Name + note
	p.Y.Label.Text = "% of memcpy"
	series := append([]string{"stridekit"}, hasPeers(rs)...)
	groupWidth := vg.Points(float64(16 * len(series)))
	barWidth := groupWidth / vg.Length(len(series))
	ymax := 100.0
	for si, name := range series {
		vals := make(plotter.Values, len(rs))
		for i, r := range rs {
			v := 0.0
			if si == 0 {
				v = pctOrZero(r)
			} else if pr := r.Peers[name]; pr != nil && pr.Status == "ok" {
				v = pr.PctMemcpy
			}
			if math.IsNaN(v) || math.IsInf(v, 0) {
				v = 0
			}
			vals[i] = v
			ymax = max(ymax, v)
		}
		bars, err := plotter.NewBarChart(vals, barWidth)
		if err != nil {
			return err
		}
		bars.LineStyle.Width = 0
		bars.Color = plotutil.Color(si)
		bars.Offset = barWidth * vg.Length(float64(si)-float64(len(series)-1)/2)
		p.Add(bars)
		p.Legend.Add(name, bars)
	}
	// A dashed line marks memcpy; the roofline of each case, as a % of
	// memcpy, is drawn across its group.
	ref, err := plotter.NewLine(plotter.XYs{{X: -0.5, Y: 100}, {X: float64(len(rs)) - 0.5, Y: 100}})
	if err != nil {
		return err
	}
	ref.LineStyle.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	ref.LineStyle.Color = color.Gray{Y: 100}
	p.Add(ref)
	p.Legend.Add("memcpy", ref)
	var roof *plotter.Line
	for i, r := range rs {
		if r.failed() || r.RoofPctMemcpy <= 0 {
			continue
		}
		y := r.RoofPctMemcpy
		ymax = max(ymax, y)
		l, err := plotter.NewLine(plotter.XYs{{X: float64(i) - 0.45, Y: y}, {X: float64(i) + 0.45, Y: y}})
		if err != nil {
			return err
		}
		l.LineStyle.Width = vg.Points(2)
		l.LineStyle.Color = color.Black
		p.Add(l)
		roof = l
	}
	if roof != nil {
		p.Legend.Add("roofline", roof)
	}
	p.Legend.Top = true
	p.Y.Min, p.Y.Max = 0, ymax*1.1
	names := make([]string, len(rs))
	for i, r := range rs {
		names[i] = r.Name
		if r.failed() {
			names[i] += " (FAIL)"
		}
	}
	p.NominalX(names...)
	p.X.Tick.Label.Rotation = math.Pi / 4
	p.X.Tick.Label.XAlign = draw.XRight
	p.X.Tick.Label.YAlign = draw.YCenter
	width := max(8*vg.Inch, vg.Length(len(rs))*(groupWidth+vg.Points(10)))
	return p.Save(width, 6*vg.Inch, path)
}
