package layout

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unsafe"

	"github.com/stridekit/stridekit/internal/tilegeom"
)

// Class is the kind of copy a plan needs; each class has its own kernel
// template (see package gen) or its own non-kernel path.
type Class uint8

// The copy classes, from the cheapest path to the most general.
const (
	// ClassNone: the views hold no elements; nothing to do.
	ClassNone Class = iota
	// ClassMemcpy: both views are dense in the same order (after
	// canonicalisation a single unit-stride dim in both): one contiguous byte
	// copy (cuMemcpyAsync on a GPU, copy() on the host).
	ClassMemcpy
	// ClassElementwise: the general N-d gather/scatter. Vectorized along the
	// innermost canonical dim when it has unit stride in both views.
	ClassElementwise
	// ClassTile: the fastest dim of src differs from the fastest dim of dst
	// (transposes, permutations): a shared-memory tile spans both.
	ClassTile
	// ClassBroadcast: src has stride-0 dims (but is not a single element):
	// src is read once per tile.
	ClassBroadcast
	// ClassFill: src is a single element broadcast over all of dst.
	ClassFill
	// ClassBoxTile: a transposition the tiled kernel cannot vectorise
	// (short or odd fast dims, odd itemsizes, strided or reversed fast dims,
	// short runs contiguous in both views): a box of several dims on each
	// side is staged in shared memory so that both views are accessed in
	// long runs (see PlanCopy).
	ClassBoxTile
	// ClassGather: every element in dst's order, each thread taking
	// elements by their flat dst index (all canonical dims unravelled from
	// it) and reading them wherever src has them. A warp writes one stretch
	// of dst, whole 128-byte lines of a dense dst whatever its rows'
	// lengths, and reads src scattered: for copies whose writes cost more
	// than their reads (a dst across a peer link). Planned only on request
	// (PlanOptions.Gather).
	ClassGather
	numClasses
)

var classNames = [numClasses]string{"none", "memcpy", "elem", "tile", "bcast", "fill", "btile", "gather"}

// String returns the short name used in signature strings and kernel names.
func (c Class) String() string {
	if c < numClasses {
		return classNames[c]
	}
	return "class(" + strconv.Itoa(int(c)) + ")"
}

// ParseClass is the inverse of Class.String.
func ParseClass(s string) (Class, error) {
	for i, n := range classNames {
		if n == s {
			return Class(i), nil
		}
	}
	return 0, fmt.Errorf("%w: unknown class %q (want one of %s)", ErrSignature, s, strings.Join(classNames[:], ", "))
}

// ErrSignature reports a malformed signature or signature string.
var ErrSignature = errors.New("layout: bad signature")

// MaxVectorBytes is the widest access a kernel makes per thread and per
// vector: 16 bytes (one LDG.128/STG.128).
const MaxVectorBytes = 16

// Signature is what a copy kernel is specialised on at generation time. Two
// layout pairs that differ only in extents, strides and offsets map to the
// same Signature, so one compiled kernel serves them all: extents, strides and
// offsets travel as kernel arguments (see Plan).
//
// Signature is a comparable value (usable as a map key) and has a stable
// string form, e.g. "tile:nd=3,fast=0,item=4,vec=4,idx=32", that ParseSignature
// reads back.
type Signature struct {
	// Class selects the kernel template.
	Class Class
	// NDim is the number of dims of the canonical form (after dropping
	// extent-1 dims and merging); 0 only for ClassNone.
	NDim uint8
	// Fast is, for ClassTile, the canonical dim whose src stride is 1 (src's
	// fastest dim). dst's fastest dim is always NDim-1. 0 for other classes.
	Fast uint8
	// Itemsize is the size in bytes of the element the kernel moves, after
	// widening or splitting: 1..16 (odd sizes such as 3, 6 or 12 are opaque
	// bytes).
	Itemsize uint8
	// Vec is the number of elements per vector access along the fastest
	// dim(s): a power of two with Vec·Itemsize ≤ 16. 1 means scalar accesses.
	// PlanCopy's doc lists what a kernel may assume when Vec > 1 (which dims
	// are vectorised, divisibility of extents and strides, alignment).
	Vec uint8
	// Index64 selects 64-bit index arithmetic; false when every offset and the
	// volume fit in int32 (64-bit division is slow on GPUs).
	Index64 bool
}

// IndexBits returns 32 or 64, the width of the kernel's index arithmetic.
func (s Signature) IndexBits() int {
	if s.Index64 {
		return 64
	}
	return 32
}

// String returns the stable text form "class:nd=N[,fast=F],item=I,vec=V,idx=32|64".
func (s Signature) String() string {
	var b strings.Builder
	b.WriteString(s.Class.String())
	b.WriteString(":nd=")
	b.WriteString(strconv.Itoa(int(s.NDim)))
	if s.Class == ClassTile {
		b.WriteString(",fast=")
		b.WriteString(strconv.Itoa(int(s.Fast)))
	}
	b.WriteString(",item=")
	b.WriteString(strconv.Itoa(int(s.Itemsize)))
	b.WriteString(",vec=")
	b.WriteString(strconv.Itoa(int(s.Vec)))
	b.WriteString(",idx=")
	b.WriteString(strconv.Itoa(s.IndexBits()))
	return b.String()
}

// Validate reports, as an ErrSignature error, a signature no kernel can be
// generated for.
func (s Signature) Validate() error {
	switch {
	case s.Class >= numClasses:
		return fmt.Errorf("%w: class %d", ErrSignature, s.Class)
	case s.Class == ClassNone:
		return nil
	case s.NDim == 0:
		return fmt.Errorf("%w: nd=0 for class %v", ErrSignature, s.Class)
	case s.Class == ClassTile && s.NDim < 2:
		return fmt.Errorf("%w: tile needs nd ≥ 2, got nd=%d", ErrSignature, s.NDim)
	case s.Class == ClassTile && s.Fast >= s.NDim-1:
		return fmt.Errorf("%w: tile fast=%d must be below nd-1=%d", ErrSignature, s.Fast, s.NDim-1)
	case s.Class != ClassTile && s.Fast != 0:
		return fmt.Errorf("%w: fast=%d is only for tile", ErrSignature, s.Fast)
	case s.Class == ClassBoxTile && (s.NDim > MaxBoxNDim || s.Vec != 1):
		return fmt.Errorf("%w: btile needs nd ≤ %d and vec=1, got nd=%d vec=%d", ErrSignature, MaxBoxNDim, s.NDim, s.Vec)
	case s.Class == ClassGather && s.Vec != 1:
		return fmt.Errorf("%w: gather needs vec=1, got vec=%d", ErrSignature, s.Vec)
	case s.Itemsize < 1 || s.Itemsize > MaxVectorBytes:
		return fmt.Errorf("%w: item=%d must be in 1..%d", ErrSignature, s.Itemsize, MaxVectorBytes)
	case s.Vec == 0 || s.Vec&(s.Vec-1) != 0 || int(s.Vec)*int(s.Itemsize) > MaxVectorBytes:
		return fmt.Errorf("%w: vec=%d must be a power of two with vec·item ≤ %d (item=%d)", ErrSignature, s.Vec, MaxVectorBytes, s.Itemsize)
	}
	return nil
}

// ParseSignature reads the form written by Signature.String. Keys may come in
// any order; "fast" defaults to 0, "vec" to 1 and "idx" to 32. The result is
// validated.
func ParseSignature(text string) (Signature, error) {
	var s Signature
	cls, rest, ok := strings.Cut(strings.TrimSpace(text), ":")
	if !ok {
		return s, fmt.Errorf("%w: %q has no ':' after the class", ErrSignature, text)
	}
	c, err := ParseClass(cls)
	if err != nil {
		return s, fmt.Errorf("signature %q: %w", text, err)
	}
	s.Class, s.Vec = c, 1
	seen := map[string]bool{}
	for _, kv := range strings.Split(rest, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return s, fmt.Errorf("%w: %q: part %q is not key=value", ErrSignature, text, kv)
		}
		if seen[k] {
			return s, fmt.Errorf("%w: %q: key %q repeated", ErrSignature, text, k)
		}
		seen[k] = true
		n, err := strconv.ParseUint(v, 10, 8)
		if err != nil {
			return s, fmt.Errorf("%w: %q: %s=%q is not a number in 0..255", ErrSignature, text, k, v)
		}
		switch k {
		case "nd":
			s.NDim = uint8(n)
		case "fast":
			s.Fast = uint8(n)
		case "item":
			s.Itemsize = uint8(n)
		case "vec":
			s.Vec = uint8(n)
		case "idx":
			switch n {
			case 32:
			case 64:
				s.Index64 = true
			default:
				return s, fmt.Errorf("%w: %q: idx=%d must be 32 or 64", ErrSignature, text, n)
			}
		default:
			return s, fmt.Errorf("%w: %q: unknown key %q (want nd, fast, item, vec, idx)", ErrSignature, text, k)
		}
	}
	if !seen["nd"] && s.Class != ClassNone {
		return s, fmt.Errorf("%w: %q: nd is required", ErrSignature, text)
	}
	if !seen["item"] && s.Class != ClassNone {
		return s, fmt.Errorf("%w: %q: item is required", ErrSignature, text)
	}
	if err := s.Validate(); err != nil {
		return s, fmt.Errorf("signature %q: %w", text, err)
	}
	return s, nil
}

// Plan is the planner's result: the signature of the kernel to run and the
// run-time arguments it takes. The canonical form has Sig.NDim dims ordered by
// dst stride, slowest first, so dim NDim-1 is dst's fastest; extents and
// strides are counted in kernel elements of Sig.Itemsize bytes.
//
// Offsets follow the pointer convention of this package (see the package
// doc): DstOffset and SrcOffset are the byte distances from the lowest byte
// of each view to the element at canonical index (0, …, 0) (dims whose
// strides were negative in both views are flipped, which moves index 0).
// A kernel is given the views' lowest bytes, not their index-0 pointers.
//
// PlanCopy's doc lists the guarantees of the canonical form (dim order,
// alignment, vector width, index width) that kernels rely on.
//
// A Plan can be reused: PlanCopyInto overwrites it and reuses its slices, so
// planning in a loop allocates nothing once the slices have grown.
type Plan struct {
	Sig        Signature
	Shape      []int64
	DstStrides []int64
	SrcStrides []int64
	// Tile is, for ClassBoxTile, the extent of the box tile along each
	// canonical dim (1 for dims outside the tile); empty otherwise.
	Tile []int64
	// Box is, for ClassBoxTile, the tile's geometry (its runs in each
	// view, shared-memory layout and ragged dims), derived from the fields
	// above once, when the plan is made, for the kernel generator (package
	// gen) to pack; nil otherwise. Its type is internal to stridekit:
	// callers copy it with the plan and need not read it. Like the slices,
	// it is reused by PlanCopyInto (another box tile's plan overwrites it).
	Box       *tilegeom.BoxGeometry
	DstOffset int64
	SrcOffset int64
	// DstSpan and SrcSpan are the bytes from each view's lowest byte to
	// just past its highest (RequiredSizeInBytes): a kernel may read any
	// byte of [src, src+SrcSpan) and writes only bytes of dst's elements.
	DstSpan, SrcSpan int64
	// Volume is the number of kernel elements, the product of Shape.
	Volume int64
	// Bytes is the number of bytes written to dst: Volume·Sig.Itemsize.
	Bytes int64
}

// CloneInto sets q to a copy of p that shares nothing with it: its box
// geometry (for ClassBoxTile) and then its slices lie one after another at
// the start of slab (which must hold p.PlanWords() words). It returns the
// rest of slab, so that a caller that planned in scratch memory keeps the
// plan (and more) in one allocation.
func (p *Plan) CloneInto(q *Plan, slab []int64) []int64 {
	put := func(v []int64) []int64 {
		if len(v) == 0 {
			return nil
		}
		n := copy(slab, v)
		out := slab[:n:n]
		slab = slab[n:]
		return out
	}
	// Field by field, so that no pointer of p's is copied into q.
	*q = Plan{Sig: p.Sig, DstOffset: p.DstOffset, SrcOffset: p.SrcOffset,
		DstSpan: p.DstSpan, SrcSpan: p.SrcSpan, Volume: p.Volume, Bytes: p.Bytes}
	if p.Box != nil {
		q.Box = boxIn((*[boxWords]int64)(slab))
		*q.Box = *p.Box
		slab = slab[boxWords:]
	}
	q.Shape, q.DstStrides = put(p.Shape), put(p.DstStrides)
	q.SrcStrides, q.Tile = put(p.SrcStrides), put(p.Tile)
	return slab
}

// boxWords is the int64 words a box geometry takes in CloneInto's slab.
const boxWords = int((unsafe.Sizeof(tilegeom.BoxGeometry{}) + 7) / 8)

// boxIn returns w's memory as a box geometry: a first copy of a new pair
// keeps its plan's geometry in the slab of its slices rather than in an
// allocation of its own. A BoxGeometry holds no pointers (TestBoxNoPointers),
// so the slab's memory, which the collector does not scan, may hold one.
func boxIn(w *[boxWords]int64) *tilegeom.BoxGeometry {
	return (*tilegeom.BoxGeometry)(unsafe.Pointer(w))
}

// PlanWords returns the int64 words of p's slices and box geometry
// (CloneInto's slab).
func (p *Plan) PlanWords() int {
	n := len(p.Shape) + len(p.DstStrides) + len(p.SrcStrides) + len(p.Tile)
	if p.Box != nil {
		n += boxWords
	}
	return n
}
