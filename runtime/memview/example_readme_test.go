package memview_test

import (
	"bytes"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"log"
	"os"
	"strings"
	"testing"

	"github.com/stridekit/stridekit/layout"
	"github.com/stridekit/stridekit/runtime/cuda"
	"github.com/stridekit/stridekit/runtime/memview"
)

// The Go snippets of the repository's README.md are the bodies of the
// Examples in this file, word for word (TestREADMESnippets checks it), so
// the README shows code that compiles, and where it has an Output comment,
// code whose output is checked.

// Transpose a matrix in Go memory: a host-to-host copy, on the CPU.
func ExampleStridedMemoryView_CopyFrom() {
	a := []float32{1, 2, 3, 4, 5, 6} // 2×3, row-major
	la, _ := layout.Dense([]int64{2, 3}, 4, layout.C)
	src, _ := memview.FromHost(a, la)
	srcT, _ := src.Permute(1, 0) // its 3×2 transpose: a view, nothing moves

	b := make([]float32, 6)
	lb, _ := layout.Dense([]int64{3, 2}, 4, layout.C)
	dst, _ := memview.FromHost(b, lb)
	if err := dst.CopyFrom(srcT, nil); err != nil { // host to host: no stream
		log.Fatal(err)
	}
	fmt.Println(b)
	// Output: [1 4 2 5 3 6]
}

// The device round trip: a matrix from Go memory to the GPU, transposed
// there, and back. It needs a GPU, so it has no Output: it is compiled,
// not run, by go test.
func ExampleStridedMemoryView_CopyFrom_device() {
	const n = 4096
	dev, err := cuda.GetDevice(0) // loads the driver; an error without one
	if err != nil {
		log.Fatal(err)
	}
	s, _ := dev.NewStream(true)
	a, _ := dev.Alloc(n*n*4, s)
	b, _ := dev.Alloc(n*n*4, s)
	defer a.Close()
	defer b.Close()
	l, _ := layout.Dense([]int64{n, n}, 4, layout.C)
	src, _ := memview.FromBuffer(a, l, layout.Float32)
	dst, _ := memview.FromBuffer(b, l, layout.Float32)

	in := make([]float32, n*n)
	for i := range in {
		in[i] = float32(i)
	}
	hin, _ := memview.FromHost(in, l)
	if err := src.CopyFrom(hin, s); err != nil { // host to device: a = in
		log.Fatal(err)
	}
	srcT, _ := src.Permute(1, 0)
	if err := dst.CopyFrom(srcT, s); err != nil { // queued on s: b = aᵀ
		log.Fatal(err)
	}
	out := make([]float32, n*n)
	hout, _ := memview.FromHost(out, l)
	if err := hout.CopyFrom(dst, s); err != nil { // returns when out holds aᵀ
		log.Fatal(err)
	}
	fmt.Println(out[1] == in[n]) // true
}

// A copy repeated in a loop is bound once: Bind plans it (and on a device
// loads its kernel), and Copy only runs it. Here the views are in Go memory,
// so Copy runs on the CPU and takes no stream.
func ExampleBind() {
	a := make([]int32, 6)
	la, _ := layout.Dense([]int64{2, 3}, 4, layout.C)
	src, _ := memview.FromHost(a, la)
	srcT, _ := src.Permute(1, 0)
	b := make([]int32, 6)
	lb, _ := layout.Dense([]int64{3, 2}, 4, layout.C)
	dst, _ := memview.FromHost(b, lb)

	c, err := memview.Bind(dst, srcT)
	if err != nil {
		log.Fatal(err)
	}
	for batch := range int32(3) {
		for i := range a {
			a[i] = 10*batch + int32(i) // the next batch arrives in a
		}
		if err := c.Copy(nil); err != nil {
			log.Fatal(err)
		}
		fmt.Println(b)
	}
	// Output:
	// [0 3 1 4 2 5]
	// [10 13 11 14 12 15]
	// [20 23 21 24 22 25]
}

// Explain says how a copy would run, without copying: for two host views,
// the CPU copy and the class of its plan; for a device copy, the kernel
// and its launch as well.
func ExampleStridedMemoryView_Explain() {
	a := make([]float32, 512*256)
	la, _ := layout.Dense([]int64{512, 256}, 4, layout.C)
	src, _ := memview.FromHost(a, la)
	srcT, _ := src.Permute(1, 0)
	b := make([]float32, 256*512)
	lb, _ := layout.Dense([]int64{256, 512}, 4, layout.C)
	dst, _ := memview.FromHost(b, lb)

	plan, err := dst.Explain(srcT)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(plan)
	fmt.Println(plan.Plan.Sig)
	// Output:
	// host: runtime/hostcopy, tile plan
	// tile:nd=2,fast=0,item=4,vec=4,idx=32
}

// TestREADMESnippets: every Go snippet of README.md is the body of one of
// this file's Examples, word for word.
func TestREADMESnippets(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if errors.Is(err, fs.ErrNotExist) {
		t.Skip("no README.md two folders up (a test binary run outside the repository)")
	}
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("example_readme_test.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "example_readme_test.go", src, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	bodies := map[string]string{} // body → Example name
	for _, d := range f.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok || !strings.HasPrefix(fn.Name.Name, "Example") {
			continue
		}
		// The lines between the braces, one tab of indentation removed.
		start := fset.Position(fn.Body.Lbrace).Offset + 1
		end := fset.Position(fn.Body.Rbrace).Offset
		var b strings.Builder
		for _, line := range strings.Split(strings.Trim(string(src[start:end]), "\n"), "\n") {
			b.WriteString(strings.TrimPrefix(line, "\t") + "\n")
		}
		bodies[b.String()] = fn.Name.Name
	}
	var snippets int
	rest := readme
	for {
		_, after, ok := bytes.Cut(rest, []byte("\n```go\n"))
		if !ok {
			break
		}
		snippet, after, ok := bytes.Cut(after, []byte("\n```\n"))
		if !ok {
			t.Fatal("README.md: a ```go block is not closed")
		}
		rest = after
		snippets++
		if name, ok := bodies[string(snippet)+"\n"]; ok {
			t.Logf("README snippet %d is %s", snippets, name)
			continue
		}
		t.Errorf("README.md's Go snippet %d is no Example's body in example_readme_test.go (copy the Example's body into the README, or change both):\n%s", snippets, snippet)
	}
	if snippets == 0 {
		t.Error("README.md has no ```go block")
	}
}
