package memview

import (
	"fmt"
	"math"
	"reflect"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/stridekit/stridekit/internal/meminfo"
	"github.com/stridekit/stridekit/layout"
	"github.com/stridekit/stridekit/runtime/cuda"
	"github.com/stridekit/stridekit/runtime/dlpack"
)

// DLPackOption configures one DLPack exchange: FromDLPack, FromDLPackLegacy
// and FromDLTensor on the way in, ToDLPack on the way out. Each option says
// which of them read it.
type DLPackOption func(*dlpackConfig)

type dlpackConfig struct {
	stream   *cuda.Stream // the consumer's stream (imports)
	producer *cuda.Stream // where the tensor's pending work is queued
	host     bool         // a host copy of device memory
	report   *ImportInfo
}

// OnStream names the stream an imported view will be used on, the
// consumer's stream of DLPack's stream handshake. With ProducerStream, the
// import makes the producer's pending work visible on it (an event recorded
// on the producer's stream, waited for on s); ToHost copies on it. A nil s
// names none. For device and managed memory s must be a stream of the
// tensor's device. ToDLPack does not read it: its consumer stream is its
// argument.
func OnStream(s *cuda.Stream) DLPackOption { return func(c *dlpackConfig) { c.stream = s } }

// ProducerStream names the stream on which the work that writes the tensor
// is queued, when the caller knows it, so that the exchange orders that
// work itself instead of trusting the other side to have done so.
//
// On import (with FromDLPack and the like) the work is made visible on the
// OnStream stream with an event recorded on s and waited for there, or,
// without OnStream, waited for on the host. On export (ToDLPack) it is made
// visible on the consumer's stream the same way; without ProducerStream,
// ToDLPack waits for the whole device instead, since it cannot know where
// the view's pending work is. A nil s names none.
func ProducerStream(s *cuda.Stream) DLPackOption { return func(c *dlpackConfig) { c.producer = s } }

// ToHost asks for the tensor in host memory, DLPack's
// from_dlpack(x, device=CPU). On import, a tensor in device or managed
// memory is copied (with CopyTo, on the OnStream stream, else the
// ProducerStream stream, else the legacy default stream of its device) into
// new Go memory, dense in C order, and the tensor is given back to its
// producer at once (its deleter runs before the import returns); the view is
// of the copy, writable, and Report's flags carry dlpack.FlagIsCopied.
// Tensors already in host memory (kDLCPU, kDLCUDAHost) are not copied. On
// export, ToDLPack of a device or managed view hands over such a copy
// instead of the view, as a kDLCPU tensor flagged dlpack.FlagIsCopied;
// views of host memory, pinned included, are handed over as they are.
// A copy whose dense size overflows or is more than the process can hold
// (a broadcast tensor of a few bytes may stand for petabytes) is refused
// before anything is allocated, with an ErrTooLarge error; an import then
// leaves the tensor to the caller.
func ToHost() DLPackOption { return func(c *dlpackConfig) { c.host = true } }

// Report makes an import fill *info with what it found out about the tensor
// (ToDLPack does not read it); a nil info reports nothing.
func Report(info *ImportInfo) DLPackOption { return func(c *dlpackConfig) { c.report = info } }

// ImportInfo is what an import reports about the tensor it was handed (see
// Report).
type ImportInfo struct {
	// Versioned is true for a DLManagedTensorVersioned (FromDLPack, or
	// FromDLTensor with a versioned dlpack.Producer).
	Versioned bool
	// Version is the producer's DLPack version (zero for legacy tensors).
	Version dlpack.DLPackVersion
	// Device is where the producer's tensor lives, as it said.
	Device dlpack.DLDevice
	// Flags are the producer's flags, plus dlpack.FlagIsCopied when ToHost
	// made the view a host copy of the tensor.
	Flags dlpack.Flags
	// HostCopy holds the bytes of the host copy ToHost made (the view's
	// memory, its elements dense in C order), and is nil when none was
	// made.
	HostCopy []byte
}

// Copied reports whether the view is a copy of the tensor (ToHost made one,
// or the producer said so).
func (i ImportInfo) Copied() bool { return i.Flags.Has(dlpack.FlagIsCopied) }

// FromDLPack returns the view of a DLPack 1.x tensor, as a consumer of
// DLPack's exchange protocol, and takes ownership of it: m's deleter runs
// exactly once, when the view, or any view derived from it (View, Slice,
// Permute, …; they share one owner), is closed, or later if the view was
// exported again with ToDLPack and that export is still held. Derived views
// must not be used after Close. A view that is never closed still gives
// the tensor back: once neither it nor any view derived from it nor any
// export of them is reachable, a cleanup (runtime.AddCleanup) runs the
// deleter, on a goroutine of the runtime's, some time after a garbage
// collection; Close is the prompt way.
//
// The tensor is checked by dlpack.ImportVersioned: a major version other
// than dlpack.MajorVersion, an unsupported device, a dtype with lanes ≠ 1,
// NULL strides with ndim > 0 from a DLPack 1.2 or later producer (older
// ones mean C order), and every other malformed field are errors wrapping
// the dlpack sentinel (dlpack.ErrVersion, dlpack.ErrUnsupportedDevice,
// dlpack.ErrDType, dlpack.ErrStrides, …) that name the field and value.
// Element 0 is at data + byte_offset; the view may address exactly the
// bytes the tensor's layout spans. A tensor flagged read-only gives a
// read-only view (CopyFrom into it fails with ErrReadOnly).
//
// The view's memory comes from the tensor's device: kDLCUDA is device
// memory of that ordinal (the CUDA driver must be there), kDLCUDAHost
// pinned host memory, kDLCUDAManaged managed memory of device_id, and
// kDLCPU host memory, moved as pageable memory (a producer of pinned host
// memory says so with kDLCUDAHost). See OnStream, ProducerStream and ToHost
// for the stream handshake and the host copy, Report for what else is known.
//
// On error the tensor is still the caller's: give it back with
// dlpack.CallDeleter. A nil m is an error wrapping ErrNilView and
// dlpack.ErrNilTensor.
//
// The view and its owner are one allocation, and the layouts of recently
// seen shapes (with whether they are unique) are shared, so importing a
// tensor and closing its view cost that allocation and the two that
// runtime.AddCleanup makes (BenchmarkFromDLPack measures the time, for a
// 4-d strided kDLCPU tensor).
func FromDLPack(m *dlpack.DLManagedTensorVersioned, opts ...DLPackOption) (*StridedMemoryView, error) {
	if m == nil {
		return nil, fmt.Errorf("%w: FromDLPack: %w", ErrNilView, dlpack.ErrNilTensor)
	}
	d, err := dlpack.ImportVersioned(m)
	if err != nil {
		return nil, fmt.Errorf("memview: FromDLPack: %w", err)
	}
	info := ImportInfo{Versioned: true, Version: m.Version, Device: d.Device, Flags: m.Flags}
	return importTensor("FromDLPack", &d, tensorRef{versioned: m}, &info, opts)
}

// FromDLPackLegacy is FromDLPack for a legacy DLManagedTensor (DLPack
// before 1.0, which old producers still hand out): no version, no flags
// (the view is writable), and NULL strides mean C order. It takes
// ownership of m as FromDLPack does, and on error leaves it to the caller
// (dlpack.CallLegacyDeleter).
func FromDLPackLegacy(m *dlpack.DLManagedTensor, opts ...DLPackOption) (*StridedMemoryView, error) {
	if m == nil {
		return nil, fmt.Errorf("%w: FromDLPackLegacy: %w", ErrNilView, dlpack.ErrNilTensor)
	}
	d, err := dlpack.ImportLegacy(m)
	if err != nil {
		return nil, fmt.Errorf("memview: FromDLPackLegacy: %w", err)
	}
	info := ImportInfo{Device: d.Device}
	return importTensor("FromDLPackLegacy", &d, tensorRef{legacy: m}, &info, opts)
}

// FromDLTensor returns the view of a borrowed DLTensor: memory the caller
// lends for as long as the view is used, such as the dl_tensor of a
// managed tensor someone else will give back. The view owns nothing: its
// Close calls no deleter. p says what FromDLTensor cannot read from a bare
// DLTensor: whether it came from a versioned producer, of which version
// (which decides what NULL strides mean, and a major version other than
// dlpack.MajorVersion is refused), and its flags (dlpack.FlagReadOnly makes
// the view read-only); the zero Producer is a legacy tensor. Otherwise it is
// FromDLPack: the same checks, memory kinds and options; ToHost copies
// without giving anything back.
func FromDLTensor(t *dlpack.DLTensor, p dlpack.Producer, opts ...DLPackOption) (*StridedMemoryView, error) {
	if t == nil {
		return nil, fmt.Errorf("%w: FromDLTensor: %w", ErrNilView, dlpack.ErrNilTensor)
	}
	d, err := dlpack.Import(t, p)
	if err != nil {
		return nil, fmt.Errorf("memview: FromDLTensor: %w", err)
	}
	info := ImportInfo{Versioned: p.Versioned, Device: d.Device, Flags: p.Flags}
	if p.Versioned {
		info.Version = p.Version
	}
	return importTensor("FromDLTensor", &d, tensorRef{}, &info, opts)
}

// configOf applies opts to a fresh configuration. Importing with no options
// allocates nothing: only a configuration handed to options escapes.
func configOf(opts []DLPackOption) dlpackConfig {
	if len(opts) == 0 {
		return dlpackConfig{}
	}
	c := new(dlpackConfig)
	for _, o := range opts {
		if o != nil {
			o(c)
		}
	}
	return *c
}

// tensorRef is the managed tensor an import owns (neither for a borrowed
// DLTensor).
type tensorRef struct {
	versioned *dlpack.DLManagedTensorVersioned
	legacy    *dlpack.DLManagedTensor
}

func (r tensorRef) owned() bool { return r.versioned != nil || r.legacy != nil }

// release gives the tensor back to its producer.
func (r tensorRef) release() {
	switch {
	case r.versioned != nil:
		dlpack.CallDeleter(r.versioned)
	case r.legacy != nil:
		dlpack.CallLegacyDeleter(r.legacy)
	}
}

// importTensor makes the view of an imported tensor d. With no options it
// takes the shortest way.
func importTensor(fn string, d *dlpack.Desc, ref tensorRef, info *ImportInfo, opts []DLPackOption) (*StridedMemoryView, error) {
	kind, dev, err := placeOf(d)
	if err != nil {
		return nil, fmt.Errorf("memview: %s: %w", fn, err)
	}
	if len(opts) > 0 {
		cfg := configOf(opts)
		if err := checkImportStreams(&cfg, kind, dev); err != nil {
			return nil, fmt.Errorf("memview: %s of a %v tensor: %w", fn, d.Device.DeviceType, err)
		}
		if cfg.host && (kind == cuda.MemoryDevice || kind == cuda.MemoryManaged) {
			v, err := importHostCopy(d, kind, dev, &cfg, info)
			if err != nil {
				return nil, fmt.Errorf("memview: %s to host: %w", fn, err)
			}
			ref.release()
			return v, nil
		}
		if err := order(cfg.producer, cfg.stream); err != nil {
			return nil, fmt.Errorf("memview: %s: stream handshake: %w", fn, err)
		}
		if cfg.report != nil {
			*cfg.report = *info
		}
	}
	if !ref.owned() {
		r := new(rootView)
		r.v.initDLPack(d, kind, dev)
		r.v.owner = &r.o
		return &r.v, nil
	}
	t := new(dlpackView)
	t.ref = ref
	t.v.initDLPack(d, kind, dev)
	t.refs.Store(1)
	r := releasers.Get().(*releaser)
	r.target = t
	t.o.release = r.fn
	t.v.owner = &t.o
	// A view nobody closes still gives the tensor back: once no view of it
	// and no export holds t, the cleanup runs the deleter (drop stops it
	// when the tensor is given back the ordinary way). Its argument is the
	// tensor, not t, so that t can become unreachable.
	t.cleanup = runtime.AddCleanup(t, tensorRef.release, ref)
	return &t.v, nil
}

// placeOf returns the memory kind and device of an imported tensor (see
// FromDLPack).
func placeOf(d *dlpack.Desc) (cuda.MemoryKind, *cuda.Device, error) {
	switch d.Device.DeviceType {
	case dlpack.KDLCUDA, dlpack.KDLCUDAManaged:
		kind := cuda.MemoryDevice
		if d.Device.DeviceType == dlpack.KDLCUDAManaged {
			kind = cuda.MemoryManaged
		}
		dev, err := cuda.GetDevice(int(d.Device.DeviceID))
		if err != nil {
			return 0, nil, fmt.Errorf("%v tensor on device %d: %w", d.Device.DeviceType, d.Device.DeviceID, err)
		}
		return kind, dev, nil
	case dlpack.KDLCUDAHost:
		return cuda.MemoryHost, nil, nil
	}
	// kDLCPU: host memory, moved as pageable memory (staged). A producer
	// whose host memory is pinned says so with kDLCUDAHost; asking the
	// driver about every pointer would cost an import more than the rest of
	// it (and allocate).
	return cuda.MemoryPageable, nil, nil
}

// initDLPack makes v, a zero view, the view of an imported tensor: its
// layout placed at its element 0, addressing exactly the bytes the layout
// spans. dlpack.Import built the layout from the dtype (whole bytes, packed
// groups or padded elements, as checkDType accepts) and checked that these
// addresses do not wrap. It sets the fields one by one: v is on the hot
// path, and a struct assignment would copy it whole.
func (v *StridedMemoryView) initDLPack(d *dlpack.Desc, kind cuda.MemoryKind, dev *cuda.Device) {
	l := &d.Layout
	item := int64(l.Itemsize())
	v.ptr = d.Ptr
	v.low = d.Ptr - uintptr(-l.MinOffset()*item)
	v.span = l.RequiredSizeInBytes() // 0 without elements
	v.l, v.dt = d.Layout, d.DType
	v.kind, v.dev = kind, dev
	v.lo, v.hi = v.low, v.low+uintptr(v.span)
	v.unique, v.readOnly = d.IsUnique(), d.ReadOnly
}

// checkImportStreams checks that the streams of an import can order work
// on the tensor's memory: streams of its device for device and managed
// memory.
func checkImportStreams(cfg *dlpackConfig, kind cuda.MemoryKind, dev *cuda.Device) error {
	if dev == nil {
		return nil
	}
	for _, s := range [...]struct {
		what string
		s    *cuda.Stream
	}{{"OnStream", cfg.stream}, {"ProducerStream", cfg.producer}} {
		if s.s != nil && s.s.Device() != dev {
			return fmt.Errorf("%w: %s stream of %v for %v memory on %v", ErrDevice, s.what, s.s.Device(), kind, dev)
		}
	}
	return nil
}

// importHostCopy copies an imported device tensor into new Go memory and
// returns the view of the copy.
func importHostCopy(d *dlpack.Desc, kind cuda.MemoryKind, dev *cuda.Device, cfg *dlpackConfig, info *ImportInfo) (*StridedMemoryView, error) {
	var r rootView
	src := &r.v
	src.initDLPack(d, kind, dev)
	src.owner = &r.o
	s := cfg.stream
	if s == nil {
		s = cfg.producer
	}
	if s == nil {
		s = dev.LegacyStream()
	}
	if err := order(cfg.producer, s); err != nil {
		return nil, fmt.Errorf("stream handshake: %w", err)
	}
	v, buf, err := hostCopyOf(src, s)
	if err != nil {
		return nil, err
	}
	info.Flags |= dlpack.FlagIsCopied
	info.HostCopy = buf
	if cfg.report != nil {
		*cfg.report = *info
	}
	return v, nil
}

// hostCopyOf copies src, on stream s, into new Go memory dense in C order,
// and returns the view of the copy and its bytes, once the data has
// arrived.
func hostCopyOf(src *StridedMemoryView, s *cuda.Stream) (*StridedMemoryView, []byte, error) {
	l, err := layout.Dense(src.l.Shape(), src.l.Itemsize(), layout.C)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: host copy of %v: %w", ErrTooLarge, src, err)
	}
	if err := checkHostAlloc(l.RequiredSizeInBytes(), src); err != nil {
		return nil, nil, err
	}
	buf := make([]byte, l.RequiredSizeInBytes())
	var base unsafe.Pointer
	if len(buf) > 0 {
		base = unsafe.Pointer(&buf[0])
	}
	lo := uintptr(base)
	v, err := newView(lo, l, src.dt, lo, lo+uintptr(len(buf)))
	if err != nil {
		return nil, nil, err
	}
	v.kind, v.base = cuda.MemoryPageable, base
	if err := v.CopyFrom(src, s, Blocking(true)); err != nil {
		return nil, nil, err
	}
	return v, buf, nil
}

// maxHostCopy is the most bytes a host copy may have whatever the memory:
// what an int counts, and below the largest allocation Go makes (2⁴⁸ bytes
// on 64-bit platforms), beyond which make panics.
const maxHostCopy = min(math.MaxInt, 1<<47)

// checkHostAlloc refuses, with an ErrTooLarge error naming src and the
// sizes, a host copy of src of n bytes that the process cannot hold: more
// than maxHostCopy, or than the Go memory limit (GOMEMLIMIT,
// debug.SetMemoryLimit), or, for copies over 64 MiB on Linux, than the
// memory available (MemAvailable). A broadcast device tensor of a few bytes
// can stand for petabytes dense, and make would panic or the runtime die
// of it.
func checkHostAlloc(n int64, src *StridedMemoryView) error {
	if uint64(n) > maxHostCopy {
		return fmt.Errorf("%w: host copy of %v needs %d bytes, over the %d bytes a host copy may have", ErrTooLarge, src, n, int64(maxHostCopy))
	}
	if lim := debug.SetMemoryLimit(-1); n > lim {
		return fmt.Errorf("%w: host copy of %v needs %d bytes, over the Go memory limit of %d bytes", ErrTooLarge, src, n, lim)
	}
	if n > 64<<20 {
		if avail := meminfo.Available(); avail > 0 && uint64(n) > avail {
			return fmt.Errorf("%w: host copy of %v needs %d bytes, over the %d bytes of memory available (MemAvailable)", ErrTooLarge, src, n, avail)
		}
	}
	return nil
}

// order makes the work queued on producer so far visible on consumer: an
// event recorded on producer, waited for on consumer. Without a consumer
// (or when the consumer is a per-thread default stream, which in Go is no
// particular stream) it waits for the event on the host; without a
// producer there is nothing to order.
func order(producer, consumer *cuda.Stream) error {
	if producer == nil {
		return nil
	}
	if consumer == nil {
		return producer.Synchronize()
	}
	if consumer.Device() == producer.Device() && consumer.Handle() == producer.Handle() && producer.Handle() != uintptr(dlpack.StreamPerThread) {
		return nil // one stream: already in order
	}
	e, err := producer.Device().NewEvent(false)
	if err != nil {
		return err
	}
	defer e.Close()
	if err := e.Record(producer); err != nil {
		return err
	}
	if consumer.Handle() == uintptr(dlpack.StreamPerThread) {
		return e.Synchronize()
	}
	return consumer.WaitEvent(e)
}

// dlpackView is a view that owns a DLPack tensor, allocated with its owner
// in one block. refs counts the holders of the tensor: the views (one
// count, dropped by Close) and each ToDLPack export of them not yet
// deleted; the last one out calls the tensor's deleter. Every view derived
// from the tensor's points to o, and every export's release function to
// the dlpackView, so the block is unreachable only when no view and no
// export is left; cleanup then calls the deleter if no Close did (a view
// forgotten without Close, which would otherwise leak the producer's
// tensor).
type dlpackView struct {
	o       owner // first: dlpackOwner converts the views' *owner back
	v       StridedMemoryView
	refs    atomic.Int64
	ref     tensorRef
	cleanup runtime.Cleanup // calls ref's deleter once t is unreachable; stopped by drop
}

// hold adds a holder, unless the tensor was already given back.
func (t *dlpackView) hold() bool {
	for {
		n := t.refs.Load()
		if n <= 0 {
			return false
		}
		if t.refs.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// drop removes a holder; the last one gives the tensor back, and stops the
// cleanup, which would otherwise give it back a second time once t is
// unreachable. The cleanup cannot have been queued: the caller holds t.
func (t *dlpackView) drop() {
	if t.refs.Add(-1) == 0 {
		t.cleanup.Stop()
		t.ref.release()
		runtime.KeepAlive(t) // reachable across Stop, as Stop requires
	}
}

// releaser holds the release function of an owned view's owner. The
// closure is made once per releaser, and releasers are pooled: an owner's
// release runs at most once (Close guards it), after which the releaser may
// serve another owner. So an import allocates no closure.
type releaser struct {
	fn     func() error
	target *dlpackView // set by importTensor; the pool orders the accesses
}

// releasers is the pool of free releasers (its New is set in init: a
// releaser puts itself back into it).
var releasers sync.Pool

func init() { releasers.New = func() any { return newReleaser() } }

// newReleaser is never inlined: every releaser's closure must be the one
// function literal, of one code address (releaserCode).
//
//go:noinline
func newReleaser() *releaser {
	r := new(releaser)
	r.fn = func() error {
		t := r.target
		r.target = nil
		releasers.Put(r)
		if t != nil {
			t.drop()
		}
		return nil
	}
	return r
}

// releaserCode is the code address shared by every releaser's closure: an
// owner whose release has it belongs to a dlpackView.
var releaserCode = reflect.ValueOf(newReleaser().fn).Pointer()

// dlpackOwner returns the dlpackView whose owner o is, or nil when o is no
// DLPack tensor's.
func dlpackOwner(o *owner) *dlpackView {
	if o == nil || o.release == nil || reflect.ValueOf(o.release).Pointer() != releaserCode {
		return nil
	}
	// o is the first field of a dlpackView: only importTensor sets a
	// releaser's closure as a release function.
	return (*dlpackView)(unsafe.Pointer(o))
}

// ToDLPack hands the view to a DLPack consumer: a DLManagedTensorVersioned
// (DLPack 1.3, always with explicit strides; element 0 at data, byte_offset
// 0) that the consumer gives back by calling its deleter once, as
// dlpack.Export describes. The view's memory stays alive until then: the
// export holds the view (and pins Go memory of FromHost views), and for a
// view that owns a DLPack tensor (FromDLPack) it holds that tensor too, so
// its deleter runs only when both the view is closed and every export is
// deleted. Memory of a cuda.Buffer (FromBuffer) must stay open until the
// deleter runs: the export cannot keep a Buffer from being closed. Calling
// the deleter twice is harmless (dlpack.LiveExports counts the exports not
// yet deleted). A read-only view is exported with dlpack.FlagReadOnly.
//
// consumerStream is the stream value of DLPack's __dlpack__(stream=…)
// protocol, the stream on which the consumer will use the tensor: -1 (no
// synchronisation), 1 (the legacy default stream), 2 (the per-thread
// default stream), or a CUstream handle; 0 is refused as ambiguous
// (dlpack.ErrStream). Unless it is -1, the view's pending work is made
// visible on that stream before ToDLPack returns: with ProducerStream, an
// event recorded on the producer's stream and waited for on the consumer's
// (for the per-thread stream, which is the consumer's thread's, the event
// is waited for on the host); without it, the view's device is
// synchronised. Host views (pageable memory) have nothing pending (their
// copies are done when CopyFrom returns) and take -1; a ProducerStream
// given for them is waited for on the host. A view of pinned memory that
// no device owns (a kDLCUDAHost import) is synchronised only through its
// ProducerStream, if given.
//
// With ToHost, a view of device or managed memory is copied into Go memory
// (on the ProducerStream stream, else on the legacy default stream after
// synchronising the device), and that copy is handed over as a kDLCPU
// tensor flagged dlpack.FlagIsCopied.
//
// Sub-byte views (fp4, fp6) are exported with their elements' shape and
// strides: views of packed groups as packed tensors, fp6 views of one
// element per byte as padded ones (dlpack.FlagIsSubbyteTypePadded). A float4
// view of one-byte items is taken as packed, DLPack's default.
//
// Errors: ErrNilView, ErrClosed (the view, its owner or its buffer is
// closed), dlpack.ErrStream, ErrDevice (a ProducerStream of a device other
// than the view's), ErrDType (a sub-byte view that cannot be described in
// elements), the CUDA errors of the handshake and of the host copy, and the
// errors of dlpack.Export.
func (v *StridedMemoryView) ToDLPack(consumerStream int64, opts ...DLPackOption) (*dlpack.DLManagedTensorVersioned, error) {
	if v == nil {
		return nil, fmt.Errorf("%w: ToDLPack of a nil view", ErrNilView)
	}
	if v.closed() {
		return nil, fmt.Errorf("memview: ToDLPack of %v: %w", v, ErrClosed)
	}
	req, err := dlpack.ParseCUDAStream(consumerStream)
	if err != nil {
		return nil, fmt.Errorf("memview: ToDLPack of %v: %w", v, err)
	}
	cfg := configOf(opts)
	if p := cfg.producer; p != nil && v.dev != nil && v.kind != cuda.MemoryHost && p.Device() != v.dev {
		return nil, fmt.Errorf("memview: ToDLPack of %v: %w: ProducerStream of %v", v, ErrDevice, p.Device())
	}
	if cfg.host && v.onDevice() {
		s := cfg.producer
		if s == nil {
			if err := v.dev.Synchronize(); err != nil {
				return nil, fmt.Errorf("memview: ToDLPack of %v to host: %w", v, err)
			}
			s = v.dev.LegacyStream()
		}
		h, _, err := hostCopyOf(v, s)
		if err != nil {
			return nil, fmt.Errorf("memview: ToDLPack of %v to host: %w", v, err)
		}
		return h.export(dlpack.FlagIsCopied)
	}
	if req.Sync() {
		if err := v.exportHandshake(req, cfg.producer); err != nil {
			return nil, fmt.Errorf("memview: ToDLPack of %v: stream handshake with %v stream %#x: %w", v, req.Kind, req.Handle, err)
		}
	}
	return v.export(0)
}

// exportHandshake makes the view's pending work visible on the consumer's
// stream req.
func (v *StridedMemoryView) exportHandshake(req dlpack.StreamRequest, producer *cuda.Stream) error {
	if v.kind == cuda.MemoryPageable {
		if producer != nil {
			return producer.Synchronize()
		}
		return nil
	}
	dev := v.dev
	if dev == nil && producer != nil {
		dev = producer.Device()
	}
	if dev == nil {
		return nil // pinned memory no device or stream is known for
	}
	if producer == nil {
		return dev.Synchronize()
	}
	return order(producer, req.Stream(dev))
}

// export hands the view over with dlpack.Export, with extra flags.
func (v *StridedMemoryView) export(extra dlpack.Flags) (*dlpack.DLManagedTensorVersioned, error) {
	dev, err := v.dlDevice()
	if err != nil {
		return nil, fmt.Errorf("memview: ToDLPack of %v: %w", v, err)
	}
	shape, strides, flags, err := elementsOf(v.l, v.dt)
	if err != nil {
		return nil, fmt.Errorf("memview: ToDLPack of %v: %w", v, err)
	}
	flags |= extra
	if v.readOnly {
		flags |= dlpack.FlagReadOnly
	}
	if v.buf != nil && v.buf.Closed() {
		return nil, fmt.Errorf("memview: ToDLPack of %v: %w", v, ErrClosed)
	}
	t := dlpackOwner(v.owner)
	if t != nil && !t.hold() {
		return nil, fmt.Errorf("memview: ToDLPack of %v: %w", v, ErrClosed)
	}
	var pin *runtime.Pinner
	if v.base != nil {
		pin = new(runtime.Pinner)
		pin.Pin(v.base)
	}
	release := func() {
		if pin != nil {
			pin.Unpin()
		}
		if t != nil {
			t.drop()
		}
		runtime.KeepAlive(v)
	}
	m, err := dlpack.Export(dlpack.ExportRequest{
		Data: v.ptr, Device: dev, DType: v.dt, Shape: shape, Strides: strides, Flags: flags, Release: release,
	})
	if err != nil {
		release()
		return nil, fmt.Errorf("memview: ToDLPack of %v: %w", v, err)
	}
	return m, nil
}

// dlDevice returns the DLDevice of the view's memory.
func (v *StridedMemoryView) dlDevice() (dlpack.DLDevice, error) {
	ordinal := 0
	if v.kind == cuda.MemoryDevice {
		ordinal = v.dev.Ordinal()
	}
	return dlpack.DeviceOf(v.kind, ordinal)
}

// elementsOf returns the shape and strides, in elements of dt, of a view's
// layout l, with the flags that say how to read them: for sub-byte dtypes
// l counts packed groups (itemsize = the group's bytes) or, for one-byte
// items of an fp6 dtype, padded elements.
func elementsOf(l layout.Layout, dt layout.DType) (shape, strides []int64, flags dlpack.Flags, err error) {
	shape, strides = l.Shape(), l.Strides()
	if !dt.IsSubByte() {
		return shape, strides, 0, nil
	}
	g, nb := dt.PackGroup()
	if l.Itemsize() != nb {
		// checkDType allows only one element per byte besides groups.
		return shape, strides, dlpack.FlagIsSubbyteTypePadded, nil
	}
	// Packed groups: the packing dim is the last with stride 1 and more
	// than one group (as layout.PackedLayout chooses it), else the last
	// with stride 1, else the last with one group, whose stride is then
	// free; its extent counts g elements per group, and every other stride
	// g times as many elements.
	p := -1
	for k := len(shape) - 1; k >= 0 && p < 0; k-- {
		if strides[k] == 1 && shape[k] > 1 {
			p = k
		}
	}
	for k := len(shape) - 1; k >= 0 && p < 0; k-- {
		if strides[k] == 1 || shape[k] <= 1 {
			p, strides[k] = k, 1
		}
	}
	if p < 0 {
		return nil, nil, 0, fmt.Errorf("%w: %v view %v has no dim of stride 1 to unpack its %d-element groups into", ErrDType, dt, l, g)
	}
	G := int64(g)
	for k := range shape {
		if k == p {
			if shape[k] > (1<<63-1)/G {
				return nil, nil, 0, fmt.Errorf("%w: %v view %v: %d groups of %d elements overflow int64", layout.ErrOverflow, dt, l, shape[k], G)
			}
			shape[k] *= G
			continue
		}
		s := strides[k]
		if s > (1<<63-1)/G || s < -(1<<63-1)/G {
			return nil, nil, 0, fmt.Errorf("%w: %v view %v: stride %d of %d-element groups overflows int64", layout.ErrOverflow, dt, l, s, G)
		}
		strides[k] = s * G
	}
	return shape, strides, 0, nil
}
