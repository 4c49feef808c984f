package memview

import (
	"errors"
	"fmt"
	"sync/atomic"
	"unsafe"

	"github.com/stridekit/stridekit/kernels"
	"github.com/stridekit/stridekit/layout"
	"github.com/stridekit/stridekit/runtime/cuda"
)

// A binding is everything a copy between two views needs that depends on
// their layouts, memory kinds, device and pointer alignment but not on the
// addresses themselves: the path, the device launch (kernels.Bound) and,
// for host transfers, the host view's compact image and its staging
// pieces. It is computed once (bind) and kept in the process's binding
// cache, so a repeated copy of the same pair, or of views laid out the
// same at other addresses of the same alignment, plans nothing. Immutable.
type binding struct {
	key      bindKey
	dst, src layout.Layout // the key's layouts, to confirm a hash match
	path     Path
	// k is the device copy: the whole copy for PathDevice; for host
	// transfers, between the host view's compact image and the device view
	// (its plan's class is ClassMemcpy when the image goes straight into
	// or out of the device view).
	k  *kernels.Bound
	kb kernels.Bound // what k points to
	// host is how a host transfer moves the image (transfer.go); nil for
	// device and peer copies, whose bindings are the smaller for it (a
	// first copy's host time grows with the bytes it allocates).
	*host
	// stg is the staged pipeline of a peer copy (peerpipe.go); nil where
	// the kernel k reaches across the peer link itself.
	stg *peerPipe
	// asked is set once the binding served a second copy and, where the
	// kernel's tuning says so, asked for its specialised kernel (again).
	asked atomic.Bool
}

// again notes that the binding serves another copy: the first time, for
// each of its kernels (a staged peer copy has one a side and chunk shape)
// whose tuning says a kernel specialised to its plan pays
// (gen.Knobs.SpecialisesPlan), it asks the background compiler for one, which
// the bound launch switches to when it is ready. It never waits.
func (b *binding) again() {
	if b.k != nil && !b.asked.Load() && b.asked.CompareAndSwap(false, true) {
		_ = b.specialise(true, false) // queues; returns no error
	}
}

// specialise specialises the binding's kernels (the staged pipeline's
// every pack and unpack kernel besides k): those the tuning table says
// pay when tuned, else all; in the background (wait false: queued,
// nothing waited for, no error) or now, returning the first failure.
func (b *binding) specialise(tuned, wait bool) error {
	for _, k := range b.kernels() {
		switch {
		case tuned && !k.Knobs.SpecialisesPlan(&k.Plan):
		case !wait:
			k.SpecialiseLater()
		default:
			if err := k.Specialise(); err != nil {
				return err
			}
		}
	}
	return nil
}

// kernels returns the bound kernels the binding launches: k, or a staged
// peer copy's packs (where the source is not the image) and unpacks.
func (b *binding) kernels() []*kernels.Bound {
	if b.stg == nil {
		return []*kernels.Bound{b.k}
	}
	out := make([]*kernels.Bound, 0, 2*len(b.stg.unpack))
	for i := range b.stg.unpack {
		if !b.stg.packDirect {
			out = append(out, &b.stg.pack[i])
		}
		out = append(out, &b.stg.unpack[i])
	}
	return out
}

// bindKey is what a binding depends on: the device, the path, the memory
// kinds (pinned or pageable host memory decides whether a transfer is one
// DMA), the alignments of the two lowest bytes the device copy is planned
// with, and a hash of both layouts (confirmed with Layout.Equal).
type bindKey struct {
	dev                *cuda.Device // the device that runs the kernel
	peer               *cuda.Device // PathPeer: the other device
	push               bool         // PathPeer: dev is the source's
	hash               uint64
	path               Path
	dstKind, srcKind   cuda.MemoryKind
	dstAlign, srcAlign uint8
}

// maxBindings bounds the binding cache: it has this many slots, in sets
// of two. A program that copies more distinct pairs than this (or several
// pairs whose keys fall in one set) re-plans some of them, nothing worse.
const maxBindings = 4096

// bindings is the process's binding cache, safe for concurrent use: slots
// of atomic pointers, a key's binding in one of the two slots of the set
// its sum picks (the newest in the first). A lookup is one or two atomic
// loads and a store allocates nothing.
var bindings [maxBindings]atomic.Pointer[binding]

// keyOf returns the binding key of a copy from src into dst on path p, with
// the device copy run on dev and planned for lowest bytes aligned to
// dstAlign and srcAlign.
func keyOf(dst, src *StridedMemoryView, p Path, dstAlign, srcAlign int, dev *cuda.Device) bindKey {
	var peer *cuda.Device
	push := false
	if p == PathPeer {
		peer, push = dst.dev, dev != dst.dev
		if !push {
			peer = src.dev
		}
	}
	h := dst.hash
	h ^= src.hash*0x9e3779b97f4a7c15 + 0x632be59bd9b4e019
	return bindKey{dev: dev, peer: peer, push: push, hash: h, path: p, dstKind: dst.kind, srcKind: src.kind, dstAlign: uint8(dstAlign), srcAlign: uint8(srcAlign)}
}

// setOf returns the first slot of the set of key sum s.
func setOf(s uint64) int { return int(s%(maxBindings/2)) * 2 }

// lookup returns the cached binding of key for the two views' layouts, or
// nil.
func lookup(key bindKey, dst, src *StridedMemoryView) *binding {
	i := setOf(key.sum())
	for j := i; j < i+2; j++ {
		if b := bindings[j].Load(); b != nil && b.key == key && b.dst.Equal(dst.l) && b.src.Equal(src.l) {
			return b
		}
	}
	return nil
}

// sum is the key as one number, what the cache is indexed by (a binding
// found by it is confirmed against the whole key and both layouts).
func (k bindKey) sum() uint64 {
	h := k.hash ^ uint64(uintptr(unsafe.Pointer(k.dev)))*0x9e3779b97f4a7c15 ^ uint64(uintptr(unsafe.Pointer(k.peer)))
	h ^= uint64(k.path) | uint64(k.dstKind)<<8 | uint64(k.srcKind)<<16 | uint64(k.dstAlign)<<24 | uint64(k.srcAlign)<<32
	if k.push {
		h ^= 1 << 40
	}
	h *= 0xff51afd7ed558ccd
	return h ^ h>>32
}

// store adds b to the cache: into the first slot of its set, the binding
// there moving to the second (whose binding is dropped). Two stores racing
// on one set may drop a binding early; its pair is planned again.
func store(b *binding) {
	i := setOf(b.key.sum())
	if old := bindings[i].Swap(b); old != nil && old.key.sum() != b.key.sum() {
		bindings[i+1].Store(old)
	}
}

// forget drops every cached binding (tests).
func forget() {
	for i := range bindings {
		bindings[i].Store(nil)
	}
}

// bindingFor returns the binding of a copy from src into dst on path p
// (PathDevice, PathHostToDevice, PathDeviceToHost or PathPeer), whose
// device copy runs on dev between lowest bytes aligned to dstAlign and
// srcAlign: the cached one, else one made now and cached.
func bindingFor(dst, src *StridedMemoryView, p Path, dstAlign, srcAlign int, dev *cuda.Device) (*binding, error) {
	key := keyOf(dst, src, p, dstAlign, srcAlign, dev)
	if b := lookup(key, dst, src); b != nil {
		b.again()
		return b, nil
	}
	b, err := bind(key, dst, src)
	if err != nil {
		return nil, err
	}
	store(b)
	return b, nil
}

// bind makes the binding of key for views dst and src.
func bind(key bindKey, dst, src *StridedMemoryView) (*binding, error) {
	if key.path == PathDevice {
		return bindDevice(key, dst, src)
	}
	b := &binding{key: key, dst: dst.l, src: src.l, path: key.path}
	var err error
	switch key.path {
	case PathHostToDevice:
		err = b.bindUpload(dst, src)
	case PathDeviceToHost:
		err = b.bindDownload(dst, src)
	case PathPeer:
		err = b.bindPeer(dst, src)
	default:
		err = fmt.Errorf("memview: no binding for path %v", key.path)
	}
	if err != nil {
		return nil, err
	}
	return b, nil
}

// bindDevice is bind for PathDevice: the binding and its kernel's slab
// (the plan's slices and argument block) in one allocation (newBinding).
func bindDevice(key bindKey, dst, src *StridedMemoryView) (*binding, error) {
	var b *binding
	_, err := kernels.BindAlloc(func(words int) (*kernels.Bound, []int64) {
		var slab []int64
		b, slab = newBinding(words)
		b.key, b.dst, b.src, b.path = key, dst.l, src.l, key.path
		b.k = &b.kb
		return b.k, slab
	}, key.dev, dst.l, src.l, int(key.dstAlign), int(key.srcAlign))
	if err == nil && gatherBy(localGatherMode, &b.k.Plan, key.dev.Arch(), func(p *layout.Plan, arch int) bool { return localGatherPays(p, arch, key.dev.L2Bytes()) }) {
		b.kb = kernels.Bound{}
		err = kernels.BindInto(b.k, key.dev, dst.l, src.l, int(key.dstAlign), int(key.srcAlign), kernels.Gather)
	}
	if err != nil {
		return nil, err
	}
	return b, nil
}

// A binding with a slab of words after it, in one allocation that fills
// one of Go's allocation size classes (with the 8-byte header the runtime
// puts before objects of over 512 bytes that hold pointers): a first
// device copy's binding and its kernel's slab (newBinding). The slab holds
// no pointers; the collector scans the binding's part only.
type (
	binding896 struct {
		binding
		w [slabWords896]int64
	}
	binding1024 struct {
		binding
		w [slabWords1024]int64
	}
	binding1280 struct {
		binding
		w [slabWords1280]int64
	}
	binding1536 struct {
		binding
		w [slabWords1536]int64
	}
	binding1792 struct {
		binding
		w [slabWords1792]int64
	}
)

// The words of the slab that fills each size class after a binding and
// the allocation's header (at least one).
const (
	bindingSize   = int(unsafe.Sizeof(binding{})) + 8
	slabWords896  = max(896-bindingSize, 8) / 8
	slabWords1024 = max(1024-bindingSize, 8) / 8
	slabWords1280 = max(1280-bindingSize, 8) / 8
	slabWords1536 = max(1536-bindingSize, 8) / 8
	slabWords1792 = max(1792-bindingSize, 8) / 8
)

// newBinding returns a zero binding and a zero slab of words after it, in
// one allocation where the slab fits the size classes above (where it does
// not, in two).
func newBinding(words int) (*binding, []int64) {
	switch {
	case words <= slabWords896:
		x := new(binding896)
		return &x.binding, x.w[:words]
	case words <= slabWords1024:
		x := new(binding1024)
		return &x.binding, x.w[:words]
	case words <= slabWords1280:
		x := new(binding1280)
		return &x.binding, x.w[:words]
	case words <= slabWords1536:
		x := new(binding1536)
		return &x.binding, x.w[:words]
	case words <= slabWords1792:
		x := new(binding1792)
		return &x.binding, x.w[:words]
	}
	return new(binding), make([]int64, words)
}

// acquire holds the views and buffers of dst and src open (their Close
// waits) until release: a copy holds them while it uses their memory (a
// device copy: while it queues the work), so Close never releases memory
// under a copy. It fails with ErrClosed when either view or its buffer is
// closed. Locks are taken in address order, so copies between the same
// views in opposite directions cannot deadlock behind two waiting Closes.
func acquire(dst, src *StridedMemoryView) error {
	a, b := ordered(dst.owner, src.owner)
	a.mu.RLock()
	if b != a {
		b.mu.RLock()
	}
	if a.closed.Load() || b.closed.Load() {
		unlockOwners(a, b)
		return ErrClosed
	}
	x, y := ordered(dst.buf, src.buf)
	if err := x.Acquire(); err != nil {
		unlockOwners(a, b)
		return err
	}
	if y != x {
		if err := y.Acquire(); err != nil {
			x.Release()
			unlockOwners(a, b)
			return err
		}
	}
	return nil
}

// release ends acquire's hold.
func release(dst, src *StridedMemoryView) {
	x, y := ordered(dst.buf, src.buf)
	if y != x {
		y.Release()
	}
	x.Release()
	unlockOwners(ordered(dst.owner, src.owner))
}

func unlockOwners(a, b *owner) {
	if b != a {
		b.mu.RUnlock()
	}
	a.mu.RUnlock()
}

// ordered returns a and b by address, the lower first (nil first).
func ordered[T any](a, b *T) (*T, *T) {
	if uintptr(unsafe.Pointer(a)) > uintptr(unsafe.Pointer(b)) {
		return b, a
	}
	return a, b
}

// errUnbound reports a BoundCopy given views it was not made for.
var errUnbound = errors.New("memview: views do not match the bound copy")
