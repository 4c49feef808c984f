package main

import (
	"bytes"
	"cmp"
	"encoding/xml"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// This file draws the chart: one group of bars per case (stridekit and each
// peer as a % of its memcpy) with the case's roofline marked across the
// group. It draws with the standard library only (a PNG through image/draw
// and a built-in bitmap font, or an SVG written as text), so the harness
// adds no plotting library to the module's dependencies.

// maxChartCases bounds the groups in one chart; a larger run charts its
// named cases and the slowest random ones.
const (
	maxChartCases    = 150
	chartSlowestRand = 50
)

// The chart's geometry, in pixels at 96 per inch (a point is 4/3 pixel): 6
// inches high, and at least 8 wide or wide enough for a group of 16-point
// bars per case with 10 points between groups.
const (
	chartDPI      = 96
	chartHeight   = 6 * chartDPI
	chartMinWidth = 8 * chartDPI
	chartBarPt    = 16
	chartGapPt    = 10
	chartPt       = chartDPI / 72.0
)

// chartSeriesColors are the series' colors, stridekit's first (the soft
// palette of the earlier gonum/plot charts, so records look alike).
var chartSeriesColors = []color.RGBA{
	{241, 90, 96, 255}, {122, 195, 106, 255}, {90, 155, 212, 255}, {250, 167, 91, 255},
	{158, 103, 171, 255}, {206, 112, 88, 255}, {215, 127, 180, 255},
}

var (
	chartWhite = color.RGBA{255, 255, 255, 255}
	chartBlack = color.RGBA{0, 0, 0, 255}
	chartGray  = color.RGBA{100, 100, 100, 255}
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

// chartSize is the size in pixels of a chart of cases groups of series bars.
func chartSize(cases, series int) (w, h int) {
	return max(chartMinWidth, int(math.Round(float64(cases*(chartBarPt*series+chartGapPt))*chartPt))), chartHeight
}

// writeChart draws the results into path (.png or .svg).
func writeChart(path string, rep *report) error {
	ext := strings.ToLower(filepath.Ext(path))
	if !chartExt(path) {
		return fmt.Errorf("chart %q: the name must end in .png or .svg", path)
	}
	rs, note := chartCases(rep.Cases)
	if len(rs) == 0 {
		return fmt.Errorf("chart %q: no cases to draw", path)
	}
	d := newChartData(rs, "stridebench on "+rep.Device.Name+note)
	w, h := chartSize(len(rs), len(d.series))
	var buf bytes.Buffer
	if ext == ".svg" {
		s := &svgCanvas{b: &buf}
		fmt.Fprintf(&buf, `<?xml version="1.0" encoding="UTF-8"?>`+"\n"+
			`<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="monospace" font-size="12">`+"\n",
			w, h, w, h)
		d.draw(s, float64(w), float64(h))
		buf.WriteString("</svg>\n")
	} else {
		img := image.NewRGBA(image.Rect(0, 0, w, h))
		d.draw(rasterCanvas{img}, float64(w), float64(h))
		if err := png.Encode(&buf, img); err != nil {
			return fmt.Errorf("chart %q: %w", path, err)
		}
	}
	return os.WriteFile(path, buf.Bytes(), 0o666)
}

// chartData is what a chart shows, in data units.
type chartData struct {
	title  string
	series []string    // "stridekit", then the peers
	names  []string    // one per case
	vals   [][]float64 // [series][case], % of memcpy; 0: no bar
	roofs  []float64   // per case, the roofline as a % of memcpy; 0: none
	ymax   float64     // the largest value, at least 100
}

func newChartData(rs []*result, title string) *chartData {
	finite := func(v float64) float64 {
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			return 0
		}
		return v
	}
	d := &chartData{title: title, series: append([]string{"stridekit"}, hasPeers(rs)...), ymax: 100}
	for si, name := range d.series {
		vals := make([]float64, len(rs))
		for i, r := range rs {
			if si == 0 {
				vals[i] = finite(pctOrZero(r))
			} else if pr := r.Peers[name]; pr != nil && pr.Status == "ok" {
				vals[i] = finite(pr.PctMemcpy)
			}
			d.ymax = max(d.ymax, vals[i])
		}
		d.vals = append(d.vals, vals)
	}
	for _, r := range rs {
		roof := 0.0
		if !r.failed() {
			roof = finite(r.RoofPctMemcpy)
		}
		d.roofs = append(d.roofs, roof)
		d.ymax = max(d.ymax, roof)
		name := r.Name
		if r.failed() {
			name += " (FAIL)"
		}
		d.names = append(d.names, name)
	}
	return d
}

// canvas is what the chart draws on: a picture or an SVG document.
// Coordinates are in pixels from the top left.
type canvas interface {
	rect(x0, y0, x1, y1 float64, c color.RGBA)
	// line draws a horizontal or vertical line of width w, dashed when
	// dash (the lengths on and off) is not nil.
	line(x0, y0, x1, y1, w float64, c color.RGBA, dash []float64)
	// text draws s turned angle degrees counterclockwise, placing the
	// point (ax, ay) of its box (fractions of its width and height from
	// its top left) at (x, y).
	text(x, y float64, s string, angle, ax, ay float64, c color.RGBA)
}

// draw draws the chart on a w×h canvas: the title, the legend at the top
// right, the % of memcpy axis with its ticks, a group of bars per case (its
// name turned 45° below), the dashed memcpy line and each case's roofline.
func (d *chartData) draw(c canvas, w, h float64) {
	const (
		pad  = 6.0
		tick = 5.0
		fh   = float64(glyphHeight)
		s45  = math.Sqrt2 / 2
	)
	c.rect(0, 0, w, h, chartWhite)
	tw := textWidth(d.title)
	if tw <= w-2*pad {
		c.text(w/2, pad, d.title, 0, 0.5, 0, chartBlack)
	} else {
		c.text(pad, pad, d.title, 0, 0, 0, chartBlack)
	}
	top := pad + fh + 10

	axisMax := d.ymax * 1.1
	step := chartStep(axisMax)
	var ticks []float64
	labelW := 0.0
	for k := 0; float64(k)*step <= axisMax; k++ {
		ticks = append(ticks, float64(k)*step)
		labelW = max(labelW, textWidth(chartNum(float64(k)*step)))
	}

	// Case names longer than fit in 40% of the height lose their middle.
	maxChars := int(((0.4*h-tick-3)/s45 - fh) / glyphAdvance)
	names := make([]string, len(d.names))
	nameW := 0.0
	for i, n := range d.names {
		names[i] = shortenLabel(n, maxChars)
		nameW = max(nameW, textWidth(names[i]))
	}
	bottom := h - pad - (tick + 3 + (nameW+fh)*s45)
	right := w - pad
	n := float64(len(names))
	left := pad + fh + 6 + labelW + 3 + tick
	// Room on the left for the first case's name.
	if need := pad + (textWidth(names[0])+fh/2)*s45; left+(right-left)/(2*n) < need {
		left = (need - right/(2*n)) / (1 - 1/(2*n))
	}
	slot := (right - left) / n
	xc := func(i int) float64 { return left + (float64(i)+0.5)*slot }
	y := func(v float64) float64 { return bottom - v/axisMax*(bottom-top) }

	nser := len(d.series)
	barW := min(chartBarPt*chartPt, 0.9*slot/float64(nser))
	for si := range d.series {
		col := chartSeriesColors[si%len(chartSeriesColors)]
		for i, v := range d.vals[si] {
			if v > 0 {
				x := xc(i) + barW*(float64(si)-float64(nser-1)/2)
				c.rect(x-barW/2, y(v), x+barW/2, y(0), col)
			}
		}
	}
	// A dashed line marks memcpy; the roofline of each case, as a % of
	// memcpy, is drawn across its group.
	dash := []float64{4 * chartPt, 3 * chartPt}
	c.line(left, y(100), right, y(100), chartPt, chartGray, dash)
	roofs := false
	for i, r := range d.roofs {
		if r > 0 {
			c.line(xc(i)-0.45*slot, y(r), xc(i)+0.45*slot, y(r), 2*chartPt, chartBlack, nil)
			roofs = true
		}
	}

	c.line(left, top, left, bottom, 1, chartBlack, nil)
	c.line(left, bottom, right, bottom, 1, chartBlack, nil)
	for _, v := range ticks {
		c.line(left-tick, y(v), left, y(v), 1, chartBlack, nil)
		c.text(left-tick-3, y(v), chartNum(v), 0, 1, 0.5, chartBlack)
	}
	c.text(pad, (top+bottom)/2, "% of memcpy", 90, 0.5, 0, chartBlack)
	for i, name := range names {
		c.line(xc(i), bottom, xc(i), bottom+tick, 1, chartBlack, nil)
		c.text(xc(i), bottom+tick+3+fh/2*s45, name, 45, 1, 0.5, chartBlack)
	}

	// The legend: each name right-aligned beside its sample.
	const rowH, sw = fh + 2, 20.0
	xr := right - 2
	row := 0
	entry := func(name string, sample func(cy float64)) {
		cy := top + 2 + (float64(row)+0.5)*rowH
		sample(cy)
		c.text(xr-sw-5, cy, name, 0, 1, 0.5, chartBlack)
		row++
	}
	for si, name := range d.series {
		col := chartSeriesColors[si%len(chartSeriesColors)]
		entry(name, func(cy float64) { c.rect(xr-sw, cy-5, xr, cy+5, col) })
	}
	entry("memcpy", func(cy float64) { c.line(xr-sw, cy, xr, cy, chartPt, chartGray, dash) })
	if roofs {
		entry("roofline", func(cy float64) { c.line(xr-sw, cy, xr, cy, 2*chartPt, chartBlack, nil) })
	}
}

// chartStep is the distance between labelled ticks on an axis from 0 to
// top: 1, 2 or 5 times a power of ten, at most 4 steps to the top.
func chartStep(top float64) float64 {
	if !(top > 0) || math.IsInf(top, 0) {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(top/4)))
	for _, m := range []float64{1, 2, 5, 10} {
		if top/(m*p) <= 4 {
			return m * p
		}
	}
	return 10 * p
}

func chartNum(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// shortenLabel returns s, or s with its middle replaced by "..." when it is
// longer than n characters.
func shortenLabel(s string, n int) string {
	r := []rune(s)
	if n < 5 || len(r) <= n {
		return s
	}
	head := (n - 3) / 2
	return string(r[:head]) + "..." + string(r[len(r)-(n-3-head):])
}

// rasterCanvas draws on a picture.
type rasterCanvas struct{ img *image.RGBA }

func iround(v float64) int { return int(math.Round(v)) }

func (r rasterCanvas) rect(x0, y0, x1, y1 float64, c color.RGBA) {
	b := image.Rect(iround(x0), iround(y0), iround(x1), iround(y1))
	draw.Draw(r.img, b, image.NewUniform(c), image.Point{}, draw.Over)
}

func (r rasterCanvas) line(x0, y0, x1, y1, w float64, c color.RGBA, dash []float64) {
	horiz := y0 == y1
	a, b := x0, x1 // along the line
	if !horiz {
		a, b = y0, y1
	}
	if a > b {
		a, b = b, a
	}
	width := max(1, iround(w))
	seg := func(s, e float64) {
		if horiz {
			t := iround(y0 - float64(width)/2)
			draw.Draw(r.img, image.Rect(iround(s), t, iround(e), t+width), image.NewUniform(c), image.Point{}, draw.Over)
		} else {
			l := iround(x0 - float64(width)/2)
			draw.Draw(r.img, image.Rect(l, iround(s), l+width, iround(e)), image.NewUniform(c), image.Point{}, draw.Over)
		}
	}
	if len(dash) != 2 || dash[0] <= 0 || dash[1] < 0 {
		seg(a, b)
		return
	}
	for s := a; s < b; s += dash[0] + dash[1] {
		seg(s, min(s+dash[0], b))
	}
}

func (r rasterCanvas) text(x, y float64, s string, angle, ax, ay float64, c color.RGBA) {
	m := textMask(s)
	w, h := float64(m.Rect.Dx()), float64(m.Rect.Dy())
	src := image.NewUniform(c)
	if angle == 0 {
		p := image.Pt(iround(x-ax*w), iround(y-ay*h))
		draw.DrawMask(r.img, m.Rect.Add(p), src, image.Point{}, m, image.Point{}, draw.Over)
		return
	}
	// The text's direction is (cos, -sin) on the picture and its downward
	// direction (sin, cos); each pixel of the turned box averages 4×4
	// samples of the mask.
	sin, cos := math.Sincos(angle * math.Pi / 180)
	minX, minY, maxX, maxY := math.Inf(1), math.Inf(1), math.Inf(-1), math.Inf(-1)
	for _, u := range []float64{0, w} {
		for _, v := range []float64{0, h} {
			du, dv := u-ax*w, v-ay*h
			px, py := x+du*cos+dv*sin, y-du*sin+dv*cos
			minX, minY, maxX, maxY = min(minX, px), min(minY, py), max(maxX, px), max(maxY, py)
		}
	}
	b := image.Rect(int(math.Floor(minX)), int(math.Floor(minY)), int(math.Ceil(maxX)), int(math.Ceil(maxY))).Intersect(r.img.Bounds())
	if b.Empty() {
		return
	}
	turned := image.NewAlpha(b)
	const ss = 4
	for py := b.Min.Y; py < b.Max.Y; py++ {
		for px := b.Min.X; px < b.Max.X; px++ {
			sum := 0
			for j := range ss {
				for i := range ss {
					dx := float64(px) + (float64(i)+0.5)/ss - x
					dy := float64(py) + (float64(j)+0.5)/ss - y
					u, v := dx*cos-dy*sin+ax*w, dx*sin+dy*cos+ay*h
					if u >= 0 && v >= 0 && u < w && v < h {
						sum += int(m.AlphaAt(int(u), int(v)).A)
					}
				}
			}
			turned.SetAlpha(px, py, color.Alpha{A: uint8(sum / (ss * ss))})
		}
	}
	draw.DrawMask(r.img, b, src, image.Point{}, turned, b.Min, draw.Over)
}

// svgCanvas writes SVG elements.
type svgCanvas struct{ b *bytes.Buffer }

func svgNum(v float64) string {
	v = math.Round(v*100) / 100
	if v == 0 {
		v = 0 // not -0
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

func svgColor(c color.RGBA) string { return fmt.Sprintf("#%02x%02x%02x", c.R, c.G, c.B) }

func (s *svgCanvas) rect(x0, y0, x1, y1 float64, c color.RGBA) {
	fmt.Fprintf(s.b, `<rect x="%s" y="%s" width="%s" height="%s" fill="%s"/>`+"\n",
		svgNum(min(x0, x1)), svgNum(min(y0, y1)), svgNum(math.Abs(x1-x0)), svgNum(math.Abs(y1-y0)), svgColor(c))
}

func (s *svgCanvas) line(x0, y0, x1, y1, w float64, c color.RGBA, dash []float64) {
	fmt.Fprintf(s.b, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="%s"`,
		svgNum(x0), svgNum(y0), svgNum(x1), svgNum(y1), svgColor(c), svgNum(w))
	if len(dash) == 2 {
		fmt.Fprintf(s.b, ` stroke-dasharray="%s %s"`, svgNum(dash[0]), svgNum(dash[1]))
	}
	s.b.WriteString("/>\n")
}

func (s *svgCanvas) text(x, y float64, str string, angle, ax, ay float64, c color.RGBA) {
	str = asciiLabel(str)
	w, h := textWidth(str), float64(glyphHeight)
	turn := ""
	if angle != 0 {
		turn = " rotate(" + svgNum(-angle) + ")"
	}
	fmt.Fprintf(s.b, `<text transform="translate(%s %s)%s" x="%s" y="%s" textLength="%s" lengthAdjust="spacingAndGlyphs" fill="%s">`,
		svgNum(x), svgNum(y), turn, svgNum(-ax*w), svgNum(glyphAscent-ay*h), svgNum(w), svgColor(c))
	_ = xml.EscapeText(s.b, []byte(str))
	s.b.WriteString("</text>\n")
}

// The built-in font: 7×13 pixel cells (6 columns drawn), printable ASCII.
const (
	glyphAdvance = 7
	glyphHeight  = 13
	glyphAscent  = 11
)

// asciiLabel replaces what the font lacks with '?'.
func asciiLabel(s string) string {
	return strings.Map(func(r rune) rune {
		if r < ' ' || r > '~' {
			return '?'
		}
		return r
	}, s)
}

func textWidth(s string) float64 { return float64(glyphAdvance * len([]rune(s))) }

// textMask draws s in the built-in font: an alpha mask of its box.
func textMask(s string) *image.Alpha {
	s = asciiLabel(s)
	m := image.NewAlpha(image.Rect(0, 0, glyphAdvance*len(s), glyphHeight))
	for i := range len(s) {
		g := glyphs[s[i]-' ']
		for row := range glyphHeight {
			bits, _ := strconv.ParseUint(g[2*row:2*row+2], 16, 8)
			for col := range glyphAdvance - 1 {
				if bits&(1<<(5-col)) != 0 {
					m.SetAlpha(i*glyphAdvance+col, row, color.Alpha{A: 255})
				}
			}
		}
	}
	return m
}

// glyphs are the characters ' ' to '~' of the 7×13 misc-fixed font (public
// domain, from X11, as golang.org/x/image/font/basicfont has it): 13 rows of
// 6 pixels each, as two hex digits a row, the leftmost pixel the 0x20 bit.
var glyphs = [95]string{
	"00000000000000000000000000", // ' '
	"00000404040404040400040000", // '!'
	"00000a0a0a0000000000000000", // '"'
	"0000000a0a1f0a1f0a0a000000", // '#'
	"000000040f140e051e04000000", // '$'
	"00001129120404081225220000", // '%'
	"000000001824241825221d0000", // '&'
	"00000404040000000000000000", // '\''
	"00000204040808080404020000", // '('
	"00000804040202020404080000", // ')'
	"00000000120c3f0c1200000000", // '*'
	"0000000004041f040400000000", // '+'
	"0000000000000000000e0c1000", // ','
	"0000000000001f000000000000", // '-'
	"000000000000000000040e0400", // '.'
	"00000101020204080810100000", // '/'
	"00000c122121212121120c0000", // '0'
	"0000040c1404040404041f0000", // '1'
	"00001e212101020c10203f0000", // '2'
	"00003f0102040e0101211e0000", // '3'
	"000002060a1222223f02020000", // '4'
	"00003f20202e310101211e0000", // '5'
	"00000e1020202e3121211e0000", // '6'
	"00003f01020404080810100000", // '7'
	"00001e2121211e2121211e0000", // '8'
	"00001e2121231d0101021c0000", // '9'
	"00000000040e040000040e0400", // ':'
	"00000000040e0400000e0c1000", // ';'
	"00000102040810080402010000", // '<'
	"00000000003f00003f00000000", // '='
	"00001008040201020408100000", // '>'
	"00001e21210102040400040000", // '?'
	"00001e212127292b25201e0000", // '@'
	"00000c122121213f2121210000", // 'A'
	"00003e1111111e1111113e0000", // 'B'
	"00001e212020202020211e0000", // 'C'
	"00003e111111111111113e0000", // 'D'
	"00003f2020203c2020203f0000", // 'E'
	"00003f2020203c202020200000", // 'F'
	"00001e212020202721231d0000", // 'G'
	"0000212121213f212121210000", // 'H'
	"00001f040404040404041f0000", // 'I'
	"000007020202020202221c0000", // 'J'
	"00002122242830282422210000", // 'K'
	"000020202020202020203f0000", // 'L'
	"00002133332d2d212121210000", // 'M'
	"00002121312925232121210000", // 'N'
	"00001e212121212121211e0000", // 'O'
	"00003e2121213e202020200000", // 'P'
	"00001e212121212129251e0100", // 'Q'
	"00003e2121213e282422210000", // 'R'
	"00001e2120201e0101211e0000", // 'S'
	"00001f04040404040404040000", // 'T'
	"000021212121212121211e0000", // 'U'
	"00002121211212120c0c0c0000", // 'V'
	"0000212121212d2d3333210000", // 'W'
	"0000212112120c121221210000", // 'X'
	"000011110a0a04040404040000", // 'Y'
	"00003f0102040c0810203f0000", // 'Z'
	"001e1010101010101010101e00", // '['
	"00001010080804020201010000", // '\\'
	"001e0202020202020202021e00", // ']'
	"0000040a110000000000000000", // '^'
	"00000000000000000000003f00", // '_'
	"00080400000000000000000000", // '`'
	"00000000001e011f21231d0000", // 'a'
	"00002020202e312121312e0000", // 'b'
	"00000000001e212020211e0000", // 'c'
	"00000101011d232121231d0000", // 'd'
	"00000000001e213f20211e0000", // 'e'
	"00000e1110103c101010100000", // 'f'
	"00000000001d22221c201e211e", // 'g'
	"00002020202e31212121210000", // 'h'
	"00000004000c040404041f0000", // 'i'
	"0000000100030101010111110e", // 'j'
	"00002020202224382422210000", // 'k'
	"00000c040404040404041f0000", // 'l'
	"00000000001a15151515110000", // 'm'
	"00000000002e31212121210000", // 'n'
	"00000000001e212121211e0000", // 'o'
	"00000000002e3121312e202020", // 'p'
	"00000000001d2321231d010101", // 'q'
	"00000000002e11101010100000", // 'r'
	"00000000001e211806211e0000", // 's'
	"00000010103c101010110e0000", // 't'
	"000000000021212121231d0000", // 'u'
	"00000000001111110a0a040000", // 'v'
	"000000000011111515150a0000", // 'w'
	"000000000021120c0c12210000", // 'x'
	"0000000000212121231d01211e", // 'y'
	"00000000003f020408103f0000", // 'z'
	"00070808080418040808080700", // '{'
	"00000404040404040404040000", // '|'
	"001c0202020403040202021c00", // '}'
	"00000915120000000000000000", // '~'
}
