package cuda

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"
	"github.com/stridekit/stridekit/internal/dlib"
)

// drv holds the driver's entry points, filled once by loadDriver.
var drv struct {
	once sync.Once
	err  error
	path string

	cuInit, cuDriverGetVersion, cuGetErrorName, cuGetErrorString         uintptr
	cuDeviceGetCount, cuDeviceGet, cuDeviceGetName, cuDeviceGetAttribute uintptr
	cuDeviceTotalMem                                                     uintptr
	cuDevicePrimaryCtxRetain, cuDevicePrimaryCtxRelease                  uintptr
	cuCtxSetCurrent, cuCtxGetCurrent, cuCtxSynchronize                   uintptr
	cuStreamCreate, cuStreamDestroy, cuStreamSynchronize                 uintptr
	cuStreamWaitEvent, cuStreamQuery                                     uintptr
	cuEventCreate, cuEventDestroy, cuEventRecord, cuEventSynchronize     uintptr
	cuEventElapsedTime, cuEventQuery                                     uintptr
	cuMemAlloc, cuMemFree, cuMemAllocHost, cuMemFreeHost                 uintptr
	cuMemHostAlloc, cuMemAllocManaged                                    uintptr
	cuMemAllocAsync, cuMemFreeAsync                                      uintptr // optional (CUDA 11.2)
	cuPointerGetAttributes                                               uintptr
	cuMemcpy, cuMemcpyAsync, cuMemcpyHtoD, cuMemcpyDtoH, cuMemcpyDtoD    uintptr
	cuMemcpyHtoDAsync, cuMemcpyDtoHAsync, cuMemcpyDtoDAsync              uintptr
	cuMemsetD8, cuMemsetD8Async                                          uintptr
	cuModuleLoadData, cuModuleUnload, cuModuleGetFunction                uintptr
	cuFuncSetAttribute, cuFuncGetAttribute, cuLaunchKernel               uintptr
	cuFuncGetParamInfo                                                   uintptr // optional (CUDA 12.4)
	cuFuncGetParamCount                                                  uintptr // optional (CUDA 12.9)
	cuDeviceCanAccessPeer, cuCtxEnablePeerAccess, cuMemcpyPeerAsync      uintptr // optional: peer copies
	cuDeviceGetDefaultMemPool, cuMemPoolSetAccess                        uintptr // optional (CUDA 11.2)
	cuMemPoolCreate, cuMemPoolSetAttribute, cuMemAllocFromPoolAsync      uintptr // optional (CUDA 11.2)
}

type symbol struct {
	name     string
	p        *uintptr
	optional bool
}

func driverSymbols() []symbol {
	d := &drv
	return []symbol{
		{"cuInit", &d.cuInit, false},
		{"cuDriverGetVersion", &d.cuDriverGetVersion, false},
		{"cuGetErrorName", &d.cuGetErrorName, false},
		{"cuGetErrorString", &d.cuGetErrorString, false},
		{"cuDeviceGetCount", &d.cuDeviceGetCount, false},
		{"cuDeviceGet", &d.cuDeviceGet, false},
		{"cuDeviceGetName", &d.cuDeviceGetName, false},
		{"cuDeviceGetAttribute", &d.cuDeviceGetAttribute, false},
		{"cuDeviceTotalMem_v2", &d.cuDeviceTotalMem, false},
		{"cuDevicePrimaryCtxRetain", &d.cuDevicePrimaryCtxRetain, false},
		{"cuDevicePrimaryCtxRelease_v2", &d.cuDevicePrimaryCtxRelease, false},
		{"cuCtxSetCurrent", &d.cuCtxSetCurrent, false},
		{"cuCtxGetCurrent", &d.cuCtxGetCurrent, false},
		{"cuCtxSynchronize", &d.cuCtxSynchronize, false},
		{"cuStreamCreate", &d.cuStreamCreate, false},
		{"cuStreamDestroy_v2", &d.cuStreamDestroy, false},
		{"cuStreamSynchronize", &d.cuStreamSynchronize, false},
		{"cuStreamWaitEvent", &d.cuStreamWaitEvent, false},
		{"cuStreamQuery", &d.cuStreamQuery, false},
		{"cuEventCreate", &d.cuEventCreate, false},
		{"cuEventDestroy_v2", &d.cuEventDestroy, false},
		{"cuEventRecord", &d.cuEventRecord, false},
		{"cuEventSynchronize", &d.cuEventSynchronize, false},
		{"cuEventElapsedTime", &d.cuEventElapsedTime, false},
		{"cuEventQuery", &d.cuEventQuery, false},
		{"cuMemAlloc_v2", &d.cuMemAlloc, false},
		{"cuMemFree_v2", &d.cuMemFree, false},
		{"cuMemAllocHost_v2", &d.cuMemAllocHost, false},
		{"cuMemFreeHost", &d.cuMemFreeHost, false},
		{"cuMemHostAlloc", &d.cuMemHostAlloc, false},
		{"cuMemAllocManaged", &d.cuMemAllocManaged, false},
		{"cuMemAllocAsync", &d.cuMemAllocAsync, true},
		{"cuMemFreeAsync", &d.cuMemFreeAsync, true},
		{"cuPointerGetAttributes", &d.cuPointerGetAttributes, false},
		{"cuMemcpy", &d.cuMemcpy, false},
		{"cuMemcpyAsync", &d.cuMemcpyAsync, false},
		{"cuMemcpyHtoD_v2", &d.cuMemcpyHtoD, false},
		{"cuMemcpyDtoH_v2", &d.cuMemcpyDtoH, false},
		{"cuMemcpyDtoD_v2", &d.cuMemcpyDtoD, false},
		{"cuMemcpyHtoDAsync_v2", &d.cuMemcpyHtoDAsync, false},
		{"cuMemcpyDtoHAsync_v2", &d.cuMemcpyDtoHAsync, false},
		{"cuMemcpyDtoDAsync_v2", &d.cuMemcpyDtoDAsync, false},
		{"cuMemsetD8_v2", &d.cuMemsetD8, false},
		{"cuMemsetD8Async", &d.cuMemsetD8Async, false},
		{"cuModuleLoadData", &d.cuModuleLoadData, false},
		{"cuModuleUnload", &d.cuModuleUnload, false},
		{"cuModuleGetFunction", &d.cuModuleGetFunction, false},
		{"cuFuncSetAttribute", &d.cuFuncSetAttribute, false},
		{"cuFuncGetAttribute", &d.cuFuncGetAttribute, false},
		{"cuLaunchKernel", &d.cuLaunchKernel, false},
		{"cuFuncGetParamInfo", &d.cuFuncGetParamInfo, true},
		{"cuFuncGetParamCount", &d.cuFuncGetParamCount, true},
		{"cuDeviceCanAccessPeer", &d.cuDeviceCanAccessPeer, true},
		{"cuCtxEnablePeerAccess", &d.cuCtxEnablePeerAccess, true},
		{"cuMemcpyPeerAsync", &d.cuMemcpyPeerAsync, true},
		{"cuDeviceGetDefaultMemPool", &d.cuDeviceGetDefaultMemPool, true},
		{"cuMemPoolSetAccess", &d.cuMemPoolSetAccess, true},
		{"cuMemPoolCreate", &d.cuMemPoolCreate, true},
		{"cuMemPoolSetAttribute", &d.cuMemPoolSetAttribute, true},
		{"cuMemAllocFromPoolAsync", &d.cuMemAllocFromPoolAsync, true},
	}
}

// bindSymbols looks every symbol up with Dlsym; a missing required one is an
// error naming it (purego.RegisterLibFunc would panic instead). The slots
// are filled only when every required symbol is found: on error none is
// touched, so none points into a library that is then closed.
func bindSymbols(lib uintptr, path string, syms []symbol) error {
	var missing []string
	found := make([]uintptr, len(syms))
	for i, s := range syms {
		p, err := purego.Dlsym(lib, s.name)
		if err != nil || p == 0 {
			if !s.optional {
				missing = append(missing, s.name)
			}
			continue
		}
		found[i] = p
	}
	if len(missing) > 0 {
		return fmt.Errorf("%s lacks %s", path, strings.Join(missing, ", "))
	}
	for i, s := range syms {
		if found[i] != 0 {
			*s.p = found[i]
		}
	}
	return nil
}

// openLib loads the library name with dlopen flags mode and binds syms
// from it (bindSymbols). A library that loads but lacks a required symbol
// is closed again (dlclose), so it leaves nothing loaded, and no slot set.
// A dlopen error is given by its first line.
func openLib(name string, mode int, syms []symbol) error {
	lib, err := purego.Dlopen(name, mode)
	if err != nil {
		return errors.New(dlib.FirstLine(err.Error()))
	}
	if err := bindSymbols(lib, name, syms); err != nil {
		if cerr := purego.Dlclose(lib); cerr != nil {
			err = fmt.Errorf("%w (closing it: %s)", err, dlib.FirstLine(cerr.Error()))
		}
		return err
	}
	return nil
}

// loadDriver loads libcuda.so.1 and calls cuInit(0), once.
func loadDriver() error {
	drv.once.Do(func() {
		var tried []string
		for _, name := range []string{"libcuda.so.1", "libcuda.so"} {
			if err := openLib(name, purego.RTLD_NOW|purego.RTLD_GLOBAL, driverSymbols()); err != nil {
				tried = append(tried, name+" ("+err.Error()+")")
				continue
			}
			drv.path = name
			break
		}
		if drv.path == "" {
			drv.err = fmt.Errorf("%w: tried %s", ErrNoDriver, strings.Join(tried, "; "))
			return
		}
		r, _, _ := purego.SyscallN(drv.cuInit, 0)
		if r != 0 {
			drv.err = fmt.Errorf("%w: %s: %w", ErrNoDriver, drv.path, newError("cuInit", r))
		}
	})
	return drv.err
}

// DriverVersion returns the CUDA version the driver supports, as
// 1000·major + 10·minor (e.g. 13000 for CUDA 13.0).
func DriverVersion() (int, error) {
	if err := loadDriver(); err != nil {
		return 0, err
	}
	var v int32
	r, _, _ := purego.SyscallN(drv.cuDriverGetVersion, uintptr(unsafe.Pointer(&v)))
	return int(v), check("cuDriverGetVersion", r)
}

// nv holds NVRTC's entry points, filled once by loadNVRTC.
var nv struct {
	once         sync.Once
	err          error
	path         string
	major, minor int

	nvrtcVersion, nvrtcGetErrorString                              uintptr
	nvrtcCreateProgram, nvrtcDestroyProgram, nvrtcCompileProgram   uintptr
	nvrtcGetProgramLogSize, nvrtcGetProgramLog                     uintptr
	nvrtcGetPTXSize, nvrtcGetPTX, nvrtcGetCUBINSize, nvrtcGetCUBIN uintptr
	nvrtcGetNumSupportedArchs, nvrtcGetSupportedArchs              uintptr
}

func nvrtcSymbols() []symbol {
	n := &nv
	return []symbol{
		{"nvrtcVersion", &n.nvrtcVersion, false},
		{"nvrtcGetErrorString", &n.nvrtcGetErrorString, false},
		{"nvrtcCreateProgram", &n.nvrtcCreateProgram, false},
		{"nvrtcDestroyProgram", &n.nvrtcDestroyProgram, false},
		{"nvrtcCompileProgram", &n.nvrtcCompileProgram, false},
		{"nvrtcGetProgramLogSize", &n.nvrtcGetProgramLogSize, false},
		{"nvrtcGetProgramLog", &n.nvrtcGetProgramLog, false},
		{"nvrtcGetPTXSize", &n.nvrtcGetPTXSize, false},
		{"nvrtcGetPTX", &n.nvrtcGetPTX, false},
		{"nvrtcGetCUBINSize", &n.nvrtcGetCUBINSize, false},
		{"nvrtcGetCUBIN", &n.nvrtcGetCUBIN, false},
		{"nvrtcGetNumSupportedArchs", &n.nvrtcGetNumSupportedArchs, false},
		{"nvrtcGetSupportedArchs", &n.nvrtcGetSupportedArchs, false},
	}
}

// nvrtcCandidates lists, in search order, what loadNVRTC tries, reading
// the environment through getenv. named reports that the list is the one
// library the user named in $STRIDEKIT_NVRTC, which is then the only
// candidate: a named library that cannot be loaded is an error, never a
// reason to fall back on another NVRTC.
func nvrtcCandidates(getenv func(string) string) (c []string, named bool) {
	return dlib.Candidates(getenv, "STRIDEKIT_NVRTC", "libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2")
}

// selectNVRTC returns the first candidate that open loads. When none does,
// the error wraps ErrNoNVRTC and lists each candidate with the reason it
// failed; for a named candidate it says that the library $STRIDEKIT_NVRTC
// names could not be loaded, and why.
func selectNVRTC(candidates []string, named bool, open func(string) error) (string, error) {
	var tried []string
	for _, name := range candidates {
		err := open(name)
		if err == nil {
			return name, nil
		}
		if named {
			return "", fmt.Errorf("%w: STRIDEKIT_NVRTC=%s cannot be loaded (no other NVRTC is tried while it is set): %w",
				ErrNoNVRTC, name, err)
		}
		tried = append(tried, name+" ("+dlib.FirstLine(err.Error())+")")
	}
	return "", fmt.Errorf("%w: tried %s", ErrNoNVRTC, strings.Join(tried, ", "))
}

// openNVRTC loads the NVRTC library name (a path is checked to exist first,
// for a clearer reason than dlopen's) and binds its symbols into nv. It
// loads it RTLD_LOCAL: nothing looks NVRTC's symbols up but through its
// handle (its builtins library, which NVRTC opens itself, needs none of
// them), so they stay out of the process's global namespace.
func openNVRTC(name string) error {
	if strings.Contains(name, "/") {
		if _, err := os.Stat(name); err != nil {
			return err
		}
	}
	return openLib(name, purego.RTLD_NOW|purego.RTLD_LOCAL, nvrtcSymbols())
}

// loadNVRTC loads NVRTC along nvrtcCandidates, once.
func loadNVRTC() error {
	nv.once.Do(func() {
		candidates, named := nvrtcCandidates(os.Getenv)
		nv.path, nv.err = selectNVRTC(candidates, named, openNVRTC)
		if nv.err != nil {
			return
		}
		var major, minor int32
		r, _, _ := purego.SyscallN(nv.nvrtcVersion, uintptr(unsafe.Pointer(&major)), uintptr(unsafe.Pointer(&minor)))
		if r != 0 {
			nv.err = fmt.Errorf("%w: %s: %w", ErrNoNVRTC, nv.path, nvrtcErr("nvrtcVersion", r))
			return
		}
		nv.major, nv.minor = int(major), int(minor)
	})
	return nv.err
}

// cString returns s as a NUL-terminated byte slice on the Go heap.
func cString(s string) []byte {
	b := make([]byte, len(s)+1)
	copy(b, s)
	return b
}

// newError turns a CUresult into an *Error, asking the driver for its name
// and description.
func newError(call string, r uintptr) error {
	code := int(int32(r))
	e := &Error{Call: call, Code: code}
	var name, desc uintptr
	if drv.cuGetErrorName != 0 {
		purego.SyscallN(drv.cuGetErrorName, r, uintptr(unsafe.Pointer(&name)))
		purego.SyscallN(drv.cuGetErrorString, r, uintptr(unsafe.Pointer(&desc)))
	}
	e.Name, e.Desc = dlib.GoString(name), dlib.GoString(desc)
	if e.Name == "" {
		e.Name = "CUDA_ERROR_" + fmt.Sprint(code)
	}
	return e
}

// check returns nil for CUDA_SUCCESS and an *Error otherwise.
func check(call string, r uintptr) error {
	if r == 0 {
		return nil
	}
	return newError(call, r)
}

func nvrtcErr(call string, r uintptr) *NVRTCError {
	e := &NVRTCError{Call: call, Code: int(int32(r))}
	if nv.nvrtcGetErrorString != 0 {
		p, _, _ := purego.SyscallN(nv.nvrtcGetErrorString, r)
		e.Name = dlib.GoString(p)
	}
	if e.Name == "" {
		e.Name = "NVRTC_ERROR_" + fmt.Sprint(e.Code)
	}
	return e
}
