package cuda

import (
	"sync"
	"sync/atomic"
	"time"
	"unsafe"
)

// Special stream handles of the driver API.
const (
	streamLegacy    = 0x1 // CU_STREAM_LEGACY
	streamPerThread = 0x2 // CU_STREAM_PER_THREAD
)

// Stream is a CUDA stream of one device. A nil *Stream, where a function
// takes one, means the device's legacy default stream.
type Stream struct {
	dev    *Device
	h      uintptr // CUstream
	owned  bool
	closed atomic.Bool
	mu     sync.Mutex // serialises Close
}

// NewStream creates a stream on the device. A blocking stream (nonBlocking
// false) synchronises with the legacy default stream, as cudaStreamCreate's
// do; a non-blocking one does not.
func (d *Device) NewStream(nonBlocking bool) (*Stream, error) {
	s := &Stream{dev: d, owned: true}
	flags := uintptr(0)
	if nonBlocking {
		flags = 1 // CU_STREAM_NON_BLOCKING
	}
	if err := d.call("cuStreamCreate", drv.cuStreamCreate, uintptr(unsafe.Pointer(&s.h)), flags); err != nil {
		return nil, err
	}
	return s, nil
}

// LegacyStream returns the device's legacy default stream (CU_STREAM_LEGACY),
// which synchronises with every blocking stream. Its Close does nothing.
func (d *Device) LegacyStream() *Stream { return &Stream{dev: d, h: streamLegacy} }

// PerThreadStream returns the per-thread default stream (CU_STREAM_PER_THREAD).
// "Thread" is the OS thread the call happens to run on, which a goroutine
// does not keep: work queued on it from one goroutine in two calls may land on
// two streams. Use it only where that is harmless. Its Close does nothing.
func (d *Device) PerThreadStream() *Stream { return &Stream{dev: d, h: streamPerThread} }

// Device returns the stream's device.
func (s *Stream) Device() *Device { return s.dev }

// Handle returns the CUstream handle (0x1 and 0x2 for the legacy and
// per-thread default streams), for interoperation such as DLPack.
func (s *Stream) Handle() uintptr { return s.h }

// handle returns the CUstream for a call on device d: s's, or legacy 0 when s
// is nil.
func (s *Stream) handle() (uintptr, error) {
	if s == nil {
		return 0, nil
	}
	if s.closed.Load() {
		return 0, ErrClosed
	}
	return s.h, nil
}

// Synchronize waits until all work queued on the stream is done.
func (s *Stream) Synchronize() error {
	h, err := s.handle()
	if err != nil {
		return err
	}
	return s.dev.call("cuStreamSynchronize", drv.cuStreamSynchronize, h)
}

// WaitEvent makes all future work on the stream wait for e's recorded work.
func (s *Stream) WaitEvent(e *Event) error {
	h, err := s.handle()
	if err != nil {
		return err
	}
	if e.closed.Load() {
		return ErrClosed
	}
	return s.dev.call("cuStreamWaitEvent", drv.cuStreamWaitEvent, h, e.h, 0)
}

// Close destroys the stream (pending work still completes). Idempotent; a
// default stream's Close does nothing.
func (s *Stream) Close() error {
	if s == nil || !s.owned {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed.Swap(true) {
		return nil
	}
	return s.dev.call("cuStreamDestroy_v2", drv.cuStreamDestroy, s.h)
}

// Event is a CUDA event of one device.
type Event struct {
	dev    *Device
	h      uintptr // CUevent
	closed atomic.Bool
	mu     sync.Mutex
}

// NewEvent creates an event; timing false makes it cheaper (no ElapsedTime).
func (d *Device) NewEvent(timing bool) (*Event, error) {
	e := &Event{dev: d}
	flags := uintptr(0) // CU_EVENT_DEFAULT
	if !timing {
		flags = 2 // CU_EVENT_DISABLE_TIMING
	}
	if err := d.call("cuEventCreate", drv.cuEventCreate, uintptr(unsafe.Pointer(&e.h)), flags); err != nil {
		return nil, err
	}
	return e, nil
}

// Record captures the work queued so far on stream s (nil: legacy default).
func (e *Event) Record(s *Stream) error {
	if e.closed.Load() {
		return ErrClosed
	}
	h, err := s.handle()
	if err != nil {
		return err
	}
	return e.dev.call("cuEventRecord", drv.cuEventRecord, e.h, h)
}

// Synchronize waits until the event's captured work is done.
func (e *Event) Synchronize() error {
	if e.closed.Load() {
		return ErrClosed
	}
	return e.dev.call("cuEventSynchronize", drv.cuEventSynchronize, e.h)
}

// Done reports whether the event's captured work is done, without waiting.
func (e *Event) Done() (bool, error) {
	if e.closed.Load() {
		return false, ErrClosed
	}
	err := e.dev.call("cuEventQuery", drv.cuEventQuery, e.h)
	switch {
	case err == nil:
		return true, nil
	case errorIs(err, ErrNotReady):
		return false, nil
	}
	return false, err
}

// ElapsedTime returns the time between two recorded, completed timing events
// (resolution about 0.5 µs).
func ElapsedTime(start, end *Event) (time.Duration, error) {
	if start.closed.Load() || end.closed.Load() {
		return 0, ErrClosed
	}
	var ms float32
	if err := start.dev.call("cuEventElapsedTime", drv.cuEventElapsedTime, uintptr(unsafe.Pointer(&ms)), start.h, end.h); err != nil {
		return 0, err
	}
	return time.Duration(float64(ms) * float64(time.Millisecond)), nil
}

// Close destroys the event. Idempotent.
func (e *Event) Close() error {
	if e == nil {
		return nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed.Swap(true) {
		return nil
	}
	return e.dev.call("cuEventDestroy_v2", drv.cuEventDestroy, e.h)
}

func errorIs(err, target error) bool {
	e, ok := err.(*Error)
	return ok && e.Is(target)
}
