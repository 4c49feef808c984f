package jit

import (
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sync/singleflight"

	"github.com/stridekit/stridekit/layout"
	"github.com/stridekit/stridekit/runtime/cuda"
)

// ErrNoKernel is returned by For and Cache.Kernel for a signature no kernel
// exists for.
var ErrNoKernel = errors.New("jit: no kernel")

// Cache holds loaded kernels per device context, safe for concurrent use;
// concurrent requests for one kernel load (and compile) it once. The zero
// Cache is not usable: use NewCache or Default.
type Cache struct {
	mu      sync.RWMutex
	funcs   map[funcKey]cuda.Function
	modules []*cuda.Module
	flight  singleflight.Group
	closed  bool
	// sigs is the lock-free fast path of Kernel: an immutable map,
	// replaced whole (copy on write) when a kernel is added.
	sigs atomic.Pointer[map[sigKey]*sigEntry]
}

type funcKey struct {
	dev                 *cuda.Device // one primary context per device
	source, name, flags string
	arch                int
	// params is paramsHash of the parameter layout asked for; aot is the
	// ahead-of-time image load tries first (its first byte: the key keeps
	// the image alive, so no other image takes its address while the
	// function is cached) and aotLen its length. Asked for with another
	// layout or another image, a kernel is loaded again.
	params uint64
	aot    *byte
	aotLen int
}

type sigKey struct {
	dev *cuda.Device
	sig layout.Signature
}

type sigEntry struct {
	fn cuda.Function
	k  Kernel
}

// NewCache returns an empty Cache.
func NewCache() *Cache { return &Cache{funcs: map[funcKey]cuda.Function{}} }

// Default is the process's Cache.
var Default = NewCache()

// Function returns kernel name of source loaded on dev: from memory if
// loaded before with the same options, params and AOT image for the
// device's architecture (an image is told by its backing array: the same
// bytes in another slice load again); else from aot["sm_XX"] for the
// device's architecture when present and loadable; else compiled
// (CompileCached, so the disk cache applies) for opts.Arch, or the
// device's architecture when that is 0. params is the kernel's parameter
// layout (cuda.Module.FunctionWithParams); nil asks the driver
// (cuda.Module.Function).
func (c *Cache) Function(dev *cuda.Device, source, name string, params []cuda.Param, opts Options, aot map[string][]byte) (cuda.Function, error) {
	if dev == nil {
		return cuda.Function{}, fmt.Errorf("jit: Cache.Function(%s) on a nil device: %w", name, cuda.ErrInvalidValue)
	}
	if opts.Arch == 0 {
		opts.Arch = dev.Arch()
	}
	key := newFuncKey(dev, source, name, params, opts, aot)
	c.mu.RLock()
	fn, ok := c.funcs[key]
	closed := c.closed
	c.mu.RUnlock()
	if closed {
		return cuda.Function{}, cuda.ErrClosed
	}
	if ok {
		stats.memHits.Add(1)
		return fn, nil
	}
	v, err, _ := c.flight.Do(key.flightKey(), func() (any, error) {
		c.mu.RLock()
		fn, ok := c.funcs[key]
		c.mu.RUnlock()
		if ok {
			return fn, nil
		}
		fn, m, err := load(dev, source, name, params, opts, aot)
		if err != nil {
			return cuda.Function{}, err
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.closed {
			m.Close()
			return cuda.Function{}, cuda.ErrClosed
		}
		c.funcs[key] = fn
		c.modules = append(c.modules, m)
		return fn, nil
	})
	return v.(cuda.Function), err
}

// newFuncKey is Function's key for its arguments (opts.Arch filled in). It
// allocates nothing, so neither does a hit.
func newFuncKey(dev *cuda.Device, source, name string, params []cuda.Param, opts Options, aot map[string][]byte) funcKey {
	key := funcKey{dev: dev, source: source, name: name, flags: flagsKey(opts.Flags), arch: opts.Arch, params: paramsHash(params)}
	if img := aotImage(aot, dev.Arch()); len(img) > 0 {
		key.aot, key.aotLen = &img[0], len(img)
	}
	return key
}

// flightKey is the single-flight key of k: a string of every field.
func (k funcKey) flightKey() string {
	return strconv.Itoa(k.dev.Ordinal()) + "\x00" + strconv.Itoa(k.arch) + "\x00" + k.name + "\x00" +
		strconv.FormatUint(k.params, 16) + "\x00" + strconv.FormatUint(uint64(uintptr(unsafe.Pointer(k.aot))), 16) + "\x00" +
		strconv.Itoa(k.aotLen) + "\x00" + strconv.Itoa(len(k.flags)) + "\x00" + k.flags + "\x00" + k.source
}

// paramsHash is a 64-bit FNV-1a hash of a parameter layout: 0 for nil (ask
// the driver), never 0 otherwise.
func paramsHash(params []cuda.Param) uint64 {
	if params == nil {
		return 0
	}
	const prime = 1099511628211
	h := uint64(14695981039346656037)
	for i := -1; i < len(params); i++ {
		a, b := uint32(len(params)), uint32(0)
		if i >= 0 {
			a, b = params[i].Offset, params[i].Size
		}
		for _, v := range [2]uint32{a, b} {
			for range 4 {
				h = (h ^ uint64(byte(v))) * prime
				v >>= 8
			}
		}
	}
	return max(h, 1)
}

// aotImage is aot["sm_<arch>"], the image load tries first, looked up
// without allocating.
func aotImage(aot map[string][]byte, arch int) []byte {
	if len(aot) == 0 {
		return nil
	}
	var buf [24]byte
	return aot[string(strconv.AppendInt(append(buf[:0], "sm_"...), int64(arch), 10))]
}

func function(m *cuda.Module, name string, params []cuda.Param) (cuda.Function, error) {
	if params != nil {
		return m.FunctionWithParams(name, params)
	}
	return m.Function(name)
}

func load(dev *cuda.Device, source, name string, params []cuda.Param, opts Options, aot map[string][]byte) (cuda.Function, *cuda.Module, error) {
	if img := aot["sm_"+strconv.Itoa(dev.Arch())]; len(img) > 0 {
		if m, err := dev.LoadModule(img); err == nil {
			stats.loads.Add(1)
			if fn, err := function(m, name, params); err == nil {
				return fn, m, nil
			}
			m.Close()
		}
	}
	if source == "" {
		return cuda.Function{}, nil, fmt.Errorf("jit: kernel %s: no source and no CUBIN for sm_%d: %w", name, dev.Arch(), ErrArch)
	}
	img, err := CompileCached(source, opts)
	if err != nil {
		return cuda.Function{}, nil, err
	}
	m, err := dev.LoadModule(img.Data)
	if err != nil {
		return cuda.Function{}, nil, fmt.Errorf("jit: load %s (%s): %w", name, targetOption(img.Arch, img.PTX), err)
	}
	stats.loads.Add(1)
	fn, err := function(m, name, params)
	if err != nil {
		m.Close()
		return cuda.Function{}, nil, err
	}
	return fn, m, nil
}

// Loaded returns the kernel for sig on dev and its function if Kernel has
// loaded them already (one lock-free map lookup, no allocation), else
// false: it neither renders nor compiles. The two point into the cache's
// entry, which never changes: the caller may keep them but must not write
// through them.
func (c *Cache) Loaded(dev *cuda.Device, sig layout.Signature) (*cuda.Function, *Kernel, bool) {
	if m := c.sigs.Load(); m != nil {
		if e, ok := (*m)[sigKey{dev, sig}]; ok {
			return &e.fn, &e.k, true
		}
	}
	return nil, nil, false
}

// Kernel returns the kernel for sig on dev (For: the registered one, else
// one rendered at run time with dev's tuning) and its function loaded on
// dev. A hit costs one lock-free map lookup and allocates nothing.
func (c *Cache) Kernel(dev *cuda.Device, sig layout.Signature) (cuda.Function, Kernel, error) {
	if m := c.sigs.Load(); m != nil {
		if e, ok := (*m)[sigKey{dev, sig}]; ok {
			stats.memHits.Add(1)
			return e.fn, e.k, nil
		}
	}
	if dev == nil {
		return cuda.Function{}, Kernel{}, fmt.Errorf("jit: Cache.Kernel(%v) on a nil device: %w", sig, cuda.ErrInvalidValue)
	}
	k, err := For(sig, dev.Arch())
	if err != nil {
		return cuda.Function{}, Kernel{}, err
	}
	fn, err := c.Function(dev, k.Source, k.Name, k.params(), Options{}, k.Cubin)
	if err != nil {
		return cuda.Function{}, Kernel{}, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return cuda.Function{}, Kernel{}, cuda.ErrClosed
	}
	old := c.sigs.Load()
	m := make(map[sigKey]*sigEntry, 1)
	if old != nil {
		for key, e := range *old {
			m[key] = e
		}
	}
	m[sigKey{dev, sig}] = &sigEntry{fn, k}
	c.sigs.Store(&m)
	return fn, k, nil
}

// Close unloads every module the cache loaded; the functions it returned
// must not be launched afterwards. Idempotent.
func (c *Cache) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	var errs []error
	for _, m := range c.modules {
		errs = append(errs, m.Close())
	}
	c.modules, c.funcs = nil, nil
	c.sigs.Store(nil)
	return errors.Join(errs...)
}
