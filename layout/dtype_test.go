package layout

import (
	"errors"
	"strings"
	"testing"
)

func TestDTypeTable(t *testing.T) {
	// Codes, bits and lanes as DLPack's dlpack.h defines them.
	cases := []struct {
		d                  DType
		name               string
		code, bits, itemsz int
	}{
		{Bool, "bool", 6, 8, 1},
		{Int8, "int8", 0, 8, 1},
		{Int16, "int16", 0, 16, 2},
		{Int32, "int32", 0, 32, 4},
		{Int64, "int64", 0, 64, 8},
		{Uint8, "uint8", 1, 8, 1},
		{Uint16, "uint16", 1, 16, 2},
		{Uint32, "uint32", 1, 32, 4},
		{Uint64, "uint64", 1, 64, 8},
		{Float16, "float16", 2, 16, 2},
		{BFloat16, "bfloat16", 4, 16, 2},
		{Float32, "float32", 2, 32, 4},
		{Float64, "float64", 2, 64, 8},
		{Complex64, "complex64", 5, 64, 8},
		{Complex128, "complex128", 5, 128, 16},
		{Float8E4M3, "float8_e4m3fn", 10, 8, 1},
		{Float8E5M2, "float8_e5m2", 12, 8, 1},
		{Float6E2M3, "float6_e2m3fn", 15, 6, 0},
		{Float6E3M2, "float6_e3m2fn", 16, 6, 0},
		{Float4E2M1, "float4_e2m1fn", 17, 4, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := c.d
			if d.Name() != c.name || d.String() != c.name || int(d.Code()) != c.code || d.Bits() != c.bits || d.Lanes() != 1 || d.Itemsize() != c.itemsz {
				t.Fatalf("%v: name %q code %d bits %d lanes %d itemsize %d", d, d.Name(), d.Code(), d.Bits(), d.Lanes(), d.Itemsize())
			}
			if d.IsSubByte() != (c.itemsz == 0) || !d.IsValid() {
				t.Fatalf("%v: IsSubByte %v IsValid %v", d, d.IsSubByte(), d.IsValid())
			}
			p, err := ParseDType(c.name)
			if err != nil || p != d {
				t.Fatalf("ParseDType(%q) = %v, %v", c.name, p, err)
			}
			n, err := NewDType(uint8(c.code), c.bits, 1)
			if err != nil || n != d {
				t.Fatalf("NewDType(%d, %d, 1) = %v, %v", c.code, c.bits, n, err)
			}
		})
	}
}

func TestDTypeCodesMatchDLPack(t *testing.T) {
	// dlpack.h, DLDataTypeCode.
	want := []int{KDLInt, KDLUInt, KDLFloat, KDLOpaqueHandle, KDLBfloat, KDLComplex, KDLBool,
		KDLFloat8E3M4, KDLFloat8E4M3, KDLFloat8E4M3B11FNUZ, KDLFloat8E4M3FN, KDLFloat8E4M3FNUZ,
		KDLFloat8E5M2, KDLFloat8E5M2FNUZ, KDLFloat8E8M0FNU, KDLFloat6E2M3FN, KDLFloat6E3M2FN, KDLFloat4E2M1FN}
	for i, c := range want {
		if c != i {
			t.Errorf("code %d is %d", i, c)
		}
	}
	// Every fp8 variant round-trips through its name.
	for code := KDLFloat8E3M4; code <= KDLFloat8E8M0FNU; code++ {
		d, err := NewDType(uint8(code), 8, 1)
		if err != nil {
			t.Fatal(err)
		}
		p, err := ParseDType(d.Name())
		if err != nil || p != d || !strings.HasPrefix(d.Name(), "float8_") {
			t.Errorf("code %d: %q parses to %v, %v", code, d.Name(), p, err)
		}
	}
}

func TestDTypeLanesAndOpaque(t *testing.T) {
	v, err := NewDType(KDLFloat, 32, 4)
	if err != nil || v.Name() != "float32x4" || v.Itemsize() != 16 || v.Lanes() != 4 || v.TotalBits() != 128 {
		t.Fatalf("float32x4: %v %v", v, err)
	}
	if p, err := ParseDType("float32x4"); err != nil || p != v {
		t.Errorf("ParseDType(float32x4) = %v, %v", p, err)
	}
	if p, err := ParseDType("FP16x2"); err != nil || p.Name() != "float16x2" {
		t.Errorf("ParseDType(FP16x2) = %v, %v", p, err)
	}
	// Two fp4 lanes make one byte (PyTorch's float4_e2m1fn_x2).
	x2, err := NewDType(KDLFloat4E2M1FN, 4, 2)
	if err != nil || x2.IsSubByte() || x2.Itemsize() != 1 || x2.Name() != "float4_e2m1fnx2" {
		t.Errorf("fp4 x2: %v itemsize %d, %v", x2, x2.Itemsize(), err)
	}
	o, err := Opaque(12)
	if err != nil || o.Name() != "opaque12" || o.Itemsize() != 12 || o.Code() != KDLOpaqueHandle {
		t.Fatalf("Opaque(12) = %v, %v", o, err)
	}
	if p, err := ParseDType("opaque12"); err != nil || p != o {
		t.Errorf("ParseDType(opaque12) = %v, %v", p, err)
	}
	// A DLPack opaque handle of 64 bits is normalised to 8 bytes.
	if h, err := NewDType(KDLOpaqueHandle, 64, 1); err != nil || h.Itemsize() != 8 || h.Name() != "opaque8" {
		t.Errorf("NewDType(opaque, 64, 1) = %v, %v", h, err)
	}
	big, err := Opaque(65535)
	if err != nil || big.Itemsize() != 65535 {
		t.Errorf("Opaque(65535) = %v, %v", big, err)
	}
	l, err := big.Layout([]int64{2, 3}, nil)
	if err != nil || l.Itemsize() != 65535 || l.RequiredSizeInBytes() != 6*65535 {
		t.Errorf("opaque layout: %v, %v", l, err)
	}
	if (DType{}).IsValid() || (DType{}).Name() != "invalid" || (DType{}).Itemsize() != 0 {
		t.Errorf("zero DType looks valid")
	}
}

func TestDTypeErrors(t *testing.T) {
	for _, c := range []struct {
		name string
		f    func() error
		msg  string
	}{
		{"unknown code", func() error { _, err := NewDType(18, 8, 1); return err }, "unknown DLPack type code 18"},
		{"bad bits for int", func() error { _, err := NewDType(KDLInt, 12, 1); return err }, "12 bits"},
		{"fp4 with 8 bits is unspecified", func() error { _, err := NewDType(KDLFloat4E2M1FN, 8, 1); return err }, "8 bits"},
		{"zero lanes", func() error { _, err := NewDType(KDLFloat, 32, 0); return err }, "lanes 0"},
		{"too many lanes", func() error { _, err := NewDType(KDLFloat, 32, 1<<16); return err }, "lanes 65536"},
		{"opaque bits not bytes", func() error { _, err := NewDType(KDLOpaqueHandle, 12, 1); return err }, "12 bits"},
		{"opaque 0 bytes", func() error { _, err := Opaque(0); return err }, "opaque size 0"},
		{"opaque too big", func() error { _, err := Opaque(1 << 16); return err }, "65536"},
		{"unknown name", func() error { _, err := ParseDType("float7"); return err }, `"float7"`},
		{"opaque without size", func() error { _, err := ParseDType("opaque"); return err }, "byte count"},
		{"zero lanes by name", func() error { _, err := ParseDType("int8x0"); return err }, "lanes 0"},
		{"zero dtype layout", func() error { _, err := DType{}.Layout([]int64{2}, nil); return err }, "invalid"},
		{"zero dtype packed", func() error { _, err := PackedLayout(DType{}, []int64{2}, nil); return err }, "invalid"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := c.f()
			if !errors.Is(err, ErrDType) || !strings.Contains(err.Error(), c.msg) {
				t.Fatalf("%v, want ErrDType with %q", err, c.msg)
			}
		})
	}
	if p, err := ParseDType(" Half "); err != nil || p != Float16 {
		t.Errorf("ParseDType(\" Half \") = %v, %v (aliases, case and spaces)", p, err)
	}
}

func TestPackGroup(t *testing.T) {
	for _, c := range []struct {
		d     DType
		g, nb int
	}{{Float4E2M1, 2, 1}, {Float6E2M3, 4, 3}, {Float32, 1, 4}, {Bool, 1, 1}} {
		if g, nb := c.d.PackGroup(); g != c.g || nb != c.nb {
			t.Errorf("%v.PackGroup() = %d, %d; want %d, %d", c.d, g, nb, c.g, c.nb)
		}
	}
}

func TestPackedLayout(t *testing.T) {
	cases := []struct {
		name           string
		d              DType
		shape, strides []int64
		sh, st         []int64
		itemsize       int
		msg            string // error text, "" for success
	}{
		{"fp4 dense C: 2 per byte", Float4E2M1, []int64{3, 8}, nil, []int64{3, 4}, []int64{4, 1}, 1, ""},
		{"fp6 dense C: 4 per 3 bytes", Float6E2M3, []int64{2, 8}, nil, []int64{2, 2}, []int64{2, 1}, 3, ""},
		{"fp4 sliced rows with an even row stride", Float4E2M1, []int64{3, 4}, []int64{10, 1}, []int64{3, 2}, []int64{5, 1}, 1, ""},
		{"fp4 F order packs the first dim", Float4E2M1, []int64{4, 3}, []int64{1, 4}, []int64{2, 3}, []int64{1, 2}, 1, ""},
		{"fp4 reversed rows", Float4E2M1, []int64{2, 4}, []int64{-4, 1}, []int64{2, 2}, []int64{-2, 1}, 1, ""},
		{"fp4 empty", Float4E2M1, []int64{0, 3}, nil, []int64{0, 3}, []int64{0, 0}, 1, ""},
		{"fp4 broadcast rows (stride 0) are fine", Float4E2M1, []int64{3, 4}, []int64{0, 1}, []int64{3, 2}, []int64{0, 1}, 1, ""},
		{"whole-byte type is New", Float32, []int64{2, 3}, []int64{1, 2}, []int64{2, 3}, []int64{1, 2}, 4, ""},
		{"fp4 odd innermost extent", Float4E2M1, []int64{2, 7}, nil, nil, nil, 0, "extent 7 of packing dim 1 is not a multiple of 2: elements would straddle bytes"},
		{"fp6 extent 6", Float6E3M2, []int64{6}, nil, nil, nil, 0, "extent 6 of packing dim 0 is not a multiple of 4: elements would straddle 3-byte groups"},
		{"fp4 odd row stride", Float4E2M1, []int64{3, 4}, []int64{5, 1}, nil, nil, 0, "stride 5 of dim 0 is not a multiple of 2"},
		{"fp4 no stride-1 dim", Float4E2M1, []int64{3, 4}, []int64{8, 2}, nil, nil, 0, "no dim with stride 1"},
		{"fp4 single element", Float4E2M1, []int64{1, 1}, nil, nil, nil, 0, "single 4-bit element"},
		{"fp4 0-dim", Float4E2M1, nil, nil, nil, nil, 0, "single 4-bit element"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := PackedLayout(c.d, c.shape, c.strides)
			if c.msg != "" {
				if !errors.Is(err, ErrDType) || !strings.Contains(err.Error(), c.msg) {
					t.Fatalf("PackedLayout(%v, %v, %v) = %v, %v; want ErrDType with %q", c.d, c.shape, c.strides, got, err, c.msg)
				}
				return
			}
			if err != nil || !same(got, c.sh, c.st, c.itemsize) {
				t.Fatalf("PackedLayout(%v, %v, %v) = %v, %v; want (%v):(%v)x%d", c.d, c.shape, c.strides, got, err, c.sh, c.st, c.itemsize)
			}
			via, err := c.d.Layout(c.shape, c.strides)
			if err != nil || !same(via, got.shape, got.strides, got.itemsize) {
				t.Fatalf("DType.Layout = %v, %v; PackedLayout = %v", via, err, got)
			}
		})
	}
	// Bad shapes report the layout sentinels, not ErrDType.
	if _, err := PackedLayout(Float4E2M1, []int64{-2}, nil); !errors.Is(err, ErrShape) {
		t.Errorf("negative extent: %v", err)
	}
	if _, err := PackedLayout(Float4E2M1, []int64{2}, []int64{1, 1}); !errors.Is(err, ErrStride) {
		t.Errorf("wrong stride count: %v", err)
	}
}

// TestPackedLayoutBits checks the packed view bit by bit: every element's
// bits land in exactly the byte group (and the place in it) the packed
// element offsets say.
func TestPackedLayoutBits(t *testing.T) {
	for _, c := range []struct {
		d              DType
		shape, strides []int64
	}{
		{Float4E2M1, []int64{3, 6}, []int64{10, 1}},
		{Float6E2M3, []int64{2, 3, 8}, []int64{8, 16, 1}},
		{Float4E2M1, []int64{4, 2}, []int64{1, -4}},
	} {
		el := mk(t, c.shape, c.strides, 1)
		p, err := PackedLayout(c.d, c.shape, c.strides)
		if err != nil {
			t.Fatal(err)
		}
		g, nb := c.d.PackGroup()
		bits := int64(c.d.TotalBits())
		// Element e at element offset o has bits [o·bits, (o+1)·bits); the
		// packed group holding it starts at byte floor(o/g)·nb.
		groups := map[int64]int{}
		forEachIndex(p.shape, func(idx []int64) { groups[naiveOffset(p, idx)*int64(nb)]++ })
		forEachIndex(el.shape, func(idx []int64) {
			o := naiveOffset(el, idx)
			gstart := floorDiv(o, int64(g)) * int64(nb)
			if groups[gstart] != 1 {
				t.Fatalf("%v %v: element %v at bit %d falls in byte group %d, which the packed layout %v has %d times", c.d, el, idx, o*bits, gstart, p, groups[gstart])
			}
		})
		if int64(len(groups))*int64(g) != el.Volume() {
			t.Fatalf("%v: %d groups for %d elements", p, len(groups), el.Volume())
		}
	}
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}
