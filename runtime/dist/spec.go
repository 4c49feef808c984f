package dist

import (
	"fmt"
	"strconv"
	"strings"
)

// Spec says how a tensor is split over a mesh, as JAX's PartitionSpec
// does: for each tensor dim, the mesh axes the dim is split over, major
// first. An empty (or nil) entry means the dim is not split; entries past
// the end of the Spec count as empty, so Spec{{0}} splits the rows of a
// tensor of any rank over mesh axis 0. A mesh axis that no dim uses means
// the tensor is replicated over that axis: the ranks that differ only on
// such axes hold the same block. Using one mesh axis for two dims (or
// twice in one) is an ErrSpec error.
//
// A dim split over axes (a, b) of sizes (A, B) is cut into A·B parts, the
// rank at coordinates (i, j) on them holding part i·B + j (see
// Sharding.BlockOf).
type Spec [][]int

// String prints the spec as JAX prints a PartitionSpec, with mesh axes by
// number: "(0, None, (1, 2))".
func (s Spec) String() string {
	var b strings.Builder
	b.WriteByte('(')
	for d, axes := range s {
		if d > 0 {
			b.WriteString(", ")
		}
		switch len(axes) {
		case 0:
			b.WriteString("None")
		case 1:
			b.WriteString(strconv.Itoa(axes[0]))
		default:
			b.WriteByte('(')
			for i, a := range axes {
				if i > 0 {
					b.WriteString(", ")
				}
				b.WriteString(strconv.Itoa(a))
			}
			b.WriteByte(')')
		}
	}
	b.WriteByte(')')
	return b.String()
}

// normalize checks s against a mesh and a tensor of ndim dims and returns
// a deep copy with exactly one entry per dim (nil for a dim not split).
func (s Spec) normalize(m Mesh, ndim int) (Spec, error) {
	if len(s) > ndim {
		return nil, fmt.Errorf("%w: spec %v has %d entries for a tensor of %d dims", ErrSpec, s, len(s), ndim)
	}
	usedBy := make([]int, m.NDim()) // dim+1 that uses each axis, 0: none
	out := make(Spec, ndim)
	for d, axes := range s {
		for _, a := range axes {
			if a < 0 || a >= m.NDim() {
				return nil, fmt.Errorf("%w: spec %v: dim %d names mesh axis %d, %v has axes 0..%d", ErrSpec, s, d, a, m, m.NDim()-1)
			}
			if u := usedBy[a]; u != 0 {
				return nil, fmt.Errorf("%w: spec %v: mesh axis %d split both dim %d and dim %d", ErrSpec, s, a, u-1, d)
			}
			usedBy[a] = d + 1
		}
		if len(axes) > 0 {
			out[d] = append([]int(nil), axes...)
		}
	}
	return out, nil
}
