package memview

import (
	"errors"
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/stridekit/stridekit/layout"
	"github.com/stridekit/stridekit/runtime/cuda"
)

// Sentinel errors; every error of this package wraps one of these (or an
// error of package layout or runtime/cuda) and names the views or values at
// fault.
var (
	// ErrOutOfBounds reports a layout that does not fit the memory it is
	// placed on.
	ErrOutOfBounds = errors.New("memview: layout out of bounds")
	// ErrReadOnly reports a copy into a read-only view.
	ErrReadOnly = errors.New("memview: view is read-only")
	// ErrDevice reports views on two different devices, or a stream of a
	// device other than the views'.
	ErrDevice = errors.New("memview: views on different devices")
	// ErrDType reports a dtype that does not match its layout, a copy
	// between views of different dtypes (there are no conversions), or a
	// Go element type that holds pointers (FromHost).
	ErrDType = errors.New("memview: dtype mismatch")
	// ErrNilStream reports a copy that needs a stream (it involves device
	// memory) given none.
	ErrNilStream = errors.New("memview: nil stream")
	// ErrNilView reports a nil view or buffer.
	ErrNilView = errors.New("memview: nil view")
	// ErrIncomplete reports a copy that failed after part of it may have
	// been written: the destination's contents are undefined.
	ErrIncomplete = errors.New("memview: copy failed part way; dst is partly written")
	// ErrTooLarge reports a host copy (ToHost) whose size in bytes
	// overflows, or is more than the process can hold: the Go memory
	// limit, or the memory available.
	ErrTooLarge = errors.New("memview: host copy too large")
)

// ErrClosed reports the use of a closed view or of a view of a closed
// buffer; it is runtime/cuda's.
var ErrClosed = cuda.ErrClosed

// StridedMemoryView is a typed, strided view of memory: a layout
// (layout.Layout), a dtype, and a pointer to the element at index 0 (the
// pointer convention of package layout), on the host (Go memory, pinned or
// managed memory) or on a device. It is the Go form of cuda.core's
// StridedMemoryView; CopyFrom and CopyTo copy between any two views.
//
// A view does not own the memory it is made from (FromBuffer, FromHost):
// the buffer or slice must stay valid while the view is used. Everything
// about a view is checked when it is made (bounds, dtype, whether its
// elements overlap), so copies check only what involves two views. Views
// are immutable and safe for concurrent use; Close only matters for views
// that own something (FromDLPack).
type StridedMemoryView struct {
	ptr      uintptr // the element at index 0
	low      uintptr // the lowest byte: ptr + MinOffset·itemsize
	span     int64   // RequiredSizeInBytes
	l        layout.Layout
	dt       layout.DType
	kind     cuda.MemoryKind
	dev      *cuda.Device // nil for pageable memory
	buf      *cuda.Buffer // the buffer the view was made from, if any
	base     unsafe.Pointer
	lo, hi   uintptr // the memory the view may address (its buffer or slice)
	unique   bool    // no two indices share an element: a valid copy destination
	readOnly bool
	owner    *owner
	hash     uint64 // l.Hash(), made with the view: copies key their bindings by it
	dense    bool   // the view's elements fill its span, each byte once
}

// owner is shared by a view and every view derived from it: whether they
// are closed, and what Close releases (a DLPack tensor; nothing for views of
// memory they do not own). Copies hold mu's read lock while they use the
// views' memory and Close takes the write lock, so Close waits for them and
// no copy starts after it.
type owner struct {
	mu      sync.RWMutex
	release func() error
	closed  atomic.Bool
}

// rootView is a view made from memory (FromBuffer, FromHost) and its owner,
// in one allocation.
type rootView struct {
	v StridedMemoryView
	o owner
}

// checkDType reports whether dt describes the items of l: the same size, or
// for sub-byte types (fp4, fp6) a layout of packed groups or of one element
// per byte (padded).
func checkDType(l layout.Layout, dt layout.DType) error {
	if !dt.IsValid() {
		return fmt.Errorf("%w: invalid (zero) dtype for layout %v", ErrDType, l)
	}
	if dt.IsSubByte() {
		_, g := dt.PackGroup()
		if l.Itemsize() != g && l.Itemsize() != 1 {
			return fmt.Errorf("%w: %v packs in groups of %d bytes (or one element per byte), layout %v has items of %d", ErrDType, dt, g, l, l.Itemsize())
		}
		return nil
	}
	if dt.Itemsize() != l.Itemsize() {
		return fmt.Errorf("%w: %v has %d-byte items, layout %v has %d", ErrDType, dt, dt.Itemsize(), l, l.Itemsize())
	}
	return nil
}

// newView places l with its lowest byte at low, inside [lo, hi).
func newView(low uintptr, l layout.Layout, dt layout.DType, lo, hi uintptr) (*StridedMemoryView, error) {
	if err := checkDType(l, dt); err != nil {
		return nil, err
	}
	span := l.RequiredSizeInBytes()
	if low < lo || uint64(span) > uint64(hi-low) || (span > 0 && low > hi) {
		return nil, fmt.Errorf("%w: layout %v needs %d bytes from %#x, memory is [%#x, %#x)", ErrOutOfBounds, l, span, low, lo, hi)
	}
	r := &rootView{v: StridedMemoryView{low: low, span: span, l: l, dt: dt, lo: lo, hi: hi, unique: l.IsUnique(), hash: l.Hash(),
		dense: span > 0 && l.Volume()*int64(l.Itemsize()) == span}}
	v := &r.v
	v.owner = &r.o // derived views replace it with their root's
	v.ptr = low + uintptr(-l.MinOffset()*int64(l.Itemsize()))
	return v, nil
}

// FromBuffer returns the view of layout l and dtype dt whose lowest byte is
// the start of buf (so a view with negative strides fits the buffer too).
// It fails with ErrOutOfBounds if l needs more than buf.Size() bytes,
// ErrDType if dt's items are not l's, ErrClosed for a closed buffer and
// ErrNilView for a nil one. The view is of buf's memory kind (device,
// pinned host, managed, or wrapped pageable memory) and device.
func FromBuffer(buf *cuda.Buffer, l layout.Layout, dt layout.DType) (*StridedMemoryView, error) {
	if buf == nil {
		return nil, fmt.Errorf("%w: FromBuffer of a nil buffer", ErrNilView)
	}
	if buf.Closed() {
		return nil, fmt.Errorf("memview: FromBuffer: %w", ErrClosed)
	}
	lo := uintptr(buf.Ptr())
	v, err := newView(lo, l, dt, lo, lo+uintptr(buf.Size()))
	if err != nil {
		return nil, fmt.Errorf("memview: FromBuffer (%v buffer of %d bytes): %w", buf.Kind(), buf.Size(), err)
	}
	v.kind, v.dev, v.buf = buf.Kind(), buf.Device(), buf
	return v, nil
}

// FromOwnedBuffer is FromBuffer for a buffer the view takes over: closing
// the view (or any view derived from it) closes buf, after the copies in
// progress with it are queued. For temporaries handed out as views, such
// as a transport's exchange buffers. On error buf stays the caller's.
func FromOwnedBuffer(buf *cuda.Buffer, l layout.Layout, dt layout.DType) (*StridedMemoryView, error) {
	v, err := FromBuffer(buf, l, dt)
	if err != nil {
		return nil, err
	}
	v.owner.release = buf.Close
	return v, nil
}

// FromHost returns the view of layout l over a Go slice, whose first byte
// is the view's lowest byte. The dtype is T's where T is a Go numeric type
// (int8…uint64, float32, float64, complex64, complex128, bool) of the
// layout's item size, else an opaque type of that size (reinterpret with
// View). It fails with ErrOutOfBounds when l needs more bytes than data
// has. The memory is pageable host memory, copied synchronously; the view
// keeps data alive.
//
// T must hold no Go pointers: not a pointer, string, slice, map, channel,
// function, interface or unsafe.Pointer, nor an array or struct with one
// inside. A copy writes raw bytes, behind the garbage collector's back, and
// ToDLPack would hand the memory to C, where Go pointers may not go; so
// such a T is an ErrDType error naming it. Numbers, bools, and arrays and
// structs of them are accepted.
func FromHost[T any](data []T, l layout.Layout) (*StridedMemoryView, error) {
	if err := checkPointerFree(reflect.TypeFor[T]()); err != nil {
		return nil, fmt.Errorf("memview: FromHost: %w", err)
	}
	var zero T
	size := int(unsafe.Sizeof(zero))
	n := uintptr(len(data) * size)
	var base unsafe.Pointer
	if len(data) > 0 {
		base = unsafe.Pointer(unsafe.SliceData(data))
	}
	dt := dtypeOf(reflect.TypeFor[T](), l.Itemsize())
	lo := uintptr(base)
	v, err := newView(lo, l, dt, lo, lo+n)
	if err != nil {
		return nil, fmt.Errorf("memview: FromHost (%d bytes): %w", n, err)
	}
	v.kind, v.base = cuda.MemoryPageable, base
	return v, nil
}

// pointerFree caches, per reflect.Type, the verdict of checkPointerFree:
// nil, or the error for a type that holds Go pointers.
var pointerFree sync.Map // reflect.Type → error (nil: pointer-free)

// checkPointerFree returns an ErrDType error naming t when values of t hold
// Go pointers, which a view's memory must not (see FromHost). The verdict is
// reached once per type, by a walk of its elements and fields, and cached.
func checkPointerFree(t reflect.Type) error {
	if v, ok := pointerFree.Load(t); ok {
		err, _ := v.(error)
		return err
	}
	var err error
	if path, kind, bad := pointerPath(t, 0); bad {
		if path != "" {
			kind += " at " + path
		}
		err = fmt.Errorf("%w: element type %v holds Go pointers (%s): a view's memory is copied as raw bytes and may be handed to C, so it must be pointer-free", ErrDType, t, kind)
	}
	v, _ := pointerFree.LoadOrStore(t, err)
	err, _ = v.(error)
	return err
}

// pointerPath reports whether values of t hold Go pointers, and where: the
// path from t to the first one (".f", "[i]" steps; "" when t itself is one)
// and its kind. depth bounds the walk, which Go's types never reach: a type
// recurses only through a pointer, slice, map, … where the walk stops.
func pointerPath(t reflect.Type, depth int) (path, kind string, bad bool) {
	if depth > 100 {
		return "", t.Kind().String(), true
	}
	switch t.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128:
		return "", "", false
	case reflect.Array:
		if t.Len() == 0 {
			return "", "", false // holds nothing
		}
		if p, k, bad := pointerPath(t.Elem(), depth+1); bad {
			return "[i]" + p, k, true
		}
		return "", "", false
	case reflect.Struct:
		for i := range t.NumField() {
			f := t.Field(i)
			if p, k, bad := pointerPath(f.Type, depth+1); bad {
				return "." + f.Name + p, k, true
			}
		}
		return "", "", false
	}
	// Pointer, UnsafePointer, String, Slice, Map, Chan, Func, Interface.
	switch t.Kind() {
	case reflect.Pointer:
		return "", "pointer", true
	case reflect.Chan:
		return "", "channel", true
	case reflect.Func:
		return "", "function", true
	}
	return "", t.Kind().String(), true
}

// dtypeOf maps a Go type to the dtype of items of size bytes.
func dtypeOf(t reflect.Type, size int) layout.DType {
	if int(t.Size()) == size {
		switch t.Kind() {
		case reflect.Int8:
			return layout.Int8
		case reflect.Int16:
			return layout.Int16
		case reflect.Int32:
			return layout.Int32
		case reflect.Int64:
			return layout.Int64
		case reflect.Uint8:
			return layout.Uint8
		case reflect.Uint16:
			return layout.Uint16
		case reflect.Uint32:
			return layout.Uint32
		case reflect.Uint64:
			return layout.Uint64
		case reflect.Float32:
			return layout.Float32
		case reflect.Float64:
			return layout.Float64
		case reflect.Complex64:
			return layout.Complex64
		case reflect.Complex128:
			return layout.Complex128
		case reflect.Bool:
			return layout.Bool
		}
	}
	d, err := layout.Opaque(max(size, 1))
	if err != nil {
		return layout.DType{}
	}
	return d
}

// derive returns a view of the same memory with layout l and dtype dt,
// index 0 at ptr, bounds-checked against the view's memory.
func (v *StridedMemoryView) derive(ptr uintptr, l layout.Layout, dt layout.DType) (*StridedMemoryView, error) {
	if v == nil {
		return nil, fmt.Errorf("%w: method of a nil view", ErrNilView)
	}
	low := ptr + uintptr(l.MinOffset()*int64(l.Itemsize()))
	if l.MinOffset() < 0 && low > ptr { // wrapped below zero
		return nil, fmt.Errorf("%w: layout %v from %#x starts below address 0", ErrOutOfBounds, l, ptr)
	}
	w, err := newView(low, l, dt, v.lo, v.hi)
	if err != nil {
		return nil, err
	}
	w.kind, w.dev, w.buf, w.base, w.readOnly, w.owner = v.kind, v.dev, v.buf, v.base, v.readOnly, v.owner
	return w, nil
}

// View returns a view of the same memory with another layout and dtype,
// index 0 at the same address: a reinterpretation (another shape or order,
// or float32 bits as uint32). It fails with ErrOutOfBounds when l addresses
// memory outside what the view was made from, and ErrDType when dt's items
// are not l's.
func (v *StridedMemoryView) View(l layout.Layout, dt layout.DType) (*StridedMemoryView, error) {
	if v == nil {
		return nil, fmt.Errorf("%w: View of a nil view", ErrNilView)
	}
	return v.derive(v.ptr, l, dt)
}

// ViewAt is View with index 0 moved by offset bytes, for sub-arrays of a
// buffer and headers in front of the data.
func (v *StridedMemoryView) ViewAt(offset int64, l layout.Layout, dt layout.DType) (*StridedMemoryView, error) {
	if v == nil {
		return nil, fmt.Errorf("%w: ViewAt of a nil view", ErrNilView)
	}
	return v.derive(uintptr(int64(v.ptr)+offset), l, dt)
}

// Slice returns the view of the elements selected by one Range per dim
// (layout.Layout.Slice: Python's slicing, negative steps included).
func (v *StridedMemoryView) Slice(ranges ...layout.Range) (*StridedMemoryView, error) {
	if v == nil {
		return nil, fmt.Errorf("%w: Slice of a nil view", ErrNilView)
	}
	l, off, err := v.l.Slice(ranges...)
	if err != nil {
		return nil, err
	}
	return v.derive(uintptr(int64(v.ptr)+off*int64(v.l.Itemsize())), l, v.dt)
}

// Permute returns the view with dims reordered: dim i of the result is dim
// perm[i] of v (a transpose for perm (1, 0)).
func (v *StridedMemoryView) Permute(perm ...int) (*StridedMemoryView, error) {
	if v == nil {
		return nil, fmt.Errorf("%w: Permute of a nil view", ErrNilView)
	}
	l, err := v.l.Permute(perm...)
	if err != nil {
		return nil, err
	}
	return v.derive(v.ptr, l, v.dt)
}

// AsReadOnly returns the same view, read-only: CopyFrom into it fails with
// ErrReadOnly.
func (v *StridedMemoryView) AsReadOnly() *StridedMemoryView {
	if v == nil {
		return nil
	}
	w := *v
	w.readOnly = true
	return &w
}

// Ptr returns the address of the element at index 0.
func (v *StridedMemoryView) Ptr() uintptr { return v.ptr }

// Layout returns the view's layout.
func (v *StridedMemoryView) Layout() layout.Layout { return v.l }

// Shape returns the view's extents (a copy).
func (v *StridedMemoryView) Shape() []int64 { return v.l.Shape() }

// Strides returns the view's strides in items (a copy).
func (v *StridedMemoryView) Strides() []int64 { return v.l.Strides() }

// DType returns the view's element type.
func (v *StridedMemoryView) DType() layout.DType { return v.dt }

// Kind returns what memory the view is on.
func (v *StridedMemoryView) Kind() cuda.MemoryKind { return v.kind }

// Device returns the device of the view's memory (nil for pageable host
// memory).
func (v *StridedMemoryView) Device() *cuda.Device { return v.dev }

// DeviceID returns the ordinal of the view's device, or -1 for host memory
// no device owns.
func (v *StridedMemoryView) DeviceID() int {
	if v.dev == nil {
		return -1
	}
	return v.dev.Ordinal()
}

// IsDeviceAccessible reports whether kernels can address the view's memory
// directly: device, managed and pinned (mapped) memory.
func (v *StridedMemoryView) IsDeviceAccessible() bool { return v.kind != cuda.MemoryPageable }

// ReadOnly reports whether the view refuses to be a copy destination.
func (v *StridedMemoryView) ReadOnly() bool { return v.readOnly }

// String describes the view: dtype, layout, memory kind and device, address.
func (v *StridedMemoryView) String() string {
	if v == nil {
		return "<nil view>"
	}
	where := v.kind.String()
	if v.dev != nil {
		where += fmt.Sprintf(" cuda:%d", v.dev.Ordinal())
	}
	return fmt.Sprintf("%v %v (%s at %#x)", v.dt, v.l, where, v.ptr)
}

// Close closes the view and every view derived from the same FromBuffer,
// FromHost or FromDLPack call (they share what they were made from): it
// waits for the copies in progress with any of them to stop using their
// memory (a device copy: to be queued), then marks them closed, so later
// copies fail with ErrClosed, and releases what they own (a DLPack
// tensor's deleter runs once). Views of memory they do not own release
// nothing: the memory stays the caller's. Idempotent.
func (v *StridedMemoryView) Close() error {
	if v == nil || v.owner == nil {
		return nil
	}
	o := v.owner
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed.Swap(true) || o.release == nil {
		return nil
	}
	return o.release()
}

// closed reports whether the view or its buffer was closed.
func (v *StridedMemoryView) closed() bool {
	return (v.owner != nil && v.owner.closed.Load()) || (v.buf != nil && v.buf.Closed())
}

// hostBytes returns the view's span as a byte slice, for host-accessible
// memory.
func (v *StridedMemoryView) hostBytes() []byte {
	if v.span == 0 {
		return nil
	}
	if v.base != nil {
		return unsafe.Slice((*byte)(unsafe.Add(v.base, v.low-uintptr(v.base))), v.span)
	}
	p := v.low
	return unsafe.Slice((*byte)(*(*unsafe.Pointer)(unsafe.Pointer(&p))), v.span)
}
