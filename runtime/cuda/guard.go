package cuda

import (
	"fmt"
	"sync"
	"sync/atomic"
)

// guard orders the uses of a driver handle against its destruction. A use
// holds the read lock for the length of its driver call (acquire, release);
// Close takes the write lock, so it waits for the uses in progress, destroys
// the handle once, and every later use sees closed and returns ErrClosed. A
// handle is thus never used after, nor destroyed during, a call.
//
// Lock order, to keep readers of two objects from deadlocking behind
// waiting writers: Module, then Stream, then Event (two Events by address);
// a Buffer's Close may take its Stream's read lock.
type guard struct {
	mu     sync.RWMutex
	closed atomic.Bool // set under the write lock; read alone by accessors
}

// acquire takes the read lock and reports true, or reports false (holding
// nothing) when the object is closed.
func (g *guard) acquire() bool {
	g.mu.RLock()
	if g.closed.Load() {
		g.mu.RUnlock()
		return false
	}
	return true
}

// release ends a use begun by a successful acquire.
func (g *guard) release() { g.mu.RUnlock() }

// close marks the object closed and runs destroy (if not nil) once, after
// every use in progress has ended. Later calls return nil.
func (g *guard) close(destroy func() error) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed.Load() {
		return nil
	}
	g.closed.Store(true)
	if destroy == nil {
		return nil
	}
	return destroy()
}

// Errors for uses after Close, built once so that returning them allocates
// nothing.
var (
	errClosedStream = fmt.Errorf("cuda: stream: %w", ErrClosed)
	errClosedEvent  = fmt.Errorf("cuda: event: %w", ErrClosed)
	errClosedBuffer = fmt.Errorf("cuda: buffer: %w", ErrClosed)
	errClosedModule = fmt.Errorf("cuda: module: %w", ErrClosed)
)

// errZero is the error of a call on a nil pointer or zero value of a type
// that only a constructor can make usable.
func errZero(typ, method, ctor string) error {
	return fmt.Errorf("cuda: %s.%s on a nil or zero %s (make one with %s): %w", typ, method, typ, ctor, ErrInvalidValue)
}
