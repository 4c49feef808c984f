package dist

import (
	"fmt"
	"math/bits"
	"slices"
	"strconv"
	"strings"

	"github.com/stridekit/stridekit/layout"
)

// Interval is the index range [Lo, Hi) of one dim.
type Interval struct{ Lo, Hi int64 }

// Len returns the number of indices in the interval (0 when Hi ≤ Lo).
func (i Interval) Len() int64 { return max(i.Hi-i.Lo, 0) }

// Block is a box of a tensor's indices: one Interval per dim. A rank's
// block under a sharding is the part of the global tensor its local view
// holds.
type Block []Interval

// Shape returns the extents of the box.
func (b Block) Shape() []int64 {
	s := make([]int64, len(b))
	for d, iv := range b {
		s[d] = iv.Len()
	}
	return s
}

// Volume returns the number of elements in the box (1 for the box of a
// 0-dim tensor, 0 when a dim is empty). A Block from BlockOf is within a
// valid global shape, so its volume is at most that shape's.
func (b Block) Volume() int64 {
	v := int64(1)
	for _, iv := range b {
		hi, lo := bits.Mul64(uint64(v), uint64(iv.Len()))
		if hi != 0 || lo > 1<<63-1 {
			return -1
		}
		v = int64(lo)
	}
	return v
}

// Empty reports whether the box holds no element.
func (b Block) Empty() bool {
	for _, iv := range b {
		if iv.Len() == 0 {
			return true
		}
	}
	return false
}

// String prints the box as Python slices, e.g. "[0:2, 4:8]".
func (b Block) String() string {
	var s strings.Builder
	s.WriteByte('[')
	for d, iv := range b {
		if d > 0 {
			s.WriteString(", ")
		}
		s.WriteString(strconv.FormatInt(iv.Lo, 10))
		s.WriteByte(':')
		s.WriteString(strconv.FormatInt(iv.Hi, 10))
	}
	s.WriteByte(']')
	return s.String()
}

// intersect returns the box b ∩ c (of the same number of dims).
func (b Block) intersect(c Block) Block {
	out := make(Block, len(b))
	for d := range b {
		out[d] = Interval{max(b[d].Lo, c[d].Lo), min(b[d].Hi, c[d].Hi)}
	}
	return out
}

// within returns the slice ranges selecting box b in a view of block
// whole, which contains it.
func (b Block) within(whole Block) []layout.Range {
	r := make([]layout.Range, len(b))
	for d := range b {
		r[d] = layout.Span(b[d].Lo-whole[d].Lo, b[d].Hi-whole[d].Lo)
	}
	return r
}

// Sharding is how a tensor is laid out over a mesh: its global shape, the
// mesh and the Spec splitting its dims over the mesh axes. It says which
// block of the tensor each rank holds (BlockOf) without holding any data; a
// DistView adds a rank's local view. Build one with NewSharding. The zero
// Sharding is a scalar on a mesh of one rank. A Sharding is an immutable
// value.
type Sharding struct {
	shape []int64
	mesh  Mesh
	spec  Spec // one entry per dim
	split []int
	repl  []int
}

// NewSharding returns the sharding of a tensor of the given global shape
// over mesh m split by spec. A negative extent is an ErrShape error, a
// spec that does not fit the mesh and the shape an ErrSpec error.
func NewSharding(shape []int64, m Mesh, spec Spec) (Sharding, error) {
	for d, e := range shape {
		if e < 0 {
			return Sharding{}, fmt.Errorf("%w: shape %v: dim %d has extent %d", ErrShape, shape, d, e)
		}
	}
	ns, err := spec.normalize(m, len(shape))
	if err != nil {
		return Sharding{}, err
	}
	sh := Sharding{shape: slices.Clone(shape), mesh: m, spec: ns}
	used := make([]bool, m.NDim())
	for _, axes := range ns {
		for _, a := range axes {
			used[a] = true
		}
	}
	for a, u := range used {
		if u {
			sh.split = append(sh.split, a)
		} else {
			sh.repl = append(sh.repl, a)
		}
	}
	return sh, nil
}

// Shape returns the global shape (a copy).
func (s Sharding) Shape() []int64 { return slices.Clone(s.shape) }

// NDim returns the number of dims of the tensor.
func (s Sharding) NDim() int { return len(s.shape) }

// Mesh returns the mesh the tensor is split over.
func (s Sharding) Mesh() Mesh { return s.mesh }

// Spec returns the spec, with one entry per dim (a copy; nil entries for
// dims not split).
func (s Sharding) Spec() Spec {
	out := make(Spec, len(s.spec))
	for d, axes := range s.spec {
		out[d] = slices.Clone(axes)
	}
	return out
}

// Parts returns, per dim, the number of parts the dim is cut into: the
// product of the sizes of the mesh axes that split it (1 for a dim not
// split).
func (s Sharding) Parts() []int {
	p := make([]int, len(s.spec))
	for d, axes := range s.spec {
		p[d] = s.mesh.product(axes)
	}
	return p
}

// Replicas returns how many ranks hold each block: the product of the
// sizes of the mesh axes no dim is split over.
func (s Sharding) Replicas() int {
	return s.mesh.product(s.repl)
}

// BlockOf returns the block of the global tensor that rank holds. On a dim
// of extent n cut into k parts, part i is [i·n/k, (i+1)·n/k) (rounded
// down): the parts differ by one index at most, and some are empty when
// n < k. The part a rank holds on a dim split over mesh axes (a, b, …) is
// its coordinates on those axes read as a mixed-radix number, a major (see
// Spec). A rank outside the mesh is an ErrRank error.
func (s Sharding) BlockOf(rank int) (Block, error) {
	if rank < 0 || rank >= s.mesh.Size() {
		return nil, fmt.Errorf("%w: rank %d outside %v of %d ranks", ErrRank, rank, s.mesh, s.mesh.Size())
	}
	c := make([]int, s.mesh.NDim())
	s.mesh.coords(rank, c)
	return s.blockAt(c), nil
}

// blockAt returns the block of the rank at mesh coordinates c.
func (s Sharding) blockAt(c []int) Block {
	b := make(Block, len(s.shape))
	for d, n := range s.shape {
		i, k := s.mesh.radix(c, s.spec[d])
		b[d] = Interval{cut(n, i, k), cut(n, i+1, k)}
	}
	return b
}

// cut returns i·n/k rounded down, for 0 ≤ i ≤ k and n ≥ 0, without
// overflow: the product is formed in 128 bits.
func cut(n int64, i, k int) int64 {
	hi, lo := bits.Mul64(uint64(i), uint64(n))
	q, _ := bits.Div64(hi, lo, uint64(k)) // hi < k since i ≤ k and n < 2⁶³
	return int64(q)
}

// LocalLayout returns the dense layout, in the given order (layout.C,
// layout.F or layout.Perm), of rank's block of elements of dt: the layout
// to allocate a rank's local view with. dt must be valid and of whole
// bytes (ErrDType); the rank must be in the mesh (ErrRank).
func (s Sharding) LocalLayout(rank int, dt layout.DType, order layout.Order) (layout.Layout, error) {
	if err := checkDType(dt); err != nil {
		return layout.Layout{}, err
	}
	b, err := s.BlockOf(rank)
	if err != nil {
		return layout.Layout{}, err
	}
	return layout.Dense(b.Shape(), dt.Itemsize(), order)
}

// String prints the sharding, e.g. "(8,6) over mesh(2,2) as (0, 1)".
func (s Sharding) String() string {
	var b strings.Builder
	b.WriteByte('(')
	for d, e := range s.shape {
		if d > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatInt(e, 10))
	}
	fmt.Fprintf(&b, ") over %v as %v", s.mesh, s.spec)
	return b.String()
}

// checkDType reports whether dt can be the dtype of a distributed view:
// valid, with items of whole bytes (a block boundary must fall between
// bytes, which packed fp4 and fp6 elements do not promise).
func checkDType(dt layout.DType) error {
	if !dt.IsValid() || dt.Itemsize() == 0 {
		return fmt.Errorf("%w: %v: want a valid dtype of whole-byte items", ErrDType, dt)
	}
	return nil
}
