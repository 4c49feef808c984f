package layout

import "errors"

// Sentinel errors. Every error returned by this package wraps exactly one of
// these, so callers can test the kind of failure with errors.Is while the
// message names the offending argument and value.
var (
	// ErrShape reports a bad extent, a shape of the wrong length, or two
	// shapes that do not match (and cannot be broadcast).
	ErrShape = errors.New("layout: bad shape")
	// ErrStride reports a bad stride: wrong count, or a byte stride that is
	// not a multiple of the itemsize.
	ErrStride = errors.New("layout: bad stride")
	// ErrItemsize reports an itemsize that is not positive or that does not
	// fit the requested operation (e.g. Repack to a size that does not divide).
	ErrItemsize = errors.New("layout: bad itemsize")
	// ErrAxis reports an axis or permutation that is out of range or repeated.
	ErrAxis = errors.New("layout: bad axis")
	// ErrRange reports a slice range with a zero step or an index out of range.
	ErrRange = errors.New("layout: bad range")
	// ErrNotViewable reports a reshape (or repack) that cannot be expressed as a
	// view of the same memory: the data would have to be copied first.
	ErrNotViewable = errors.New("layout: not viewable without a copy")
	// ErrOverlappingDst reports a copy destination in which two indices share
	// one memory location; writing through it would lose data.
	ErrOverlappingDst = errors.New("layout: destination elements overlap")
	// ErrOverflow reports a size, offset or extent whose computation would
	// overflow int64.
	ErrOverflow = errors.New("layout: integer overflow")
	// ErrDType reports an unknown data type or one a layout cannot carry
	// (e.g. a packed sub-byte type whose innermost dim cannot be repacked).
	ErrDType = errors.New("layout: bad dtype")
	// ErrAlignment reports a pointer alignment that is not a power of two.
	ErrAlignment = errors.New("layout: bad alignment")
	// ErrOption reports a planner option out of its range (PlanOptions'
	// TileBytes negative).
	ErrOption = errors.New("layout: bad plan option")
)
