package dlpack

import (
	"strconv"
	"structs"
)

// The DLPack version this package speaks.
const (
	// MajorVersion is the DLPack major version of tensors this package
	// exports and the only one it imports: another major version may lay
	// out DLManagedTensorVersioned differently past its flags.
	MajorVersion = 1
	// MinorVersion is the DLPack minor version of tensors this package
	// exports. Tensors of any minor version are imported: minor versions
	// only add enumeration values, which the device and dtype checks refuse
	// where unknown.
	MinorVersion = 3
)

// Version is MajorVersion.MinorVersion as a DLPackVersion, for comparisons.
// Export and Import use the constants, not this variable.
var Version = DLPackVersion{Major: MajorVersion, Minor: MinorVersion}

// version is what Export writes and error messages name.
func version() DLPackVersion { return DLPackVersion{Major: MajorVersion, Minor: MinorVersion} }

// DLPackVersion is C's DLPackVersion: the version of the DLPack ABI and API
// a DLManagedTensorVersioned was made for. A major version other than
// MajorVersion means the struct past its flags field has another layout.
type DLPackVersion struct {
	_     structs.HostLayout
	Major uint32
	Minor uint32
}

// String returns "major.minor".
func (v DLPackVersion) String() string {
	return strconv.FormatUint(uint64(v.Major), 10) + "." + strconv.FormatUint(uint64(v.Minor), 10)
}

// Less reports whether v is older than major.minor.
func (v DLPackVersion) Less(major, minor uint32) bool {
	return v.Major < major || v.Major == major && v.Minor < minor
}

// DLDevice is C's DLDevice: where a tensor's memory lives. DeviceID is the
// CUDA device ordinal for kDLCUDA and 0 for host, pinned and managed memory.
type DLDevice struct {
	_          structs.HostLayout
	DeviceType DLDeviceType
	DeviceID   int32
}

// DLDataType is C's DLDataType: a type code (layout.KDLInt, …), the bits of
// one lane and the lane count. Convert it with DType and DataTypeOf.
type DLDataType struct {
	_     structs.HostLayout
	Code  uint8
	Bits  uint8
	Lanes uint16
}

// DLTensor is C's DLTensor, a plain description of strided memory that owns
// nothing.
//
// Data is an address, not a Go pointer: it may be device memory. The element
// at index 0 sits at Data+ByteOffset. Shape and Strides point to NDim
// int64 values each; Strides counts elements, not bytes. Shape may be nil
// when NDim is 0; Strides may be nil when NDim is 0, and, for producers
// older than DLPack 1.2, to mean dense C order.
type DLTensor struct {
	_          structs.HostLayout
	Data       uintptr
	Device     DLDevice
	NDim       int32
	DType      DLDataType
	Shape      *int64
	Strides    *int64
	ByteOffset uint64
}

// DLManagedTensor is C's legacy DLManagedTensor (DLPack before 1.0, still
// exchanged by old consumers): a DLTensor with the producer's context and a
// deleter the consumer calls once when done. It has no version and no flags.
//
// ManagerCtx is opaque to the consumer. Deleter is a C function pointer,
// void (*)(DLManagedTensor *self), or 0 when there is nothing to release;
// call it with CallLegacyDeleter.
type DLManagedTensor struct {
	_          structs.HostLayout
	DLTensor   DLTensor
	ManagerCtx uintptr
	Deleter    uintptr
}

// DLManagedTensorVersioned is C's DLManagedTensorVersioned, the exchange
// struct of DLPack 1.x: the version, the producer's context, the deleter,
// flags and the DLTensor.
//
// The fields up to Flags keep their layout in every DLPack version, so the
// deleter of a tensor of an unknown major version can still be called (with
// CallDeleter); nothing else may be read then. Deleter is a C function
// pointer, void (*)(DLManagedTensorVersioned *self), or 0.
type DLManagedTensorVersioned struct {
	_          structs.HostLayout
	Version    DLPackVersion
	ManagerCtx uintptr
	Deleter    uintptr
	Flags      Flags
	DLTensor   DLTensor
}

// Flags is the bit set of DLManagedTensorVersioned.Flags.
type Flags uint64

// The flag bits of DLPack 1.3.
const (
	// FlagReadOnly (DLPACK_FLAG_BITMASK_READ_ONLY) says the consumer must
	// not write to the tensor.
	FlagReadOnly Flags = 1 << 0
	// FlagIsCopied (DLPACK_FLAG_BITMASK_IS_COPIED) says the producer made
	// the tensor as a copy for this consumer, who owns it alone until the
	// deleter is called.
	FlagIsCopied Flags = 1 << 1
	// FlagIsSubbyteTypePadded (DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED)
	// says each element of a sub-byte type (fp4, fp6) occupies a whole byte
	// instead of being packed.
	FlagIsSubbyteTypePadded Flags = 1 << 2

	knownFlags = FlagReadOnly | FlagIsCopied | FlagIsSubbyteTypePadded
)

// Has reports whether every bit of f2 is set in f.
func (f Flags) Has(f2 Flags) bool { return f&f2 == f2 }
