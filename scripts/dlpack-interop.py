#!/usr/bin/env python3
"""scripts/dlpack-interop.py: stridekit's copy entry point against real DLPack producers.

It loads the C-ABI library of internal/capi (libstridekit.so, built by
scripts/build-capi) with ctypes, takes tensors from producers through their
__dlpack__ method as a DLPack consumer does, and copies them into each other
with sk_copy:

  * host: tensors made here with ctypes (versioned and legacy structs, a
    counting deleter), and NumPy arrays when NumPy is there: transposed,
    sliced and flipped sources and destinations, the error codes;
  * GPU (each where it imports and sees a CUDA device): PyTorch, CuPy and JAX
    tensors, transposed, sliced, permuted and flipped (CuPy; PyTorch has no
    negative strides, JAX arrays are dense), copied within and across the
    frameworks and checked with torch.equal / cupy.array_equal against each
    framework's own copy;
  * the stream handshake: the producer's last write to the source is queued
    on a non-default stream behind long work (large matmuls), and the tensor
    is exported with __dlpack__(stream=<the consumer's stream>) while that
    stream is current, so the producer makes the consumer's stream wait; the
    copy on the consumer's stream then reads the written values. A variant
    skips the handshake (__dlpack__(stream=-1), the copy on the same consumer
    stream, unordered) and must observe stale data at least once, which shows
    that the handshake is what orders the copy.

Each tensor is taken as the protocol says: __dlpack__(stream=..., max_version=(1, 3))
(plain __dlpack__(stream=...) for producers without max_version), the pointer
read from the PyCapsule named "dltensor_versioned" (or the legacy "dltensor"),
the capsule renamed "used_dltensor_versioned" ("used_dltensor") so that its
destructor no longer frees it, and the tensor's deleter called once the copy
is done.

Usage (from the repository root; on the GPU machine gpubin/ is carried along):

    scripts/build-capi                              # here: gpubin/libstridekit.so
    python3 scripts/dlpack-interop.py               # there
    python3 scripts/dlpack-interop.py --host-only   # anywhere: host checks only

Options: --lib PATH (default $STRIDEKIT_CAPI, else gpubin/libstridekit.so),
--host-only, --trials N (handshake trials, default 3). Every check prints
PASS, FAIL or SKIP and a reason; the last line is PASS or FAIL (exit status 0
or 1).
"""

import argparse
import ctypes as C
import os
import sys
import traceback

# JAX preallocates most of the GPU unless told not to; PyTorch and CuPy share it.
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

# ---- DLPack 1.3 structs ----


class DLDevice(C.Structure):
    _fields_ = [("device_type", C.c_int32), ("device_id", C.c_int32)]


class DLDataType(C.Structure):
    _fields_ = [("code", C.c_uint8), ("bits", C.c_uint8), ("lanes", C.c_uint16)]


class DLTensor(C.Structure):
    _fields_ = [
        ("data", C.c_void_p),
        ("device", DLDevice),
        ("ndim", C.c_int32),
        ("dtype", DLDataType),
        ("shape", C.POINTER(C.c_int64)),
        ("strides", C.POINTER(C.c_int64)),
        ("byte_offset", C.c_uint64),
    ]


class DLManagedTensor(C.Structure):
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", C.c_void_p), ("deleter", C.c_void_p)]


class DLPackVersion(C.Structure):
    _fields_ = [("major", C.c_uint32), ("minor", C.c_uint32)]


class DLManagedTensorVersioned(C.Structure):
    _fields_ = [
        ("version", DLPackVersion),
        ("manager_ctx", C.c_void_p),
        ("deleter", C.c_void_p),
        ("flags", C.c_uint64),
        ("dl_tensor", DLTensor),
    ]


assert C.sizeof(DLTensor) == 48 and C.sizeof(DLManagedTensorVersioned) == 80 and C.sizeof(DLManagedTensor) == 64

KDL_CPU, KDL_CUDA, KDL_OPENCL = 1, 2, 4
KDL_INT, KDL_FLOAT = 0, 2
FLAG_READ_ONLY = 1
# A deleter is called with the GIL held (PYFUNCTYPE): some producers' deleters
# release Python objects. Deleters made here are CFUNCTYPE callbacks.
CALL_DELETER = C.PYFUNCTYPE(None, C.c_void_p)
DELETER = C.CFUNCTYPE(None, C.c_void_p)

# sk_copy's flags and codes (internal/capi).
SK_SRC_LEGACY, SK_DST_LEGACY, SK_SYNC = 1, 2, 4
SK_OK, SK_EINVAL, SK_ETENSOR, SK_ECOPY, SK_EREADONLY, SK_ECUDA, SK_EINTERNAL = 0, -1, -2, -3, -4, -5, -6

# ---- PyCapsules ----

_api = C.pythonapi
_api.PyCapsule_IsValid.argtypes = [C.py_object, C.c_char_p]
_api.PyCapsule_IsValid.restype = C.c_int
_api.PyCapsule_GetPointer.argtypes = [C.py_object, C.c_char_p]
_api.PyCapsule_GetPointer.restype = C.c_void_p
_api.PyCapsule_SetName.argtypes = [C.py_object, C.c_char_p]
_api.PyCapsule_SetName.restype = C.c_int

# PyCapsule_SetName keeps the pointer it is given: these bytes live as long
# as the module.
VERSIONED, USED_VERSIONED = b"dltensor_versioned", b"used_dltensor_versioned"
LEGACY, USED_LEGACY = b"dltensor", b"used_dltensor"


_cupy_repaired = False


class Taken:
    """A tensor taken from a producer through __dlpack__, the consumer's side.

    The capsule is renamed "used_..." at once, so the producer's capsule
    destructor leaves the tensor alone; release() calls the tensor's deleter,
    once. Use it as a context manager, and release only after the copy that
    reads or writes the tensor is done.
    """

    def __init__(self, obj, stream):
        self.obj = obj  # the producer's object stays alive with the tensor
        try:
            cap = obj.__dlpack__(stream=stream, max_version=(1, 3))
        except TypeError:  # a producer older than DLPack 1.0's protocol
            cap = obj.__dlpack__(stream=stream)
        if _api.PyCapsule_IsValid(cap, VERSIONED):
            self.versioned, name, used = True, VERSIONED, USED_VERSIONED
        elif _api.PyCapsule_IsValid(cap, LEGACY):
            self.versioned, name, used = False, LEGACY, USED_LEGACY
        else:
            raise RuntimeError(f"{type(obj).__name__}.__dlpack__ gave {cap!r}, not a DLPack capsule")
        self.ptr = _api.PyCapsule_GetPointer(cap, name)
        if not self.ptr:
            raise RuntimeError("PyCapsule_GetPointer gave NULL")
        if _api.PyCapsule_SetName(cap, used) != 0:
            raise RuntimeError("PyCapsule_SetName failed")
        self.cap = cap
        self.released = False
        self.repair_cupy_strides()

    def repair_cupy_strides(self):
        """CuPy releases before cupy/cupy#10228 export a negative stride as
        the unsigned quotient of the byte stride by the itemsize (cupy/cupy
        #10172: -4 bytes of float32 becomes 2**62 - 1), which stridekit
        rightly refuses as an overflow. Write the element strides the array
        really has into the capsule's strides array (CuPy's own memory), and
        say so once, so that the flipped cases test stridekit, not CuPy."""
        obj = self.obj
        if not type(obj).__module__.startswith("cupy") or not any(s < 0 for s in getattr(obj, "strides", ())):
            return
        t = self.struct().dl_tensor
        want = [s // obj.itemsize for s in obj.strides]
        if not t.strides or [t.strides[i] for i in range(t.ndim)] == want:
            return
        for i, w in enumerate(want):
            t.strides[i] = w
        global _cupy_repaired
        if not _cupy_repaired:
            _cupy_repaired = True
            print("note: this CuPy exports negative strides wrongly (cupy/cupy#10172); the capsules' strides were repaired before sk_copy")

    def struct(self):
        if self.versioned:
            return DLManagedTensorVersioned.from_address(self.ptr)
        return DLManagedTensor.from_address(self.ptr)

    def flags(self):
        return self.struct().flags if self.versioned else 0

    def release(self):
        if self.released:
            return
        self.released = True
        d = self.struct().deleter
        if d:
            CALL_DELETER(d)(self.ptr)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.release()


class SkError(Exception):
    def __init__(self, code, msg):
        super().__init__(f"sk_copy returned {code}: {msg}")
        self.code = code


class Lib:
    """The C-ABI library."""

    def __init__(self, path):
        self.lib = C.CDLL(path)
        self.lib.sk_copy.argtypes = [C.c_void_p, C.c_void_p, C.c_int64, C.c_uint64]
        self.lib.sk_copy.restype = C.c_int
        self.lib.sk_last_error.argtypes = []
        self.lib.sk_last_error.restype = C.c_char_p

    def copy_raw(self, dst_ptr, src_ptr, stream, flags):
        """sk_copy on raw struct pointers; returns (code, message)."""
        code = self.lib.sk_copy(dst_ptr, src_ptr, stream, flags)
        msg = self.lib.sk_last_error().decode() if code != SK_OK else ""
        return code, msg

    def copy(self, dst, src, stream, sync=False):
        """sk_copy of two Taken tensors; raises SkError on failure."""
        flags = (0 if src.versioned else SK_SRC_LEGACY) | (0 if dst.versioned else SK_DST_LEGACY) | (SK_SYNC if sync else 0)
        code, msg = self.copy_raw(dst.ptr, src.ptr, stream, flags)
        if code != SK_OK:
            raise SkError(code, msg)


# ---- results ----


class Results:
    def __init__(self):
        self.rows = []

    def add(self, name, ok, detail=""):
        state = "PASS" if ok else "FAIL"
        self.rows.append((state, name))
        print(f"{state} {name}" + (f": {detail}" if detail else ""), flush=True)

    def skip(self, name, why):
        self.rows.append(("SKIP", name))
        print(f"SKIP {name}: {why}", flush=True)

    def run(self, name, fn):
        """Runs fn(), a check that returns (ok, detail) or raises."""
        try:
            ok, detail = fn()
        except Exception as e:  # a failed check, not a crash of the run
            ok, detail = False, f"{type(e).__name__}: {e}\n" + traceback.format_exc(limit=4)
        self.add(name, ok, detail)

    def count(self, state):
        return sum(1 for s, _ in self.rows if s == state)


# ---- host checks: tensors made with ctypes ----


class CTensor:
    """A DLPack tensor made here: int32 memory, any strides, a counting deleter."""

    deleted = 0

    @staticmethod
    def _deleter(ptr):
        CTensor.deleted += 1

    _deleter_fn = DELETER(_deleter.__func__)

    def __init__(self, mem, shape, strides, offset=0, versioned=True, flags=0, major=1, minor=3, device=KDL_CPU):
        self.mem = mem
        n = len(shape)
        self.shape = (C.c_int64 * max(n, 1))(*shape)
        self.strides = (C.c_int64 * max(n, 1))(*strides)
        t = DLTensor(
            data=C.addressof(mem), device=DLDevice(device, 0), ndim=n, dtype=DLDataType(KDL_INT, 32, 1),
            shape=self.shape, strides=self.strides, byte_offset=4 * offset,
        )
        deleter = C.cast(CTensor._deleter_fn, C.c_void_p)
        if versioned:
            self.m = DLManagedTensorVersioned(DLPackVersion(major, minor), None, deleter, flags, t)
        else:
            self.m = DLManagedTensor(t, None, deleter)
        self.versioned = versioned
        self.ptr = C.addressof(self.m)

    def delete(self):
        CALL_DELETER(self.m.deleter)(self.ptr)


def int32s(n, start=0):
    return (C.c_int32 * n)(*range(start, start + n))


def host_ctypes_checks(lib, res):
    # a = 100..111 as a 3×4 C-order array.
    def transposed():
        src = CTensor(int32s(12, 100), [4, 3], [1, 4])
        out = (C.c_int32 * 12)()
        dst = CTensor(out, [4, 3], [3, 1])
        code, msg = lib.copy_raw(dst.ptr, src.ptr, -1, 0)
        want = [100, 104, 108, 101, 105, 109, 102, 106, 110, 103, 107, 111]
        return code == SK_OK and list(out) == want, f"code {code} {msg} got {list(out)}"

    def flipped_legacy_into_transposed():
        # a[::-1, ::-1], element 0 at byte_offset, legacy struct, into a
        # destination laid out transposed.
        src = CTensor(int32s(12, 100), [3, 4], [-4, -1], offset=11, versioned=False)
        out = (C.c_int32 * 12)()
        dst = CTensor(out, [3, 4], [1, 3])
        code, msg = lib.copy_raw(dst.ptr, src.ptr, -1, SK_SRC_LEGACY)
        got = [out[i + 3 * j] for i in range(3) for j in range(4)]
        return code == SK_OK and got == list(range(111, 99, -1)), f"code {code} {msg} got {got}"

    def sliced():
        # b[1::2, ::3] of a 6×6 array b = 0..35.
        src = CTensor(int32s(36), [3, 2], [12, 3], offset=6)
        out = (C.c_int32 * 6)()
        dst = CTensor(out, [3, 2], [2, 1])
        code, msg = lib.copy_raw(dst.ptr, src.ptr, -1, SK_SYNC)
        return code == SK_OK and list(out) == [6, 9, 18, 21, 30, 33], f"code {code} {msg} got {list(out)}"

    def deleters_are_the_callers():
        before = CTensor.deleted
        src = CTensor(int32s(4), [4], [1])
        dst = CTensor((C.c_int32 * 4)(), [4], [1])
        code, msg = lib.copy_raw(dst.ptr, src.ptr, -1, 0)
        after_copy = CTensor.deleted - before
        src.delete()
        dst.delete()
        return code == SK_OK and after_copy == 0 and CTensor.deleted - before == 2, f"deleter calls: {after_copy} by sk_copy, {CTensor.deleted - before} in all"

    def error(code_want, phrase, dst_kw, src_kw, stream=-1, flags=0):
        def check():
            src = CTensor(int32s(12), **src_kw)
            dst = CTensor((C.c_int32 * 12)(), **dst_kw)
            code, msg = lib.copy_raw(dst.ptr, src.ptr, stream, flags)
            return code == code_want and phrase in msg, f"code {code} (want {code_want}), message {msg!r}"

        return check

    d34 = dict(shape=[3, 4], strides=[4, 1])
    res.run("host/ctypes: transposed source", transposed)
    res.run("host/ctypes: flipped legacy source at a byte offset into a transposed destination", flipped_legacy_into_transposed)
    res.run("host/ctypes: sliced source", sliced)
    res.run("host/ctypes: sk_copy borrows, the caller calls the deleters", deleters_are_the_callers)
    res.run("host/ctypes: read-only destination refused", error(SK_EREADONLY, "read-only", dict(d34, flags=FLAG_READ_ONLY), d34))
    res.run("host/ctypes: stream 0 refused as ambiguous", error(SK_EINVAL, "ambiguous", d34, d34, stream=0))
    res.run("host/ctypes: DLPack major version 2 refused", error(SK_ETENSOR, "version", d34, dict(d34, major=2)))
    res.run("host/ctypes: NULL strides from a 1.3 producer refused", lambda: null_strides(lib))
    res.run("host/ctypes: kDLOpenCL refused", error(SK_ETENSOR, "kDLOpenCL", d34, dict(d34, device=KDL_OPENCL)))
    res.run("host/ctypes: shapes that do not broadcast refused", error(SK_ECOPY, "shape", d34, dict(shape=[4, 3], strides=[3, 1])))
    res.run("host/ctypes: NULL tensor refused", lambda: (lambda r: (r[0] == SK_EINVAL and "NULL" in r[1], str(r)))(lib.copy_raw(None, None, -1, 0)))


def null_strides(lib):
    src = CTensor(int32s(12), [3, 4], [4, 1])
    src.m.dl_tensor.strides = None
    dst = CTensor((C.c_int32 * 12)(), [3, 4], [4, 1])
    code, msg = lib.copy_raw(dst.ptr, src.ptr, -1, 0)
    return code == SK_ETENSOR and "strides" in msg, f"code {code}, message {msg!r}"


# ---- host checks: NumPy ----


def host_numpy_checks(lib, res):
    try:
        import numpy as np
    except ImportError as e:
        res.skip("host/numpy", f"no NumPy ({e})")
        return
    a = np.arange(8 * 12, dtype=np.float32).reshape(8, 12) * 0.5
    cases = [
        ("transposed", lambda: a.T, lambda s: np.empty(s, np.float32)),
        ("sliced", lambda: a[1::2, ::3], lambda s: np.empty(s, np.float32)),
        ("flipped", lambda: a[::-1, ::-2], lambda s: np.empty(s, np.float32)),
        ("sliced into a transposed destination", lambda: a[2:7, 1:11:2], lambda s: np.empty(s[::-1], np.float32).T),
        ("into a flipped destination", lambda: a, lambda s: np.empty(s, np.float32)[::-1, ::-1]),
    ]
    for name, src_fn, dst_fn in cases:

        def check(src_fn=src_fn, dst_fn=dst_fn):
            src = src_fn()
            dst = dst_fn(src.shape)
            with Taken(src, None) as s, Taken(dst, None) as d:
                lib.copy(d, s, -1)
            return bool(np.array_equal(dst, src)), f"dst {dst.ravel()[:6]}…, src {src.ravel()[:6]}…"

        res.run(f"host/numpy: {name}", check)

    def deleter_runs_once():
        # The capsule holds a reference to the array until the deleter runs;
        # after the rename, dropping the capsule must not run it again.
        x = np.arange(6, dtype=np.int32)
        before = sys.getrefcount(x)
        t = Taken(x, None)
        held = sys.getrefcount(x)
        t.release()
        t.release()
        del t
        after = sys.getrefcount(x)
        return held > before and after == before, f"references: {before} before, {held} taken, {after} after"

    res.run("host/numpy: the producer's deleter runs once, the renamed capsule frees nothing", deleter_runs_once)


def host_torch_checks(lib, res):
    """PyTorch tensors on the CPU: a real producer of (versioned, in recent
    PyTorch) capsules, usable where there is no GPU."""
    try:
        import torch
    except ImportError as e:
        res.skip("host/torch", f"no PyTorch ({e})")
        return
    a = torch.arange(10 * 14, dtype=torch.float64).reshape(10, 14) / 8
    cases = [
        ("transposed", lambda: a.t(), lambda s: torch.empty(s, dtype=a.dtype)),
        ("sliced into a transposed destination", lambda: a[1::3, 2::4], lambda s: torch.empty(s[::-1], dtype=a.dtype).t()),
        ("permuted 3-d", lambda: a.reshape(2, 5, 14).permute(2, 0, 1), lambda s: torch.empty(s, dtype=a.dtype)),
    ]
    for name, src_fn, dst_fn in cases:

        def check(src_fn=src_fn, dst_fn=dst_fn):
            src = src_fn()
            dst = dst_fn(tuple(src.shape))
            with Taken(src, None) as s, Taken(dst, None) as d:
                lib.copy(d, s, -1)
                kind = "versioned" if s.versioned else "legacy"
            return bool(torch.equal(dst, src)), f"{kind} capsules, src strides {tuple(src.stride())}, dst strides {tuple(dst.stride())}"

        res.run(f"host/torch: {name}", check)


# ---- GPU checks ----


class Frameworks:
    """The GPU frameworks that import and see a device, with what is missing."""

    def __init__(self):
        self.torch = self.cupy = self.jax = self.jnp = self.np = None
        self.missing = {}
        try:
            import numpy

            self.np = numpy
        except ImportError as e:
            self.missing["numpy"] = str(e)
        try:
            import torch

            if torch.cuda.is_available():
                self.torch = torch
            else:
                self.missing["torch"] = "torch.cuda.is_available() is False"
        except ImportError as e:
            self.missing["torch"] = str(e)
        try:
            import cupy

            cupy.cuda.runtime.getDeviceCount()
            self.cupy = cupy
        except Exception as e:
            self.missing["cupy"] = f"{type(e).__name__}: {e}"
        try:
            import jax
            import jax.numpy as jnp

            if jax.devices("gpu"):
                self.jax, self.jnp = jax, jnp
        except Exception as e:
            self.missing["jax"] = f"{type(e).__name__}: {e}"


def host_copy(fw, x):
    """The producing framework's own copy of x on the host, as a NumPy array."""
    if fw.torch is not None and isinstance(x, fw.torch.Tensor):
        return x.cpu().numpy()
    if fw.cupy is not None and isinstance(x, fw.cupy.ndarray):
        return fw.cupy.asnumpy(x)
    return fw.np.asarray(x)  # JAX


def equal_to(fw, dst, want):
    """Compares dst with the host array want in dst's framework."""
    if fw.torch is not None and isinstance(dst, fw.torch.Tensor):
        return bool(fw.torch.equal(dst.cpu(), fw.torch.from_numpy(fw.np.ascontiguousarray(want))))
    return bool(fw.cupy.array_equal(dst, fw.cupy.asarray(want)))


def gpu_interop_checks(lib, res, fw):
    torch, cupy, jnp = fw.torch, fw.cupy, fw.jnp
    if fw.np is None:
        res.skip("gpu", f"no NumPy: {fw.missing['numpy']}")
        return
    # One consumer stream for every copy: a torch stream if there is torch,
    # else a CuPy one. Its handle is what __dlpack__ and sk_copy are given.
    if torch is not None:
        cs = torch.cuda.Stream()
        handle, sync = cs.cuda_stream, cs.synchronize
    elif cupy is not None:
        cs = cupy.cuda.Stream(non_blocking=True)
        handle, sync = cs.ptr, cs.synchronize
    else:
        for name in ("torch", "cupy", "jax"):
            res.skip(f"gpu/{name}", fw.missing.get(name, "no GPU framework"))
        return

    def copy_check(src_fn, dst_fn):
        def check():
            src = src_fn()
            want = host_copy(fw, src)
            dst = dst_fn(tuple(src.shape))
            if torch is not None:
                torch.cuda.synchronize()
            if cupy is not None:
                cupy.cuda.Device().synchronize()
            with Taken(src, handle) as s, Taken(dst, handle) as d:
                lib.copy(d, s, handle)
                sync()  # the copy is done before the tensors are given back
            return equal_to(fw, dst, want), f"{type(src).__module__} {tuple(src.shape)} strides {strides_of(fw, src)} → {type(dst).__module__} strides {strides_of(fw, dst)}"

        return check

    cases = []
    if torch is not None:
        t = lambda *s, dt=torch.float32: (torch.arange(int(fw.np.prod(s)), device="cuda", dtype=torch.float32) % 2048 * 0.25).to(dt).reshape(*s)
        te = lambda s, dt=torch.float32: torch.empty(s, device="cuda", dtype=dt)
        cases += [
            ("torch → torch: transposed", lambda: t(384, 512).t(), te),
            ("torch → torch: sliced into a transposed destination", lambda: t(300, 400)[1::2, ::3], lambda s: te(s[::-1]).t()),
            ("torch → torch: permuted 3-d", lambda: t(16, 24, 40).permute(2, 0, 1), te),
            ("torch → torch: float16 transposed", lambda: t(256, 320, dt=torch.float16).t(), lambda s: te(s, torch.float16)),
            ("torch → torch: broadcast row", lambda: t(1, 512).expand(64, 512), te),
        ]
    if cupy is not None:
        c = lambda *s, dt=cupy.float32: (cupy.arange(int(fw.np.prod(s)), dtype=cupy.float32) % 2048 * 0.25).astype(dt).reshape(*s)
        ce = lambda s, dt=cupy.float32: cupy.empty(s, dtype=dt)
        cases += [
            ("cupy → cupy: flipped", lambda: c(384, 512)[::-1, ::-1], ce),
            ("cupy → cupy: sliced and flipped into a transposed destination", lambda: c(300, 400)[::2, ::-3], lambda s: ce(s[::-1]).T),
            ("cupy → cupy: int64 sliced", lambda: c(200, 300, dt=cupy.int64)[5:150:3, 7:], lambda s: ce(s, cupy.int64)),
        ]
    if torch is not None and cupy is not None:
        cases += [
            ("torch → cupy: transposed into a flipped destination", lambda: t(384, 512).t(), lambda s: ce(s)[::-1, ::-1]),
            ("cupy → torch: flipped", lambda: c(384, 512)[::-1, :], te),
            ("cupy → torch: flipped into a transposed destination", lambda: c(256, 384)[:, ::-1], lambda s: te(s[::-1]).t()),
            ("torch → cupy: float16 sliced", lambda: t(256, 320, dt=torch.float16)[::2, 1::2], lambda s: ce(s, cupy.float16)),
        ]
    if jnp is not None:
        j = lambda *s: jnp.arange(int(fw.np.prod(s)), dtype=jnp.float32).reshape(*s) * 0.25
        if torch is not None:
            cases += [("jax → torch: into a transposed destination", lambda: j(384, 512), lambda s: te(s[::-1]).t())]
        if cupy is not None:
            cases += [("jax → cupy: into a flipped destination", lambda: j(384, 512), lambda s: ce(s)[::-1, ::-1])]
    for name, src_fn, dst_fn in cases:
        res.run(f"gpu/{name}", copy_check(src_fn, dst_fn))
    for name in ("torch", "cupy", "jax"):
        if name in fw.missing:
            res.skip(f"gpu/{name}", fw.missing[name])

    if torch is not None:
        res.run("gpu/torch: read-only destination refused (a capsule flagged read-only by hand)", lambda: read_only_check(lib, torch, handle))


def strides_of(fw, x):
    if fw.torch is not None and isinstance(x, fw.torch.Tensor):
        return tuple(x.stride())
    if fw.cupy is not None and isinstance(x, fw.cupy.ndarray):
        return tuple(s // x.itemsize for s in x.strides)
    return "dense"


def read_only_check(lib, torch, handle):
    src = torch.zeros(8, 8, device="cuda")
    dst = torch.ones(8, 8, device="cuda")
    torch.cuda.synchronize()
    with Taken(src, handle) as s, Taken(dst, handle) as d:
        if not d.versioned:
            return True, "legacy capsule: no flags to set (skipped in effect)"
        d.struct().flags |= FLAG_READ_ONLY
        try:
            lib.copy(d, s, handle, sync=True)
        except SkError as e:
            return e.code == SK_EREADONLY and bool((dst == 1).all()), str(e)
    return False, "copied into a read-only tensor"


# ---- the stream handshake ----


def handshake_checks(lib, res, fw, trials):
    torch, cupy = fw.torch, fw.cupy
    summary = []
    if torch is not None:
        summary.append(handshake(lib, res, "torch", lambda: TorchSide(torch), trials))
    else:
        res.skip("handshake/torch", fw.missing.get("torch", "no torch"))
    if cupy is not None:
        summary.append(handshake(lib, res, "cupy", lambda: CupySide(cupy), trials))
    else:
        res.skip("handshake/cupy", fw.missing.get("cupy", "no cupy"))
    return summary


class TorchSide:
    """The producer's and consumer's streams and tensors, in PyTorch."""

    def __init__(self, torch):
        self.t = torch
        self.producer = torch.cuda.Stream()
        self.consumer = torch.cuda.Stream()
        self.handle = self.consumer.cuda_stream
        self.big = torch.randn(8192, 8192, device="cuda")
        self.src = torch.zeros(4096, 4096, device="cuda")
        self.dst = torch.empty(4096, 4096, device="cuda")
        torch.cuda.synchronize()

    def produce(self, value):
        """Queues long work and then the source's last write on the producer's stream."""
        with self.t.cuda.stream(self.producer):
            x = self.big
            for _ in range(6):
                x = self.big @ x
            self.src.fill_(value)

    def export(self, stream_value):
        """Exports the source (transposed: a kernel copy) and the destination, the producer's stream current."""
        with self.t.cuda.stream(self.producer):
            return Taken(self.src.t(), stream_value), Taken(self.dst, stream_value)

    def reset(self):
        self.sync_all()
        self.dst.fill_(-1.0)
        self.src.zero_()
        self.sync_all()

    def sync_all(self):
        self.t.cuda.synchronize()

    def stale(self, value):
        """How many destination elements do not hold value, once everything is done."""
        self.consumer.synchronize()
        n = int((self.dst != value).sum().item())
        self.sync_all()
        return n


class CupySide:
    """The producer's and consumer's streams and tensors, in CuPy."""

    def __init__(self, cupy):
        self.c = cupy
        self.producer = cupy.cuda.Stream(non_blocking=True)
        self.consumer = cupy.cuda.Stream(non_blocking=True)
        self.handle = self.consumer.ptr
        self.big = cupy.random.standard_normal((8192, 8192), dtype=cupy.float32)
        self.src = cupy.zeros((4096, 4096), dtype=cupy.float32)
        self.dst = cupy.empty((4096, 4096), dtype=cupy.float32)
        cupy.cuda.Device().synchronize()

    def produce(self, value):
        with self.producer:
            x = self.big
            for _ in range(6):
                x = self.big @ x
            self.src.fill(value)

    def export(self, stream_value):
        with self.producer:
            return Taken(self.src[::-1, :], stream_value), Taken(self.dst, stream_value)

    def reset(self):
        self.sync_all()
        self.dst.fill(-1.0)
        self.src.fill(0.0)
        self.sync_all()

    def sync_all(self):
        self.c.cuda.Device().synchronize()

    def stale(self, value):
        self.consumer.synchronize()
        n = int((self.dst != value).sum())
        self.sync_all()
        return n


def handshake(lib, res, name, make_side, trials):
    """Runs trials with and without the handshake; returns a summary line."""
    try:
        side = make_side()
    except Exception as e:
        res.add(f"handshake/{name}", False, f"setting up: {type(e).__name__}: {e}")
        return f"handshake/{name}: not run"

    def trial(with_handshake, value):
        """The number of destination elements that miss the producer's last write."""
        side.reset()
        side.produce(value)
        s, d = side.export(side.handle if with_handshake else -1)
        try:
            lib.copy(d, s, side.handle)  # queued on the consumer's stream
            return side.stale(value)
        finally:
            side.sync_all()  # the tensors are given back once nothing uses them
            s.release()
            d.release()

    def with_it():
        # Warm up first: the copy kernel is compiled on first use, which
        # would let the producer finish first and hide the race.
        trial(True, 1.0)
        stale = [trial(True, 2.0 + i) for i in range(trials)]
        right = sum(n == 0 for n in stale)
        state["with"] = f"with it {right}/{trials} trials right"
        return right == trials, f"{right}/{trials} trials right (wrong elements per trial: {stale})"

    def without_it():
        stale = [trial(False, 10.0 + i) for i in range(trials)]
        seen = sum(n > 0 for n in stale)
        state["without"] = f"without it stale data in {seen}/{trials} trials"
        return seen > 0, f"stale data in {seen}/{trials} trials (stale elements per trial: {stale})"

    state = {"with": "with it: failed", "without": "without it: failed"}
    res.run(f"handshake/{name}: with __dlpack__(stream=consumer) the copy on the consumer's stream reads the producer's last write", with_it)
    res.run(f"handshake/{name}: without it (stream=-1, the copy unordered on the consumer's stream) stale data is observed", without_it)
    return f"handshake/{name}: {state['with']}; {state['without']}"


# ---- main ----


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lib", default=os.environ.get("STRIDEKIT_CAPI", os.path.join(here, "..", "gpubin", "libstridekit.so")))
    ap.add_argument("--host-only", action="store_true", help="run the host checks only")
    ap.add_argument("--trials", type=int, default=3, help="handshake trials of each kind")
    args = ap.parse_args()

    res = Results()
    try:
        lib = Lib(args.lib)
    except OSError as e:
        print(f"FAIL cannot load {args.lib}: {e} (build it with scripts/build-capi)")
        print("FAIL")
        return 1
    host_ctypes_checks(lib, res)
    host_numpy_checks(lib, res)
    host_torch_checks(lib, res)
    summary = []
    if args.host_only:
        res.skip("gpu", "--host-only")
    else:
        fw = Frameworks()
        gpu_interop_checks(lib, res, fw)
        summary = handshake_checks(lib, res, fw, args.trials)
    passed, failed, skipped = res.count("PASS"), res.count("FAIL"), res.count("SKIP")
    print()
    for line in summary:
        print(line)
    print(f"{passed} passed, {failed} failed, {skipped} skipped")
    print("PASS" if failed == 0 else "FAIL")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
