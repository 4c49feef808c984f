package gen

import (
	"fmt"
	"strings"
	"sync"
	"text/template/parse"

	"github.com/stridekit/stridekit/layout"
	"github.com/stridekit/stridekit/templates"
)

// kernelData is what a template sees: the signature spelled out as the
// numbers and names the CUDA source needs, and the knobs it is built with.
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
	G       int    // tile, btile: bytes per granule (register-transpose step, scalar access), gcd(S, 4)
	Idx     string // signed index type
	UIdx    string // unsigned index type
	HasSrc  bool   // the kernel reads src per element (not fill)
	NT      int    // threads per block
	Args    string // the CUDA declaration of the argument block A (argDecl)
	AParam  string // the kernel's name for its argument block parameter: "a", or "a_" when specialised
	Const   string // specialised: the initializer of the constant argument block a (argInit); "" otherwise

	// ClassTile
	TR, TC, SWM int
	WordCols    bool // store phase reads 4-byte words of Vec rows (TileConfig.WordCols)
	Staged      bool // tile rows move as words, stores through a dst-ordered buffer (TileConfig.StageStores)
	RW          int  // Staged: the dst-ordered buffer's row pitch in words (stagePitch)
	Pipe        bool // a block's next tile's loads are in flight while it stores the current one (TileConfig.Pipe)
	// rows kernels (elem, bcast, fill); gather: R elements per thread per trip
	R, XU   int
	GW, GWU int // gather: bytes of a dst word written at once (0: items only), words per thread per trip (gatherwords.go)
	// ClassBoxTile
	KE            int          // btile: strided elements a thread loads before it stores them
	ElemStore     bool         // btile: dst runs written one element per thread
	OverlapTables bool         // btile: dst tables built while the first tile's words are in flight (Knobs.OverlapTables)
	CalcOffsets   bool         // btile: dst run elements' shared-memory offsets computed (Knobs.CalcOffsets)
	WordStore     int          // btile: specialised kernels write contiguous dst runs of this many bytes or more in words (Knobs.WordStore; 0: never)
	TripleStore   int          // btile, 3-byte items: contiguous dst runs of this many bytes or more written in groups of three words (Knobs.TripleStore; 0: never)
	Pow2          bool         // S is a power of two: one gather case
	Gather        []gatherCase // the store phase's granule maps, by the piece's start within an element
}

// gatherCase is how the store phase of the box-tile kernel fills a 16-byte
// piece of a dst run whose first byte is byte Case·G of an element: for
// each granule, the element (from the piece's first) and the byte within it
// to read, and where the granule goes in the piece.
type gatherCase struct {
	Case     int
	Granules []gatherGranule
}

type gatherGranule struct {
	Elem, Byte  int // element after the piece's first, byte in it
	Word, Shift int // destination word of the piece, bit shift in it
}

// gatherCases returns the granule maps of the box-tile store phase for
// elements of s bytes and granules of g bytes.
func gatherCases(s, g int) []gatherCase {
	n := s / g
	if s&(s-1) == 0 {
		n = 1 // the piece always starts at an element (its address is s-aligned)
	}
	cs := make([]gatherCase, n)
	for c := range cs {
		cs[c].Case = c
		for b := 0; b < 16; b += g {
			pos := c*g + b
			cs[c].Granules = append(cs[c].Granules, gatherGranule{Elem: pos / s, Byte: pos % s, Word: b / 4, Shift: 8 * (b % 4)})
		}
	}
	return cs
}

var (
	parseOnce sync.Once
	tmpl      map[string]*parse.Tree
	parseErr  error
)

func parsed() (map[string]*parse.Tree, error) {
	parseOnce.Do(func() {
		tmpl, parseErr = parseTemplates(templates.FS, templates.Pattern)
	})
	return tmpl, parseErr
}

func templateFor(c layout.Class) string {
	switch c {
	case layout.ClassElementwise:
		return "elem.cu.tmpl"
	case layout.ClassTile:
		return "tile.cu.tmpl"
	case layout.ClassBroadcast:
		return "bcast.cu.tmpl"
	case layout.ClassFill:
		return "fill.cu.tmpl"
	case layout.ClassBoxTile:
		return "btile.cu.tmpl"
	case layout.ClassGather:
		return "gather.cu.tmpl"
	}
	return ""
}

func dataFor(sig layout.Signature, k Knobs) kernelData {
	s, v := int(sig.Itemsize), int(sig.Vec)
	vb := s * v
	d := kernelData{
		Sig: sig, Name: Name(sig), Version: FormatVersion,
		ND: int(sig.NDim), Fast: int(sig.Fast), S: s, Vec: v, VB: vb,
		Align: vb & -vb, Words: vb%4 == 0, G: s & -s,
		Idx: "int", UIdx: "unsigned int", HasSrc: sig.Class != layout.ClassFill, NT: k.Threads,
		R: rowsPerThread(sig, k), XU: colsPerThread(sig),
		Args: argDecl(argSpec(sig.Class), int(sig.NDim)), AParam: "a",
	}
	d.NS = "ns_" + d.Name
	d.Align = min(d.Align, 16)
	d.G = min(d.G, 4)
	if sig.Index64 {
		d.Idx, d.UIdx = "long long", "unsigned long long"
	}
	switch sig.Class {
	case layout.ClassTile:
		tc := tileConfig(sig, k)
		d.TR, d.TC, d.NT = tc.Rows, tc.Cols, tc.Threads
		d.WordCols, d.Staged, d.Pipe = tc.WordCols, tc.StageStores, tc.Pipe > 1
		if d.Staged {
			d.RW = stagePitch(v, vb/4, tc.Rows*s/4, tc.Rows/v)
		}
		d.SWM = 0
		if vb&(vb-1) == 0 {
			d.SWM = min(tc.Cols/v, max(1, 128/vb)) - 1
		} else if n := tc.Cols / v; n&(n-1) == 0 {
			// Vectors of three words: rows VEC apart lie a multiple of 32
			// words apart, so a warp's column reads need the whole row of
			// vectors swizzled (3·(c^rb) falls in distinct banks).
			d.SWM = n - 1
		}
	case layout.ClassBoxTile:
		d.KE = min(4*k.Unroll, max(1, 32/(s/d.G))) // at most 32 registers of elements
		d.Pow2 = s&(s-1) == 0
		d.ElemStore = k.ElemStore
		d.OverlapTables = k.OverlapTables
		d.CalcOffsets = k.CalcOffsets
		if s >= 3 && s%4 != 0 {
			d.WordStore = k.WordStore
		}
		if s == 3 {
			d.TripleStore = k.TripleStore
		}
		d.Gather = gatherCases(s, d.G)
	case layout.ClassGather:
		if wordItems(sig, k) > 0 {
			d.GW, d.GWU = k.GatherWord, int(wordsPerThread(sig, k))
		}
	}
	return d
}

// Source returns the CUDA C source of the kernel for sig built with knobs
// k (KnobsFor): one extern "C" kernel named Name(sig), its types in a
// namespace of their own and the shared helpers under an include guard, so
// sources of several kernels can be concatenated into one translation unit.
// The same signature and knobs always give byte-identical source.
func Source(sig layout.Signature, k Knobs) (string, error) {
	return renderKernel(sig, k, func(*kernelData) {})
}

// renderKernel checks sig and k and renders sig's template with the data
// dataFor gives them, as edit leaves it.
func renderKernel(sig layout.Signature, k Knobs, edit func(*kernelData)) (string, error) {
	if err := Check(sig); err != nil {
		return "", err
	}
	if err := CheckKnobs(sig, k); err != nil {
		return "", err
	}
	t, err := parsed()
	if err != nil {
		return "", fmt.Errorf("gen: parsing templates: %w", err)
	}
	d := dataFor(sig, k)
	edit(&d)
	var b strings.Builder
	if err := render(&b, t, templateFor(sig.Class), d); err != nil {
		return "", fmt.Errorf("gen: rendering %v: %w", sig, err)
	}
	return b.String(), nil
}

// stagePitch returns the row pitch, in words, of the staged tile kernel's
// dst-ordered buffer: dw words of a row and up to 7 of padding, the pitch
// with the fewest bank conflicts among a warp's writes, where lane m puts
// word q of its vector at row (m / nrb)·vec, word (m % nrb)·vw + q
// (vw words a vector, nrb micro-tile rows).
func stagePitch(vec, vw, dw, nrb int) int {
	best, worst := dw, 33
	for rw := dw; rw < dw+8; rw++ {
		var banks [32]int
		most := 0
		for m := 0; m < 32; m++ {
			b := ((m/nrb)*vec*rw + (m%nrb)*vw) % 32
			banks[b]++
			most = max(most, banks[b])
		}
		if most < worst {
			best, worst = rw, most
		}
	}
	return best
}
