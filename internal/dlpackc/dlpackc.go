//go:build cgo

// Package dlpackc is the C side of the DLPack tests (runtime/dlpack,
// runtime/memview, internal/capi): DLPack's structs declared in C from the
// DLPack 1.3 specification, their field offsets and sizes as the C compiler
// lays them out, and a C producer and a C consumer of DLPack tensors, so the
// tests can exchange tensors with real C code in both directions. Only tests
// import it; it needs cgo.
package dlpackc

/*
#cgo LDFLAGS: -lpthread
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

// ---- DLPack 1.3, declared from the specification ----

typedef struct {
	uint32_t major;
	uint32_t minor;
} DLPackVersion;

typedef enum {
	kDLCPU = 1,
	kDLCUDA = 2,
	kDLCUDAHost = 3,
	kDLOpenCL = 4,
	kDLVulkan = 7,
	kDLMetal = 8,
	kDLVPI = 9,
	kDLROCM = 10,
	kDLROCMHost = 11,
	kDLExtDev = 12,
	kDLCUDAManaged = 13,
	kDLOneAPI = 14,
	kDLWebGPU = 15,
	kDLHexagon = 16,
	kDLMAIA = 17,
	kDLTrn = 18,
} DLDeviceType;

typedef struct {
	DLDeviceType device_type;
	int32_t device_id;
} DLDevice;

typedef struct {
	uint8_t code;
	uint8_t bits;
	uint16_t lanes;
} DLDataType;

typedef struct {
	void *data;
	DLDevice device;
	int32_t ndim;
	DLDataType dtype;
	int64_t *shape;
	int64_t *strides;
	uint64_t byte_offset;
} DLTensor;

typedef struct DLManagedTensor {
	DLTensor dl_tensor;
	void *manager_ctx;
	void (*deleter)(struct DLManagedTensor *self);
} DLManagedTensor;

typedef struct DLManagedTensorVersioned {
	DLPackVersion version;
	void *manager_ctx;
	void (*deleter)(struct DLManagedTensorVersioned *self);
	uint64_t flags;
	DLTensor dl_tensor;
} DLManagedTensorVersioned;

// ---- offsets and sizes ----

typedef struct {
	const char *name;
	size_t value;
} abi_entry;

#define SIZE(T) {#T ".size", sizeof(T)}, {#T ".align", _Alignof(T)}
#define FIELD(T, f) {#T "." #f, offsetof(T, f)}

static const abi_entry abi_table[] = {
	SIZE(DLPackVersion),
	FIELD(DLPackVersion, major),
	FIELD(DLPackVersion, minor),
	SIZE(DLDeviceType),
	SIZE(DLDevice),
	FIELD(DLDevice, device_type),
	FIELD(DLDevice, device_id),
	SIZE(DLDataType),
	FIELD(DLDataType, code),
	FIELD(DLDataType, bits),
	FIELD(DLDataType, lanes),
	SIZE(DLTensor),
	FIELD(DLTensor, data),
	FIELD(DLTensor, device),
	FIELD(DLTensor, ndim),
	FIELD(DLTensor, dtype),
	FIELD(DLTensor, shape),
	FIELD(DLTensor, strides),
	FIELD(DLTensor, byte_offset),
	SIZE(DLManagedTensor),
	FIELD(DLManagedTensor, dl_tensor),
	FIELD(DLManagedTensor, manager_ctx),
	FIELD(DLManagedTensor, deleter),
	SIZE(DLManagedTensorVersioned),
	FIELD(DLManagedTensorVersioned, version),
	FIELD(DLManagedTensorVersioned, manager_ctx),
	FIELD(DLManagedTensorVersioned, deleter),
	FIELD(DLManagedTensorVersioned, flags),
	FIELD(DLManagedTensorVersioned, dl_tensor),
};

static size_t abi_count(void) { return sizeof(abi_table) / sizeof(abi_table[0]); }
static const char *abi_name(size_t i) { return abi_table[i].name; }
static size_t abi_value(size_t i) { return abi_table[i].value; }

// ---- the producer ----

#define MAX_IDS 4096

// Deleter calls per producer id; manager_ctx holds the id.
static int versioned_calls[MAX_IDS];
static int legacy_calls[MAX_IDS];
static pthread_mutex_t calls_mu = PTHREAD_MUTEX_INITIALIZER;

typedef struct {
	int id;
	uintptr_t data;
	int32_t ndim;
	const int64_t *shape;   // ndim values
	const int64_t *strides; // ndim values, or NULL
	int null_shape;
	uint8_t code, bits;
	uint16_t lanes;
	uint64_t byte_offset;
	int32_t device_type, device_id;
	uint32_t major, minor;
	uint64_t flags;
} producer_spec;

static void count_call(int *calls, void *ctx) {
	intptr_t id = (intptr_t)ctx;
	pthread_mutex_lock(&calls_mu);
	if (id >= 0 && id < MAX_IDS) calls[id]++;
	pthread_mutex_unlock(&calls_mu);
}

static void producer_versioned_deleter(DLManagedTensorVersioned *self) {
	count_call(versioned_calls, self->manager_ctx);
	free(self);
}

static void producer_legacy_deleter(DLManagedTensor *self) {
	count_call(legacy_calls, self->manager_ctx);
	free(self);
}

// fill_tensor sets t from s, copying shape and strides into arrays (room
// for 2*ndim values).
static void fill_tensor(DLTensor *t, const producer_spec *s, int64_t *arrays) {
	int n = s->ndim > 0 ? s->ndim : 0;
	t->data = (void *)s->data;
	t->device.device_type = (DLDeviceType)s->device_type;
	t->device.device_id = s->device_id;
	t->ndim = s->ndim;
	t->dtype.code = s->code;
	t->dtype.bits = s->bits;
	t->dtype.lanes = s->lanes;
	t->shape = NULL;
	t->strides = NULL;
	if (n > 0 && !s->null_shape) {
		memcpy(arrays, s->shape, n * sizeof(int64_t));
		t->shape = arrays;
	}
	if (n > 0 && s->strides != NULL) {
		memcpy(arrays + n, s->strides, n * sizeof(int64_t));
		t->strides = arrays + n;
	}
	t->byte_offset = s->byte_offset;
}

static DLManagedTensorVersioned *produce_versioned(const producer_spec *s) {
	int n = s->ndim > 0 ? s->ndim : 0;
	DLManagedTensorVersioned *m = malloc(sizeof(*m) + 2 * n * sizeof(int64_t));
	if (m == NULL) return NULL;
	m->version.major = s->major;
	m->version.minor = s->minor;
	m->manager_ctx = (void *)(intptr_t)s->id;
	m->deleter = producer_versioned_deleter;
	m->flags = s->flags;
	fill_tensor(&m->dl_tensor, s, (int64_t *)(m + 1));
	return m;
}

static DLManagedTensor *produce_legacy(const producer_spec *s) {
	int n = s->ndim > 0 ? s->ndim : 0;
	DLManagedTensor *m = malloc(sizeof(*m) + 2 * n * sizeof(int64_t));
	if (m == NULL) return NULL;
	m->manager_ctx = (void *)(intptr_t)s->id;
	m->deleter = producer_legacy_deleter;
	fill_tensor(&m->dl_tensor, s, (int64_t *)(m + 1));
	return m;
}

static int get_calls(int *calls, int id) {
	int n;
	pthread_mutex_lock(&calls_mu);
	n = (id >= 0 && id < MAX_IDS) ? calls[id] : -1;
	pthread_mutex_unlock(&calls_mu);
	return n;
}
static int versioned_calls_of(int id) { return get_calls(versioned_calls, id); }
static int legacy_calls_of(int id) { return get_calls(legacy_calls, id); }

// count_only_deleter counts its calls and frees nothing: the deleter of
// tensors whose struct the caller keeps (benchmarks reuse one).
static long count_only_calls;
static void count_only_deleter(DLManagedTensorVersioned *self) {
	(void)self;
	__atomic_fetch_add(&count_only_calls, 1, __ATOMIC_SEQ_CST);
}
static uintptr_t count_only_deleter_addr(void) { return (uintptr_t)count_only_deleter; }
static long count_only_calls_now(void) { return __atomic_load_n(&count_only_calls, __ATOMIC_SEQ_CST); }

// ---- the consumer ----

#define MAX_DIMS 16

typedef struct {
	uint32_t major, minor;
	uint64_t flags;
	uintptr_t data;
	int32_t device_type, device_id, ndim;
	uint8_t code, bits;
	uint16_t lanes;
	int null_shape, null_strides;
	int64_t shape[MAX_DIMS], strides[MAX_DIMS];
	uint64_t byte_offset;
	uintptr_t manager_ctx, deleter;
} consumed;

// read_tensor copies t's fields to out and reads the element at each of the
// nidx indices (ndim values each) through data + byte_offset + strides, as
// a little-endian integer of the element's byte size (at most 8). NULL
// strides are read as C order. It returns 0, or -1 when the tensor is out
// of what it handles.
static int read_tensor(const DLTensor *t, consumed *out, const int64_t *idx, int nidx, uint64_t *values) {
	int n = t->ndim, k, i;
	int64_t st[MAX_DIMS];
	size_t item = ((size_t)t->dtype.bits * t->dtype.lanes + 7) / 8;
	out->data = (uintptr_t)t->data;
	out->device_type = t->device.device_type;
	out->device_id = t->device.device_id;
	out->ndim = n;
	out->code = t->dtype.code;
	out->bits = t->dtype.bits;
	out->lanes = t->dtype.lanes;
	out->null_shape = t->shape == NULL;
	out->null_strides = t->strides == NULL;
	out->byte_offset = t->byte_offset;
	if (n < 0 || n > MAX_DIMS || (n > 0 && t->shape == NULL) || item > 8) return -1;
	for (k = 0; k < n; k++) {
		out->shape[k] = t->shape[k];
		out->strides[k] = t->strides ? t->strides[k] : 0;
	}
	if (t->strides) {
		for (k = 0; k < n; k++) st[k] = t->strides[k];
	} else {
		int64_t s = 1;
		for (k = n - 1; k >= 0; k--) {
			st[k] = s;
			s *= t->shape[k];
		}
	}
	for (i = 0; i < nidx; i++) {
		const char *p = (const char *)t->data + t->byte_offset;
		int64_t off = 0;
		uint64_t v = 0;
		for (k = 0; k < n; k++) {
			int64_t j = idx[i * n + k];
			if (j < 0 || j >= t->shape[k]) return -1;
			off += j * st[k];
		}
		memcpy(&v, p + off * (int64_t)item, item);
		values[i] = v;
	}
	return 0;
}

static int consume_versioned(DLManagedTensorVersioned *m, consumed *out, const int64_t *idx, int nidx, uint64_t *values) {
	out->major = m->version.major;
	out->minor = m->version.minor;
	out->flags = m->flags;
	out->manager_ctx = (uintptr_t)m->manager_ctx;
	out->deleter = (uintptr_t)m->deleter;
	return read_tensor(&m->dl_tensor, out, idx, nidx, values);
}

static int consume_legacy(DLManagedTensor *m, consumed *out, const int64_t *idx, int nidx, uint64_t *values) {
	out->manager_ctx = (uintptr_t)m->manager_ctx;
	out->deleter = (uintptr_t)m->deleter;
	return read_tensor(&m->dl_tensor, out, idx, nidx, values);
}

// delete_versioned calls m's deleter times times, keeping the function
// pointer from before the first call as a careless consumer would.
static void delete_versioned(DLManagedTensorVersioned *m, int times) {
	void (*d)(DLManagedTensorVersioned *) = m->deleter;
	int i;
	if (d == NULL) return;
	for (i = 0; i < times; i++) d(m);
}

static void delete_legacy(DLManagedTensor *m, int times) {
	void (*d)(DLManagedTensor *) = m->deleter;
	int i;
	if (d == NULL) return;
	for (i = 0; i < times; i++) d(m);
}

static void *delete_versioned_thread(void *m) {
	delete_versioned((DLManagedTensorVersioned *)m, 1);
	return NULL;
}

// delete_versioned_on_thread calls m's deleter from a new thread that the
// Go runtime has never seen, as a consumer's garbage collector might.
static int delete_versioned_on_thread(DLManagedTensorVersioned *m) {
	pthread_t th;
	if (pthread_create(&th, NULL, delete_versioned_thread, m) != 0) return -1;
	return pthread_join(th, NULL);
}
*/
import "C"

import (
	"errors"
	"runtime"
	"unsafe"
)

// Entry is one offset or size of the C structs: Name is "Type.size",
// "Type.align" or "Type.field" (the field's offset), Value the C
// compiler's value.
type Entry struct {
	Name  string
	Value uintptr
}

// ABI returns the sizes, alignments and field offsets of DLPackVersion,
// DLDeviceType, DLDevice, DLDataType, DLTensor, DLManagedTensor and
// DLManagedTensorVersioned as the C compiler lays them out.
func ABI() []Entry {
	n := int(C.abi_count())
	out := make([]Entry, n)
	for i := range n {
		out[i] = Entry{C.GoString(C.abi_name(C.size_t(i))), uintptr(C.abi_value(C.size_t(i)))}
	}
	return out
}

// Buffer is C heap memory for tensor data, which C code may keep pointers
// to (Go memory it may not).
type Buffer struct {
	p unsafe.Pointer
	n int
}

// Malloc returns a zeroed buffer of n > 0 bytes of C heap memory.
func Malloc(n int) *Buffer {
	p := C.calloc(C.size_t(n), 1)
	if p == nil {
		panic("dlpackc: calloc failed")
	}
	return &Buffer{p, n}
}

// Bytes returns the buffer's memory as a slice, valid until Free.
func (b *Buffer) Bytes() []byte { return unsafe.Slice((*byte)(b.p), b.n) }

// Addr returns the buffer's address.
func (b *Buffer) Addr() uintptr { return uintptr(b.p) }

// Free frees the buffer.
func (b *Buffer) Free() { C.free(b.p) }

// Spec is what the C producer describes.
type Spec struct {
	// ID identifies the tensor in DeleterCalls: 0 to 4095.
	ID int
	// Data is the data pointer (C memory, or any address).
	Data uintptr
	// NDim is the number of dims; Shape and Strides hold NDim values each
	// (more are ignored).
	NDim    int32
	Shape   []int64
	Strides []int64 // nil: NULL strides
	// NullShape makes shape NULL.
	NullShape bool
	// Code, Bits and Lanes are the DLDataType.
	Code, Bits uint8
	Lanes      uint16
	ByteOffset uint64
	DeviceType int32
	DeviceID   int32
	// Major, Minor and Flags are the versioned tensor's version and flags.
	Major, Minor uint32
	Flags        uint64
}

func (s Spec) c(shape, strides *C.int64_t) C.producer_spec {
	null := C.int(0)
	if s.NullShape {
		null = 1
	}
	return C.producer_spec{
		id: C.int(s.ID), data: C.uintptr_t(s.Data), ndim: C.int32_t(s.NDim),
		shape: shape, strides: strides, null_shape: null,
		code: C.uint8_t(s.Code), bits: C.uint8_t(s.Bits), lanes: C.uint16_t(s.Lanes),
		byte_offset: C.uint64_t(s.ByteOffset),
		device_type: C.int32_t(s.DeviceType), device_id: C.int32_t(s.DeviceID),
		major: C.uint32_t(s.Major), minor: C.uint32_t(s.Minor), flags: C.uint64_t(s.Flags),
	}
}

// arrays returns pointers to s's shape and strides, pinned with pin: the
// producer_spec that carries them to C is itself passed by pointer.
func arrays(s Spec, pin *runtime.Pinner) (shape, strides *C.int64_t) {
	if len(s.Shape) > 0 {
		pin.Pin(&s.Shape[0])
		shape = (*C.int64_t)(unsafe.Pointer(&s.Shape[0]))
	}
	if len(s.Strides) > 0 {
		pin.Pin(&s.Strides[0])
		strides = (*C.int64_t)(unsafe.Pointer(&s.Strides[0]))
	}
	return shape, strides
}

// Produce has C malloc a DLManagedTensorVersioned (one block with its shape
// and strides) as s describes, with a C deleter that counts its calls under
// s.ID and frees the block.
func Produce(s Spec) unsafe.Pointer { return produce(s, false) }

// ProduceLegacy is Produce for a legacy DLManagedTensor (s.Major, s.Minor
// and s.Flags are not used).
func ProduceLegacy(s Spec) unsafe.Pointer { return produce(s, true) }

func produce(s Spec, legacy bool) unsafe.Pointer {
	if int(s.NDim) > len(s.Shape) || s.Strides != nil && int(s.NDim) > len(s.Strides) {
		panic("dlpackc: Spec has fewer shape or stride values than NDim")
	}
	var pin runtime.Pinner
	defer pin.Unpin()
	sh, st := arrays(s, &pin)
	cs := s.c(sh, st)
	if legacy {
		return unsafe.Pointer(C.produce_legacy(&cs))
	}
	return unsafe.Pointer(C.produce_versioned(&cs))
}

// DeleterCalls returns how many times the C deleters of the versioned and
// the legacy tensors produced with id have run.
func DeleterCalls(id int) (versioned, legacy int) {
	return int(C.versioned_calls_of(C.int(id))), int(C.legacy_calls_of(C.int(id)))
}

// CountingDeleter returns the address of a C deleter of
// DLManagedTensorVersioned that only counts its calls (see
// CountingDeleterCalls) and frees nothing, for tensors whose struct the
// caller keeps and reuses.
func CountingDeleter() uintptr { return uintptr(C.count_only_deleter_addr()) }

// CountingDeleterCalls returns how many times the CountingDeleter has run.
func CountingDeleterCalls() int { return int(C.count_only_calls_now()) }

// Consumed is what the C consumer read from a tensor.
type Consumed struct {
	Major, Minor uint32 // versioned tensors only
	Flags        uint64 // versioned tensors only
	Data         uintptr
	DeviceType   int32
	DeviceID     int32
	NDim         int32
	Code, Bits   uint8
	Lanes        uint16
	Shape        []int64 // nil when NULL
	Strides      []int64 // nil when NULL
	ByteOffset   uint64
	ManagerCtx   uintptr
	Deleter      uintptr
	// Values are the elements at the indices asked for, each read by C as
	// a little-endian integer of the element's size.
	Values []uint64
}

// ErrUnreadable reports a tensor the C consumer does not handle (more than
// 16 dims, elements over 8 bytes, NULL shape with dims) or an index out of
// range.
var ErrUnreadable = errors.New("dlpackc: the C consumer cannot read this tensor")

func consume(p unsafe.Pointer, indices [][]int64, versioned bool) (Consumed, error) {
	var out C.consumed
	var flat []int64
	for _, ix := range indices {
		flat = append(flat, ix...)
	}
	values := make([]uint64, len(indices)+1)
	var idx *C.int64_t
	if len(flat) > 0 {
		idx = (*C.int64_t)(unsafe.Pointer(&flat[0]))
	}
	vp := (*C.uint64_t)(unsafe.Pointer(&values[0]))
	var rc C.int
	if versioned {
		rc = C.consume_versioned((*C.DLManagedTensorVersioned)(p), &out, idx, C.int(len(indices)), vp)
	} else {
		rc = C.consume_legacy((*C.DLManagedTensor)(p), &out, idx, C.int(len(indices)), vp)
	}
	c := Consumed{
		Major: uint32(out.major), Minor: uint32(out.minor), Flags: uint64(out.flags),
		Data: uintptr(out.data), DeviceType: int32(out.device_type), DeviceID: int32(out.device_id),
		NDim: int32(out.ndim), Code: uint8(out.code), Bits: uint8(out.bits), Lanes: uint16(out.lanes),
		ByteOffset: uint64(out.byte_offset), ManagerCtx: uintptr(out.manager_ctx), Deleter: uintptr(out.deleter),
	}
	if rc != 0 {
		return c, ErrUnreadable
	}
	n := int(out.ndim)
	if out.null_shape == 0 {
		c.Shape = make([]int64, n)
		for k := range n {
			c.Shape[k] = int64(out.shape[k])
		}
	}
	if out.null_strides == 0 {
		c.Strides = make([]int64, n)
		for k := range n {
			c.Strides[k] = int64(out.strides[k])
		}
	}
	c.Values = values[:len(indices)]
	return c, nil
}

// ConsumeVersioned has C read the DLManagedTensorVersioned at p: its fields
// and the elements at the given indices. It does not call the deleter.
func ConsumeVersioned(p unsafe.Pointer, indices [][]int64) (Consumed, error) {
	return consume(p, indices, true)
}

// ConsumeLegacy is ConsumeVersioned for a legacy DLManagedTensor.
func ConsumeLegacy(p unsafe.Pointer, indices [][]int64) (Consumed, error) {
	return consume(p, indices, false)
}

// DeleteVersioned has C call the deleter of the DLManagedTensorVersioned at
// p the given number of times, with the function pointer read before the
// first call (so a second call passes the freed tensor, as a buggy consumer
// would).
func DeleteVersioned(p unsafe.Pointer, times int) {
	C.delete_versioned((*C.DLManagedTensorVersioned)(p), C.int(times))
}

// DeleteLegacy is DeleteVersioned for a legacy DLManagedTensor.
func DeleteLegacy(p unsafe.Pointer, times int) {
	C.delete_legacy((*C.DLManagedTensor)(p), C.int(times))
}

// DeleteVersionedOnThread has C call the deleter of the
// DLManagedTensorVersioned at p once, from a new thread the Go runtime has
// never seen, and waits for it.
func DeleteVersionedOnThread(p unsafe.Pointer) error {
	if C.delete_versioned_on_thread((*C.DLManagedTensorVersioned)(p)) != 0 {
		return errors.New("dlpackc: pthread_create or pthread_join failed")
	}
	return nil
}
