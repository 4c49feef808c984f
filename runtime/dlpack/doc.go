// Package dlpack is stridekit's binding to DLPack 1.3, the C ABI by which
// array libraries (PyTorch, JAX, CuPy, NumPy, C and C++ code) lend each
// other tensors without copying. It gives the structs, the checks and the
// memory handling below the level of a memory view: a view type builds
// FromDLPack on Import and ToDLPack on Export. It needs no cgo: the C
// library and the deleter callbacks are reached through
// github.com/ebitengine/purego.
//
// # The ABI
//
// DLPackVersion, DLDevice, DLDataType, DLTensor, DLManagedTensor (the legacy
// struct of DLPack before 1.0) and DLManagedTensorVersioned are C's structs
// field for field, with C's layout on 64-bit Linux (x86-64 and arm64): a
// *DLManagedTensorVersioned received from C may be read directly, and one
// made here may be handed to C. The package speaks DLPack 1.3
// (MajorVersion, MinorVersion); the flag bits are FlagReadOnly, FlagIsCopied and
// FlagIsSubbyteTypePadded; every DLDeviceType of 1.3 is a constant (KDLCPU,
// KDLCUDA, …), of which stridekit copies the memory of kDLCPU, kDLCUDA,
// kDLCUDAHost and kDLCUDAManaged (CheckDevice). Type codes are the
// layout.KDL* constants: DLDataType.DType and DataTypeOf convert between
// DLDataType and layout.DType, scalars only.
//
// # Import
//
// Import (and ImportVersioned, ImportLegacy) turns a DLTensor into a Desc:
// the address of element 0 (data moved by byte_offset), the device, the
// layout in whole bytes, the dtype and whether the producer marked it
// read-only, after checking every field against the specification: the
// major version, the device, the dtype, ndim, shape, strides (NULL strides
// mean C order before DLPack 1.2 and are refused from 1.2 on), and every
// offset and address for overflow. It is meant for hot paths: it uses no map
// and no fmt unless it fails, and it serves the layouts of recently seen
// shapes from a small fixed table, allocating nothing for them.
// Desc.IsUnique, whether a tensor may be written (no two indices share an
// element), is remembered in the same table. Sub-byte types (fp4, fp6) are packed unless the producer
// sets FlagIsSubbyteTypePadded; LayoutOf maps either to a layout of whole
// bytes, or says why a packed tensor cannot be one.
//
// The consumer owns the tensor until it calls the deleter, once:
// CallDeleter and CallLegacyDeleter call a C deleter through purego. A
// tensor that Import refuses must still be given back that way; CallDeleter
// reads only the fields every DLPack major version keeps in place.
//
// # Export
//
// Export (ExportLegacy for old consumers) builds a DLManagedTensorVersioned
// that C code may keep as long as it likes. Its struct and its shape and
// strides arrays live in one block from the C library's malloc, not in the
// Go heap: the garbage collector neither moves nor frees it, C sees no Go
// pointers, and no pinning or finalizer is involved, whereas a
// runtime.Pinner would tie the tensor's life to Go objects that a registry
// must keep reachable and that C code would then hold. The C library
// (libc.so.6) is loaded on first use; where it cannot be, Export returns
// ErrLibc.
//
// The deleter is one C-callable function made once per process with
// purego.NewCallback (purego allows only a bounded number of callbacks, so
// none is made per export). The tensor's manager_ctx is an integer handle,
// never a Go pointer, into a registry that holds the exporter's release
// function. The deleter removes the handle from the registry, clears the
// tensor's deleter and manager_ctx fields, runs release once and frees the
// block; a second call with the same tensor finds no registry entry and does
// nothing. LiveExports counts the exports not yet released.
//
// # Streams
//
// ParseCUDAStream interprets the CUDA stream value of the __dlpack__(stream=…)
// protocol: -1 no synchronisation, 1 the legacy default stream, 2 the
// per-thread default stream, above 2 a CUstream handle, and 0 refused as
// ambiguous. CUDAStreamValue gives the value to pass for a cuda.Stream, and
// StreamRequest.Stream the cuda.Stream a parsed value names.
//
// # Errors
//
// Every error wraps one of this package's sentinel errors (ErrVersion,
// ErrUnsupportedDevice, ErrDType, ErrNDim, ErrShape, ErrStrides, ErrSubByte,
// ErrData, ErrOverflow, …) for errors.Is, and names the field and the value
// at fault ("dl_tensor.shape[1] = -3 is negative"). Nothing panics on a
// malformed tensor, though a tensor whose pointers point nowhere cannot be
// read safely by anyone.
package dlpack
