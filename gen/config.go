package gen

import (
	"fmt"
	"math/bits"
	"strconv"

	"github.com/stridekit/stridekit/internal/tilegeom"
	"github.com/stridekit/stridekit/layout"
)

// FormatVersion identifies the layout of the generated CUDA sources and the
// argument blocks. It is part of every source (and so of every cache key),
// and files written by stridegen check it at compile time (see Version4),
// so a generator change that alters the format breaks the build of stale
// generated files instead of miscompiling them.
const FormatVersion = 4

// Version4 exists while FormatVersion is 4; generated files reference it.
const Version4 = FormatVersion

// Grid limits of CUDA.
const (
	// MaxGridY is the largest grid.y (and grid.z) CUDA accepts.
	MaxGridY = 65535
	// MaxGridX caps grid.x of the looping tile kernels.
	MaxGridX = 1 << 30
)

// ElemCols1D is how many vectors along its one dim a thread of the 1-d
// elementwise kernel (a strided gather with no outer rows) moves per trip,
// blockDim.x vectors apart. On an H200, a[:, ::2] of a 16384×32768 f32
// (1-d, src stride 2; % of cuMemcpyDtoD in the same run) ran at 52.7% with
// 1, 66.5% with 2, 69.2% with 4, 68.9% with 8.
const ElemCols1D = 4

// rowsPerThread is R of the elementwise, broadcast and fill kernels: the
// knob's Rows, or 1 for a 1-d kernel, which has one row.
func rowsPerThread(sig layout.Signature, k Knobs) int {
	if sig.NDim == 1 && sig.Class == layout.ClassElementwise {
		return 1
	}
	return k.Rows
}

// colsPerThread is XU of the elementwise, broadcast and fill kernels: how
// many vectors along the innermost dim one thread moves per trip.
func colsPerThread(sig layout.Signature) int {
	if sig.Class == layout.ClassElementwise && sig.NDim == 1 {
		return ElemCols1D
	}
	return 1
}

// rowsBlockX is blockDim.x of the rows kernels for inner vectors along the
// innermost dim, x vectors per thread and threads per block. A row that
// fits one block gets exactly its ceil(inner/x) threads: blockDim.y rows
// share the block, each thread unravels its own row, so a warp may span two
// rows. A longer row is split evenly over the fewest blocks, each a whole
// number of warps so that every warp starts 32 vectors into the row. The
// next power of two left up to half the threads idle (a common run of 37
// ran 64 threads a row; one of 300 ran 512 on 256-thread blocks); an even
// split not rounded to warps put each block's warps across cache lines (903
// as four blocks of 226 ran 7% slower than four of 256 on an H200).
func rowsBlockX(inner int64, x, threads int) int64 {
	need := max(ceilDiv(inner, int64(x)), 1)
	if need <= int64(threads) {
		return need
	}
	return ceilDiv(ceilDiv(need, ceilDiv(need, int64(threads))), 32) * 32
}

// TileConfig is the shape of the tile kernel's work: a tile of Rows × Cols
// elements in shared memory, Rows along dst's fastest dim (dim NDim-1) and
// Cols along src's fastest dim (dim Fast), moved by Threads threads. Rows
// and Cols are powers of two and multiples of Vec (tilegeom.TileEdges).
type TileConfig struct {
	Rows, Cols, Threads   int
	WordCols, StageStores bool
	// Pipe is Knobs.Pipe where the tile's loads can be asynchronous
	// copies (vectors of 4, 8 or 16 bytes, or staged words), else 0.
	Pipe int
}

// tileConfig returns the tile of a ClassTile signature under knobs k.
func tileConfig(sig layout.Signature, k Knobs) TileConfig {
	r, c := tilegeom.TileEdges(int(sig.Itemsize), int(sig.Vec))
	s := int(sig.Itemsize)
	vb := s * int(sig.Vec)
	tc := TileConfig{Rows: r, Cols: c, Threads: k.Threads,
		WordCols:    k.WordCols && s < 4 && s&(s-1) == 0 && vb%4 == 0,
		StageStores: k.StageStores && vb%4 == 0 && vb&(vb-1) != 0 && max(r, c)*s/4 <= k.Threads}
	if k.Pipe > 1 && (tc.StageStores || vb == 4 || vb == 8 || vb == 16) {
		tc.Pipe = k.Pipe
	}
	return tc
}

// TilePipe reports whether the tile kernel of plan p under knobs k takes
// its tiles in turn with each next tile's loads in flight (Knobs.Pipe,
// where the plan's vectors allow it).
func TilePipe(k Knobs, p *layout.Plan) bool {
	return p.Sig.Class == layout.ClassTile && tileConfig(p.Sig, k).Pipe > 1
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
// of a class that has a kernel (elem, tile, btile, bcast, fill, gather), with NDim ≤
// MaxNDim (layout.MaxBoxNDim for btile).
func Check(sig layout.Signature) error {
	if err := sig.Validate(); err != nil {
		return err
	}
	switch sig.Class {
	case layout.ClassElementwise, layout.ClassTile, layout.ClassBroadcast, layout.ClassFill, layout.ClassBoxTile, layout.ClassGather:
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

// ArgsSize returns the size in bytes of the argument block of sig's kernel:
// struct A in its CUDA source (see Pack).
func ArgsSize(sig layout.Signature) int {
	nd := int(sig.NDim)
	if sig.Class == layout.ClassBoxTile && nd < len(boxSizes) {
		return boxSizes[nd]
	}
	if nd < len(rowsSizes) {
		return rowsSizes[nd]
	}
	return argsSize(argSpec(sig.Class), nd)
}

// MaxArgsSize returns the largest argument block (ArgsSize) of any kernel of
// canonical rank up to nd: room a caller can set aside for Pack before it
// knows the plan's class and rank.
func MaxArgsSize(nd int) int {
	nd = max(nd, 0)
	rows := argsSize(rowsArgs, nd)
	if nd < len(rowsSizes) {
		rows = rowsSizes[nd]
	}
	return max(rows, boxSizes[min(nd, len(boxSizes)-1)])
}

// The argument block sizes by canonical rank, computed once.
var rowsSizes, boxSizes = sizesOf(rowsArgs, MaxNDim), sizesOf(boxArgs, layout.MaxBoxNDim)

func sizesOf(spec []argField, maxND int) []int {
	s := make([]int, maxND+1)
	for nd := range s {
		s[nd] = argsSize(spec, nd)
	}
	return s
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

func log2(n int) int { return bits.Len(uint(n)) - 1 }
