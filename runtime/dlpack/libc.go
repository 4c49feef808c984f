package dlpack

import (
	"fmt"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"
)

// libcPath is the C library whose malloc and free hold exported tensors.
const libcPath = "libc.so.6"

// libc holds malloc and free, loaded once by loadLibc.
var libc struct {
	once         sync.Once
	err          error
	malloc, free uintptr
}

// loadLibc loads the C library on first use. Its error, an ErrLibc error,
// is sticky: the library is not searched for again.
func loadLibc() error {
	libc.once.Do(func() {
		h, err := purego.Dlopen(libcPath, purego.RTLD_NOW|purego.RTLD_GLOBAL)
		if err != nil {
			libc.err = fmt.Errorf("%w: dlopen %s: %v", ErrLibc, libcPath, err)
			return
		}
		for _, s := range []struct {
			name string
			p    *uintptr
		}{{"malloc", &libc.malloc}, {"free", &libc.free}} {
			if *s.p, err = purego.Dlsym(h, s.name); err != nil {
				libc.err = fmt.Errorf("%w: %s in %s: %v", ErrLibc, s.name, libcPath, err)
				return
			}
		}
	})
	return libc.err
}

// cMalloc returns n bytes of C heap memory, which the Go garbage collector
// neither moves nor frees.
func cMalloc(n uintptr) (unsafe.Pointer, error) {
	if err := loadLibc(); err != nil {
		return nil, err
	}
	r, _, _ := purego.SyscallN(libc.malloc, n)
	if r == 0 {
		return nil, fmt.Errorf("%w: malloc(%d) returned NULL", ErrOutOfMemory, n)
	}
	return *(*unsafe.Pointer)(unsafe.Pointer(&r)), nil
}

// cFree frees memory from cMalloc.
func cFree(p unsafe.Pointer) {
	call1(libc.free, uintptr(p))
}
