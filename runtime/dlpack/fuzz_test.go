package dlpack_test

import (
	"encoding/binary"
	"errors"
	"slices"
	"testing"

	"github.com/stridekit/stridekit/runtime/dlpack"
)

// sentinels are the errors every Import failure must wrap one of.
var sentinels = []error{dlpack.ErrNilTensor, dlpack.ErrVersion, dlpack.ErrUnsupportedDevice, dlpack.ErrDeviceID,
	dlpack.ErrDType, dlpack.ErrSubByte, dlpack.ErrNDim, dlpack.ErrShape, dlpack.ErrStrides, dlpack.ErrData, dlpack.ErrOverflow}

// FuzzImport imports DLTensors decoded from arbitrary bytes (with shape and
// strides arrays that really hold ndim values): Import must not panic,
// must fail with one of the sentinels, and on success must describe what
// the tensor says.
func FuzzImport(f *testing.F) {
	f.Add([]byte{2, 2, 32, 1, 1, 3, 2, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0})
	f.Add([]byte{17, 4, 1, 2, 2, 3, 1, 8, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0})
	f.Add([]byte{0, 64, 1, 1, 13, 0, 0})
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) < 7 {
			return
		}
		code, bits, lanes, devType, minor, ndim, opts := in[0], in[1], in[2], in[3], in[4], in[5], in[6]
		rest := in[7:]
		word := func() int64 {
			if len(rest) < 8 {
				return 1
			}
			v := int64(binary.LittleEndian.Uint64(rest))
			rest = rest[8:]
			return v
		}
		n := int(ndim % 6)
		shape := make([]int64, n)
		strides := make([]int64, n)
		for i := range n {
			shape[i] = word()
			strides[i] = word()
		}
		x := newTensor(uintptr(word()), dlpack.DLDataType{Code: code % 20, Bits: bits, Lanes: uint16(lanes % 3)}, shape, strides)
		x.t.Device = dlpack.DLDevice{DeviceType: dlpack.DLDeviceType(devType % 20), DeviceID: int32(opts>>5) - 1}
		x.t.ByteOffset = uint64(word())
		if opts&1 != 0 {
			x.t.Strides = nil
		}
		if opts&2 != 0 && n > 0 {
			x.t.Shape = nil
		}
		if opts&4 != 0 {
			x.t.NDim = -x.t.NDim
		}
		p := dlpack.Producer{Versioned: opts&8 != 0, Version: dlpack.DLPackVersion{Major: uint32(minor >> 6), Minor: uint32(minor & 7)},
			Flags: dlpack.Flags(opts >> 4 & 7)}
		d, err := dlpack.Import(&x.t, p)
		if err != nil {
			for _, s := range sentinels {
				if errors.Is(err, s) {
					return
				}
			}
			t.Fatalf("error %q wraps no sentinel", err)
		}
		if d.Layout.NDim() != n || n > 0 && !slices.Equal(d.Layout.Shape(), shape) && !d.DType.IsSubByte() {
			t.Fatalf("layout %v for shape %v", d.Layout, shape)
		}
		if x.t.Strides != nil && !d.DType.IsSubByte() && !slices.Equal(d.Layout.Strides(), strides) {
			t.Fatalf("layout %v for strides %v", d.Layout, strides)
		}
		if d.Ptr != x.t.Data+uintptr(x.t.ByteOffset) {
			t.Fatalf("Ptr %#x for data %#x + %d", d.Ptr, x.t.Data, x.t.ByteOffset)
		}
		if !d.DType.IsSubByte() && d.Layout.Itemsize() != d.DType.Itemsize() {
			t.Fatalf("itemsize %d for %v", d.Layout.Itemsize(), d.DType)
		}
	})
}
