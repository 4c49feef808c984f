package cuda

import (
	"errors"
	"fmt"
	"strconv"
)

// ErrNoDriver is returned (wrapped, with the list of what was tried) by every
// call that needs the CUDA driver when libcuda.so.1 cannot be loaded or
// initialised.
var ErrNoDriver = errors.New("cuda: no CUDA driver")

// ErrNoNVRTC is returned (wrapped, with the list of what was tried) by the
// NVRTC functions when no NVRTC library can be loaded.
var ErrNoNVRTC = errors.New("cuda: no NVRTC")

// ErrClosed is returned by any use of a Stream, Event, Buffer or Module after
// its Close.
var ErrClosed = errors.New("cuda: use of closed object")

// ErrNotSupported reports an operation this driver or device cannot do.
var ErrNotSupported = errors.New("cuda: not supported")

// Sentinels for common CUresult codes; an *Error with the same code matches
// them under errors.Is.
var (
	ErrInvalidValue   error = &Error{Code: 1, Name: "CUDA_ERROR_INVALID_VALUE"}
	ErrOutOfMemory    error = &Error{Code: 2, Name: "CUDA_ERROR_OUT_OF_MEMORY"}
	ErrNotInitialized error = &Error{Code: 3, Name: "CUDA_ERROR_NOT_INITIALIZED"}
	ErrNoDevice       error = &Error{Code: 100, Name: "CUDA_ERROR_NO_DEVICE"}
	ErrInvalidDevice  error = &Error{Code: 101, Name: "CUDA_ERROR_INVALID_DEVICE"}
	ErrInvalidImage   error = &Error{Code: 200, Name: "CUDA_ERROR_INVALID_IMAGE"}
	ErrInvalidContext error = &Error{Code: 201, Name: "CUDA_ERROR_INVALID_CONTEXT"}
	ErrNoBinaryForGPU error = &Error{Code: 209, Name: "CUDA_ERROR_NO_BINARY_FOR_GPU"}
	ErrNotFound       error = &Error{Code: 500, Name: "CUDA_ERROR_NOT_FOUND"}
	ErrNotReady       error = &Error{Code: 600, Name: "CUDA_ERROR_NOT_READY"}
	ErrLaunchFailed   error = &Error{Code: 719, Name: "CUDA_ERROR_LAUNCH_FAILED"}
	ErrInvalidPTX     error = &Error{Code: 218, Name: "CUDA_ERROR_INVALID_PTX"}
	ErrUnsupportedPTX error = &Error{Code: 222, Name: "CUDA_ERROR_UNSUPPORTED_PTX_VERSION"}
)

// Error is a failed CUDA driver call: the call, the CUresult code, its name
// and its description as the driver gives them.
type Error struct {
	Call string // e.g. "cuMemAlloc_v2"
	Code int    // the CUresult
	Name string // e.g. "CUDA_ERROR_OUT_OF_MEMORY"
	Desc string // e.g. "out of memory"
}

func (e *Error) Error() string {
	s := "cuda: "
	if e.Call != "" {
		s += e.Call + ": "
	}
	s += e.Name + " (" + strconv.Itoa(e.Code) + ")"
	if e.Desc != "" {
		s += ": " + e.Desc
	}
	return s
}

// Is reports whether target is an *Error with the same code (the sentinels
// above carry no call).
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// NVRTCError is a failed NVRTC call. For nvrtcCompileProgram, Log holds the
// compiler's log (the error messages with their source lines).
type NVRTCError struct {
	Call string // e.g. "nvrtcCompileProgram"
	Code int    // the nvrtcResult
	Name string // nvrtcGetErrorString, e.g. "NVRTC_ERROR_COMPILATION"
	Log  string
}

func (e *NVRTCError) Error() string {
	s := fmt.Sprintf("cuda: %s: %s (%d)", e.Call, e.Name, e.Code)
	if e.Log != "" {
		s += "\n" + e.Log
	}
	return s
}

// ErrCompilation matches (errors.Is) any NVRTCError of code
// NVRTC_ERROR_COMPILATION: the source did not compile; see its Log.
var ErrCompilation error = &NVRTCError{Code: 6, Name: "NVRTC_ERROR_COMPILATION"}

// Is reports whether target is an *NVRTCError with the same code.
func (e *NVRTCError) Is(target error) bool {
	t, ok := target.(*NVRTCError)
	return ok && t.Code == e.Code
}
