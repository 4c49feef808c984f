package gen

import (
	"fmt"
	"strings"
	"sync"
	"text/template"

	"github.com/stridekit/stridekit/layout"
	"github.com/stridekit/stridekit/templates"
)

// kernelData is what a template sees: the signature spelled out as the
// numbers and names the CUDA source needs.
type kernelData struct {
	Sig     layout.Signature
	Name    string // extern "C" kernel name
	NS      string // namespace of the kernel's types
	Version int    // FormatVersion
	ND      int    // canonical dims
	Fast    int    // tile: src's fastest dim
	S       int    // element bytes
	Vec     int    // elements per vector
	VB      int    // vector bytes, S·Vec
	Align   int    // alignment of a vector: largest power of two dividing VB, ≤ 16
	Words   bool   // VB is a multiple of 4: vectors are arrays of 32-bit words
	G       int    // tile: bytes per register-transpose step, gcd(S, 4)
	Idx     string // signed index type
	UIdx    string // unsigned index type
	HasSrc  bool   // the kernel reads src per element (not fill)

	// ClassTile
	TR, TC, NT, SWM int
	WordCols        bool // store phase reads 4-byte words of Vec rows (TileConfig.WordCols)
	// rows kernels (elem, bcast, fill)
	R, XU, RowsThreads int
	// ClassContiguous
	ContigThreads, ContigUnroll int
}

var (
	parseOnce sync.Once
	tmpl      *template.Template
	parseErr  error
)

func parsed() (*template.Template, error) {
	parseOnce.Do(func() {
		tmpl, parseErr = template.New("").Option("missingkey=error").ParseFS(templates.FS, templates.Pattern)
	})
	return tmpl, parseErr
}

func templateFor(c layout.Class) string {
	switch c {
	case layout.ClassContiguous:
		return "contig.cu.tmpl"
	case layout.ClassElementwise:
		return "elem.cu.tmpl"
	case layout.ClassTile:
		return "tile.cu.tmpl"
	case layout.ClassBroadcast:
		return "bcast.cu.tmpl"
	case layout.ClassFill:
		return "fill.cu.tmpl"
	}
	return ""
}

func dataFor(sig layout.Signature) kernelData {
	s, v := int(sig.Itemsize), int(sig.Vec)
	vb := s * v
	d := kernelData{
		Sig: sig, Name: Name(sig), Version: FormatVersion,
		ND: int(sig.NDim), Fast: int(sig.Fast), S: s, Vec: v, VB: vb,
		Align: vb & -vb, Words: vb%4 == 0, G: s & -s,
		Idx: "int", UIdx: "unsigned int", HasSrc: sig.Class != layout.ClassFill,
		R: RowsPerThread(sig.Class, int(sig.NDim)), XU: ColsPerThread(sig.Class, int(sig.NDim)), RowsThreads: RowsThreads,
		ContigThreads: ContigThreads, ContigUnroll: ContigUnroll,
	}
	d.NS = "ns_" + d.Name
	d.Align = min(d.Align, 16)
	d.G = min(d.G, 4)
	if sig.Index64 {
		d.Idx, d.UIdx = "long long", "unsigned long long"
	}
	if sig.Class == layout.ClassTile {
		tc := DefaultTile(sig)
		d.TR, d.TC, d.NT = tc.Rows, tc.Cols, tc.Threads
		d.WordCols = wordCols(sig, tc)
		d.SWM = 0
		if vb&(vb-1) == 0 {
			d.SWM = min(tc.Cols/v, max(1, 128/vb)) - 1
		}
	}
	return d
}

// Source returns the CUDA C source of the kernel for sig: one extern "C"
// kernel named Name(sig), its types in a namespace of their own and the
// shared helpers under an include guard, so sources of several kernels can
// be concatenated into one translation unit. The same signature always gives
// byte-identical source.
func Source(sig layout.Signature) (string, error) {
	if err := Check(sig); err != nil {
		return "", err
	}
	t, err := parsed()
	if err != nil {
		return "", fmt.Errorf("gen: parsing templates: %w", err)
	}
	var b strings.Builder
	if err := t.ExecuteTemplate(&b, templateFor(sig.Class), dataFor(sig)); err != nil {
		return "", fmt.Errorf("gen: rendering %v: %w", sig, err)
	}
	return b.String(), nil
}
