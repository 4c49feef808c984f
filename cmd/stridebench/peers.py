#!/usr/bin/env python3
"""Times the peer frameworks (PyTorch, CuPy, XLA through JAX) on stridebench's cases.

stridebench runs this script as a subprocess for `stridebench run -compare`,
after writing the expanded case list (named and random cases, shrunk if asked)
as JSON:

    python3 peers.py --cases cases.json [--reps 30] [--warmup 5]
                     [--latency-iters 1000] [--frameworks torch,cupy,jax]
    python3 peers.py --cases cases.json --selfcheck

Each case names an item size and dtype, the shape of a dense C-order source
array and the view operations taken of it (perm, slice, flip, bcast), and the
same for the destination. Every framework builds its source and destination
as views of dense arrays exactly as the case says; items of a size no dtype
has (3, 12 bytes, ...) are uint8 arrays with a trailing dim of that many
bytes, which every operation leaves last.

For each case and framework the script prints, as part of one JSON object per
case on stdout:

- PyTorch: dst.copy_(src), timed with CUDA events (median of --reps samples
  after --warmup copies; copies shorter than 200 us are timed in batches),
  next to torch's own memcpy (a contiguous copy_ of the same bytes) timed the
  same way. PyTorch has no negative strides: cases with flips or negative
  slice steps are reported as unsupported.
- CuPy: cupy.copyto(dst, src), next to a cudaMemcpyAsync of the same bytes.
- JAX: the operations under jax.jit (the output is materialised: a new dense
  array), dispatched K times back to back and blocked on once, so host
  dispatch does not count as copy time; a jitted identity copy of the same
  bytes is its own memcpy. The identity copy is compared with a real memcpy
  (CuPy's or PyTorch's): outside 85-115% the JAX column is marked untrusted.
  Destinations viewed through slices cannot be expressed (JAX arrays have no
  strides): unsupported.

Arrays that take less than four times the L2 cache are rotated over enough
copies to cover four times the L2 size, as stridebench does. Cases of at most
1 MiB also get PyTorch's wall time per copy_ from Python (back-to-back copies,
synchronised at the end). Every result is checked against a NumPy reference built from the
same source pattern as stridebench's (all of the destination up to 64 MiB,
else its ends and random 1 MiB windows). Errors are reported per case and
framework; they never stop the run.

The first line printed is {"versions": {...}}; then one
{"name": ..., "peers": {"torch": {...}, "cupy": {...}, "jax": {...}}} per case.

--selfcheck needs only NumPy: it prints {"name": ..., "sha256": ...}, the hash
of the reference destination array of each case, which stridebench's tests
compare with runtime/hostcopy's result to prove that both read the case
operations the same way.
"""

import argparse
import gc
import hashlib
import json
import os
import platform
import sys
import time

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

import numpy as np  # noqa: E402

PATTERN_MASK = 0xBF  # keep in step with check.go
POISON = 0xE5
FULL_CHECK_BYTES = 64 << 20
CHECK_WINDOWS = 6
CHECK_WINDOW_BYTES = 1 << 20
EDGE_BYTES = 4 << 10
MIN_BATCH_S = 200e-6
MAX_BATCH = 1 << 14
L2_ROTATION = 4
MAX_PAIRS = 1 << 16
JAX_BATCH_S = 5e-3
JAX_TRUST = (85.0, 115.0)

GOLDEN = np.uint64(0x9E3779B97F4A7C15)
MIX1 = np.uint64(0xBF58476D1CE4E5B9)
MIX2 = np.uint64(0x94D049BB133111EB)


def pattern(n, seed):
    """Byte k is byte k%8 (little-endian) of splitmix64(seed + k//8), masked."""
    out = np.empty(n, dtype=np.uint8)
    words = (n + 7) // 8
    chunk = 1 << 22
    with np.errstate(over="ignore"):
        for lo in range(0, words, chunk):
            hi = min(lo + chunk, words)
            x = np.arange(lo, hi, dtype=np.uint64) + np.uint64(seed) + GOLDEN
            x = (x ^ (x >> np.uint64(30))) * MIX1
            x = (x ^ (x >> np.uint64(27))) * MIX2
            x ^= x >> np.uint64(31)
            b = x.astype("<u8").view(np.uint8)
            s, e = lo * 8, min(hi * 8, n)
            out[s:e] = b[: e - s] & PATTERN_MASK
    return out


def check_windows(n, seed):
    if n <= FULL_CHECK_BYTES:
        return [(0, n)]
    rng = np.random.default_rng(seed)
    ws = [(0, EDGE_BYTES), (n - EDGE_BYTES, EDGE_BYTES)]
    for _ in range(CHECK_WINDOWS):
        ws.append((int(rng.integers(0, n - CHECK_WINDOW_BYTES + 1)), CHECK_WINDOW_BYTES))
    return sorted(ws)


def compare(get, want, windows):
    """get(off, n) -> numpy uint8 array; returns '' or the first difference."""
    for off, n in windows:
        got = np.asarray(get(off, n), dtype=np.uint8).reshape(-1)
        w = want[off : off + n]
        if got.shape != w.shape:
            return f"window at {off}: got {got.size} bytes, want {w.size}"
        bad = np.nonzero(got != w)[0]
        if bad.size:
            i = int(bad[0])
            never = " (never written)" if got[i] == POISON else ""
            return (f"dst byte {off + i} is {int(got[i]):#04x}, want {int(w[i]):#04x}{never}; "
                    f"{bad.size} of {n} bytes differ in window [{off}, {off + n})")
    return ""


def prod(shape):
    p = 1
    for e in shape:
        p *= e
    return p


def median(xs):
    s = sorted(xs)
    n = len(s)
    if n == 0:
        return 0.0
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2


# Container dtypes by item size, for NumPy (the reference) and CuPy.
NP_CONTAINER = {1: "uint8", 2: "uint16", 4: "uint32", 8: "uint64"}
NP_NAMES = {"float16", "float32", "float64", "complex64", "complex128", "int8", "int16",
            "int32", "int64", "uint8", "uint16", "uint32", "uint64"}


def np_dtype(case):
    """The NumPy dtype of a case and whether a trailing byte dim is needed."""
    name, item = case["dtype"], case["itemsize"]
    if name in NP_NAMES:
        return np.dtype(name), False
    if item in NP_CONTAINER:
        return np.dtype(NP_CONTAINER[item]), False
    return np.dtype("uint8"), True


def has_negative_step(ops):
    for op in ops:
        if op["op"] == "flip":
            return True
        if op["op"] == "slice" and any(it.get("index") is None and it["step"] < 0 for it in op["items"]):
            return True
    return False


class Lib:
    """The array operations of one framework, for apply_ops."""

    def __init__(self, transpose, broadcast):
        self.transpose, self.broadcast = transpose, broadcast


def apply_ops(x, ops, lib, item, extra):
    """Applies a case's view operations; extra: x has a trailing byte dim."""
    for op in ops:
        kind = op["op"]
        nd = x.ndim - (1 if extra else 0)
        if kind == "perm":
            p = list(op["dims"]) + ([nd] if extra else [])
            x = lib.transpose(x, p)
        elif kind == "flip":
            idx = [slice(None)] * nd
            for d in op["dims"]:
                idx[d] = slice(None, None, -1)
            x = x[tuple(idx)]
        elif kind == "slice":
            idx = []
            for it in op["items"]:
                if it.get("index") is not None:
                    idx.append(it["index"])
                else:
                    idx.append(slice(it["start"], it["stop"], it["step"]))
            x = x[tuple(idx)]
        elif kind == "bcast":
            x = lib.broadcast(x, tuple(op["shape"]) + ((item,) if extra else ()))
        else:
            raise ValueError(f"unknown operation {kind!r}")
    return x


NUMPY = Lib(np.transpose, np.broadcast_to)


class Reference:
    """The case on the host with NumPy: the source array and the expected destination."""

    def __init__(self, case):
        item = case["itemsize"]
        dt, extra = np_dtype(case)
        tail = [item] if extra else []
        self.src_bytes = pattern(prod(case["base"]) * item, case["seed"])
        src = self.src_bytes.view(dt).reshape(list(case["base"]) + tail)
        self.dst_bytes = np.full(prod(case["dst_base"]) * item, POISON, dtype=np.uint8)
        dst = self.dst_bytes.view(dt).reshape(list(case["dst_base"]) + tail)
        np.copyto(apply_ops(dst, case["dst"], NUMPY, item, extra), apply_ops(src, case["src"], NUMPY, item, extra))
        self.windows = check_windows(self.dst_bytes.size, case["seed"])


def pair_count(touched, l2):
    if l2 <= 0 or touched <= 0 or touched >= L2_ROTATION * l2:
        return 1
    return min(MAX_PAIRS, -(-L2_ROTATION * l2 // touched))


def event_time(fn, reps, warmup, new_event, elapsed_s, sync):
    """Median seconds per fn() with CUDA events, batched like stridebench."""
    for _ in range(warmup):
        fn()
    sync()
    s, e = new_event(), new_event()
    s.record()
    fn()
    e.record()
    e.synchronize()
    t1 = elapsed_s(s, e)
    batch = 1 if t1 >= MIN_BATCH_S else min(MAX_BATCH, int(MIN_BATCH_S / max(t1, 1e-9)) + 1)
    samples = []
    for _ in range(reps):
        s.record()
        for _ in range(batch):
            fn()
        e.record()
        e.synchronize()
        samples.append(elapsed_s(s, e) / batch)
    return median(samples)


def rotating(ops):
    """fn() that runs ops[0], ops[1], ... in turn and returns what each returns."""
    state = [0]
    n = len(ops)

    def fn():
        i = state[0]
        state[0] = i + 1 if i + 1 < n else 0
        return ops[i]()

    return fn


# ---------------------------------------------------------------- PyTorch

TORCH_NAMES = {"float16", "float32", "float64", "bfloat16", "complex64", "complex128",
               "int8", "int16", "int32", "int64", "uint8"}
TORCH_CONTAINER = {1: "uint8", 2: "int16", 4: "int32", 8: "int64", 16: "complex128"}


def torch_views(case):
    """The torch dtype of a case's items, whether a trailing byte dim stands
    for them (odd item sizes), that dim's extent list, and the array
    operations for apply_ops."""
    import torch

    name, item = case["dtype"], case["itemsize"]
    extra = False
    if name in TORCH_NAMES:
        dt = getattr(torch, name)
    elif item in TORCH_CONTAINER:
        dt = getattr(torch, TORCH_CONTAINER[item])
    else:
        dt, extra = torch.uint8, True
    tail = [item] if extra else []
    return dt, extra, tail, Lib(lambda x, p: x.permute(*p), lambda x, s: x.expand(*s))


def torch_event():
    """A CUDA event that records time, on the current device."""
    import torch

    return torch.cuda.Event(enable_timing=True)


def torch_elapsed_s(start, end):
    """Seconds between two recorded torch events (elapsed_time is in ms)."""
    return start.elapsed_time(end) / 1e3


def run_torch(case, ref, args, l2, ctx):
    import torch

    if has_negative_step(case["src"]) or has_negative_step(case["dst"]):
        return {"status": "unsupported", "reason": "PyTorch tensors cannot have negative strides (flip)"}
    item, nbytes = case["itemsize"], case["bytes"]
    dt, extra, tail, lib = torch_views(case)
    sbytes, dbytes = prod(case["base"]) * item, prod(case["dst_base"]) * item
    n = pair_count(sbytes + dbytes, l2)
    pairs = []
    for _ in range(n):
        sb = torch.empty(max(sbytes, nbytes), dtype=torch.uint8, device="cuda")
        db = torch.empty(dbytes, dtype=torch.uint8, device="cuda")
        src = apply_ops(sb[:sbytes].view(dt).view(list(case["base"]) + tail), case["src"], lib, item, extra)
        dst = apply_ops(db.view(dt).view(list(case["dst_base"]) + tail), case["dst"], lib, item, extra)
        pairs.append((sb, db, src, dst))
    sb0, db0, src0, dst0 = pairs[0]
    sb0[:sbytes].copy_(torch.from_numpy(ref.src_bytes))
    db0.fill_(POISON)
    dst0.copy_(src0)
    torch.cuda.synchronize()
    bad = compare(lambda off, k: db0[off : off + k].cpu().numpy(), ref.dst_bytes, ref.windows)
    if bad:
        return {"status": "mismatch", "reason": bad}

    ev, el = torch_event, torch_elapsed_s
    copy = rotating([(lambda d=d, s=s: d.copy_(s)) for (_, _, s, d) in pairs])
    mem = rotating([(lambda a=db[:nbytes], b=sb[:nbytes]: a.copy_(b)) for (sb, db, _, _) in pairs])
    t = event_time(copy, args.reps, args.warmup, ev, el, torch.cuda.synchronize)
    m = event_time(mem, args.reps, args.warmup, ev, el, torch.cuda.synchronize)
    out = {"status": "ok", "time_s": t, "memcpy_s": m, "pct_memcpy": 100 * m / t, "verified": True}
    ctx["memcpy_s"] = ctx.get("memcpy_s") or m
    if case["small"] and args.latency_iters > 0:
        for _ in range(10):
            dst0.copy_(src0)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(args.latency_iters):
            dst0.copy_(src0)
        torch.cuda.synchronize()
        out["host_s_per_copy"] = (time.perf_counter() - t0) / args.latency_iters
    del pairs, sb0, db0, src0, dst0, copy, mem
    return out


def torch_cleanup():
    import torch

    torch.cuda.synchronize()
    torch.cuda.empty_cache()


def torch_l2():
    import torch

    p = torch.cuda.get_device_properties(0)
    return int(getattr(p, "L2_cache_size", 0))


# ---------------------------------------------------------------- CuPy


def run_cupy(case, ref, args, l2, ctx):
    import cupy

    item, nbytes = case["itemsize"], case["bytes"]
    dt, extra = np_dtype(case)
    tail = [item] if extra else []
    lib = Lib(cupy.transpose, cupy.broadcast_to)
    sbytes, dbytes = prod(case["base"]) * item, prod(case["dst_base"]) * item
    n = pair_count(sbytes + dbytes, l2)
    pairs = []
    for _ in range(n):
        sb = cupy.empty(max(sbytes, nbytes), dtype=cupy.uint8)
        db = cupy.empty(dbytes, dtype=cupy.uint8)
        src = apply_ops(sb[:sbytes].view(dt).reshape(list(case["base"]) + tail), case["src"], lib, item, extra)
        dst = apply_ops(db.view(dt).reshape(list(case["dst_base"]) + tail), case["dst"], lib, item, extra)
        pairs.append((sb, db, src, dst))
    sb0, db0, src0, dst0 = pairs[0]
    sb0[:sbytes].set(ref.src_bytes)
    db0.fill(POISON)
    cupy.copyto(dst0, src0)
    cupy.cuda.Device().synchronize()
    bad = compare(lambda off, k: db0[off : off + k].get(), ref.dst_bytes, ref.windows)
    if bad:
        return {"status": "mismatch", "reason": bad}

    def ev():
        return cupy.cuda.Event()

    def el(s, e):
        return cupy.cuda.get_elapsed_time(s, e) / 1e3

    def memcpy(d, s):
        return lambda: d.data.copy_from_device_async(s.data, nbytes)

    copy = rotating([(lambda d=d, s=s: cupy.copyto(d, s)) for (_, _, s, d) in pairs])
    mem = rotating([memcpy(db, sb) for (sb, db, _, _) in pairs])
    sync = cupy.cuda.Device().synchronize
    t = event_time(copy, args.reps, args.warmup, ev, el, sync)
    m = event_time(mem, args.reps, args.warmup, ev, el, sync)
    ctx["memcpy_s"] = ctx.get("memcpy_s") or m
    del pairs, sb0, db0, src0, dst0, copy, mem
    return {"status": "ok", "time_s": t, "memcpy_s": m, "pct_memcpy": 100 * m / t, "verified": True}


def cupy_cleanup():
    import cupy

    cupy.cuda.Device().synchronize()
    cupy.get_default_memory_pool().free_all_blocks()


def cupy_l2():
    import cupy

    return int(cupy.cuda.Device().attributes.get("L2CacheSize", 0))


# ---------------------------------------------------------------- JAX

JAX_NAMES = {"float16", "float32", "float64", "bfloat16", "complex64", "complex128",
             "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"}


def jax_time(f, xs, reps, warmup):
    """Median seconds per call: K calls back to back, blocked on once."""
    rot = rotating([(lambda x=x: f(x)) for x in xs])
    y = f(xs[0])
    y.block_until_ready()
    for _ in range(warmup):
        f(xs[0]).block_until_ready()
    t0 = time.perf_counter()
    f(xs[0]).block_until_ready()
    est = time.perf_counter() - t0
    k = max(3, min(200, int(JAX_BATCH_S / max(est, 1e-7)) + 1))
    samples = []
    for _ in range(reps):
        t0 = time.perf_counter()
        y = None
        for _ in range(k):
            y = rot()
        y.block_until_ready()
        samples.append((time.perf_counter() - t0) / k)
    return median(samples)


def run_jax(case, ref, args, l2, ctx):
    import jax
    import jax.numpy as jnp

    for op in case["dst"]:
        if op["op"] not in ("perm", "flip"):
            return {"status": "unsupported", "reason": f"JAX arrays have no strides: a dst viewed through {op['op']} cannot be written"}
    item, nbytes = case["itemsize"], case["bytes"]
    name = case["dtype"]
    extra = False
    if name in JAX_NAMES:
        dt = np.dtype(getattr(jnp, name))
    elif item in NP_CONTAINER:
        dt = np.dtype(NP_CONTAINER[item])
    else:
        dt, extra = np.dtype("uint8"), True
    tail = [item] if extra else []
    lib = Lib(jnp.transpose, jnp.broadcast_to)
    nd_dst = len(case["dst_base"])

    def undo_dst(v):
        # dst = view(D) through perm/flip ops: D = the inverse ops applied to v, last first.
        for op in reversed(case["dst"]):
            if op["op"] == "perm":
                inv = [0] * nd_dst
                for i, d in enumerate(op["dims"]):
                    inv[d] = i
                v = jnp.transpose(v, inv + ([nd_dst] if extra else []))
            else:
                idx = [slice(None)] * nd_dst
                for d in op["dims"]:
                    idx[d] = slice(None, None, -1)
                v = v[tuple(idx)]
        return v

    identity = not case["src"] and not case["dst"]

    def body(x):
        v = undo_dst(apply_ops(x, case["src"], lib, item, extra))
        return jnp.copy(v) if identity else v

    f = jax.jit(body)
    host = ref.src_bytes.view(dt).reshape(list(case["base"]) + tail)
    sbytes, dbytes = prod(case["base"]) * item, prod(case["dst_base"]) * item
    n = pair_count(sbytes + dbytes, l2)
    xs = [jax.device_put(host) for _ in range(n)]
    y = np.asarray(f(xs[0]))
    got = np.ascontiguousarray(y).view(np.uint8).reshape(-1)
    bad = compare(lambda off, k: got[off : off + k], ref.dst_bytes, ref.windows)
    del y, got
    if bad:
        return {"status": "mismatch", "reason": bad}
    # The identity copy first: it validates the timing method and is JAX's
    # own memcpy.
    flat = [jax.device_put(np.zeros(nbytes, dtype=np.uint8)) for _ in range(min(n, 64))]
    m = jax_time(jax.jit(jnp.copy), flat, args.reps, args.warmup)
    del flat
    t = jax_time(f, xs, args.reps, args.warmup)
    out = {"status": "ok", "time_s": t, "memcpy_s": m, "pct_memcpy": 100 * m / t, "verified": True}
    real = ctx.get("memcpy_s")
    if real:
        pct = 100 * real / m
        out["identity_pct_memcpy"] = pct
        out["trusted"] = JAX_TRUST[0] <= pct <= JAX_TRUST[1]
        if not out["trusted"]:
            out["reason"] = f"jitted identity copy ran at {pct:.0f}% of memcpy (outside {JAX_TRUST[0]:.0f}-{JAX_TRUST[1]:.0f}%)"
    else:
        out["reason"] = "no real memcpy measured (run CuPy or PyTorch too) to validate the timing"
    del xs
    return out


def jax_cleanup():
    gc.collect()


def jax_l2():
    return 0


# ---------------------------------------------------------------- driver

# ------------------------------------------------ PyTorch across two devices


def run_torch_peer(case, ref, args, l2, ctx):
    """The case's source on cuda:0, its destination on cuda:1: dst.copy_(src)
    against a contiguous cross-device copy of the same bytes (a peer memcpy)."""
    import torch

    if has_negative_step(case["src"]) or has_negative_step(case["dst"]):
        return {"status": "unsupported", "reason": "PyTorch tensors cannot have negative strides (flip)"}
    item, nbytes = case["itemsize"], case["bytes"]
    dt, extra, tail, lib = torch_views(case)
    sbytes, dbytes = prod(case["base"]) * item, prod(case["dst_base"]) * item
    sb = torch.empty(max(sbytes, nbytes), dtype=torch.uint8, device="cuda:0")
    db = torch.empty(max(dbytes, nbytes), dtype=torch.uint8, device="cuda:1")
    src = apply_ops(sb[:sbytes].view(dt).view(list(case["base"]) + tail), case["src"], lib, item, extra)
    dst = apply_ops(db[:dbytes].view(dt).view(list(case["dst_base"]) + tail), case["dst"], lib, item, extra)
    sb[:sbytes].copy_(torch.from_numpy(ref.src_bytes))
    db.fill_(POISON)
    dst.copy_(src)

    def sync():
        torch.cuda.synchronize(0)
        torch.cuda.synchronize(1)

    sync()
    bad = compare(lambda off, k: db[off : off + k].cpu().numpy(), ref.dst_bytes, ref.windows)
    if bad:
        return {"status": "mismatch", "reason": bad}
    # PyTorch queues a cross-device copy on the source device's current
    # stream (cuda:0), after that stream waits for the destination's: events
    # on that stream time it as stridebench times its own copies and
    # cuMemcpyPeer, where the wall clock would add the synchronisation of
    # both devices to every sample of the copy and of its baseline alike.
    ev, el = torch_event, torch_elapsed_s
    a, b = db[:nbytes], sb[:nbytes]
    with torch.cuda.device(0):
        t = event_time(lambda: dst.copy_(src), args.reps, args.warmup, ev, el, sync)
        m = event_time(lambda: a.copy_(b), args.reps, args.warmup, ev, el, sync)
    del sb, db, src, dst, a, b
    return {"status": "ok", "time_s": t, "memcpy_s": m, "pct_memcpy": 100 * m / t, "verified": True}


FRAMEWORKS = {
    "torch": (run_torch, torch_cleanup, torch_l2),
    "torch-peer": (run_torch_peer, torch_cleanup, torch_l2),
    "cupy": (run_cupy, cupy_cleanup, cupy_l2),
    "jax": (run_jax, jax_cleanup, jax_l2),
}


def load(name):
    """Imports a framework; returns (version, None) or (None, reason)."""
    try:
        if name == "torch-peer":
            import torch

            if torch.cuda.device_count() < 2:
                return None, f"torch sees {torch.cuda.device_count()} GPUs, needs 2"
            return torch.__version__, None
        if name == "torch":
            import torch

            if not torch.cuda.is_available():
                return None, "torch.cuda.is_available() is False"
            return torch.__version__, None
        if name == "cupy":
            import cupy

            cupy.cuda.runtime.getDeviceCount()
            return cupy.__version__, None
        if name == "jax":
            import jax

            jax.config.update("jax_enable_x64", True)
            if not any(d.platform == "gpu" for d in jax.devices()):
                return None, "JAX sees no GPU"
            return jax.__version__, None
    except Exception as e:  # noqa: BLE001 (any import failure means unavailable)
        return None, f"{type(e).__name__}: {e}"
    return None, f"unknown framework {name!r}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cases", required=True, help="the case list stridebench wrote (JSON)")
    ap.add_argument("--reps", type=int, default=30, help="timed samples per copy (median)")
    ap.add_argument("--warmup", type=int, default=5, help="untimed copies first")
    ap.add_argument("--latency-iters", type=int, default=1000, help="copies for the host time per copy of small cases")
    ap.add_argument("--frameworks", default="torch,cupy,jax", help="comma-separated subset of torch,cupy,jax")
    ap.add_argument("--selfcheck", action="store_true", help="print the SHA-256 of each reference destination; needs only NumPy")
    args = ap.parse_args()
    with open(args.cases) as f:
        cases = json.load(f)

    if args.selfcheck:
        for case in cases:
            ref = Reference(case)
            print(json.dumps({"name": case["name"], "sha256": hashlib.sha256(ref.dst_bytes.tobytes()).hexdigest()}), flush=True)
        return 0

    names = [n.strip() for n in args.frameworks.split(",") if n.strip()]
    # JAX last: its timing is checked against a memcpy measured by the others.
    order = list(FRAMEWORKS)
    names.sort(key=lambda n: order.index(n) if n in order else len(order))
    versions = {"python": platform.python_version(), "numpy": np.__version__}
    status = {}
    for n in names:
        v, why = load(n)
        status[n] = why
        versions[n] = v if v else f"unavailable: {why}"
    print(json.dumps({"versions": versions}), flush=True)
    l2 = 0
    for n in names:
        if status.get(n) is None and n in FRAMEWORKS:
            try:
                l2 = max(l2, FRAMEWORKS[n][2]())
            except Exception:  # noqa: BLE001 (the L2 size is best effort)
                pass

    for case in cases:
        out = {}
        try:
            ref = Reference(case)
        except Exception as e:  # noqa: BLE001 (reported per case)
            ref, err = None, f"reference: {type(e).__name__}: {e}"
        ctx = {}
        for n in names:
            if n not in FRAMEWORKS:
                out[n] = {"status": "unavailable", "reason": f"unknown framework {n!r}"}
                continue
            if status.get(n) is not None:
                out[n] = {"status": "unavailable", "reason": status[n]}
                continue
            if ref is None:
                out[n] = {"status": "error", "reason": err}
                continue
            run, cleanup, _ = FRAMEWORKS[n]
            try:
                out[n] = run(case, ref, args, l2, ctx)
            except Exception as e:  # noqa: BLE001 (reported per case)
                out[n] = {"status": "error", "reason": f"{type(e).__name__}: {e}"}
            try:
                cleanup()
            except Exception:  # noqa: BLE001 (best effort)
                pass
        print(json.dumps({"name": case["name"], "peers": out}), flush=True)
        del ref
        gc.collect()
    return 0


if __name__ == "__main__":
    sys.exit(main())
