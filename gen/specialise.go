package gen

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"

	"github.com/stridekit/stridekit/layout"
)

// A specialised kernel is the kernel of a signature with the argument
// block of one plan compiled in as a constant: the same template, the same
// launch and the same packed block at launch (which the kernel then does
// not read), but every extent, stride, tile size and fast-division
// multiplier is known to the compiler, which folds the index arithmetic,
// unrolls loops of known trip count and drops tests that cannot fail. It
// serves only views of the plan it was made from (with at least the
// alignments the plan assumed); its name carries a hash of the block.

// SpecialisedName returns the kernel name of sig specialised to the
// argument block args: Name(sig), "_k" and 16 hex digits of the block's
// hash.
func SpecialisedName(sig layout.Signature, args []byte) string {
	h := fnv.New64a()
	h.Write(args)
	return fmt.Sprintf("%s_k%016x", Name(sig), h.Sum64())
}

// SpecialisedSource returns the CUDA C source and the name of sig's kernel
// built with knobs k and specialised to the argument block args (what Pack
// wrote for one plan of sig with the same knobs). It fails as Source does,
// or with ErrArgs when args is not a block of sig's size.
func SpecialisedSource(sig layout.Signature, k Knobs, args []byte) (name, source string, err error) {
	if len(args) != ArgsSize(sig) {
		return "", "", fmt.Errorf("%w: %v: %d bytes, its block has %d", ErrArgs, sig, len(args), ArgsSize(sig))
	}
	name = SpecialisedName(sig, args)
	source, err = renderKernel(sig, k, func(d *kernelData) {
		d.Name, d.NS, d.AParam = name, "ns_"+name, "a_"
		d.Const = argInit(argSpec(sig.Class), int(sig.NDim), args)
	})
	return name, source, err
}

// argInit returns the C++ aggregate initializer of struct A (spec, nd
// canonical dims) that holds the packed block args: its fields in order,
// arrays in braces, each value a literal of the field's type.
func argInit(spec []argField, nd int, args []byte) string {
	offs, _ := argLayout(spec, nd)
	var b strings.Builder
	b.WriteByte('{')
	for i, f := range spec {
		if i > 0 {
			b.WriteString(", ")
		}
		n := f.count(nd)
		if f.N != 1 {
			b.WriteByte('{')
		}
		for j := range n {
			if j > 0 {
				b.WriteString(", ")
			}
			b.WriteString(literal(f.Type, args[offs[i]+j*f.Type.size():]))
		}
		if f.N != 1 {
			b.WriteByte('}')
		}
	}
	b.WriteByte('}')
	return b.String()
}

// literal returns the C literal of the value of type t at the start of p.
// The most negative values are written as expressions: C has no negative
// literals, and the negation of 2⁶³ or 2³¹ does not fit the type.
func literal(t argType, p []byte) string {
	switch t {
	case i64:
		v := int64(binary.LittleEndian.Uint64(p))
		if v == -1<<63 {
			return "(-9223372036854775807LL - 1)"
		}
		return strconv.FormatInt(v, 10) + "LL"
	case u64:
		return strconv.FormatUint(binary.LittleEndian.Uint64(p), 10) + "ULL"
	case i32:
		v := int32(binary.LittleEndian.Uint32(p))
		if v == -1<<31 {
			return "(-2147483647 - 1)"
		}
		return strconv.FormatInt(int64(v), 10)
	}
	return strconv.FormatUint(uint64(binary.LittleEndian.Uint32(p)), 10) + "U"
}
