package dlpack

import (
	"fmt"
	"unsafe"

	"github.com/stridekit/stridekit/layout"
)

// MaxNDim is the most dims Import accepts. DLPack does not bound ndim, and
// a consumer cannot know how long the producer's shape and strides arrays
// are: it must trust ndim to read them, so a corrupt or hostile ndim (10⁹,
// say) would make Import read gigabytes past the arrays, faulting or
// reporting extents that are whatever lies there. Import therefore refuses
// ndim > MaxNDim (ErrNDim) before it touches either array, which bounds
// what a lying ndim can make it read to MaxNDim values per array. 64 is
// NumPy's limit (NPY_MAXDIMS since NumPy 2.0) and the most dims
// stridekit's kernels are generated for (gen.MaxNDim); real tensors have
// far fewer.
const MaxNDim = 64

// Producer is what a consumer knows of a tensor besides its DLTensor: which
// struct it came in, the producer's DLPack version and the flags.
type Producer struct {
	// Versioned is true for a tensor that came in a
	// DLManagedTensorVersioned (DLPack 1.0 and later), false for a legacy
	// DLManagedTensor or a bare DLTensor.
	Versioned bool
	// Version is DLManagedTensorVersioned.Version. It is read only when
	// Versioned is true: its major version must be MajorVersion, and its
	// minor version decides what NULL strides mean.
	Version DLPackVersion
	// Flags are DLManagedTensorVersioned.Flags (0 for legacy tensors, which
	// have none, unless the caller knows better, e.g. that the tensor is
	// read-only). Bits DLPack 1.3 does not define are kept in Desc.Flags and
	// otherwise ignored.
	Flags Flags
}

// Desc is a validated description of a DLPack tensor in stridekit's terms,
// what Import returns.
type Desc struct {
	// Ptr is the address of the element at index 0: DLTensor.Data plus
	// DLTensor.ByteOffset. With Layout it follows the layout package's
	// pointer convention: Layout's offsets, times its itemsize, are byte
	// offsets from Ptr (negative for flipped dims).
	Ptr uintptr
	// Device is the tensor's device type, one CheckDevice accepts, and id.
	Device DLDevice
	// Layout is the tensor's layout in whole bytes (see LayoutOf).
	Layout layout.Layout
	// DType is the element type.
	DType layout.DType
	// ReadOnly is true when the producer set FlagReadOnly: the consumer
	// must not write to the tensor.
	ReadOnly bool
	// Flags are the producer's flags as given.
	Flags Flags

	cache *cachedLayout // the entry of Layout in Import's table, if any
}

// IsUnique reports whether no two indices of the tensor address the same
// element (layout.Layout.IsUnique of Layout): only such a tensor can be
// written element by element, while broadcast dims (stride 0) and
// overlapping strides share elements. The answer is remembered with the
// layout in Import's table of recent layouts, so asking again about a
// tensor of a recently seen layout costs a load; the first answer for a
// layout whose strides overlap takes an exact check over its elements.
func (d Desc) IsUnique() bool { return d.cache.isUnique(d.Layout) }

// ImportVersioned validates m and describes its tensor; it is Import with
// the version and flags m carries. It reads nothing past m.Flags when m's
// major version is not MajorVersion (an ErrVersion error).
//
// On any error the tensor is still the caller's to release: call
// CallDeleter(m) (which is safe whatever the version).
func ImportVersioned(m *DLManagedTensorVersioned) (Desc, error) {
	if m == nil {
		return Desc{}, fmt.Errorf("%w: DLManagedTensorVersioned pointer is nil", ErrNilTensor)
	}
	return Import(&m.DLTensor, Producer{Versioned: true, Version: m.Version, Flags: m.Flags})
}

// ImportLegacy validates m and describes its tensor; it is Import of a
// legacy tensor (no version, no flags, NULL strides mean C order). On any
// error the tensor is still the caller's to release with
// CallLegacyDeleter(m).
func ImportLegacy(m *DLManagedTensor) (Desc, error) {
	if m == nil {
		return Desc{}, fmt.Errorf("%w: DLManagedTensor pointer is nil", ErrNilTensor)
	}
	return Import(&m.DLTensor, Producer{})
}

// Import validates the DLTensor t, handed over by a producer described by
// p, and returns its description: the address of element 0 (Data moved by
// ByteOffset), the device, the layout in whole bytes, the dtype and whether
// it is read-only. It reads t, t.Shape and t.Strides and keeps no pointer
// into them: the description stays valid after the tensor's deleter runs,
// though the memory it describes does not.
//
// The rules, each failure an error naming the field and value:
//   - a versioned producer's major version must be MajorVersion
//     (ErrVersion); Import then reads nothing of t;
//   - the device type must be supported and the device id ≥ 0
//     (ErrUnsupportedDevice, ErrDeviceID, see CheckDevice);
//   - the dtype must have one lane and be one layout.NewDType knows
//     (ErrDType, see DLDataType.DType);
//   - 0 ≤ ndim ≤ MaxNDim (ErrNDim), checked before shape and strides are
//     read; shape non-NULL when ndim > 0 and every extent ≥ 0
//     (ErrShape);
//   - NULL strides with ndim > 0 mean dense C order for legacy tensors and
//     producers older than DLPack 1.2, and are an ErrStrides error from 1.2
//     on;
//   - a packed fp4/fp6 tensor must be expressible in whole bytes
//     (ErrSubByte, see LayoutOf);
//   - data must not be NULL when the tensor has elements (ErrData);
//   - offsets, sizes and every addressed byte (from Ptr plus the lowest
//     offset to Ptr plus the highest) must fit without overflow, which also
//     covers a ByteOffset that would carry Data past the end of the address
//     space (ErrOverflow, also wrapping layout.ErrOverflow where the layout
//     overflowed).
//
// Import does not check that the memory exists or is as large as the layout
// needs: DLPack does not say how large the allocation is.
//
// The success path uses no map and no fmt. It allocates nothing when a
// tensor of the same shape, strides and item size was imported recently
// (up to 8 dims; Import keeps a small fixed table of recent layouts, which
// are immutable and so can be shared), and otherwise the layout (two
// allocations, what layout.New copies) and a table entry.
func Import(t *DLTensor, p Producer) (Desc, error) {
	if t == nil {
		return Desc{}, fmt.Errorf("%w: DLTensor pointer is nil", ErrNilTensor)
	}
	if p.Versioned && p.Version.Major != MajorVersion {
		return Desc{}, fmt.Errorf("%w: producer version %v: this package speaks DLPack major version %d (%v)",
			ErrVersion, p.Version, MajorVersion, version())
	}
	if !t.Device.DeviceType.Supported() || t.Device.DeviceID < 0 {
		return Desc{}, CheckDevice(t.Device)
	}
	dt, err := t.DType.DType()
	if err != nil {
		return Desc{}, err
	}
	n := t.NDim
	if n < 0 {
		return Desc{}, fmt.Errorf("%w: dl_tensor.ndim = %d is negative", ErrNDim, n)
	}
	if n > MaxNDim {
		// Checked before the arrays are read: their length is ndim's word.
		return Desc{}, fmt.Errorf("%w: dl_tensor.ndim = %d is over dlpack.MaxNDim = %d", ErrNDim, n, MaxNDim)
	}
	var shape, strides []int64
	empty := false
	if n > 0 {
		if t.Shape == nil {
			return Desc{}, fmt.Errorf("%w: dl_tensor.shape is NULL with ndim = %d", ErrShape, n)
		}
		shape = unsafe.Slice(t.Shape, n)
		for i, e := range shape {
			if e <= 0 {
				if e < 0 {
					return Desc{}, fmt.Errorf("%w: dl_tensor.shape[%d] = %d is negative", ErrShape, i, e)
				}
				empty = true
			}
		}
		if t.Strides != nil {
			strides = unsafe.Slice(t.Strides, n)
		} else if p.Versioned && !p.Version.Less(1, 2) {
			return Desc{}, fmt.Errorf("%w: dl_tensor.strides is NULL with ndim = %d from a DLPack %v producer (NULL strides mean C order only before DLPack 1.2)",
				ErrStrides, n, p.Version)
		}
	}
	var l layout.Layout
	var cache *cachedLayout
	if dt.IsSubByte() {
		l, err = LayoutOf(shape, strides, dt, p.Flags)
	} else {
		l, cache, err = newLayout(shape, strides, dt.Itemsize())
		if err != nil {
			err = overflowError(err, dt)
		}
	}
	if err != nil {
		return Desc{}, err
	}
	ptr, err := address(t.Data, t.ByteOffset, l, empty)
	if err != nil {
		return Desc{}, err
	}
	return Desc{
		Ptr:      ptr,
		Device:   t.Device,
		Layout:   l,
		DType:    dt,
		ReadOnly: p.Flags&FlagReadOnly != 0,
		Flags:    p.Flags,
		cache:    cache,
	}, nil
}

// address returns data+byteOffset, checking that it and every byte l
// addresses from it lie inside the address space, and that data is not
// NULL when l has elements; empty says it has none.
func address(data uintptr, byteOffset uint64, l layout.Layout, empty bool) (uintptr, error) {
	const maxAddr = ^uintptr(0)
	if byteOffset > uint64(maxAddr-data) {
		return 0, fmt.Errorf("%w: dl_tensor.data %#x + byte_offset %d passes the end of the address space", ErrOverflow, data, byteOffset)
	}
	ptr := data + uintptr(byteOffset)
	if empty {
		return ptr, nil
	}
	if data == 0 {
		return 0, fmt.Errorf("%w: dl_tensor.data is NULL for a tensor of %d elements", ErrData, l.Volume())
	}
	// The layout invariants keep both products inside int64.
	item := uint64(l.Itemsize())
	below := uint64(-l.MinOffset()) * item
	above := uint64(l.MaxOffset()+1) * item
	if below > uint64(ptr) {
		return 0, fmt.Errorf("%w: element 0 at %#x with layout %v addresses %d bytes below it, past address 0", ErrOverflow, ptr, l, below)
	}
	if above-1 > uint64(maxAddr-ptr) {
		return 0, fmt.Errorf("%w: element 0 at %#x with layout %v addresses %d bytes from it, past the end of the address space", ErrOverflow, ptr, l, above)
	}
	return ptr, nil
}
