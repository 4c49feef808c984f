package cuda

import (
	"unsafe"

	"github.com/ebitengine/purego"
)

func callRaw(fn, stream uintptr, blk *launchBlock) {
	purego.SyscallN(drv.cuLaunchKernel, fn, 1, 1, 1, 256, 1, 1, 0, stream, uintptr(unsafe.Pointer(&blk.ptrs[0])), 0)
}
