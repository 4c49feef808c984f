package gen

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/stridekit/stridekit/layout"
)

// TestArgWriterChecksOrder: a packer that writes a field out of order, with
// the wrong count, or leaves one out gets ErrArgs.
func TestArgWriterChecksOrder(t *testing.T) {
	buf := make([]byte, argsSize(rowsArgs, 2))
	for name, pack := range map[string]func(w *argWriter){
		"order":  func(w *argWriter) { w.put("n", 0, 0, 0, 0); w.put("dstride", 1, 1) },
		"count":  func(w *argWriter) { w.put("n", 0, 0, 0) },
		"short":  func(w *argWriter) { w.put("n", 0, 0, 0, 0) },
		"extra":  func(w *argWriter) { packRows(w); w.put("shr", 1, 1) },
		"scalar": func(w *argWriter) { w.put("shape", 1, 1) },
		"name":   func(w *argWriter) { w.put("n", 0, 0, 0, 0); w.put("shapf", 1, 1) },
	} {
		w := newArgWriter(buf, rowsArgs, 2)
		pack(&w)
		if err := w.done(); !errors.Is(err, ErrArgs) {
			t.Errorf("%s: done() = %v, want ErrArgs", name, err)
		}
	}
	w := newArgWriter(buf, rowsArgs, 2)
	packRows(&w)
	if err := w.done(); err != nil {
		t.Errorf("a complete block: %v", err)
	}
	// A name equal to the field's but not the same constant (its bytes
	// elsewhere) is the field.
	w = newArgWriter(buf, rowsArgs, 2)
	w.put(string([]byte("n")), 0, 0, 0, 0)
	for _, f := range []string{"shape", "dstride", "sstride", "div", "mul", "shr"} {
		w.put(string([]byte(f)), 1, 1)
	}
	if err := w.done(); err != nil {
		t.Errorf("a complete block written with names built at run time: %v", err)
	}
}

func packRows(w *argWriter) {
	w.put("n", 0, 0, 0, 0)
	for _, f := range []string{"shape", "dstride", "sstride", "div", "mul", "shr"} {
		w.put(f, 1, 1)
	}
}

// TestArgDecl: the CUDA declaration lists every field of the description in
// order, and checks each offset and the size that argLayout gives (the
// offsets Pack writes at).
func TestArgDecl(t *testing.T) {
	for _, c := range []layout.Class{layout.ClassElementwise, layout.ClassBoxTile} {
		for _, nd := range []int{1, 3, 16} {
			spec := argSpec(c)
			decl := argDecl(spec, nd)
			offs, size := argLayout(spec, nd)
			at := 0
			for i, f := range spec {
				j := strings.Index(decl[at:], " "+f.Name)
				if j < 0 {
					t.Fatalf("%v nd=%d: field %s missing or out of order in\n%s", c, nd, f.Name, decl)
				}
				at += j
				want := "SK_CHECK(sk_at_" + f.Name + ", SK_AT_IS(A, " + f.Name + ", " + itoa(offs[i]) + "));"
				if !strings.Contains(decl, want) {
					t.Errorf("%v nd=%d: no %q", c, nd, want)
				}
			}
			if !strings.Contains(decl, "sizeof(A) == "+itoa(size)+")") || size != ArgsSize(layout.Signature{Class: c, NDim: uint8(nd)}) {
				t.Errorf("%v nd=%d: size %d not checked or not ArgsSize", c, nd, size)
			}
		}
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// TestMaxArgsSize: MaxArgsSize(nd) holds the argument block of every kernel
// class of every rank up to nd (kernels.Bind packs into room it sets aside
// with it before it knows the plan).
func TestMaxArgsSize(t *testing.T) {
	classes := []layout.Class{layout.ClassElementwise, layout.ClassTile, layout.ClassBroadcast, layout.ClassFill, layout.ClassBoxTile}
	for nd := 1; nd <= MaxNDim+2; nd++ {
		room := MaxArgsSize(nd)
		for r := 1; r <= nd; r++ {
			for _, c := range classes {
				if c == layout.ClassBoxTile && r > layout.MaxBoxNDim {
					continue
				}
				sig := layout.Signature{Class: c, NDim: uint8(r), Itemsize: 4}
				if got := ArgsSize(sig); got > room {
					t.Errorf("ArgsSize(%v, rank %d) = %d > MaxArgsSize(%d) = %d", c, r, got, nd, room)
				}
			}
		}
	}
}
