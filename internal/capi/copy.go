// Command capi is stridekit's copy entry point for C and Python: built with
// go build -buildmode=c-shared (scripts/build-capi, which needs cgo), it is
// a shared library, libstridekit.so, with its C header, exporting
//
//	int sk_copy(void *dst, void *src, int64_t stream, uint64_t flags);
//	const char *sk_last_error(void);
//
// sk_copy copies every element of the DLPack tensor src into the element of
// dst at the same index (src broadcasts to dst's shape; the dtypes must be
// equal), through runtime/memview: any strides on either side (transposed,
// sliced, flipped), any mix of CUDA device, managed, pinned and host
// memory, queued on one CUDA stream. dst and src point to
// DLManagedTensorVersioned structs, or to legacy DLManagedTensor structs
// where flags say so (SK_DST_LEGACY, SK_SRC_LEGACY). sk_copy borrows them:
// it calls no deleter, and the caller gives each tensor back to its
// producer when done (for PyCapsules: rename the capsule
// "used_dltensor_versioned", or "used_dltensor", and call the deleter).
// The tensors' memory must stay valid until the copy is done on the
// stream.
//
// stream is the CUDA stream to queue the copy on, in the values of DLPack's
// __dlpack__(stream=…) protocol: 1 for the legacy default stream, 2 for the
// per-thread default stream of the calling thread, or a CUstream handle;
// -1 for copies between host tensors, which run on the CPU and need none.
// 0 is refused as ambiguous. The consumer's side of the handshake is the
// caller's: obtain both tensors with __dlpack__(stream=stream) so their
// producers order their pending work before the stream. With SK_SYNC the
// call returns when the copy is done; otherwise copies between device
// tensors return once queued (memview's rules; copies involving host memory
// wait for the data).
//
// sk_copy returns SK_OK (0) or a negative error code: SK_EINVAL (a bad
// argument: a NULL tensor, unknown flags, a stream value that is refused or
// that a device copy lacks), SK_ETENSOR (a tensor DLPack's rules refuse:
// version, device, dtype, shape, strides), SK_ECOPY (a copy memview refuses:
// shapes that do not broadcast, different dtypes, overlapping dst elements,
// two devices), SK_EREADONLY (dst is flagged read-only), SK_ECUDA (the CUDA
// driver failed or is missing), SK_EINTERNAL (anything else, a recovered
// panic included). sk_last_error returns the message of the calling
// thread's last failed sk_copy ("" if none), valid until that thread's
// next failing call or its exit. Each thread's message is kept in
// thread-local storage and freed when the thread exits, so threads that
// come and go leave nothing behind, and a new thread never sees a message
// of one that exited.
//
// Without cgo (CGO_ENABLED=0) the package builds as a command that only
// says how to build the library.
package main

import (
	"errors"
	"fmt"
	"os"
	"unsafe"

	"github.com/stridekit/stridekit/layout"
	"github.com/stridekit/stridekit/runtime/cuda"
	"github.com/stridekit/stridekit/runtime/dlpack"
	"github.com/stridekit/stridekit/runtime/memview"
)

// The flags of sk_copy.
const (
	// FlagSrcLegacy (SK_SRC_LEGACY) says src is a legacy DLManagedTensor.
	FlagSrcLegacy = 1 << 0
	// FlagDstLegacy (SK_DST_LEGACY) says dst is a legacy DLManagedTensor.
	FlagDstLegacy = 1 << 1
	// FlagSync (SK_SYNC) makes sk_copy return when the copy is done.
	FlagSync = 1 << 2

	knownFlags = FlagSrcLegacy | FlagDstLegacy | FlagSync
)

// The return codes of sk_copy.
const (
	// CodeOK (SK_OK): the copy is done or queued.
	CodeOK = 0
	// CodeInvalid (SK_EINVAL): a bad argument.
	CodeInvalid = -1
	// CodeTensor (SK_ETENSOR): a tensor DLPack's rules refuse.
	CodeTensor = -2
	// CodeCopy (SK_ECOPY): a copy memview refuses.
	CodeCopy = -3
	// CodeReadOnly (SK_EREADONLY): dst is read-only.
	CodeReadOnly = -4
	// CodeCUDA (SK_ECUDA): a CUDA driver error, or no driver.
	CodeCUDA = -5
	// CodeInternal (SK_EINTERNAL): anything else.
	CodeInternal = -6
)

// ErrInvalid reports a bad argument of sk_copy: a NULL tensor, unknown
// flags, a stream a device copy lacks.
var ErrInvalid = errors.New("sk_copy: invalid argument")

// copyTensors is sk_copy: it copies the tensor at src into the tensor at
// dst on the stream the protocol value stream names, and returns the
// error, if any, with its code.
func copyTensors(dst, src unsafe.Pointer, stream int64, flags uint64) (code int, err error) {
	defer func() {
		if r := recover(); r != nil {
			code, err = CodeInternal, fmt.Errorf("sk_copy: panic: %v", r)
		}
	}()
	err = copyViews(dst, src, stream, flags)
	return codeOf(err), err
}

func copyViews(dst, src unsafe.Pointer, stream int64, flags uint64) error {
	if bad := flags &^ knownFlags; bad != 0 {
		return fmt.Errorf("%w: flags %#x: unknown bits %#x", ErrInvalid, flags, bad)
	}
	req, err := dlpack.ParseCUDAStream(stream)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	sv, err := borrow("src", src, flags&FlagSrcLegacy != 0)
	if err != nil {
		return err
	}
	dv, err := borrow("dst", dst, flags&FlagDstLegacy != 0)
	if err != nil {
		return err
	}
	dev := dv.Device()
	if dev == nil {
		dev = sv.Device()
	}
	var s *cuda.Stream
	if dev != nil {
		if s = req.Stream(dev); s == nil {
			return fmt.Errorf("%w: stream -1 for a copy %v → %v that involves device memory: pass the stream to queue it on", ErrInvalid, sv, dv)
		}
	}
	if err := dv.CopyFrom(sv, s); err != nil {
		return err
	}
	if flags&FlagSync != 0 && s != nil {
		return s.Synchronize()
	}
	return nil
}

// borrow returns the view of the tensor at p, which the view does not own.
func borrow(name string, p unsafe.Pointer, legacy bool) (*memview.StridedMemoryView, error) {
	if p == nil {
		return nil, fmt.Errorf("%w: %s is NULL", ErrInvalid, name)
	}
	var v *memview.StridedMemoryView
	var err error
	if legacy {
		m := (*dlpack.DLManagedTensor)(p)
		v, err = memview.FromDLTensor(&m.DLTensor, dlpack.Producer{})
	} else {
		m := (*dlpack.DLManagedTensorVersioned)(p)
		// FromDLTensor checks the version before it reads the tensor.
		v, err = memview.FromDLTensor(&m.DLTensor, dlpack.Producer{Versioned: true, Version: m.Version, Flags: m.Flags})
	}
	if err != nil {
		return nil, fmt.Errorf("sk_copy: %s: %w", name, err)
	}
	return v, nil
}

// tensorErrors are the errors of a tensor DLPack's rules refuse.
var tensorErrors = []error{
	dlpack.ErrNilTensor, dlpack.ErrVersion, dlpack.ErrUnsupportedDevice, dlpack.ErrDeviceID, dlpack.ErrDType,
	dlpack.ErrSubByte, dlpack.ErrNDim, dlpack.ErrShape, dlpack.ErrStrides, dlpack.ErrData, dlpack.ErrOverflow,
}

// copyErrors are the errors of a copy memview refuses.
var copyErrors = []error{
	memview.ErrDType, memview.ErrDevice, memview.ErrNilStream, memview.ErrOutOfBounds,
	layout.ErrShape, layout.ErrOverlappingDst,
}

// codeOf returns the sk_copy code of err.
func codeOf(err error) int {
	switch {
	case err == nil:
		return CodeOK
	case errors.Is(err, ErrInvalid):
		return CodeInvalid
	case errors.Is(err, memview.ErrReadOnly):
		return CodeReadOnly
	case errors.Is(err, cuda.ErrNoDriver) || errors.As(err, new(*cuda.Error)):
		return CodeCUDA
	}
	for _, e := range tensorErrors {
		if errors.Is(err, e) {
			return CodeTensor
		}
	}
	for _, e := range copyErrors {
		if errors.Is(err, e) {
			return CodeCopy
		}
	}
	return CodeInternal
}

// main is not run in the shared library; as a command (built without
// -buildmode=c-shared) it says how to build the library.
func main() {
	fmt.Fprintln(os.Stderr, "capi is the C-ABI library of stridekit's copy entry point: build it with scripts/build-capi (go build -buildmode=c-shared, cgo needed)")
	os.Exit(2)
}
