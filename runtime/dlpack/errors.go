package dlpack

import "errors"

// Sentinel errors. Every error this package returns wraps one of them (and,
// where a layout computation failed, the layout package's sentinel as well),
// so callers test the kind of failure with errors.Is while the message names
// the field or argument and the value at fault.
var (
	// ErrNilTensor reports a nil *DLTensor, *DLManagedTensor or
	// *DLManagedTensorVersioned where a tensor is required.
	ErrNilTensor = errors.New("dlpack: nil tensor")
	// ErrVersion reports a DLManagedTensorVersioned whose major version this
	// package does not speak: its fields after the flags may be laid out
	// differently, so nothing but the deleter may be touched.
	ErrVersion = errors.New("dlpack: unsupported DLPack version")
	// ErrUnsupportedDevice reports a device type other than kDLCPU, kDLCUDA,
	// kDLCUDAHost and kDLCUDAManaged, the memory stridekit can copy.
	ErrUnsupportedDevice = errors.New("dlpack: unsupported device type")
	// ErrDeviceID reports a negative device_id.
	ErrDeviceID = errors.New("dlpack: bad device id")
	// ErrDType reports a DLDataType with no stridekit dtype (unknown code,
	// bits the code does not allow, lanes other than 1), or a dtype that has
	// no DLDataType.
	ErrDType = errors.New("dlpack: unsupported dtype")
	// ErrSubByte reports a packed fp4 or fp6 tensor whose elements cannot be
	// grouped into whole bytes (see LayoutOf).
	ErrSubByte = errors.New("dlpack: packed sub-byte tensor not expressible in whole bytes")
	// ErrNDim reports a negative ndim or one over MaxNDim (Import), or
	// more dims than DLTensor.ndim (an int32) can hold (Export).
	ErrNDim = errors.New("dlpack: bad ndim")
	// ErrShape reports a NULL shape with ndim > 0 or a negative extent.
	ErrShape = errors.New("dlpack: bad shape")
	// ErrStrides reports NULL strides with ndim > 0 from a DLPack 1.2 or
	// later producer, or strides whose count differs from the dims.
	ErrStrides = errors.New("dlpack: bad strides")
	// ErrData reports a NULL data pointer for a tensor that has elements.
	ErrData = errors.New("dlpack: bad data pointer")
	// ErrOverflow reports a size, offset or address whose computation would
	// overflow.
	ErrOverflow = errors.New("dlpack: integer overflow")
	// ErrFlags reports flag bits that an export cannot carry.
	ErrFlags = errors.New("dlpack: bad flags")
	// ErrStream reports a stream value of the __dlpack__ protocol that is
	// refused: 0 (ambiguous) or below -1.
	ErrStream = errors.New("dlpack: bad stream")
	// ErrLibc reports that the C library, whose malloc and free hold
	// exported tensors, cannot be loaded.
	ErrLibc = errors.New("dlpack: C library unavailable")
	// ErrOutOfMemory reports that malloc returned NULL.
	ErrOutOfMemory = errors.New("dlpack: out of memory")
	// ErrCallback reports that the C-callable deleter could not be made.
	ErrCallback = errors.New("dlpack: deleter callback unavailable")
)
