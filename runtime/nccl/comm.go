package nccl

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"sync"
	"time"
	"unsafe"

	"github.com/ebitengine/purego"
	"github.com/stridekit/stridekit/runtime/cuda"
	"github.com/stridekit/stridekit/runtime/dist"
)

// Option configures NewComm.
type Option func(*options)

type options struct{ blocking bool }

// Blocking(true) makes a blocking communicator (NCCL's default,
// config.blocking = 1) instead of a non-blocking one. Its calls then block
// inside NCCL until the other ranks take part, so NewComm and each exchange
// run them on a goroutine of their own and stop waiting at ctx's end or
// Abort; but NCCL cannot be interrupted there, so that goroutine (and its
// OS thread) stays blocked until the call returns, which for a rank that
// never joins is never. A non-blocking communicator is interrupted at
// once (ncclCommAbort). In exchange a blocking group costs NCCL no thread
// of its own: a non-blocking ncclGroupEnd starts one each time, some tens of
// microseconds; a benchmark may want the blocking kind.
func Blocking(b bool) Option { return func(o *options) { o.blocking = b } }

// Comm is one rank of an NCCL communicator, bound to one device. It is a
// dist.Transport: Alloc hands out device memory and AllToAll exchanges it
// with grouped ncclSend and ncclRecv on a stream.
//
// Its methods are safe for concurrent use; NCCL calls on it are made one at
// a time. A failure (an NCCL error, a context that ends while NCCL waits
// for the other ranks, Abort) aborts the communicator (ncclCommAbort):
// every later call returns that first error, which matches ErrTimeout,
// ErrAborted or the *Error of the failed call, and, through them, dist's
// sentinels. Close it once done.
type Comm struct {
	lib        *library
	dev        *cuda.Device
	do         func(func() error) error // runs NCCL calls with dev current: dev.Do
	size, rank int
	blocking   bool

	mu     sync.Mutex
	h      uintptr // ncclComm_t; 0 once destroyed or aborted
	broken error   // why the communicator is unusable: set whenever h is 0
	closed bool
	state  int32 // ncclCommGetAsyncError's output, under mu

	stop     chan struct{} // closed by Abort: waits give up
	stopOnce sync.Once
}

// Interface check.
var _ dist.Transport = (*Comm)(nil)

const (
	// spinPolls is how many times a wait polls NCCL back to back (yielding
	// the processor in between) before it starts to sleep: an exchange
	// with connected peers settles within microseconds.
	spinPolls = 200
	// maxPause is the longest sleep between two polls.
	maxPause = 2 * time.Millisecond
	// abortGrace bounds the wait for ncclCommAbort, which should return
	// at once; past it, the call is left running and an error returned.
	abortGrace = 30 * time.Second
)

// NewComm joins the communicator of size ranks that id names, as rank, on
// device dev (ncclCommInitRankConfig, non-blocking, with dev's primary
// context current). Every rank calls it with the same size and id (see
// Bootstrap) and its own rank and device; it returns once all have joined.
// If ctx ends first (a rank that never joins, say), the half-made
// communicator is aborted and the error wraps ErrTimeout and ctx's error:
// NewComm never hangs. A nil ctx never ends.
//
// Where the loaded NCCL has no ncclCommInitRankConfig (before 2.14) or is
// not a version whose ncclConfig_t layout this package knows (2.x), it
// falls back on ncclCommInitRank, which makes a blocking communicator (see
// Blocking for what that costs a rank whose peers never come). So does
// Blocking(true), through ncclCommInitRankConfig with blocking set.
//
// A nil dev is an ErrNil error, a size below 1 or rank outside [0, size)
// ErrRank; a platform other than amd64 and arm64 gives ErrNotSupported.
func NewComm(ctx context.Context, dev *cuda.Device, size, rank int, id UniqueID, opts ...Option) (*Comm, error) {
	if dev == nil {
		return nil, fmt.Errorf("%w: NewComm on a nil device (rank %d of %d)", ErrNil, rank, size)
	}
	if err := checkRank(size, rank); err != nil {
		return nil, err
	}
	l, err := loaded()
	if err != nil {
		return nil, err
	}
	return newComm(ctx, l, dev, dev.Do, size, rank, id, opts)
}

// checkRank reports whether rank of size ranks makes sense.
func checkRank(size, rank int) error {
	if size < 1 || size > math.MaxInt32 {
		return fmt.Errorf("%w: group of %d ranks, want 1 to %d", ErrRank, size, math.MaxInt32)
	}
	if rank < 0 || rank >= size {
		return fmt.Errorf("%w: rank %d of %d", ErrRank, rank, size)
	}
	return nil
}

// newComm is NewComm on library l, with do making NCCL calls where the
// device is current (dev.Do; tests with a fake NCCL pass a plain call and
// no device).
func newComm(ctx context.Context, l *library, dev *cuda.Device, do func(func() error) error, size, rank int, id UniqueID, opts []Option) (*Comm, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	if !idByValue {
		return nil, fmt.Errorf("%w: passing ncclUniqueId by value on %s", ErrNotSupported, runtime.GOARCH)
	}
	var o options
	for _, f := range opts {
		if f != nil {
			f(&o)
		}
	}
	c := &Comm{lib: l, dev: dev, do: do, size: size, rank: rank, stop: make(chan struct{})}
	c.blocking = o.blocking || !l.configUsable()
	var cfg *ncclConfig
	call := "ncclCommInitRank"
	if l.configUsable() {
		cfg, call = newConfig(c.blocking), "ncclCommInitRankConfig"
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	err := c.run(ctx, call, func() outcome {
		o := outcome{call: call}
		o.err = do(func() error {
			o.h, o.code = l.initRank(size, rank, id, cfg)
			return nil
		})
		return o
	})
	if err != nil {
		return nil, err
	}
	return c, nil
}

// outcome is what one NCCL call that may wait for the other ranks
// returned.
type outcome struct {
	call string  // the call that returned code (the first that failed)
	code int     // its ncclResult_t
	h    uintptr // for an init, the handle NCCL stored; else 0
	err  error   // the device could not be made current: nothing ran
}

// run makes one NCCL call f that may wait for the other ranks (an init, a
// group end), and waits until it has settled: its code is ncclSuccess, or
// ncclInProgress and the communicator's asynchronous state becomes
// ncclSuccess. c.mu is held.
//
// A non-blocking communicator's f returns at once, and run polls. A
// blocking one's f may block, so it runs on another goroutine, and run
// stops waiting at ctx's end or Abort, leaving that goroutine to abort the
// communicator once f returns. Every failure aborts the communicator.
func (c *Comm) run(ctx context.Context, call string, f func() outcome) error {
	if !c.blocking {
		return c.settle(ctx, f())
	}
	ch := make(chan outcome, 1)
	go func() { ch <- f() }()
	const left = " (left running: the communicator is aborted if it returns)"
	select {
	case o := <-ch:
		return c.settle(ctx, o)
	case <-ctx.Done():
		return c.abandon(c.timeout(ctx, call+left), ch)
	case <-c.stop:
		return c.abandon(c.stopped(call+left), ch)
	}
}

// abandon gives up on a blocking call still running: it breaks the
// communicator with err, and has a goroutine abort it once the call
// returns (for an init, the handle is the one the call returns with).
// c.mu is held.
func (c *Comm) abandon(err error, ch <-chan outcome) error {
	h := c.h
	c.h = 0
	if c.broken == nil {
		c.broken = err
	}
	go func() {
		o := <-ch
		if h == 0 {
			h = o.h
		}
		if h != 0 {
			c.abortHandle(h)
		}
	}()
	return err
}

// settle waits until the call that returned o has settled (see run),
// aborting the communicator on failure. c.mu is held.
func (c *Comm) settle(ctx context.Context, o outcome) error {
	if o.h != 0 {
		c.h = o.h
	}
	switch {
	case o.err != nil && c.h == 0:
		return c.breakWith(o.err)
	case o.err != nil:
		return o.err // the device could not be made current: nothing ran
	case o.code == ncclSuccess || o.code == ncclInProgress:
		if c.h == 0 {
			return c.breakWith(fmt.Errorf("nccl: rank %d of %d: %s returned no communicator: %w", c.rank, c.size, o.call, ErrInternal))
		}
		if err := c.await(ctx, o.call); err != nil {
			return c.fail(err)
		}
		return nil
	default:
		return c.fail(c.lib.newError(o.call, o.code, c.h))
	}
}

// await polls the communicator's asynchronous state until it is no longer
// ncclInProgress: nil for ncclSuccess, an *Error for a failure, and an
// ErrTimeout or ErrAborted error when ctx ends or Abort is called first.
// c.mu is held.
func (c *Comm) await(ctx context.Context, call string) error {
	for i := 0; ; i++ {
		state, err := c.asyncState()
		if err != nil {
			return err
		}
		if state == ncclSuccess {
			return nil
		}
		if state != ncclInProgress {
			return c.lib.newError(call, state, c.h)
		}
		if err := c.pause(ctx, i, call); err != nil {
			return err
		}
	}
}

// asyncState returns ncclCommGetAsyncError's state of the communicator.
// c.mu is held and c.h is not 0.
func (c *Comm) asyncState() (int, error) {
	r, _, _ := purego.SyscallN(c.lib.commGetAsyncError, c.h, uintptr(unsafe.Pointer(&c.state)))
	if err := c.lib.check("ncclCommGetAsyncError", r, c.h); err != nil {
		return 0, err
	}
	return int(c.state), nil
}

// pause waits before poll i+1 of a wait for what: the first spinPolls only
// yield the processor, the later ones sleep, doubling from a microsecond to
// maxPause. It returns an ErrTimeout error once ctx has ended and an
// ErrAborted one once Abort was called.
func (c *Comm) pause(ctx context.Context, i int, what string) error {
	if i < spinPolls {
		runtime.Gosched()
		select {
		case <-ctx.Done():
			return c.timeout(ctx, what)
		case <-c.stop:
			return c.stopped(what)
		default:
			return nil
		}
	}
	d := min(time.Microsecond<<min(i-spinPolls, 16), maxPause)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return c.timeout(ctx, what)
	case <-c.stop:
		return c.stopped(what)
	}
}

func (c *Comm) timeout(ctx context.Context, what string) error {
	return fmt.Errorf("%w: rank %d of %d: %s still waiting for the other ranks when the context ended: %w",
		ErrTimeout, c.rank, c.size, what, ctx.Err())
}

func (c *Comm) stopped(what string) error {
	return fmt.Errorf("%w: rank %d of %d: Abort called during %s", ErrAborted, c.rank, c.size, what)
}

// fail breaks the communicator with err, its first failure, and aborts it;
// it returns err (with the abort's error, if that failed too). c.mu is
// held.
func (c *Comm) fail(err error) error {
	h := c.h
	c.h = 0
	if c.broken == nil {
		c.broken = err
	}
	if h == 0 {
		return err
	}
	if aerr := c.abortHandle(h); aerr != nil {
		return fmt.Errorf("%w (and aborting the communicator: %v)", err, aerr)
	}
	return err
}

// breakWith breaks a communicator that has no handle (an init that failed
// before NCCL made one) with err. c.mu is held.
func (c *Comm) breakWith(err error) error {
	if c.broken == nil {
		c.broken = err
	}
	return err
}

// usable returns nil while the communicator works, and why it does not
// otherwise. c.mu is held.
func (c *Comm) usable() error {
	if c.h != 0 {
		return nil
	}
	if c.broken != nil {
		return c.broken
	}
	return fmt.Errorf("%w: rank %d of %d has no communicator", ErrClosed, c.rank, c.size)
}

// abortHandle aborts communicator h (ncclCommAbort, with the device
// current), waiting abortGrace at most.
func (c *Comm) abortHandle(h uintptr) error {
	done := make(chan error, 1)
	go func() {
		done <- c.do(func() error {
			r, _, _ := purego.SyscallN(c.lib.commAbort, h)
			return c.lib.check("ncclCommAbort", r, 0)
		})
	}()
	t := time.NewTimer(abortGrace)
	defer t.Stop()
	select {
	case err := <-done:
		return err
	case <-t.C:
		return fmt.Errorf("%w: rank %d of %d: ncclCommAbort still running after %v, left running", ErrAborted, c.rank, c.size, abortGrace)
	}
}

// Rank returns this member's rank, in [0, Size()) (-1 for a nil Comm).
func (c *Comm) Rank() int {
	if c == nil {
		return -1
	}
	return c.rank
}

// Size returns the number of ranks in the communicator (0 for a nil Comm).
func (c *Comm) Size() int {
	if c == nil {
		return 0
	}
	return c.size
}

// Device returns the device the communicator runs on.
func (c *Comm) Device() *cuda.Device {
	if c == nil {
		return nil
	}
	return c.dev
}

// IsBlocking reports whether the communicator is a blocking one (see
// Blocking and NewComm's fallback for old NCCL versions).
func (c *Comm) IsBlocking() bool { return c != nil && c.blocking }

// String describes the communicator: rank, size, device and kind.
func (c *Comm) String() string {
	if c == nil {
		return "nccl.Comm<nil>"
	}
	kind := "non-blocking"
	if c.blocking {
		kind = "blocking"
	}
	return fmt.Sprintf("nccl rank %d of %d on %v (%s)", c.rank, c.size, c.dev, kind)
}

// Err returns nil while the communicator works, and otherwise the error
// that broke it (or an ErrClosed error after Close).
func (c *Comm) Err() error {
	if c == nil {
		return fmt.Errorf("%w: nil communicator", ErrNil)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.usable()
}

// Abort aborts the communicator (ncclCommAbort), as a rank that dies
// would: a wait in progress on it returns an ErrAborted error, NCCL's
// kernels on the GPU give up, and every later call fails with an error
// wrapping ErrAborted (and cause, when not nil). The other ranks' pending
// and later exchanges with this one fail or time out on their side. A
// communicator already broken or closed is left as it is. Use it when a
// peer may be gone: Close would wait for it.
func (c *Comm) Abort(cause error) error {
	if c == nil {
		return nil
	}
	c.stopOnce.Do(func() {
		if c.stop != nil { // nil in a zero Comm
			close(c.stop)
		}
	})
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.h == 0 {
		return nil
	}
	err := fmt.Errorf("%w: rank %d of %d aborted", ErrAborted, c.rank, c.size)
	if cause != nil {
		err = fmt.Errorf("%w: rank %d of %d aborted: %w", ErrAborted, c.rank, c.size, cause)
	}
	h := c.h
	c.h = 0
	c.broken = err
	return c.abortHandle(h)
}

// Close releases the communicator: ncclCommDestroy when it works, which
// waits for the NCCL work queued on it, or ncclCommAbort when it has
// failed (an error it reports then, as ncclCommGetAsyncError gives it).
// Call it once the streams have done the exchanges (WaitStream); where a
// peer may have died, Abort instead. Later calls fail with ErrClosed.
// Idempotent; it waits for a call in progress.
func (c *Comm) Close() error {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	closed := fmt.Errorf("%w: rank %d of %d closed its communicator", ErrClosed, c.rank, c.size)
	if c.h == 0 {
		c.broken = closed
		return nil
	}
	state, err := c.asyncState()
	h := c.h
	c.h, c.broken = 0, closed
	if err == nil && state != ncclSuccess && state != ncclInProgress {
		err = c.lib.newError("ncclCommGetAsyncError", state, h)
	}
	if err != nil {
		if aerr := c.abortHandle(h); aerr != nil {
			return fmt.Errorf("nccl: Close of rank %d: the communicator had failed: %w (and aborting it: %v)", c.rank, err, aerr)
		}
		return fmt.Errorf("nccl: Close of rank %d: the communicator had failed, aborted it: %w", c.rank, err)
	}
	return c.do(func() error {
		r, _, _ := purego.SyscallN(c.lib.commDestroy, h)
		return c.lib.check("ncclCommDestroy", r, 0)
	})
}
