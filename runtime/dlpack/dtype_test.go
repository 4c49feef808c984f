package dlpack_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/stridekit/stridekit/layout"
	"github.com/stridekit/stridekit/runtime/dlpack"
)

// mustOpaque returns the opaque dtype of n bytes.
func mustOpaque(n int) layout.DType {
	d, err := layout.Opaque(n)
	if err != nil {
		panic(err)
	}
	return d
}

// TestDTypeRoundTrip converts every scalar DLDataType of DLPack 1.3 to a
// layout.DType and back.
func TestDTypeRoundTrip(t *testing.T) {
	for _, c := range []struct {
		code uint8
		bits uint8
		want string
	}{
		{layout.KDLInt, 8, "int8"}, {layout.KDLInt, 16, "int16"}, {layout.KDLInt, 32, "int32"}, {layout.KDLInt, 64, "int64"},
		{layout.KDLUInt, 8, "uint8"}, {layout.KDLUInt, 16, "uint16"}, {layout.KDLUInt, 32, "uint32"}, {layout.KDLUInt, 64, "uint64"},
		{layout.KDLFloat, 16, "float16"}, {layout.KDLFloat, 32, "float32"}, {layout.KDLFloat, 64, "float64"},
		{layout.KDLOpaqueHandle, 8, "opaque1"}, {layout.KDLOpaqueHandle, 248, "opaque31"},
		{layout.KDLBfloat, 16, "bfloat16"},
		{layout.KDLComplex, 64, "complex64"}, {layout.KDLComplex, 128, "complex128"},
		{layout.KDLBool, 8, "bool"},
		{layout.KDLFloat8E3M4, 8, "float8_e3m4"},
		{layout.KDLFloat8E4M3, 8, "float8_e4m3"},
		{layout.KDLFloat8E4M3B11FNUZ, 8, "float8_e4m3b11fnuz"},
		{layout.KDLFloat8E4M3FN, 8, "float8_e4m3fn"},
		{layout.KDLFloat8E4M3FNUZ, 8, "float8_e4m3fnuz"},
		{layout.KDLFloat8E5M2, 8, "float8_e5m2"},
		{layout.KDLFloat8E5M2FNUZ, 8, "float8_e5m2fnuz"},
		{layout.KDLFloat8E8M0FNU, 8, "float8_e8m0fnu"},
		{layout.KDLFloat6E2M3FN, 6, "float6_e2m3fn"},
		{layout.KDLFloat6E3M2FN, 6, "float6_e3m2fn"},
		{layout.KDLFloat4E2M1FN, 4, "float4_e2m1fn"},
	} {
		dl := dlpack.DLDataType{Code: c.code, Bits: c.bits, Lanes: 1}
		d, err := dl.DType()
		if err != nil {
			t.Errorf("%+v: %v", dl, err)
			continue
		}
		if d.Name() != c.want {
			t.Errorf("%+v: DType %v, want %s", dl, d, c.want)
		}
		back, err := dlpack.DataTypeOf(d)
		if err != nil || back != dl {
			t.Errorf("DataTypeOf(%v) = %+v, %v; want %+v", d, back, err, dl)
		}
	}
}

func TestDataTypeOfErrors(t *testing.T) {
	vec, err := layout.ParseDType("float32x4")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		d   layout.DType
		msg string
	}{
		{layout.DType{}, "invalid"},
		{vec, "float32x4 has 4 lanes"},
		{mustOpaque(32), "opaque32"},
	} {
		_, err := dlpack.DataTypeOf(c.d)
		if !errors.Is(err, dlpack.ErrDType) || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("DataTypeOf(%v) error %v, want ErrDType naming %q", c.d, err, c.msg)
		}
	}
}

func TestLayoutOf(t *testing.T) {
	for _, c := range []struct {
		name    string
		shape   []int64
		strides []int64
		d       layout.DType
		flags   dlpack.Flags
		want    string
		errs    []error
	}{
		{"f32", []int64{2, 3}, nil, layout.Float32, 0, "(2,3):(3,1)x4", nil},
		{"f32-flag-ignored", []int64{2, 3}, []int64{1, 2}, layout.Float32, dlpack.FlagIsSubbyteTypePadded, "(2,3):(1,2)x4", nil},
		{"fp4-packed", []int64{2, 6}, nil, layout.Float4E2M1, 0, "(2,3):(3,1)x1", nil},
		{"fp4-packed-sliced", []int64{2, 4}, []int64{12, 1}, layout.Float4E2M1, 0, "(2,2):(6,1)x1", nil},
		{"fp4-padded", []int64{2, 5}, []int64{5, 1}, layout.Float4E2M1, dlpack.FlagIsSubbyteTypePadded, "(2,5):(5,1)x1", nil},
		{"fp6-packed", []int64{3, 4}, nil, layout.Float6E3M2, 0, "(3,1):(1,1)x3", nil},
		{"fp6-padded-flipped", []int64{3}, []int64{-1}, layout.Float6E3M2, dlpack.FlagIsSubbyteTypePadded, "(3):(-1)x1", nil},
		{"fp4-odd", []int64{2, 5}, nil, layout.Float4E2M1, 0, "", []error{dlpack.ErrSubByte, layout.ErrDType}},
		{"fp4-single", []int64{1}, nil, layout.Float4E2M1, 0, "", []error{dlpack.ErrSubByte, layout.ErrDType}},
		{"fp4-negative-extent", []int64{-2}, nil, layout.Float4E2M1, 0, "", []error{layout.ErrShape}},
		{"stride-count", []int64{2, 2}, []int64{1}, layout.Float32, 0, "", []error{layout.ErrStride}},
		{"overflow", []int64{1 << 40, 1 << 40}, nil, layout.Float32, 0, "", []error{dlpack.ErrOverflow, layout.ErrOverflow}},
		{"invalid-dtype", []int64{2}, nil, layout.DType{}, 0, "", []error{dlpack.ErrDType}},
	} {
		t.Run(c.name, func(t *testing.T) {
			l, err := dlpack.LayoutOf(c.shape, c.strides, c.d, c.flags)
			if c.errs == nil {
				if err != nil {
					t.Fatal(err)
				}
				if l.String() != c.want {
					t.Errorf("layout %v, want %s", l, c.want)
				}
				return
			}
			if err == nil {
				t.Fatalf("got %v, want an error", l)
			}
			for _, e := range c.errs {
				if !errors.Is(err, e) {
					t.Errorf("error %q is not %v", err, e)
				}
			}
		})
	}
}
