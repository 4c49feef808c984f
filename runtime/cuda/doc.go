// Package cuda is stridekit's binding to the CUDA driver API and to NVRTC,
// loaded at run time with github.com/ebitengine/purego: no cgo, so a
// CGO_ENABLED=0 build runs on any Linux machine, and without a driver every
// call returns ErrNoDriver (and without NVRTC, ErrNoNVRTC) instead of failing
// to link or panicking.
//
// # Loading
//
// The driver (libcuda.so.1) is loaded, and cuInit called, at the first call
// that needs it; NVRTC likewise, searched in this order: the path in
// $STRIDEKIT_NVRTC, the sonames libnvrtc.so, libnvrtc.so.13, libnvrtc.so.12,
// libnvrtc.so.11.2 (Debian's NVRTC 11.8), then libnvrtc.so* in
// $CUDA_HOME/lib64 and /usr/local/cuda/lib64. Every symbol is looked up with
// purego.Dlsym, so a missing one is an error, not a panic. The versioned
// driver entry points are used (cuMemAlloc_v2, cuMemcpyHtoD_v2, …).
//
// # Errors
//
// Every CUresult and nvrtcResult other than success becomes an *Error naming
// the call, the code, its name and its description (cuGetErrorName,
// cuGetErrorString, nvrtcGetErrorString). Errors match the sentinels of this
// package with errors.Is (ErrOutOfMemory, ErrInvalidValue, …). Use of a closed
// Stream, Event, Buffer or Module returns ErrClosed; Close is idempotent.
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
// # Launch
//
// Launch copies the kernel's argument values into a pooled block of memory
// that the Go runtime never moves, so it allocates nothing on the steady
// path and never hands the driver a pointer into a goroutine stack. It needs
// the size of each kernel parameter, which the driver reports from CUDA 12.4
// on (cuFuncGetParamInfo); with an older driver Launch returns ErrNotSupported.
package cuda
