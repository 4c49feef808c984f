package dist

import (
	"fmt"
	"slices"

	"github.com/stridekit/stridekit/layout"
	"github.com/stridekit/stridekit/runtime/cuda"
	"github.com/stridekit/stridekit/runtime/memview"
)

// DistView is one rank's part of a distributed tensor: the tensor's
// Sharding (global shape, mesh, spec), its dtype, the rank, and the rank's
// local view, which holds the rank's block (Sharding.BlockOf). The local
// view's shape is the block's shape; its strides are anything memview
// accepts (permuted, padded, reversed), and its memory host or device. A
// DistView is immutable; the data it points to is the local view's.
type DistView struct {
	sh    Sharding
	dt    layout.DType
	rank  int
	block Block
	local *memview.StridedMemoryView
}

// NewDistView returns rank's view of a tensor of dtype dt sharded as sh,
// whose block is held by local. It fails with ErrRank for a rank outside
// the mesh, ErrDType for a dtype that is invalid, not of whole bytes or
// not local's, ErrShape when local's shape is not the rank's block shape,
// and ErrNil for a nil local view.
func NewDistView(sh Sharding, dt layout.DType, rank int, local *memview.StridedMemoryView) (*DistView, error) {
	if err := checkDType(dt); err != nil {
		return nil, err
	}
	b, err := sh.BlockOf(rank)
	if err != nil {
		return nil, err
	}
	if local == nil {
		return nil, fmt.Errorf("%w: local view of rank %d of %v", ErrNil, rank, sh)
	}
	if local.DType() != dt {
		return nil, fmt.Errorf("%w: local view %v of rank %d is of %v, the tensor of %v", ErrDType, local, rank, local.DType(), dt)
	}
	if !slices.Equal(local.Shape(), b.Shape()) {
		return nil, fmt.Errorf("%w: local view %v of rank %d has shape %v, its block %v of %v has shape %v",
			ErrShape, local, rank, local.Shape(), b, sh, b.Shape())
	}
	return &DistView{sh: sh, dt: dt, rank: rank, block: b, local: local}, nil
}

// NewHostDistView returns rank's view of a tensor of dtype dt sharded as
// sh, with a local view of new Go memory, zeroed and dense in C order: the
// quick way to a DistView for tests and host programs. Errors are
// NewDistView's.
func NewHostDistView(sh Sharding, dt layout.DType, rank int) (*DistView, error) {
	l, err := sh.LocalLayout(rank, dt, layout.C)
	if err != nil {
		return nil, err
	}
	b, err := hostBytes(l.RequiredSizeInBytes())
	if err != nil {
		return nil, fmt.Errorf("dist: local view of rank %d of %v: %w", rank, sh, err)
	}
	raw, err := memview.FromHost(b, l)
	if err != nil {
		return nil, fmt.Errorf("dist: local view of rank %d of %v: %w", rank, sh, err)
	}
	local, err := raw.View(l, dt)
	if err != nil {
		return nil, fmt.Errorf("dist: local view of rank %d of %v: %w", rank, sh, err)
	}
	return NewDistView(sh, dt, rank, local)
}

// Sharding returns how the tensor is laid out over the mesh.
func (d *DistView) Sharding() Sharding { return d.sh }

// Shape returns the global shape (a copy).
func (d *DistView) Shape() []int64 { return d.sh.Shape() }

// Mesh returns the mesh the tensor is split over.
func (d *DistView) Mesh() Mesh { return d.sh.mesh }

// Spec returns the tensor's spec, one entry per dim (a copy).
func (d *DistView) Spec() Spec { return d.sh.Spec() }

// DType returns the element type.
func (d *DistView) DType() layout.DType { return d.dt }

// Rank returns the rank whose part this is.
func (d *DistView) Rank() int { return d.rank }

// Block returns the rank's block of the global tensor (a copy).
func (d *DistView) Block() Block { return slices.Clone(d.block) }

// Local returns the rank's local view, which holds its block.
func (d *DistView) Local() *memview.StridedMemoryView { return d.local }

// String describes the view: sharding, dtype, rank, block and local view.
func (d *DistView) String() string {
	if d == nil {
		return "<nil DistView>"
	}
	return fmt.Sprintf("%v %v rank %d block %v: %v", d.sh, d.dt, d.rank, d.block, d.local)
}

// LoadFrom copies the rank's block of global, a view of the whole tensor,
// into the local view: scattering a tensor one rank at a time. s is the
// stream of the copy, as for memview's CopyFrom (nil for host memory).
// global must have the global shape (ErrShape) and the dtype (ErrDType).
func (d *DistView) LoadFrom(global *memview.StridedMemoryView, s *cuda.Stream) error {
	part, err := d.part(global)
	if err != nil {
		return err
	}
	if err := d.local.CopyFrom(part, s); err != nil {
		return fmt.Errorf("dist: load rank %d's block %v: %w", d.rank, d.block, err)
	}
	return nil
}

// StoreTo copies the local view into the rank's block of global, a view of
// the whole tensor: gathering a tensor one rank at a time. Replicas of a
// block write the same bytes; when ranks store concurrently, let one of
// each block's replicas do it. Errors are LoadFrom's.
func (d *DistView) StoreTo(global *memview.StridedMemoryView, s *cuda.Stream) error {
	part, err := d.part(global)
	if err != nil {
		return err
	}
	if err := part.CopyFrom(d.local, s); err != nil {
		return fmt.Errorf("dist: store rank %d's block %v: %w", d.rank, d.block, err)
	}
	return nil
}

// part returns the rank's block of global.
func (d *DistView) part(global *memview.StridedMemoryView) (*memview.StridedMemoryView, error) {
	switch {
	case d == nil || global == nil:
		return nil, fmt.Errorf("%w: global view %v of distributed view %v", ErrNil, global, d)
	case !slices.Equal(global.Shape(), d.sh.shape):
		return nil, fmt.Errorf("%w: global view %v has shape %v, the tensor %v", ErrShape, global, global.Shape(), d.sh.shape)
	case global.DType() != d.dt:
		return nil, fmt.Errorf("%w: global view %v is of %v, the tensor of %v", ErrDType, global, global.DType(), d.dt)
	}
	whole := make(Block, len(d.block))
	for k, e := range d.sh.shape {
		whole[k] = Interval{0, e}
	}
	return global.Slice(d.block.within(whole)...)
}
