package cuda

import (
	"unsafe"

	"github.com/ebitengine/purego"
)

func callRaw(fn, stream uintptr, blk *launchBlock) {
	blk.call = [11]uintptr{fn, 1, 1, 1, 256, 1, 1, 0, stream, uintptr(unsafe.Pointer(&blk.ptrs[0])), 0}
	purego.SyscallN(drv.cuLaunchKernel, blk.call[:]...)
}
