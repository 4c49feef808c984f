package dist

import "errors"

// Sentinel errors. Every error of this package wraps one of these (or an
// error of package memview or layout, from the copies it runs), so callers
// can test the kind of failure with errors.Is while the message names the
// argument and value at fault.
var (
	// ErrMesh reports a bad mesh (an axis size below 1, too many ranks),
	// or a mesh whose number of ranks is not the group's.
	ErrMesh = errors.New("dist: bad mesh")
	// ErrSpec reports a bad partition spec: more entries than the tensor has
	// dims, a mesh axis out of range, or one mesh axis used twice.
	ErrSpec = errors.New("dist: bad partition spec")
	// ErrShape reports a negative extent, a local view whose shape is not
	// its rank's block, or two distributed views of different global
	// shapes.
	ErrShape = errors.New("dist: bad shape")
	// ErrRank reports a rank out of range, or views and a transport that do
	// not agree on which rank this is.
	ErrRank = errors.New("dist: bad rank")
	// ErrDType reports an invalid or sub-byte dtype, a local view of another
	// dtype than its distributed view's, or two views of different dtypes.
	ErrDType = errors.New("dist: bad dtype")
	// ErrNil reports a nil transport, view or distributed view.
	ErrNil = errors.New("dist: nil argument")
	// ErrBuffer reports an exchange buffer that is not what Transport.Alloc
	// promises: a contiguous 1-D uint8 view of the size asked for (for the
	// host transport: of host memory, send and recv apart).
	ErrBuffer = errors.New("dist: bad exchange buffer")
	// ErrSegment reports bad exchange segments: not one per rank, outside
	// their buffer, or a length the peer rank does not agree with (what one
	// rank sends another must be what that rank expects to receive).
	ErrSegment = errors.New("dist: bad exchange segment")
	// ErrTimeout reports an exchange that gave up waiting for the other
	// ranks: its context ended (the error wraps the context's error too,
	// e.g. context.DeadlineExceeded). The group is broken from then on.
	ErrTimeout = errors.New("dist: ranks did not all arrive")
	// ErrAborted reports an exchange in a group one of whose ranks was
	// aborted or closed. The group is broken from then on.
	ErrAborted = errors.New("dist: group aborted")
	// ErrClosed reports the use of a closed Reshard or transport.
	ErrClosed = errors.New("dist: closed")
)
