// Package cuda is stridekit's binding to the CUDA driver API and to NVRTC,
// loaded at run time with github.com/ebitengine/purego: no cgo, so a
// CGO_ENABLED=0 build runs on any Linux machine, and without a driver every
// call returns ErrNoDriver (and without NVRTC, ErrNoNVRTC) instead of failing
// to link or panicking.
//
// # Loading
//
// The driver (libcuda.so.1) is loaded, and cuInit called, at the first call
// that needs it; NVRTC likewise. Where $STRIDEKIT_NVRTC is set, the library
// it names (a path, or a soname for the dynamic loader) is the only NVRTC
// tried: if it cannot be loaded, every NVRTC function returns an error
// wrapping ErrNoNVRTC that names it and says why, rather than quietly using
// another NVRTC. Otherwise NVRTC is searched in this order: the sonames
// libnvrtc.so, libnvrtc.so.13, libnvrtc.so.12, libnvrtc.so.11.2 (Debian's
// NVRTC 11.8), then the same names in $CUDA_HOME/lib64 and
// /usr/local/cuda/lib64. Both are read once per process. Every symbol is
// looked up with purego.Dlsym, so a missing one is an error, not a panic. The
// versioned driver entry points are used (cuMemAlloc_v2, cuMemcpyHtoD_v2, …).
//
// # Errors
//
// Every CUresult and nvrtcResult other than success becomes an *Error naming
// the call, the code, its name and its description (cuGetErrorName,
// cuGetErrorString, nvrtcGetErrorString). Errors match the sentinels of this
// package with errors.Is (ErrOutOfMemory, ErrInvalidValue, …). Bad arguments
// (negative sizes, a parameter layout that overlaps, a nil argument pointer)
// return an error matching ErrInvalidValue that names the argument, before
// any driver call. So do the methods of a nil pointer or zero value of
// Device, Stream, Event, Buffer, Module and Function, which only their
// constructors (GetDevice, Device.NewStream, …) make usable; their Close
// returns nil and their accessors zero values. Nothing panics on such input.
// A Buffer with no device (host memory the driver names none for) refuses
// CopyFromHost and CopyToHost with an error naming its kind: use Bytes.
//
// # Closing
//
// Stream, Event, Buffer and Module have a Close that is idempotent and safe
// to call while other goroutines use the object: a call in progress holds
// the object open (a read lock for the length of its driver call) and Close
// waits for it, then destroys the handle; every call after Close returns an
// error matching ErrClosed. So a handle is never used after, nor destroyed
// during, a driver call. Launch holds the Function's Module and the Stream
// open in the same way. Close does not wait for work already queued on the
// GPU: stream-ordered memory is freed in stream order, and a stream's
// pending work still completes after its Close.
//
// # Contexts and goroutines
//
// A CUDA context is current per OS thread, and goroutines move between
// threads. Each Device holds its primary context (cuDevicePrimaryCtxRetain),
// and every driver call that needs a context locks the goroutine to its
// thread (runtime.LockOSThread), makes the device's context current with
// cuCtxSetCurrent, makes the call and unlocks. So any number of goroutines may
// use any number of devices at once; there is no "current device" state in
// this package. The per-thread default stream (PerThreadStream) is per OS
// thread, which in Go means per call: prefer explicit streams.
//
// # Kernels and Launch
//
// Launch copies the kernel's argument values into a pooled block of memory
// that the Go runtime never moves, so it allocates nothing on the steady
// path and never hands the driver a pointer into a goroutine stack. It needs
// each parameter's offset and size. Module.FunctionWithParams takes them from
// the caller (ParamsOf lays them out with C alignment), which is what
// generated code does: the driver is asked nothing about the parameters, so
// it works with any driver and gives memory checkers nothing to report.
// Module.Function reads them from the driver instead: cuFuncGetParamCount
// (CUDA 12.9) and then exactly that many cuFuncGetParamInfo (CUDA 12.4). A
// driver with only cuFuncGetParamInfo is probed until it answers
// CUDA_ERROR_INVALID_VALUE one past the last parameter, which
// compute-sanitizer reports as an API error; a driver without it yields a
// Function whose Launch returns ErrNotSupported. Any other driver error while
// reading the layout is Module.Function's error.
package cuda
