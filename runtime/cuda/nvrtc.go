package cuda

import (
	"fmt"
	"runtime"
	"strings"
	"unsafe"

	"github.com/ebitengine/purego"
)

// NVRTCVersion returns the version of the loaded NVRTC, e.g. 13, 0.
func NVRTCVersion() (major, minor int, err error) {
	if err := loadNVRTC(); err != nil {
		return 0, 0, err
	}
	return nv.major, nv.minor, nil
}

// NVRTCPath returns the name or path NVRTC was loaded from.
func NVRTCPath() (string, error) {
	if err := loadNVRTC(); err != nil {
		return "", err
	}
	return nv.path, nil
}

// NVRTCSupportedArchs returns the architectures NVRTC compiles for, as
// numbers (75 for sm_75), in ascending order.
func NVRTCSupportedArchs() ([]int, error) {
	if err := loadNVRTC(); err != nil {
		return nil, err
	}
	var n int32
	r, _, _ := purego.SyscallN(nv.nvrtcGetNumSupportedArchs, uintptr(unsafe.Pointer(&n)))
	if r != 0 {
		return nil, nvrtcErr("nvrtcGetNumSupportedArchs", r)
	}
	archs := make([]int32, n)
	if n > 0 {
		r, _, _ = purego.SyscallN(nv.nvrtcGetSupportedArchs, uintptr(unsafe.Pointer(&archs[0])))
		if r != 0 {
			return nil, nvrtcErr("nvrtcGetSupportedArchs", r)
		}
	}
	out := make([]int, n)
	for i, a := range archs {
		out[i] = int(a)
	}
	return out, nil
}

// NVRTCCompile compiles CUDA C source (name names it in messages) with
// NVRTC and the given options (e.g. "--gpu-architecture=sm_90"), returning
// the CUBIN when cubin is true (the architecture must then be a real sm_XX)
// and the NUL-terminated PTX otherwise, plus the compiler's log (warnings).
// A compile error is an *NVRTCError matching ErrCompilation whose Log holds
// the messages. A NUL byte in source, name or an option (C would read the
// string as ending there) is an error matching ErrInvalidValue that names
// its offset, before NVRTC is called.
func NVRTCCompile(source, name string, options []string, cubin bool) (image []byte, log string, err error) {
	if err := checkNUL("source", source); err != nil {
		return nil, "", err
	}
	if err := checkNUL("name", name); err != nil {
		return nil, "", err
	}
	for i, o := range options {
		if err := checkNUL(fmt.Sprintf("options[%d]", i), o); err != nil {
			return nil, "", err
		}
	}
	if err := loadNVRTC(); err != nil {
		return nil, "", err
	}
	csrc, cname := cString(source), cString(name)
	var prog uintptr
	r, _, _ := purego.SyscallN(nv.nvrtcCreateProgram, uintptr(unsafe.Pointer(&prog)),
		uintptr(unsafe.Pointer(&csrc[0])), uintptr(unsafe.Pointer(&cname[0])), 0, 0, 0)
	runtime.KeepAlive(csrc)
	runtime.KeepAlive(cname)
	if r != 0 {
		return nil, "", nvrtcErr("nvrtcCreateProgram", r)
	}
	defer purego.SyscallN(nv.nvrtcDestroyProgram, uintptr(unsafe.Pointer(&prog)))

	copts := make([][]byte, len(options))
	ptrs := make([]*byte, len(options)+1)
	for i, o := range options {
		copts[i] = cString(o)
		ptrs[i] = &copts[i][0]
	}
	r, _, _ = purego.SyscallN(nv.nvrtcCompileProgram, prog, uintptr(len(options)), uintptr(unsafe.Pointer(&ptrs[0])))
	runtime.KeepAlive(copts)
	runtime.KeepAlive(ptrs)
	log = programLog(prog)
	if r != 0 {
		e := nvrtcErr("nvrtcCompileProgram", r)
		e.Log = log
		return nil, log, e
	}
	getSize, get, what := nv.nvrtcGetPTXSize, nv.nvrtcGetPTX, "PTX"
	if cubin {
		getSize, get, what = nv.nvrtcGetCUBINSize, nv.nvrtcGetCUBIN, "CUBIN"
	}
	var size uintptr
	r, _, _ = purego.SyscallN(getSize, prog, uintptr(unsafe.Pointer(&size)))
	if r != 0 {
		return nil, log, nvrtcErr("nvrtcGet"+what+"Size", r)
	}
	if size == 0 {
		return nil, log, fmt.Errorf("cuda: NVRTC produced no %s (options %q): %w", what, options, ErrNotSupported)
	}
	image = make([]byte, size)
	r, _, _ = purego.SyscallN(get, prog, uintptr(unsafe.Pointer(&image[0])))
	if r != 0 {
		return nil, log, nvrtcErr("nvrtcGet"+what, r)
	}
	return image, log, nil
}

// checkNUL returns an error matching ErrInvalidValue if s, NVRTCCompile's
// argument arg, holds a NUL byte, naming its offset.
func checkNUL(arg, s string) error {
	if i := strings.IndexByte(s, 0); i >= 0 {
		return fmt.Errorf("cuda: NVRTCCompile: %s holds a NUL byte at offset %d (of %d bytes): %w", arg, i, len(s), ErrInvalidValue)
	}
	return nil
}

func programLog(prog uintptr) string {
	var size uintptr
	if r, _, _ := purego.SyscallN(nv.nvrtcGetProgramLogSize, prog, uintptr(unsafe.Pointer(&size))); r != 0 || size <= 1 {
		return ""
	}
	buf := make([]byte, size)
	if r, _, _ := purego.SyscallN(nv.nvrtcGetProgramLog, prog, uintptr(unsafe.Pointer(&buf[0]))); r != 0 {
		return ""
	}
	for len(buf) > 0 && (buf[len(buf)-1] == 0 || buf[len(buf)-1] == '\n') {
		buf = buf[:len(buf)-1]
	}
	return string(buf)
}
