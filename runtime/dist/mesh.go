package dist

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// MaxRanks is the most ranks a mesh may have: NCCL counts ranks in a C
// int, and a group of more would not fit it.
const MaxRanks = math.MaxInt32

// Mesh is the shape of a device mesh: the sizes of its axes. The ranks of
// a group are laid out over it row-major (the last axis fastest), so rank r
// has as mesh coordinates the digits of r in the mixed radix of the sizes:
// on a 2×3 mesh rank 4 is at (1, 1). Tensors are split over its axes (see
// Spec). The zero Mesh has no axes and one rank. A Mesh is an immutable
// value; build one with NewMesh.
type Mesh struct{ sizes []int }

// NewMesh returns the mesh with the given axis sizes, major first. Each
// size must be at least 1 and their product, the number of ranks, at most
// MaxRanks; else it is an ErrMesh error. No sizes gives the mesh of one
// rank.
func NewMesh(sizes ...int) (Mesh, error) {
	n := 1
	for i, s := range sizes {
		if s < 1 {
			return Mesh{}, fmt.Errorf("%w: axis %d has size %d, want at least 1 (sizes %v)", ErrMesh, i, s, sizes)
		}
		if n > MaxRanks/s {
			return Mesh{}, fmt.Errorf("%w: sizes %v make more than %d ranks", ErrMesh, sizes, MaxRanks)
		}
		n *= s
	}
	return Mesh{sizes: slices.Clone(sizes)}, nil
}

// NDim returns the number of mesh axes.
func (m Mesh) NDim() int { return len(m.sizes) }

// Sizes returns the axis sizes, major first (a copy).
func (m Mesh) Sizes() []int { return slices.Clone(m.sizes) }

// Size returns the number of ranks: the product of the axis sizes.
func (m Mesh) Size() int {
	n := 1
	for _, s := range m.sizes {
		n *= s
	}
	return n
}

// Coords returns the mesh coordinates of rank (one per axis). A rank
// outside [0, Size()) is an ErrRank error.
func (m Mesh) Coords(rank int) ([]int, error) {
	if rank < 0 || rank >= m.Size() {
		return nil, fmt.Errorf("%w: rank %d outside mesh %v of %d ranks", ErrRank, rank, m, m.Size())
	}
	c := make([]int, len(m.sizes))
	m.coords(rank, c)
	return c, nil
}

// Rank returns the rank at the given mesh coordinates, the inverse of
// Coords. A wrong number of coordinates, or one outside its axis, is an
// ErrRank error.
func (m Mesh) Rank(coords ...int) (int, error) {
	if len(coords) != len(m.sizes) {
		return 0, fmt.Errorf("%w: %d coordinates %v on mesh %v of %d axes", ErrRank, len(coords), coords, m, len(m.sizes))
	}
	for a, c := range coords {
		if c < 0 || c >= m.sizes[a] {
			return 0, fmt.Errorf("%w: coordinate %d on axis %d of size %d (mesh %v)", ErrRank, c, a, m.sizes[a], m)
		}
	}
	return m.rank(coords), nil
}

// Equal reports whether m and o have the same axis sizes.
func (m Mesh) Equal(o Mesh) bool { return slices.Equal(m.sizes, o.sizes) }

// String prints the mesh as its sizes, e.g. "mesh(2,4)".
func (m Mesh) String() string {
	var b strings.Builder
	b.WriteString("mesh(")
	for i, s := range m.sizes {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(s))
	}
	b.WriteByte(')')
	return b.String()
}

// coords writes the coordinates of a valid rank into c (len NDim()).
func (m Mesh) coords(rank int, c []int) {
	for a := len(m.sizes) - 1; a >= 0; a-- {
		c[a] = rank % m.sizes[a]
		rank /= m.sizes[a]
	}
}

// rank returns the rank of valid coordinates.
func (m Mesh) rank(c []int) int {
	r := 0
	for a, s := range m.sizes {
		r = r*s + c[a]
	}
	return r
}

// radix returns the mixed-radix number whose digits are c's coordinates on
// the given axes (major first), and the product of their sizes: the index
// of a rank among the ranks that differ from it only on those axes.
func (m Mesh) radix(c []int, axes []int) (idx, n int) {
	n = 1
	for _, a := range axes {
		idx = idx*m.sizes[a] + c[a]
		n *= m.sizes[a]
	}
	return idx, n
}

// product returns the product of the sizes of the given axes: the number
// of ranks that differ only on them.
func (m Mesh) product(axes []int) int {
	n := 1
	for _, a := range axes {
		n *= m.sizes[a]
	}
	return n
}
