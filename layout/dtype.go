package layout

import (
	"fmt"
	"strconv"
	"strings"
)

// DLPack type codes (DLDataTypeCode in dlpack.h, DLPack 1.x). A DType
// carries one of them, so it converts to and from DLPack's DLDataType
// without a table.
const (
	KDLInt               = 0  // signed integer
	KDLUInt              = 1  // unsigned integer
	KDLFloat             = 2  // IEEE floating point
	KDLOpaqueHandle      = 3  // opaque bytes
	KDLBfloat            = 4  // bfloat16
	KDLComplex           = 5  // complex: two floats of bits/2 each
	KDLBool              = 6  // boolean, stored in a byte
	KDLFloat8E3M4        = 7  // fp8 e3m4
	KDLFloat8E4M3        = 8  // fp8 e4m3
	KDLFloat8E4M3B11FNUZ = 9  // fp8 e4m3b11fnuz
	KDLFloat8E4M3FN      = 10 // fp8 e4m3fn (OCP/NVIDIA "E4M3")
	KDLFloat8E4M3FNUZ    = 11 // fp8 e4m3fnuz
	KDLFloat8E5M2        = 12 // fp8 e5m2
	KDLFloat8E5M2FNUZ    = 13 // fp8 e5m2fnuz
	KDLFloat8E8M0FNU     = 14 // fp8 e8m0fnu (MX scale)
	KDLFloat6E2M3FN      = 15 // fp6 e2m3fn
	KDLFloat6E3M2FN      = 16 // fp6 e3m2fn
	KDLFloat4E2M1FN      = 17 // fp4 e2m1fn
	numDLCodes           = 18
	maxDTypeLanes        = 1<<16 - 1
	dlOpaqueBitsPerLane  = 8
)

// DType is an element type: a DLPack type code, the bits of one lane and the
// number of lanes (1 for scalars; float32x4 has 4). It is a small comparable
// value, so it can key maps and be compared with ==. The zero DType is
// invalid (its Itemsize and Bits are 0); get one from the variables below,
// NewDType, Opaque or ParseDType.
//
// Sub-byte types (fp4, fp6) have Bits()·Lanes() not a multiple of 8: their
// Itemsize is 0 and a layout of them is built with PackedLayout, which
// repacks whole groups of elements into whole bytes.
type DType struct {
	code  uint8
	bits  uint8
	lanes uint16
}

// The supported scalar types. The names are those ParseDType accepts.
var (
	Bool       = DType{KDLBool, 8, 1}
	Int8       = DType{KDLInt, 8, 1}
	Int16      = DType{KDLInt, 16, 1}
	Int32      = DType{KDLInt, 32, 1}
	Int64      = DType{KDLInt, 64, 1}
	Uint8      = DType{KDLUInt, 8, 1}
	Uint16     = DType{KDLUInt, 16, 1}
	Uint32     = DType{KDLUInt, 32, 1}
	Uint64     = DType{KDLUInt, 64, 1}
	Float16    = DType{KDLFloat, 16, 1}
	BFloat16   = DType{KDLBfloat, 16, 1}
	Float32    = DType{KDLFloat, 32, 1}
	Float64    = DType{KDLFloat, 64, 1}
	Complex64  = DType{KDLComplex, 64, 1}
	Complex128 = DType{KDLComplex, 128, 1}
	// Float8E4M3 is the OCP fp8 E4M3 type (DLPack's float8_e4m3fn, no
	// infinities), the E4M3 of NVIDIA's Hopper and later.
	Float8E4M3 = DType{KDLFloat8E4M3FN, 8, 1}
	// Float8E5M2 is the OCP fp8 E5M2 type.
	Float8E5M2 = DType{KDLFloat8E5M2, 8, 1}
	// Float6E2M3 is the OCP MX fp6 E2M3 type: 6 bits, packed 4 to 3 bytes.
	Float6E2M3 = DType{KDLFloat6E2M3FN, 6, 1}
	// Float6E3M2 is the OCP MX fp6 E3M2 type: 6 bits, packed 4 to 3 bytes.
	Float6E3M2 = DType{KDLFloat6E3M2FN, 6, 1}
	// Float4E2M1 is the OCP MX fp4 E2M1 type: 4 bits, packed 2 to a byte.
	Float4E2M1 = DType{KDLFloat4E2M1FN, 4, 1}
)

// dtypeInfo gives each DLPack code its name stem and the lane bit widths it
// may have.
var dtypeInfo = [numDLCodes]struct {
	name string
	bits []uint8
}{
	KDLInt:               {"int", []uint8{8, 16, 32, 64}},
	KDLUInt:              {"uint", []uint8{8, 16, 32, 64}},
	KDLFloat:             {"float", []uint8{16, 32, 64}},
	KDLOpaqueHandle:      {"opaque", []uint8{8}},
	KDLBfloat:            {"bfloat", []uint8{16}},
	KDLComplex:           {"complex", []uint8{64, 128}},
	KDLBool:              {"bool", []uint8{8}},
	KDLFloat8E3M4:        {"float8_e3m4", []uint8{8}},
	KDLFloat8E4M3:        {"float8_e4m3", []uint8{8}},
	KDLFloat8E4M3B11FNUZ: {"float8_e4m3b11fnuz", []uint8{8}},
	KDLFloat8E4M3FN:      {"float8_e4m3fn", []uint8{8}},
	KDLFloat8E4M3FNUZ:    {"float8_e4m3fnuz", []uint8{8}},
	KDLFloat8E5M2:        {"float8_e5m2", []uint8{8}},
	KDLFloat8E5M2FNUZ:    {"float8_e5m2fnuz", []uint8{8}},
	KDLFloat8E8M0FNU:     {"float8_e8m0fnu", []uint8{8}},
	KDLFloat6E2M3FN:      {"float6_e2m3fn", []uint8{6}},
	KDLFloat6E3M2FN:      {"float6_e3m2fn", []uint8{6}},
	KDLFloat4E2M1FN:      {"float4_e2m1fn", []uint8{4}},
}

// NewDType returns the DType of a DLPack (code, bits, lanes) triple, checking
// that DLPack defines it: a known code, a bit width that code allows and 1 to
// 65535 lanes. Opaque types (code 3) with a whole number of bytes are
// normalised to Opaque(bits·lanes/8), i.e. bits 8 and one lane per byte. Any
// other triple is an ErrDType error.
func NewDType(code uint8, bits, lanes int) (DType, error) {
	if int(code) >= numDLCodes {
		return DType{}, fmt.Errorf("%w: unknown DLPack type code %d", ErrDType, code)
	}
	if lanes < 1 || lanes > maxDTypeLanes {
		return DType{}, fmt.Errorf("%w: lanes %d out of range [1,%d]", ErrDType, lanes, maxDTypeLanes)
	}
	if code == KDLOpaqueHandle {
		if bits <= 0 || bits > 255 || bits%8 != 0 {
			return DType{}, fmt.Errorf("%w: opaque type with %d bits: not a whole number of bytes", ErrDType, bits)
		}
		return Opaque(bits / 8 * lanes)
	}
	info := dtypeInfo[code]
	for _, b := range info.bits {
		if int(b) == bits {
			return DType{code, b, uint16(lanes)}, nil
		}
	}
	return DType{}, fmt.Errorf("%w: type code %d (%s) with %d bits: allowed bits are %v", ErrDType, code, info.name, bits, info.bits)
}

// Opaque returns the opaque type of nbytes bytes (1 to 65535), for items the
// copier moves without knowing what they hold (structs, packed records). In
// DLPack terms it is code 3 with 8 bits and nbytes lanes.
func Opaque(nbytes int) (DType, error) {
	if nbytes < 1 || nbytes > maxDTypeLanes {
		return DType{}, fmt.Errorf("%w: opaque size %d bytes out of range [1,%d]", ErrDType, nbytes, maxDTypeLanes)
	}
	return DType{KDLOpaqueHandle, dlOpaqueBitsPerLane, uint16(nbytes)}, nil
}

// Code returns the DLPack type code (DLDataTypeCode).
func (d DType) Code() uint8 { return d.code }

// Bits returns the bits of one lane (DLDataType.bits).
func (d DType) Bits() int { return int(d.bits) }

// Lanes returns the number of lanes (DLDataType.lanes); 1 for scalars.
func (d DType) Lanes() int { return int(d.lanes) }

// TotalBits returns Bits()·Lanes(), the storage of one element in bits.
func (d DType) TotalBits() int { return int(d.bits) * int(d.lanes) }

// IsValid reports whether d is a DType this package defines (the zero DType
// is not).
func (d DType) IsValid() bool { return d.bits != 0 && d.lanes != 0 }

// Itemsize returns the size of one element in bytes, or 0 when an element is
// not a whole number of bytes (fp4, fp6: see PackedLayout) or d is invalid.
func (d DType) Itemsize() int {
	t := d.TotalBits()
	if t%8 != 0 {
		return 0
	}
	return t / 8
}

// IsSubByte reports whether elements of d are not a whole number of bytes,
// so that layouts of d must be packed (PackedLayout).
func (d DType) IsSubByte() bool { return d.IsValid() && d.TotalBits()%8 != 0 }

// Name returns the canonical name: "float32", "bfloat16", "float8_e4m3fn",
// "float4_e2m1fn", "opaque12" for Opaque(12), with "x4" appended for 4 lanes
// ("float32x4"). ParseDType accepts every name Name returns.
func (d DType) Name() string {
	if !d.IsValid() || int(d.code) >= numDLCodes {
		return "invalid"
	}
	switch d.code {
	case KDLOpaqueHandle:
		return "opaque" + strconv.Itoa(int(d.lanes))
	case KDLBool:
		return lanesSuffix("bool", d.lanes)
	}
	name := dtypeInfo[d.code].name
	if len(dtypeInfo[d.code].bits) > 1 || d.code == KDLBfloat {
		name += strconv.Itoa(int(d.bits))
	}
	return lanesSuffix(name, d.lanes)
}

func lanesSuffix(name string, lanes uint16) string {
	if lanes == 1 {
		return name
	}
	return name + "x" + strconv.Itoa(int(lanes))
}

// String returns Name().
func (d DType) String() string { return d.Name() }

// dtypeAliases maps common alternative spellings to canonical names.
var dtypeAliases = map[string]string{
	"half": "float16", "f16": "float16", "fp16": "float16",
	"float": "float32", "f32": "float32", "fp32": "float32",
	"double": "float64", "f64": "float64", "fp64": "float64",
	"bf16": "bfloat16",
	"c64":  "complex64", "c128": "complex128",
	"fp8_e4m3": "float8_e4m3fn", "e4m3": "float8_e4m3fn",
	"fp8_e5m2": "float8_e5m2", "e5m2": "float8_e5m2",
	"fp6_e2m3": "float6_e2m3fn", "float6_e2m3": "float6_e2m3fn",
	"fp6_e3m2": "float6_e3m2fn", "float6_e3m2": "float6_e3m2fn",
	"fp4": "float4_e2m1fn", "fp4_e2m1": "float4_e2m1fn", "float4_e2m1": "float4_e2m1fn",
	"i8": "int8", "i16": "int16", "i32": "int32", "i64": "int64",
	"u8": "uint8", "u16": "uint16", "u32": "uint32", "u64": "uint64",
}

// ParseDType returns the DType named name: a canonical name as Name returns
// it ("int32", "bfloat16", "float8_e5m2", "opaque24", "float32x4"), a common
// alias ("half", "float", "double", "bf16", "fp8_e4m3", "fp4", "i32", …) or
// "xN" for opaque items of N bytes ("x3" is "opaque3"). Matching ignores
// case. An unknown name is an ErrDType error. It is the one dtype parser of
// the commands (stridekit, stridebench), so they accept the same spellings.
func ParseDType(name string) (DType, error) {
	s := strings.ToLower(strings.TrimSpace(name))
	if a, ok := dtypeAliases[s]; ok {
		s = a
	}
	if rest, ok := strings.CutPrefix(s, "x"); ok && rest != "" && strings.Trim(rest, "0123456789") == "" {
		n, err := strconv.Atoi(rest)
		if err != nil {
			return DType{}, fmt.Errorf("%w: dtype %q: opaque size out of range [1,%d]", ErrDType, name, maxDTypeLanes)
		}
		return Opaque(n)
	}
	if rest, ok := strings.CutPrefix(s, "opaque"); ok {
		n, err := strconv.Atoi(rest)
		if err != nil {
			return DType{}, fmt.Errorf("%w: unknown dtype %q (opaque needs a byte count, e.g. opaque16)", ErrDType, name)
		}
		return Opaque(n)
	}
	if d, ok := scalarByName(s); ok {
		return d, nil
	}
	// A lanes suffix: "float32x4".
	if i := strings.LastIndexByte(s, 'x'); i > 0 {
		base := s[:i]
		if a, ok := dtypeAliases[base]; ok {
			base = a
		}
		if d, ok := scalarByName(base); ok {
			n, err := strconv.Atoi(s[i+1:])
			if err == nil && (n < 1 || n > maxDTypeLanes) {
				return DType{}, fmt.Errorf("%w: dtype %q: lanes %d out of range [1,%d]", ErrDType, name, n, maxDTypeLanes)
			}
			if err == nil {
				d.lanes = uint16(n)
				return d, nil
			}
		}
	}
	return DType{}, fmt.Errorf("%w: unknown dtype %q", ErrDType, name)
}

// scalarByName finds the one-lane DType whose canonical name is s.
func scalarByName(s string) (DType, bool) {
	for code, info := range dtypeInfo {
		if code == KDLOpaqueHandle {
			continue
		}
		for _, b := range info.bits {
			if d := (DType{uint8(code), b, 1}); d.Name() == s {
				return d, true
			}
		}
	}
	return DType{}, false
}

// Layout returns the layout of elements of d with the given shape and
// strides in elements (nil = dense C order). For whole-byte types it is
// New(shape, strides, d.Itemsize()); for sub-byte types it is
// PackedLayout(d, shape, strides).
func (d DType) Layout(shape, strides []int64) (Layout, error) {
	if !d.IsValid() {
		return Layout{}, fmt.Errorf("%w: invalid (zero) dtype", ErrDType)
	}
	if d.IsSubByte() {
		return PackedLayout(d, shape, strides)
	}
	return New(shape, strides, d.Itemsize())
}

// PackGroup returns how many elements of d make the smallest whole number of
// bytes, and that number of bytes: (1, itemsize) for whole-byte types, (2, 1)
// for 4-bit types, (4, 3) for 6-bit types.
func (d DType) PackGroup() (elems, nbytes int) {
	t := d.TotalBits()
	if t == 0 {
		return 0, 0
	}
	g := 8 / gcd(t, 8)
	return g, g * t / 8
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// PackedLayout returns the whole-byte layout that addresses packed elements
// of d: shape and strides (nil = dense C) count elements of d, stored back to
// back with no padding, element 0 in the low bits of the first byte. The
// copier moves bytes, so a packed layout is copyable when it can be viewed
// as a layout of whole groups of G elements (G = 2 for 4-bit types, one byte;
// G = 4 for 6-bit types, three bytes; see PackGroup): one dim, the packing
// dim, must have stride 1 (the last such dim with extent > 1 is used) and an
// extent divisible by G, and every other dim with extent > 1 must have a
// stride divisible by G. The result has itemsize = the group's bytes, the
// packing dim's extent divided by G and the other strides divided by G.
//
// When the layout does not allow it, PackedLayout returns an ErrDType error
// that says why (e.g. "float4_e2m1fn: extent 7 of packing dim 1 is not a
// multiple of 2: elements would straddle bytes"); such a tensor must be
// unpacked (padded to one element per byte) first. For whole-byte types,
// PackedLayout is New(shape, strides, d.Itemsize()).
func PackedLayout(d DType, shape, strides []int64) (Layout, error) {
	if !d.IsValid() {
		return Layout{}, fmt.Errorf("%w: invalid (zero) dtype", ErrDType)
	}
	if !d.IsSubByte() {
		return New(shape, strides, d.Itemsize())
	}
	// Check shape and strides as New would, counting items of 1 "element".
	el, err := New(shape, strides, 1)
	if err != nil {
		return Layout{}, err
	}
	g, nb := d.PackGroup()
	G := int64(g)
	unit := "bytes"
	if nb > 1 {
		unit = strconv.Itoa(nb) + "-byte groups"
	}
	n := el.NDim()
	if el.Volume() == 0 {
		return New(el.shape, make([]int64, n), nb)
	}
	p := -1
	for k := n - 1; k >= 0; k-- {
		if el.shape[k] > 1 && el.strides[k] == 1 {
			p = k
			break
		}
	}
	if p < 0 {
		if el.Volume() == 1 {
			return Layout{}, fmt.Errorf("%w: %v: a single %d-bit element is not a whole number of bytes", ErrDType, d, d.TotalBits())
		}
		return Layout{}, fmt.Errorf("%w: %v layout %v has no dim with stride 1 to pack: elements would straddle %s", ErrDType, d, el.shapeStrides(), unit)
	}
	if el.shape[p]%G != 0 {
		return Layout{}, fmt.Errorf("%w: %v: extent %d of packing dim %d is not a multiple of %d: elements would straddle %s", ErrDType, d, el.shape[p], p, G, unit)
	}
	sh, st := el.Shape(), el.Strides()
	for k := range n {
		if k == p {
			sh[k] /= G
			continue
		}
		if st[k]%G != 0 && sh[k] > 1 {
			return Layout{}, fmt.Errorf("%w: %v: stride %d of dim %d is not a multiple of %d: its elements would start inside %s", ErrDType, d, st[k], k, G, unit)
		}
		st[k] /= G // exact, or unused (extent 1)
	}
	return build(sh, st, nb)
}

// shapeStrides prints shape:strides without the itemsize.
func (l Layout) shapeStrides() string {
	s := l.String()
	return s[:strings.LastIndexByte(s, 'x')]
}
