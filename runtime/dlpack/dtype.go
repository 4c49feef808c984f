package dlpack

import (
	"errors"
	"fmt"

	"github.com/stridekit/stridekit/layout"
)

// DType returns the stridekit dtype of t. The type code, bits and lanes must
// name a scalar type: a code DLPack 1.3 defines (layout.KDLInt …
// layout.KDLFloat4E2M1FN), bits that code allows (float: 16, 32, 64; fp4: 4;
// …) and lanes = 1. An opaque handle (code 3) of bits 8·n is
// layout.Opaque(n). Anything else is an ErrDType error naming the dtype; for
// an unknown code or bad bits it also wraps layout.ErrDType.
//
// Vector types (lanes > 1) are refused: DLPack consumers and producers in
// practice exchange scalars, and a copy of float32x4 elements is a copy of
// float32 elements with one more dim, which the producer should say.
func (t DLDataType) DType() (layout.DType, error) {
	if t.Lanes != 1 {
		name := "?"
		if d, err := layout.NewDType(t.Code, int(t.Bits), int(t.Lanes)); err == nil {
			name = d.Name()
		}
		return layout.DType{}, fmt.Errorf("%w: dtype %s (code %d, bits %d, lanes %d): lanes must be 1",
			ErrDType, name, t.Code, t.Bits, t.Lanes)
	}
	d, err := layout.NewDType(t.Code, int(t.Bits), 1)
	if err != nil {
		return layout.DType{}, fmt.Errorf("%w: dtype (code %d, bits %d, lanes %d): %w", ErrDType, t.Code, t.Bits, t.Lanes, err)
	}
	return d, nil
}

// DataTypeOf returns the DLDataType of d: its code and bits with one lane.
// An opaque dtype of n bytes becomes code 3 with 8·n bits, which DLDataType
// can hold for n ≤ 31. An invalid dtype, a vector dtype (Lanes() > 1) or a
// larger opaque one is an ErrDType error.
func DataTypeOf(d layout.DType) (DLDataType, error) {
	if !d.IsValid() {
		return DLDataType{}, fmt.Errorf("%w: invalid (zero) dtype", ErrDType)
	}
	if d.Code() == layout.KDLOpaqueHandle {
		n := d.Itemsize()
		if n > 255/8 {
			return DLDataType{}, fmt.Errorf("%w: dtype %v: an opaque type of %d bytes does not fit DLDataType's 8-bit bits field with one lane",
				ErrDType, d, n)
		}
		return DLDataType{Code: layout.KDLOpaqueHandle, Bits: uint8(8 * n), Lanes: 1}, nil
	}
	if d.Lanes() != 1 {
		return DLDataType{}, fmt.Errorf("%w: dtype %v has %d lanes: only scalar dtypes (1 lane) are exchanged", ErrDType, d, d.Lanes())
	}
	return DLDataType{Code: d.Code(), Bits: uint8(d.Bits()), Lanes: 1}, nil
}

// LayoutOf returns the layout, in whole bytes, of a tensor of dtype d with
// the given shape and strides counted in elements of d (nil strides mean
// dense C order), as DLPack describes tensors.
//
// For whole-byte dtypes it is layout.New(shape, strides, d.Itemsize()). For
// sub-byte dtypes (fp4, fp6) it depends on FlagIsSubbyteTypePadded in flags:
// when set, every element occupies one byte and the layout has itemsize 1
// and the same shape and strides; when clear (DLPack's default), elements
// are packed and the layout is layout.PackedLayout(d, shape, strides), whose
// items are whole groups of elements (two fp4 in a byte, four fp6 in three
// bytes). A packed tensor whose elements cannot be grouped so (an odd
// innermost fp4 extent, a stride that starts a row inside a byte) is an
// ErrSubByte error saying why; it also wraps layout.ErrDType. The flag is
// ignored for whole-byte dtypes.
//
// A layout whose offsets or size overflow int64 is an ErrOverflow error
// that also wraps layout.ErrOverflow; other errors are the layout package's
// (layout.ErrShape for a negative extent, layout.ErrStride for a stride
// count that differs from the dims).
func LayoutOf(shape, strides []int64, d layout.DType, flags Flags) (layout.Layout, error) {
	l, err := layoutOf(shape, strides, d, flags)
	if err != nil {
		return layout.Layout{}, overflowError(err, d)
	}
	return l, nil
}

// overflowError wraps a layout.ErrOverflow error of a tensor of dtype d in
// ErrOverflow, and returns other errors as they are.
func overflowError(err error, d layout.DType) error {
	if errors.Is(err, layout.ErrOverflow) {
		return fmt.Errorf("%w: %v tensor: %w", ErrOverflow, d, err)
	}
	return err
}

func layoutOf(shape, strides []int64, d layout.DType, flags Flags) (layout.Layout, error) {
	if !d.IsValid() {
		return layout.Layout{}, fmt.Errorf("%w: invalid (zero) dtype", ErrDType)
	}
	if !d.IsSubByte() {
		return layout.New(shape, strides, d.Itemsize())
	}
	if flags&FlagIsSubbyteTypePadded != 0 {
		return layout.New(shape, strides, 1)
	}
	// PackedLayout reports errors of shape and strides themselves as such
	// (layout.New's), not as packing failures (ErrDType).
	l, err := layout.PackedLayout(d, shape, strides)
	if errors.Is(err, layout.ErrDType) {
		return layout.Layout{}, fmt.Errorf("%w: %w", ErrSubByte, err)
	}
	return l, err
}
