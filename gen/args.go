package gen

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unsafe"

	"github.com/stridekit/stridekit/internal/tilegeom"
	"github.com/stridekit/stridekit/layout"
)

// The argument block of each kernel class is described once, here: the
// fields of the kernel's struct A (name, C type, count, order). The CUDA
// declaration of A in every rendered kernel is written from this
// description, with compile-time checks of every field's offset and of the
// size; the packers (Pack, packBoxTile) write through argWriter,
// which checks each field they write against the same description. A
// packer and a kernel therefore cannot disagree on a field's place without
// a packing error or a compile error.

// ErrArgs reports a packer that wrote a field other than the one the
// argument description has next: a bug in gen, never the user's input.
var ErrArgs = errors.New("gen: argument block does not match its description")

// argType is the C type of an argument field.
type argType uint8

const (
	i64 argType = iota // long long
	u64                // unsigned long long
	i32                // int
	u32                // unsigned int
)

func (t argType) size() int {
	if t <= u64 {
		return 8
	}
	return 4
}

func (t argType) c() string {
	return [...]string{"long long", "unsigned long long", "int", "unsigned int"}[t]
}

// perDim is the count of a field with one entry per canonical dim.
const perDim = -1

// argField is one field of an argument block.
type argField struct {
	Name string
	Type argType
	N    int    // entries: 1 a scalar, perDim one per canonical dim, else a fixed array
	Doc  string // what the kernel reads it for
}

// count returns the field's entries for nd canonical dims.
func (f argField) count(nd int) int {
	if f.N == perDim {
		return nd
	}
	return f.N
}

// rowsArgs is the argument block of the elementwise, broadcast, fill and
// tile kernels.
var rowsArgs = []argField{
	{"n", i64, 4, "class-specific counts (see Pack)"},
	{"shape", i64, perDim, "extents, in kernel elements"},
	{"dstride", i64, perDim, "dst strides, in kernel elements"},
	{"sstride", i64, perDim, "src strides, in kernel elements"},
	{"div", i64, perDim, "divisors a linear index is unravelled by"},
	{"mul", u64, perDim, "fast-division multipliers of div"},
	{"shr", u32, perDim, "fast-division shifts of div"},
}

// boxArgs is the argument block of the box-tile kernel (see packBoxTile).
var boxArgs = []argField{
	{"ntiles", i64, 1, "tiles in the launch"},
	{"slo", i64, 1, "src bytes [slo, shi) from the src pointer may be read"},
	{"shi", i64, 1, ""},
	{"sstep", i64, 1, "element stride of a run in src"},
	{"dstep", i64, 1, "element stride of a run in dst"},
	{"shape", i64, perDim, "extents"},
	{"dstride", i64, perDim, "dst strides"},
	{"sstride", i64, perDim, "src strides"},
	{"tile", i64, perDim, "box extent along each dim"},
	{"chunks", i64, perDim, "tiles along each dim, ceil(shape/tile)"},
	{"cmul", u64, perDim, "fast division by chunks"},
	{"cshr", u32, perDim, ""},
	{"sord", i32, perDim, "tile dims by |stride| in src"},
	{"dord", i32, perDim, "tile dims by |stride| in dst"},
	{"tord", i32, perDim, "dims in the order tiles are numbered, the last fastest (tileOrder)"},
	{"w", i32, perDim, "shared-memory bytes per index step of each dim"},
	{"nk", i32, 1, "tile dims"},
	{"nsr", i32, 1, "dims in a src run"},
	{"ndr", i32, 1, "dims in a dst run"},
	{"ls", i32, 1, "src run length"},
	{"rs", i32, 1, "src runs per tile"},
	{"ld", i32, 1, "dst run length"},
	{"rd", i32, 1, "dst runs per tile"},
	{"offS", i32, 1, "table offset: src runs' shared-memory slots"},
	{"lgs", i32, 1, "log2 threads per run: strided load"},
	{"lgd", i32, 1, "log2 threads per run: store"},
	{"c0", i32, 1, "shared-memory base of every dst run: a src run's first item from its lowest byte"},
	{"grain", i32, 1, "src slots' grain: a tile's phase is its src run 0's address modulo it"},
	{"rgs", i32, tilegeom.MaxRagged, "ragged dims outside the src runs (-1: none)"},
	{"rgd", i32, tilegeom.MaxRagged, "ragged dims outside the dst runs (-1: none)"},
	{"lasts", i32, 1, "the last src run dim, if ragged (-1: none)"},
	{"lastd", i32, 1, "the last dst run dim, if ragged (-1: none)"},
	{"offG", i32, 1, "table offsets in shared memory (tilegeom.BoxShared)"},
	{"offH", i32, 1, ""},
	{"offA", i32, 1, ""},
	{"offB", i32, 1, ""},
	{"offCs", i32, 1, ""},
	{"offCd", i32, 1, ""},
	{"lgw", i32, 1, "log2 threads per run: word load"},
	{"gn", i32, 1, "sibling store: groups of sibling dst runs per tile (0: off)"},
	{"gta", i32, 1, "sibling store: tile extent along src's first run dim"},
	{"gdim", i32, 1, "sibling store: that dim (-1: none)"},
	{"gdiv", i32, 2, "sibling store: dst run step between siblings, groups along the dim"},
	{"gmul", u64, 2, "fast division by gdiv (32-bit)"},
	{"gshr", u32, 2, ""},
	{"gds", i64, 1, "sibling store: dst stride of the dim"},
}

// argSpec returns the argument description of class c's kernel.
func argSpec(c layout.Class) []argField {
	if c == layout.ClassBoxTile {
		return boxArgs
	}
	return rowsArgs
}

// argLayout returns the byte offset of each field of spec for nd canonical
// dims (C's rules: each field aligned to its type's size) and the block's
// size (a multiple of 8, the struct's alignment).
func argLayout(spec []argField, nd int) (offs []int, size int) {
	offs = make([]int, len(spec))
	for i, f := range spec {
		size = alignUp(size, f.Type.size())
		offs[i] = size
		size += f.count(nd) * f.Type.size()
	}
	return offs, alignUp(size, 8)
}

// argsSize is argLayout's size without the offsets.
func argsSize(spec []argField, nd int) int {
	size := 0
	for _, f := range spec {
		size = alignUp(size, f.Type.size()) + f.count(nd)*f.Type.size()
	}
	return alignUp(size, 8)
}

func alignUp(x, a int) int { return (x + a - 1) &^ (a - 1) }

// argDecl returns the CUDA declaration of struct A for spec and nd
// canonical dims (arrays sized by the enum ND the kernel declares), and
// compile-time checks (SK_CHECK, common.cu.tmpl) that each field sits at
// the offset Go packs it at and that the struct has the size Go packs.
func argDecl(spec []argField, nd int) string {
	var b strings.Builder
	b.WriteString("// A is the argument block, written from gen's description of it (args.go).\nstruct A {\n")
	for _, f := range spec {
		b.WriteString("\t" + f.Type.c() + " " + f.Name)
		switch f.N {
		case perDim:
			b.WriteString("[ND]")
		case 1:
		default:
			b.WriteString("[" + strconv.Itoa(f.N) + "]")
		}
		b.WriteString(";")
		if f.Doc != "" {
			b.WriteString(" // " + f.Doc)
		}
		b.WriteString("\n")
	}
	b.WriteString("};\n")
	offs, size := argLayout(spec, nd)
	for i, f := range spec {
		fmt.Fprintf(&b, "SK_CHECK(sk_at_%s, SK_AT_IS(A, %s, %d)); // gen packs A.%s at byte %d\n", f.Name, f.Name, offs[i], f.Name, offs[i])
	}
	fmt.Fprintf(&b, "SK_CHECK(sk_sizeof_A, sizeof(A) == %d); // gen packs %d bytes", size, size)
	return b.String()
}

// argWriter writes an argument block field by field, in the order of its
// description, checking each field's name and count as it goes: the first
// mismatch is kept in err (ErrArgs) and nothing more is written.
type argWriter struct {
	b    []byte
	spec []argField
	nd   int
	i, o int // next field, next byte
	err  error
}

func newArgWriter(buf []byte, spec []argField, nd int) argWriter {
	return argWriter{b: buf, spec: spec, nd: nd}
}

// put writes field name with values vs (one per entry).
func (w *argWriter) put(name string, vs ...int64) {
	if w.err != nil || w.i >= len(w.spec) || !w.spec[w.i].fits(name, len(vs), w.nd) {
		w.mismatch(name, len(vs))
		return
	}
	f := &w.spec[w.i]
	w.i++
	if f.Type.size() == 8 {
		o := alignUp(w.o, 8)
		b := w.b[o : o+8*len(vs)]
		for i, v := range vs {
			binary.LittleEndian.PutUint64(b[8*i:], uint64(v))
		}
		w.o = o + len(b)
		return
	}
	o := alignUp(w.o, 4)
	b := w.b[o : o+4*len(vs)]
	for i, v := range vs {
		binary.LittleEndian.PutUint32(b[4*i:], uint32(v))
	}
	w.o = o + len(b)
}

// fits reports whether a field written as name with n values is f, for nd
// canonical dims. The names the packers write are string constants, which
// share their bytes with the description's where they are equal, so the
// usual match costs a pointer comparison.
func (f *argField) fits(name string, n, nd int) bool {
	return n == f.count(nd) && len(name) == len(f.Name) && (unsafe.StringData(name) == unsafe.StringData(f.Name) || name == f.Name)
}

// mismatch records the first field written out of order or with the wrong
// count (or after the last field); later writes are dropped.
func (w *argWriter) mismatch(name string, n int) {
	switch {
	case w.err != nil:
	case w.i >= len(w.spec):
		w.err = fmt.Errorf("%w: %s written after the last field", ErrArgs, name)
	default:
		f := &w.spec[w.i]
		w.err = fmt.Errorf("%w: field %d is %s[%d], the packer wrote %s[%d]", ErrArgs, w.i, f.Name, f.count(w.nd), name, n)
	}
}

// divisors writes the fast-division multipliers of ds (field mul) and
// their shifts (field shr).
func (w *argWriter) divisors(sig layout.Signature, mul, shr string, ds []int64) {
	var m, s [max(MaxNDim, layout.MaxBoxNDim)]int64
	for i, d := range ds {
		mu, sh := Magic(sig, uint64(d))
		m[i], s[i] = int64(mu), int64(sh)
	}
	w.put(mul, m[:len(ds)]...)
	w.put(shr, s[:len(ds)]...)
}

// done reports the first mismatch, or a field left unwritten.
func (w *argWriter) done() error {
	if w.err == nil && w.i != len(w.spec) {
		w.err = fmt.Errorf("%w: %d of %d fields written", ErrArgs, w.i, len(w.spec))
	}
	return w.err
}
