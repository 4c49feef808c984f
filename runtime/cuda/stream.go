package cuda

import (
	"time"
	"unsafe"
)

// Special stream handles of the driver API.
const (
	streamLegacy    = 0x1 // CU_STREAM_LEGACY
	streamPerThread = 0x2 // CU_STREAM_PER_THREAD
)

// Stream is a CUDA stream of one device. A nil *Stream, where a function
// takes one, means the device's legacy default stream. Its methods are safe
// for concurrent use, Close included: a call in progress finishes before the
// stream is destroyed, and a call after Close returns ErrClosed.
type Stream struct {
	dev   *Device
	h     uintptr // CUstream
	owned bool
	g     guard
}

// NewStream creates a stream on the device. A blocking stream (nonBlocking
// false) synchronises with the legacy default stream, as cudaStreamCreate's
// do; a non-blocking one does not.
func (d *Device) NewStream(nonBlocking bool) (*Stream, error) {
	if err := d.valid("NewStream"); err != nil {
		return nil, err
	}
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

// StreamFromHandle wraps an existing CUstream of the device, created by
// other code (a DLPack producer, a C library), without taking ownership:
// its Close does nothing, and the stream must outlive every use. The
// special handles 0x1 (legacy default) and 0x2 (per-thread default) are
// accepted; 0 is the legacy default stream too.
func (d *Device) StreamFromHandle(h uintptr) *Stream {
	if h == 0 {
		h = streamLegacy
	}
	return &Stream{dev: d, h: h}
}

// Device returns the stream's device (nil for a nil Stream).
func (s *Stream) Device() *Device {
	if s == nil {
		return nil
	}
	return s.dev
}

// Handle returns the CUstream handle (0x1 and 0x2 for the legacy and
// per-thread default streams, 0 for a nil Stream), for interoperation such
// as DLPack. The handle is valid until Close.
func (s *Stream) Handle() uintptr {
	if s == nil {
		return 0
	}
	return s.h
}

// acquire returns the CUstream for a driver call and holds the stream open
// until release: 0 (the legacy default stream) for a nil s, ErrClosed after
// Close, ErrInvalidValue for a zero Stream.
func (s *Stream) acquire() (uintptr, error) {
	if s == nil {
		return 0, nil
	}
	if s.dev == nil {
		return 0, errZero("Stream", "use", "Device.NewStream")
	}
	if !s.g.acquire() {
		return 0, errClosedStream
	}
	return s.h, nil
}

// release ends a use begun by a successful acquire.
func (s *Stream) release() {
	if s != nil {
		s.g.release()
	}
}

// Synchronize waits until all work queued on the stream is done. A nil
// Stream names no device: use Device.Synchronize or LegacyStream there.
func (s *Stream) Synchronize() error {
	if s == nil || s.dev == nil {
		return errZero("Stream", "Synchronize", "Device.NewStream")
	}
	h, err := s.acquire()
	if err != nil {
		return err
	}
	defer s.release()
	return s.dev.call("cuStreamSynchronize", drv.cuStreamSynchronize, h)
}

// WaitEvent makes all future work on the stream wait for e's recorded work.
func (s *Stream) WaitEvent(e *Event) error {
	if s == nil || s.dev == nil {
		return errZero("Stream", "WaitEvent", "Device.NewStream")
	}
	if e == nil || e.dev == nil {
		return errZero("Event", "WaitEvent argument", "Device.NewEvent")
	}
	h, err := s.acquire()
	if err != nil {
		return err
	}
	defer s.release()
	if !e.g.acquire() {
		return errClosedEvent
	}
	defer e.g.release()
	return s.dev.call("cuStreamWaitEvent", drv.cuStreamWaitEvent, h, e.h, 0)
}

// Close destroys the stream (pending work still completes) after the calls
// in progress on it have returned. Idempotent; a default stream's Close, or
// a nil or zero Stream's, does nothing.
func (s *Stream) Close() error {
	if s == nil || !s.owned {
		return nil
	}
	return s.g.close(func() error {
		return s.dev.call("cuStreamDestroy_v2", drv.cuStreamDestroy, s.h)
	})
}

// Event is a CUDA event of one device. Its methods are safe for concurrent
// use, Close included: a call in progress finishes before the event is
// destroyed, and a call after Close returns ErrClosed.
type Event struct {
	dev *Device
	h   uintptr // CUevent
	g   guard
}

// NewEvent creates an event; timing false makes it cheaper (no ElapsedTime).
func (d *Device) NewEvent(timing bool) (*Event, error) {
	if err := d.valid("NewEvent"); err != nil {
		return nil, err
	}
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
	if e == nil || e.dev == nil {
		return errZero("Event", "Record", "Device.NewEvent")
	}
	h, err := s.acquire() // stream before event: the lock order
	if err != nil {
		return err
	}
	defer s.release()
	if !e.g.acquire() {
		return errClosedEvent
	}
	defer e.g.release()
	return e.dev.call("cuEventRecord", drv.cuEventRecord, e.h, h)
}

// Synchronize waits until the event's captured work is done.
func (e *Event) Synchronize() error {
	if e == nil || e.dev == nil {
		return errZero("Event", "Synchronize", "Device.NewEvent")
	}
	if !e.g.acquire() {
		return errClosedEvent
	}
	defer e.g.release()
	return e.dev.call("cuEventSynchronize", drv.cuEventSynchronize, e.h)
}

// Done reports whether the event's captured work is done, without waiting.
func (e *Event) Done() (bool, error) {
	if e == nil || e.dev == nil {
		return false, errZero("Event", "Done", "Device.NewEvent")
	}
	if !e.g.acquire() {
		return false, errClosedEvent
	}
	defer e.g.release()
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
	if start == nil || start.dev == nil {
		return 0, errZero("Event", "ElapsedTime start", "Device.NewEvent")
	}
	if end == nil || end.dev == nil {
		return 0, errZero("Event", "ElapsedTime end", "Device.NewEvent")
	}
	// Two events are locked in address order, one event once: a read lock
	// taken twice could wait behind a Close waiting for the first.
	first, second := start, end
	if uintptr(unsafe.Pointer(second)) < uintptr(unsafe.Pointer(first)) {
		first, second = second, first
	}
	if !first.g.acquire() {
		return 0, errClosedEvent
	}
	defer first.g.release()
	if second != first {
		if !second.g.acquire() {
			return 0, errClosedEvent
		}
		defer second.g.release()
	}
	var ms float32
	if err := start.dev.call("cuEventElapsedTime", drv.cuEventElapsedTime, uintptr(unsafe.Pointer(&ms)), start.h, end.h); err != nil {
		return 0, err
	}
	return time.Duration(float64(ms) * float64(time.Millisecond)), nil
}

// Close destroys the event after the calls in progress on it have returned.
// Idempotent; a nil or zero Event's Close does nothing.
func (e *Event) Close() error {
	if e == nil || e.dev == nil {
		return nil
	}
	return e.g.close(func() error {
		return e.dev.call("cuEventDestroy_v2", drv.cuEventDestroy, e.h)
	})
}

func errorIs(err, target error) bool {
	e, ok := err.(*Error)
	return ok && e.Is(target)
}
