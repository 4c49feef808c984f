package kernels

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/stridekit/stridekit/gen"
	"github.com/stridekit/stridekit/kernels/jit"
	"github.com/stridekit/stridekit/layout"
	"github.com/stridekit/stridekit/runtime/cuda"
)

// Tier is which kernel a bound copy launches.
type Tier uint8

const (
	// TierNone: the copy launches no kernel (ClassNone, ClassMemcpy).
	TierNone Tier = iota
	// TierGeneric: the signature's kernel, which reads extents, strides
	// and tile sizes from its argument block at run time.
	TierGeneric
	// TierSpecialised: a kernel compiled for the bound plan alone, its
	// argument block a constant (gen.SpecialisedSource), so the compiler
	// folds the index arithmetic and unrolls loops of known length.
	TierSpecialised
)

func (t Tier) String() string {
	switch t {
	case TierGeneric:
		return "generic"
	case TierSpecialised:
		return "specialised"
	}
	return "none"
}

// DefaultMaxSpecialised is how many specialised kernels a process compiles
// at most unless SetMaxSpecialised or $STRIDEKIT_SPECIALISE says
// otherwise: each is an NVRTC compile (tenths of a second to seconds of
// one CPU) and a module of device memory.
const DefaultMaxSpecialised = 256

// SpecialisedKernel is the record of one specialisation: the kernel's
// name, the plan's signature, the time its compile (NVRTC, or a hit in the
// disk cache) and module load took, and the error that stopped it, if any
// (Compile and Err are zero while it compiles).
type SpecialisedKernel struct {
	Name    string
	Sig     layout.Signature
	Compile time.Duration
	Err     error
}

// specs is the process's specialiser: its limit, its records (one per
// kernel name), and the queue its background worker drains.
var specs struct {
	mu      sync.Mutex
	limit   int
	set     bool // limit set (SetMaxSpecialised or the environment read)
	records []SpecialisedKernel
	byName  map[string]int // index in records
	dropped int
	paused  bool // SetBackgroundSpecialising(false)
	queue   chan *Bound
}

// SetBackgroundSpecialising turns the background compiler on (the
// default) or off: while off, SpecialiseLater queues nothing and Specialise
// still works. A benchmark that times each tier on its own turns it off,
// so that no compile finishing mid-measurement swaps kernels under it.
func SetBackgroundSpecialising(on bool) {
	specs.mu.Lock()
	defer specs.mu.Unlock()
	specs.paused = !on
}

// SetMaxSpecialised sets how many specialised kernels the process may
// compile (0: none; copies stay on the generic tier). Kernels compiled
// before stay in use. It overrides $STRIDEKIT_SPECIALISE.
func SetMaxSpecialised(n int) {
	specs.mu.Lock()
	defer specs.mu.Unlock()
	specs.limit, specs.set = max(n, 0), true
}

// limitLocked returns the limit, reading $STRIDEKIT_SPECIALISE (a count;
// 0 turns specialisation off) on first use. specs.mu is held.
func limitLocked() int {
	if !specs.set {
		specs.limit, specs.set = DefaultMaxSpecialised, true
		if v, err := strconv.Atoi(os.Getenv("STRIDEKIT_SPECIALISE")); err == nil && v >= 0 {
			specs.limit = v
		}
	}
	return specs.limit
}

// Specialisations returns the records of the kernels specialised so far,
// oldest first, and how many background requests were dropped (the queue
// was full or the limit reached).
func Specialisations() (ks []SpecialisedKernel, dropped int) {
	specs.mu.Lock()
	defer specs.mu.Unlock()
	return append([]SpecialisedKernel(nil), specs.records...), specs.dropped
}

// Tier returns the tier of the kernel Enqueue launches now.
func (b *Bound) Tier() Tier {
	switch {
	case b.Kernel == "":
		return TierNone
	case b.spec.Load() != nil:
		return TierSpecialised
	}
	return TierGeneric
}

// Running returns the name of the kernel Enqueue launches now: Kernel, or
// its specialisation's once that is loaded ("" when none runs).
func (b *Bound) Running() string {
	if s := b.spec.Load(); s != nil {
		return *s
	}
	return b.Kernel
}

// Specialise compiles and loads the kernel specialised to b's plan, if it
// is not loaded yet, and makes Enqueue launch it from then on (copies
// already queued are unaffected; both kernels copy the same bytes). It
// waits for NVRTC (the disk cache may serve it). It fails, and b keeps its
// generic kernel, when the process's limit of specialised kernels is
// reached (ErrSpecialiseLimit), or the compile or load fails. A copy that
// launches no kernel has nothing to specialise: nil.
func (b *Bound) Specialise() error {
	if b.Kernel == "" || b.spec.Load() != nil {
		return nil
	}
	name := gen.SpecialisedName(b.Plan.Sig, b.Args)
	if err := admit(name, b.Plan.Sig); err != nil {
		return err
	}
	t0 := time.Now()
	fn, err := b.compileSpecialised()
	record(name, time.Since(t0), err)
	if err != nil {
		return err
	}
	b.fn.Store(&fn)
	b.spec.Store(&name)
	return nil
}

// ErrSpecialiseLimit reports that the process has compiled as many
// specialised kernels as SetMaxSpecialised allows.
var ErrSpecialiseLimit = errors.New("kernels: specialised kernel limit reached")

// admit reserves a record for kernel name, unless the limit is reached. A
// name seen before (another Bound of the same plan) is admitted again
// without counting: the jit cache serves its function.
func admit(name string, sig layout.Signature) error {
	specs.mu.Lock()
	defer specs.mu.Unlock()
	if _, ok := specs.byName[name]; ok {
		return nil
	}
	if len(specs.records) >= limitLocked() {
		return fmt.Errorf("%w (%d)", ErrSpecialiseLimit, specs.limit)
	}
	if specs.byName == nil {
		specs.byName = map[string]int{}
	}
	specs.byName[name] = len(specs.records)
	specs.records = append(specs.records, SpecialisedKernel{Name: name, Sig: sig})
	return nil
}

// record notes the outcome of kernel name's compile and load.
func record(name string, d time.Duration, err error) {
	specs.mu.Lock()
	defer specs.mu.Unlock()
	if i, ok := specs.byName[name]; ok && specs.records[i].Compile == 0 && specs.records[i].Err == nil {
		specs.records[i].Compile, specs.records[i].Err = d, err
	}
}

// specialisedSource renders a specialised kernel: gen.SpecialisedSource,
// a variable so that tests can make a compile fail.
var specialisedSource = gen.SpecialisedSource

// compileSpecialised renders, compiles (through jit.Default, so the disk
// cache applies) and loads the kernel specialised to b's plan.
func (b *Bound) compileSpecialised() (cuda.Function, error) {
	name, src, err := specialisedSource(b.Plan.Sig, b.Knobs, b.Args)
	if err != nil {
		return cuda.Function{}, err
	}
	params := cuda.ParamsOf(8, 8, len(b.Args))
	return jit.Default.Function(b.dev, src, name, params, jit.Options{}, nil)
}

// SpecialiseLater asks the process's background compiler to Specialise b
// and returns at once, without waiting for anything: the request is
// dropped (and counted) when the queue is full, the limit reached or the
// compiler off (SetBackgroundSpecialising), and a compile that fails
// leaves b on its generic kernel. It reports whether the request was
// queued.
func (b *Bound) SpecialiseLater() bool {
	if b.Kernel == "" || b.spec.Load() != nil {
		return false
	}
	q := queue()
	if q == nil {
		return false
	}
	select {
	case q <- b:
		return true
	default:
		specs.mu.Lock()
		specs.dropped++
		specs.mu.Unlock()
		return false
	}
}

// queue returns the background compiler's queue, starting its worker on
// first use, or nil when specialisation is off.
func queue() chan *Bound {
	specs.mu.Lock()
	defer specs.mu.Unlock()
	if specs.paused || limitLocked() == 0 || len(specs.records) >= specs.limit {
		specs.dropped++
		return nil
	}
	if specs.queue == nil {
		specs.queue = make(chan *Bound, 64)
		go specialiser(specs.queue)
	}
	return specs.queue
}

// specialiser is the background compiler: one goroutine, one compile at a
// time, so that it takes one CPU at most from the program.
func specialiser(q chan *Bound) {
	for b := range q {
		_ = b.Specialise() // recorded; b stays generic on failure
	}
}
