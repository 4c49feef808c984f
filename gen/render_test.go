package gen

import (
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"text/template"
	"text/template/parse"

	"github.com/stridekit/stridekit/layout"
	"github.com/stridekit/stridekit/templates"
)

var (
	refOnce sync.Once
	refTmpl *template.Template
	refErr  error
)

// referenceSource renders sig's kernel with package text/template, the
// templates' reference executor, which the library itself does not link.
func referenceSource(t testing.TB, sig layout.Signature, k Knobs) string {
	t.Helper()
	refOnce.Do(func() {
		refTmpl, refErr = template.New("").Option("missingkey=error").ParseFS(templates.FS, templates.Pattern)
	})
	if refErr != nil {
		t.Fatal(refErr)
	}
	tm := refTmpl
	var b strings.Builder
	if err := tm.ExecuteTemplate(&b, templateFor(sig.Class), dataFor(sig, k)); err != nil {
		t.Fatalf("%v: %v", sig, err)
	}
	return b.String()
}

// TestRenderMatchesTextTemplate: the library's executor gives the bytes
// text/template gives, for every signature of the default set under the
// sm_90 and the portable knobs, and for random signatures and knobs.
func TestRenderMatchesTextTemplate(t *testing.T) {
	check := func(sig layout.Signature, k Knobs) {
		t.Helper()
		got, err := Source(sig, k)
		if err != nil {
			t.Fatalf("%v %+v: %v", sig, k, err)
		}
		if want := referenceSource(t, sig, k); got != want {
			i := 0
			for i < len(got) && i < len(want) && got[i] == want[i] {
				i++
			}
			t.Fatalf("%v %+v: sources differ at byte %d:\ngot  %q\nwant %q", sig, k, i, got[i:min(len(got), i+80)], want[i:min(len(want), i+80)])
		}
	}
	n := 0
	for _, sig := range DefaultSet() {
		for _, arch := range []int{0, 90} {
			check(sig, KnobsFor(sig, arch))
			n++
		}
	}
	r := rand.New(rand.NewPCG(8, 8))
	classes := []layout.Class{layout.ClassElementwise, layout.ClassTile, layout.ClassBroadcast, layout.ClassFill, layout.ClassBoxTile}
	random := 0
	for tries := 0; tries < 5000 && random < 600; tries++ {
		sig := layout.Signature{Class: classes[r.IntN(len(classes))], NDim: uint8(1 + r.IntN(8)), Itemsize: uint8(1 + r.IntN(16)), Index64: r.IntN(2) == 0}
		sig.Vec = uint8(1 << r.IntN(5))
		if sig.Class == layout.ClassTile && sig.NDim > 1 {
			sig.Fast = uint8(r.IntN(int(sig.NDim) - 1))
		}
		k := KnobsFor(sig, []int{0, 90}[r.IntN(2)])
		k.Threads = []int{64, 128, 256, 512}[r.IntN(4)]
		k.Rows = 1 + r.IntN(8)
		k.Unroll = 1 + r.IntN(4)
		k.WordCols = r.IntN(2) == 0
		k.ElemStore = r.IntN(2) == 0
		k.WordStore = []int{0, 4, 512}[r.IntN(3)]
		if Check(sig) != nil || CheckKnobs(sig, k) != nil {
			continue
		}
		check(sig, k)
		random++
	}
	if random < 600 {
		t.Fatalf("only %d random kernels compared", random)
	}
	t.Logf("%d default and %d random kernels rendered byte for byte as text/template renders them", n, random)
}

// TestRenderErrors: a template the executor cannot run is an error, not
// wrong output.
func TestRenderErrors(t *testing.T) {
	for _, src := range []string{
		`{{.Missing}}`,
		`{{.S | printf "%d"}}`,
		`{{range .S}}x{{end}}`,
		`{{if eq .S "x"}}{{end}}`,
		`{{$x := .S}}`,
		`{{template "nowhere" .}}`,
	} {
		trees, err := parse.Parse("t", src, "", "", templateFuncs, map[string]any{"printf": true})
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		var b strings.Builder
		if err := render(&b, trees, "t", kernelData{S: 4}); err == nil {
			t.Errorf("%s rendered %q without an error", src, b.String())
		}
	}
}

// BenchmarkSource is the rendering of one box-tile kernel's source, the
// host work of a kernel's first use before NVRTC.
func BenchmarkSource(b *testing.B) {
	sig := layout.Signature{Class: layout.ClassBoxTile, NDim: 4, Itemsize: 3, Vec: 1}
	k := KnobsFor(sig, 90)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Source(sig, k); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSourceTextTemplate renders the same kernel with text/template,
// the executor programs no longer link: the baseline of BenchmarkSource.
func BenchmarkSourceTextTemplate(b *testing.B) {
	sig := layout.Signature{Class: layout.ClassBoxTile, NDim: 4, Itemsize: 3, Vec: 1}
	k := KnobsFor(sig, 90)
	referenceSource(b, sig, k) // parses the templates
	b.ReportAllocs()
	for b.Loop() {
		var sb strings.Builder
		if err := refTmpl.ExecuteTemplate(&sb, templateFor(sig.Class), dataFor(sig, k)); err != nil {
			b.Fatal(err)
		}
	}
}
