package kernels

import (
	"bytes"
	"os"
	"testing"

	"github.com/stridekit/stridekit/gen"
)

// defaultSigsHeader heads default.sigs.
const defaultSigsHeader = `The default kernel set of package kernels: gen.DefaultSet (its doc says how
it is pruned), one signature per line. Regenerate this file with
go test ./kernels -run TestDefaultSigsFile -update-sigs, then go generate ./kernels.`

// TestDefaultSigsFile checks default.sigs lists gen.DefaultSet.
func TestDefaultSigsFile(t *testing.T) {
	var b bytes.Buffer
	if err := gen.FormatSigs(&b, defaultSigsHeader, gen.DefaultSet()); err != nil {
		t.Fatal(err)
	}
	if *updateSigs {
		if err := os.WriteFile("default.sigs", b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile("default.sigs")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, b.Bytes()) {
		t.Fatal("default.sigs differs from gen.DefaultSet: run go test ./kernels -run TestDefaultSigsFile -update-sigs && go generate ./kernels")
	}
}
