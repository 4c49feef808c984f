package writer

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/stridekit/stridekit/gen"
	"github.com/stridekit/stridekit/layout"
)

var update = flag.Bool("update", false, "rewrite testdata/kernels.go.golden")

func sigs(t testing.TB, ss ...string) []layout.Signature {
	t.Helper()
	var out []layout.Signature
	for _, s := range ss {
		sig, err := layout.ParseSignature(s)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, sig)
	}
	return out
}

// TestGolden pins the generated file for a few kernels of every class.
func TestGolden(t *testing.T) {
	spec := Spec{Package: "golden", Command: "stridegen -sigfile golden.sigs", Sigs: sigs(t,
		"elem:nd=3,item=4,vec=1,idx=32", "tile:nd=3,fast=0,item=4,vec=4,idx=32",
		"bcast:nd=2,item=4,vec=4,idx=32", "fill:nd=2,item=12,vec=1,idx=64", "btile:nd=3,item=3,vec=1,idx=32")}
	var b bytes.Buffer
	if err := spec.Render(&b); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("testdata", "kernels.go.golden")
	if *update {
		if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./gen/writer -update to create it)", err)
	}
	if !bytes.Equal(b.Bytes(), want) {
		t.Errorf("%s differs from the golden file (run go test ./gen/writer -update if the change is intended)", path)
	}
}

// TestDeterministic renders one Spec of 40 default kernels twice.
func TestDeterministic(t *testing.T) {
	set := gen.DefaultSet()
	var x, y bytes.Buffer
	if err := (&Spec{Package: "p", Sigs: set[:40]}).Render(&x); err != nil {
		t.Fatal(err)
	}
	if err := (&Spec{Package: "p", Sigs: set[:40]}).Render(&y); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(x.Bytes(), y.Bytes()) {
		t.Fatal("two renderings of one Spec differ")
	}
	if !bytes.HasPrefix(x.Bytes(), []byte("// "+Header+"\n")) {
		t.Fatalf("no header: %.80s", x.String())
	}
}

func TestRenderRejects(t *testing.T) {
	if err := (&Spec{Package: "p", Sigs: []layout.Signature{{Class: layout.ClassNone}}}).Render(new(bytes.Buffer)); err == nil {
		t.Error("Render accepted a class without kernel")
	}
	var b bytes.Buffer
	if err := (&Spec{Sigs: sigs(t, "elem:nd=2,item=4")}).Render(&b); err == nil || b.Len() != 0 {
		t.Errorf("Render without a package: %v, wrote %d bytes", err, b.Len())
	}
	if camel("sk_tile_nd3_f0_i4_v4_i32") != "SkTileNd3F0I4V4I32" {
		t.Error(camel("sk_tile_nd3_f0_i4_v4_i32"))
	}
}

// TestSourceMatchesKnobs: the file's sources are the portable rendering,
// and its knobs literal names the knobs they were rendered with.
func TestSourceMatchesKnobs(t *testing.T) {
	sig := sigs(t, "tile:nd=2,fast=0,item=2,vec=8")[0]
	var b bytes.Buffer
	if err := (&Spec{Package: "p", Sigs: []layout.Signature{sig}}).Render(&b); err != nil {
		t.Fatal(err)
	}
	k := gen.KnobsFor(sig, 0)
	if !regexp.MustCompile(`\bThreads: +128,`).MatchString(b.String()) || k.Threads != 128 {
		t.Errorf("knobs %+v not in the file:\n%.2000s", k, b.String())
	}
}

// TestKnobsLitAllFields: the stubs' knobs literal carries every field of
// gen.Knobs, so a stub packs with the knobs its kernel was rendered with.
func TestKnobsLitAllFields(t *testing.T) {
	var k gen.Knobs
	v := reflect.ValueOf(&k).Elem()
	for i := 0; i < v.NumField(); i++ {
		switch f := v.Field(i); f.Kind() {
		case reflect.Bool:
			f.SetBool(true)
		case reflect.Int:
			f.SetInt(int64(100 + i))
		default:
			t.Fatalf("Knobs.%s: kind %v not covered by this test", v.Type().Field(i).Name, f.Kind())
		}
	}
	src := fmt.Sprintf("%#v", knobsLit(k))
	for i := 0; i < v.NumField(); i++ {
		want := fmt.Sprintf("%s: %v", v.Type().Field(i).Name, v.Field(i).Interface())
		if !strings.Contains(strings.Join(strings.Fields(src), " "), want) {
			t.Errorf("%q not in the literal %s", want, src)
		}
	}
}
