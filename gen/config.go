package gen

import (
	"fmt"
	"math/bits"
	"strconv"

	"github.com/stridekit/stridekit/layout"
)

// FormatVersion identifies the layout of the generated CUDA sources, the
// argument block and the launch stubs. Files written by stridegen check it at
// compile time (see Version1), so a generator change that alters the format
// breaks the build of stale generated files instead of miscompiling them.
const FormatVersion = 1

// Version1 exists while FormatVersion is 1; generated files reference it.
const Version1 = FormatVersion

// Threads per block and work per thread of the non-tile classes.
const (
	// ContigThreads is the block size of the contiguous kernel.
	ContigThreads = 256
	// ContigUnroll is how many 16-byte loads a thread of the contiguous kernel
	// keeps in flight.
	ContigUnroll = 4
	// ContigBlocksPerSM is how many blocks per multiprocessor the contiguous
	// kernel's grid holds (it loops over the data).
	ContigBlocksPerSM = 8
	// RowsThreads is the block size of the elementwise, broadcast and fill
	// kernels.
	RowsThreads = 256
	// MaxGridY is the largest grid.y (and grid.z) CUDA accepts.
	MaxGridY = 65535
	// MaxGridX caps grid.x of the looping tile kernel.
	MaxGridX = 1 << 30
)

// RowsPerThread is how many rows (outer indices) one thread of the
// elementwise, broadcast and fill kernels of nd canonical dims handles per
// loop trip: the loads of those rows are in flight together, and the
// broadcast kernel reads a src vector once for all the rows that share it.
// A 1-d elementwise kernel has one row; it unrolls along the innermost dim
// instead (ColsPerThread).
func RowsPerThread(c layout.Class, nd int) int {
	switch c {
	case layout.ClassBroadcast, layout.ClassFill:
		return 8
	}
	if nd == 1 {
		return 1
	}
	return 4
}

// ElemCols1D is ColsPerThread of the 1-d elementwise kernel. On an H200,
// a[:, ::2] of a 16384×32768 f32 (1-d, src stride 2; % of cuMemcpyDtoD in
// the same run) ran at 52.7% with 1, 66.5% with 2, 69.2% with 4, 68.9% with 8.
const ElemCols1D = 4

// ColsPerThread is how many vectors along the innermost dim one thread of
// the elementwise, broadcast and fill kernels of nd canonical dims moves per
// loop trip, blockDim.x vectors apart so that every access of a warp stays
// coalesced: R·X loads are in flight per thread. Only the 1-d elementwise
// kernel (a strided gather with no outer rows) uses more than one.
func ColsPerThread(c layout.Class, nd int) int {
	if c == layout.ClassElementwise && nd == 1 {
		return ElemCols1D
	}
	return 1
}

// rowsBlockX is blockDim.x of the rows kernels for inner vectors along the
// innermost dim and x vectors per thread: the next power of two of
// ceil(inner/x), at most RowsThreads.
func rowsBlockX(inner int64, x int) int64 {
	return min(int64(RowsThreads), nextPow2(ceilDiv(inner, int64(x))))
}

// TileConfig is the shape of the tiled permutation kernel's work: a tile of
// Rows × Cols elements in shared memory, Rows along dst's fastest dim (dim
// NDim-1) and Cols along src's fastest dim (dim Fast), moved by Threads
// threads. Rows and Cols are powers of two and multiples of Vec.
//
// WordCols (items under 4 bytes with Vec·itemsize a multiple of 4 only)
// makes the store phase read one 4-byte word of each of Vec tile rows (a
// Vec × 4/itemsize micro-tile, 4/itemsize dst vectors) instead of whole
// vectors (a Vec × Vec micro-tile): a quarter of the registers for 1-byte
// items, so a block can have more threads and a multiprocessor more blocks.
type TileConfig struct {
	Rows, Cols, Threads int
	WordCols            bool
}

// DefaultTile returns the tile shape used for a signature: sizes chosen so a
// tile is 4–32 KiB, every thread keeps several 16-byte loads in flight, and
// the register transpose of a micro-tile fits in registers. Items under 4
// bytes use word micro-tiles: on an H200 (1 GiB transposes, % of
// cuMemcpyDtoD in the same run) u8 went from 87.7% (128×128, 64 threads,
// 16×16 micro-tiles, 159 registers) to 92.9%, f16 from 95.0% (64×64, 64
// threads) to 95.6%.
func DefaultTile(sig layout.Signature) TileConfig {
	v, s := int(sig.Vec), int(sig.Itemsize)
	switch {
	case v >= 16:
		return TileConfig{128, 128, 256, true}
	case v == 8:
		return TileConfig{64, 128, 128, true}
	case v == 4:
		return TileConfig{64, 64, 256, false}
	case v == 2 && 64*64*s <= 32<<10:
		return TileConfig{64, 64, 256, false}
	}
	return TileConfig{32, 32, 256, false}
}

// wordCols reports whether sig's tile kernel uses the word micro-tile.
func wordCols(sig layout.Signature, tc TileConfig) bool {
	s := int(sig.Itemsize)
	return tc.WordCols && s < 4 && (s*int(sig.Vec))%4 == 0
}

// Name returns the kernel's extern "C" name, which spells the signature so a
// profiler trace says which kernel ran: sk_tile_nd3_f0_i4_v4_i32 is the tile
// kernel for 3 canonical dims, src fastest dim 0, 4-byte items, 4-wide vectors,
// 32-bit indices.
func Name(sig layout.Signature) string {
	b := []byte("sk_")
	b = append(b, sig.Class.String()...)
	b = append(b, "_nd"...)
	b = strconv.AppendInt(b, int64(sig.NDim), 10)
	if sig.Class == layout.ClassTile {
		b = append(b, "_f"...)
		b = strconv.AppendInt(b, int64(sig.Fast), 10)
	}
	b = append(b, "_i"...)
	b = strconv.AppendInt(b, int64(sig.Itemsize), 10)
	b = append(b, "_v"...)
	b = strconv.AppendInt(b, int64(sig.Vec), 10)
	b = append(b, "_i"...)
	b = strconv.AppendInt(b, int64(sig.IndexBits()), 10)
	return string(b)
}

// Check reports whether a kernel can be generated for sig: a valid signature
// of a class that has a kernel (contig, elem, tile, bcast, fill), with
// NDim ≤ MaxNDim, and NDim = 1 for contig.
func Check(sig layout.Signature) error {
	if err := sig.Validate(); err != nil {
		return err
	}
	switch sig.Class {
	case layout.ClassContiguous:
		if sig.NDim != 1 {
			return fmt.Errorf("gen: %v: contig kernels are 1-d", sig)
		}
	case layout.ClassElementwise, layout.ClassTile, layout.ClassBroadcast, layout.ClassFill:
	default:
		return fmt.Errorf("gen: %v: class %v has no kernel", sig, sig.Class)
	}
	if int(sig.NDim) > MaxNDim {
		return fmt.Errorf("gen: %v: nd=%d is over %d", sig, sig.NDim, MaxNDim)
	}
	return nil
}

// MaxNDim is the largest canonical rank a kernel is generated for; the
// argument block holds 6 arrays of NDim entries and must fit the 4 KiB
// parameter space.
const MaxNDim = 64

// ArgsSize returns the size in bytes of the argument block of an nd-dim
// kernel: struct sk_args in the CUDA source, see Pack.
func ArgsSize(nd int) int {
	n := 8*4 + 8*5*nd + 4*nd
	return (n + 7) &^ 7
}

// Magic32 returns the multiplier and shift that divide any n in [0, 2³¹) by
// d ≥ 1 as __umulhi(n, mul) >> shr (d == 1 is special-cased by the kernels:
// mul = 0). Powers of two come out as mul = 2³¹, shr = log2(d)-1.
func Magic32(d uint64) (mul uint64, shr uint32) {
	if d <= 1 {
		return 0, 0
	}
	l := uint(bits.Len64(d - 1)) // ceil(log2 d)
	p := 31 + l
	mul = ((uint64(1) << p) + d - 1) / d
	return mul, uint32(l - 1)
}

// Magic64 returns the multiplier and shift that divide any n in [0, 2⁶³) by
// d ≥ 1 as __umul64hi(n, mul) >> shr (d == 1: mul = 0, special-cased).
func Magic64(d uint64) (mul uint64, shr uint32) {
	if d <= 1 {
		return 0, 0
	}
	l := uint(bits.Len64(d - 1))
	q, r := bits.Div64(uint64(1)<<(l-1), 0, d) // 2^(63+l) / d
	if r != 0 {
		q++
	}
	return q, uint32(l - 1)
}

// Magic returns Magic64 or Magic32 as sig's index width asks.
func Magic(sig layout.Signature, d uint64) (uint64, uint32) {
	if sig.Index64 {
		return Magic64(d)
	}
	return Magic32(d)
}

func ceilDiv(a, b int64) int64 { return (a + b - 1) / b }

func nextPow2(n int64) int64 {
	if n <= 1 {
		return 1
	}
	return int64(1) << bits.Len64(uint64(n-1))
}
