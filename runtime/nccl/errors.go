package nccl

import (
	"errors"
	"strconv"

	"github.com/stridekit/stridekit/runtime/dist"
)

// sentinel is an error value of this package that also matches, under
// errors.Is, the sentinel of package dist it stands for: a caller that only
// knows dist.Transport (dist.Reshard, say) tests a Comm's errors with
// dist.ErrTimeout and the like.
type sentinel struct {
	msg    string
	parent error
}

func (e *sentinel) Error() string { return e.msg }

// Unwrap returns the dist sentinel e stands for.
func (e *sentinel) Unwrap() error { return e.parent }

// Sentinel errors. Every error of this package wraps one of these, or an
// *Error (a failed NCCL call), or an error of package runtime/cuda,
// memview or dlpack, and names the argument and value at fault. Those
// marked "is dist.X" also match dist's sentinel X under errors.Is.
var (
	// ErrNoNCCL reports that no NCCL library could be loaded. The error
	// is a *LoadError listing every candidate tried and why it failed.
	ErrNoNCCL = errors.New("nccl: no NCCL library")
	// ErrNotSupported reports what the loaded NCCL or this platform cannot
	// do: NCCL passes its unique id by value, which this package only
	// knows how to do on amd64 and arm64.
	ErrNotSupported = errors.New("nccl: not supported")
	// ErrRank reports a group size below 1 or a rank outside [0, size)
	// (is dist.ErrRank).
	ErrRank error = &sentinel{"nccl: bad rank or group size", dist.ErrRank}
	// ErrNil reports a nil communicator, device or view (is dist.ErrNil).
	ErrNil error = &sentinel{"nccl: nil argument", dist.ErrNil}
	// ErrStream reports a nil stream where NCCL needs one, or a stream of
	// a device other than the communicator's.
	ErrStream = errors.New("nccl: bad stream")
	// ErrBuffer reports an exchange buffer that is not a contiguous 1-D
	// view of bytes in device memory of the communicator's device, a
	// read-only receive buffer, send and receive buffers that share
	// memory, or a size that is negative or too large (is dist.ErrBuffer).
	ErrBuffer error = &sentinel{"nccl: bad exchange buffer", dist.ErrBuffer}
	// ErrSegment reports exchange segments that are not one per rank or
	// lie outside their buffer (is dist.ErrSegment).
	ErrSegment error = &sentinel{"nccl: bad exchange segment", dist.ErrSegment}
	// ErrTimeout reports a call that gave up waiting for the other ranks
	// because its context ended; the error wraps the context's error too
	// (context.DeadlineExceeded, context.Canceled). A communicator is
	// aborted, and unusable, after it (is dist.ErrTimeout).
	ErrTimeout error = &sentinel{"nccl: ranks did not all arrive", dist.ErrTimeout}
	// ErrAborted reports the use of a communicator that was aborted, by
	// Abort or after an error (is dist.ErrAborted).
	ErrAborted error = &sentinel{"nccl: communicator aborted", dist.ErrAborted}
	// ErrClosed reports the use of a closed communicator (is
	// dist.ErrClosed).
	ErrClosed error = &sentinel{"nccl: communicator closed", dist.ErrClosed}
	// ErrBadID reports a unique id file or message that is not one this
	// package wrote: the wrong size or header.
	ErrBadID = errors.New("nccl: malformed unique id")
	// ErrConfig reports a bootstrap configuration that cannot work: no
	// way (or two ways) to publish the id for several ranks, or an
	// environment variable that is not a number.
	ErrConfig = errors.New("nccl: bad bootstrap configuration")
)

// NCCL result codes (ncclResult_t).
const (
	ncclSuccess            = 0
	ncclUnhandledCudaError = 1
	ncclSystemError        = 2
	ncclInternalError      = 3
	ncclInvalidArgument    = 4
	ncclInvalidUsage       = 5
	ncclRemoteError        = 6
	ncclInProgress         = 7
)

// Sentinels for NCCL's result codes; an *Error with the same code matches
// them under errors.Is.
var (
	// ErrUnhandledCuda is ncclUnhandledCudaError: a CUDA call inside NCCL
	// failed.
	ErrUnhandledCuda error = &Error{Code: ncclUnhandledCudaError, Name: "ncclUnhandledCudaError"}
	// ErrSystem is ncclSystemError: a system call (socket, memory) failed.
	ErrSystem error = &Error{Code: ncclSystemError, Name: "ncclSystemError"}
	// ErrInternal is ncclInternalError: an NCCL bug or memory corruption.
	ErrInternal error = &Error{Code: ncclInternalError, Name: "ncclInternalError"}
	// ErrInvalidArgument is ncclInvalidArgument.
	ErrInvalidArgument error = &Error{Code: ncclInvalidArgument, Name: "ncclInvalidArgument"}
	// ErrInvalidUsage is ncclInvalidUsage: calls in the wrong order, or
	// peers that disagree on an operation.
	ErrInvalidUsage error = &Error{Code: ncclInvalidUsage, Name: "ncclInvalidUsage"}
	// ErrRemote is ncclRemoteError: a peer failed or went away.
	ErrRemote error = &Error{Code: ncclRemoteError, Name: "ncclRemoteError"}
)

// Error is a failed NCCL call: the call, the ncclResult_t, its name, and
// NCCL's last error message (ncclGetLastError), which says more than the
// code.
type Error struct {
	Call string // e.g. "ncclCommInitRankConfig"
	Code int    // the ncclResult_t
	Name string // e.g. "ncclRemoteError", or ncclGetErrorString's text
	Last string // ncclGetLastError, "" where NCCL has none
}

func (e *Error) Error() string {
	s := "nccl: "
	if e.Call != "" {
		s += e.Call + ": "
	}
	s += e.Name + " (" + strconv.Itoa(e.Code) + ")"
	if e.Last != "" {
		s += ": " + e.Last
	}
	return s
}

// Is reports whether target is an *Error with the same code (the sentinels
// above carry no call).
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// resultName names an ncclResult_t, for errors where the library's own
// ncclGetErrorString is not at hand.
func resultName(code int) string {
	names := [...]string{"ncclSuccess", "ncclUnhandledCudaError", "ncclSystemError", "ncclInternalError",
		"ncclInvalidArgument", "ncclInvalidUsage", "ncclRemoteError", "ncclInProgress"}
	if code >= 0 && code < len(names) {
		return names[code]
	}
	return "ncclResult " + strconv.Itoa(code)
}
