package main

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// readPNG decodes the chart at path.
func readPNG(t *testing.T, path string) image.Image {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("%s is not a valid PNG: %v", path, err)
	}
	return img
}

// countColor counts the pixels of img in columns x0…x1 that are exactly c.
func countColor(img image.Image, x0, x1 int, c color.RGBA) int {
	n := 0
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := max(x0, b.Min.X); x < min(x1, b.Max.X); x++ {
			if color.RGBAModel.Convert(img.At(x, y)) == c {
				n++
			}
		}
	}
	return n
}

func TestChartPNG(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "c.png")
	if err := writeChart(p, fakeReport()); err != nil {
		t.Fatal(err)
	}
	img := readPNG(t, p)
	// Three cases of four series (stridekit, torch, cupy, jax): the 8×6
	// inch minimum at 96 dpi.
	if b := img.Bounds(); b.Dx() != 768 || b.Dy() != 576 {
		t.Fatalf("size %v, want 768×576", b.Size())
	}
	w := img.Bounds().Dx()
	white, stridekit := color.RGBA{255, 255, 255, 255}, chartSeriesColors[0]
	if n := countColor(img, 0, w, white); n == w*576 || n < w*576/2 {
		t.Errorf("%d of %d pixels white: blank or not on white", n, w*576)
	}
	for _, c := range []color.RGBA{stridekit, chartSeriesColors[1], chartSeriesColors[3], chartBlack} {
		if countColor(img, 0, w, c) < 200 {
			t.Errorf("hardly any pixels of %v: a series, the roofline or the text is missing", c)
		}
	}
	// t_f32 (90%) stands in the first third of the plot, small (40%) in the
	// second; broken (failed) has no bar. The legend's sample sits at the
	// right, above the bars: leave it out.
	first, second, third := countColor(img, 0, w/3, stridekit), countColor(img, w/3, 2*w/3, stridekit), countColor(img, 2*w/3, w-40, stridekit)
	if !(first > 2*second && second > 0 && third == 0) {
		t.Errorf("stridekit pixels per third %d %d %d, want about 90:40:0", first, second, third)
	}
}

func TestChartSize(t *testing.T) {
	var rs []*result
	for i := range 40 {
		rs = append(rs, &result{Name: fmt.Sprint("case", i), Status: statusOK, PctMemcpy: float64(10 + i),
			Peers: map[string]*peerResult{"torch": {Status: "ok", PctMemcpy: 50}}})
	}
	dir := t.TempDir()
	p := filepath.Join(dir, "wide.png")
	if err := writeChart(p, &report{Device: deviceInfo{Name: "GPU"}, Cases: rs}); err != nil {
		t.Fatal(err)
	}
	// 40 groups of two 16-point bars and a 10-point gap: 1680 points,
	// 2240 pixels.
	if b := readPNG(t, p).Bounds(); b.Dx() != 2240 || b.Dy() != 576 {
		t.Errorf("size %v, want 2240×576", b.Size())
	}
	if w, h := chartSize(1, 1); w != 768 || h != 576 {
		t.Errorf("chartSize(1, 1) = %d×%d, want the 768×576 minimum", w, h)
	}
}

func TestChartSVG(t *testing.T) {
	p := filepath.Join(t.TempDir(), "c.svg")
	rep := fakeReport()
	rep.Cases[0].Name = `a<b&"c"`
	if err := writeChart(p, rep); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	dec := xml.NewDecoder(bytes.NewReader(b))
	inText, root := false, ""
	for {
		tok, err := dec.Token()
		if err != nil {
			if err.Error() != "EOF" {
				t.Fatalf("not well-formed XML: %v\n%s", err, b)
			}
			break
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			if root == "" {
				root = tok.Name.Local
				for _, a := range tok.Attr {
					if a.Name.Local == "width" && a.Value != "768" || a.Name.Local == "height" && a.Value != "576" {
						t.Errorf("svg %s=%q, want 768×576", a.Name.Local, a.Value)
					}
				}
			}
			inText = tok.Name.Local == "text"
		case xml.CharData:
			if inText {
				texts = append(texts, string(tok))
			}
		case xml.EndElement:
			inText = false
		}
	}
	if root != "svg" {
		t.Fatalf("root element %q", root)
	}
	all := strings.Join(texts, "\n")
	for _, s := range []string{"stridebench on Test GPU", "% of memcpy", `a<b&"c"`, "small", "broken (FAIL)", "stridekit", "torch", "cupy", "jax", "memcpy", "roofline", "100"} {
		if !strings.Contains(all, s) {
			t.Errorf("no text %q in the SVG's:\n%s", s, all)
		}
	}
}

func TestChartOddValues(t *testing.T) {
	rep := fakeReport()
	rep.Cases[0].PctMemcpy = math.NaN()
	rep.Cases[0].RoofPctMemcpy = math.Inf(1)
	rep.Cases[1].PctMemcpy = -3
	rep.Cases[1].Name = "ünïcode " + strings.Repeat("x", 200)
	p := filepath.Join(t.TempDir(), "odd.png")
	if err := writeChart(p, rep); err != nil {
		t.Fatal(err)
	}
	if b := readPNG(t, p).Bounds(); b.Dx() != 768 || b.Dy() != 576 {
		t.Errorf("size %v", b.Size())
	}
	if err := writeChart(filepath.Join(t.TempDir(), "none.png"), &report{}); err == nil || !strings.Contains(err.Error(), "no cases") {
		t.Errorf("empty report: %v", err)
	}
}

func TestChartHelpers(t *testing.T) {
	for _, tc := range []struct{ top, want float64 }{{110, 50}, {235, 100}, {400, 100}, {401, 200}, {1100, 500}, {0, 1}, {math.NaN(), 1}} {
		if got := chartStep(tc.top); got != tc.want {
			t.Errorf("chartStep(%v) = %v, want %v", tc.top, got, tc.want)
		}
	}
	if got := shortenLabel("abcdefghijkl (FAIL)", 12); got != "abcd...FAIL)" || len(got) != 12 {
		t.Errorf("shortenLabel = %q", got)
	}
	if got := shortenLabel("short", 12); got != "short" {
		t.Errorf("shortenLabel = %q", got)
	}
	for i, g := range glyphs {
		if len(g) != 2*glyphHeight {
			t.Errorf("glyph %q: %d hex digits", rune(' '+i), len(g))
		}
	}
	ink := func(s string) int {
		m, n := textMask(s), 0
		for _, a := range m.Pix {
			if a != 0 {
				n++
			}
		}
		return n
	}
	if ink(" ") != 0 || ink("A") == 0 || ink("AA") != 2*ink("A") || ink("é") != ink("?") {
		t.Errorf("font: ink of space %d, A %d, AA %d, é %d, ? %d", ink(" "), ink("A"), ink("AA"), ink("é"), ink("?"))
	}
}
