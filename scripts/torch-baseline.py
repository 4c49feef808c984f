#!/usr/bin/env python3
"""Times PyTorch's copy_ on the cases of kernels/bench_test.go, next to a
device-to-device memcpy of the same bytes in the same run, so stridekit's
kernel figures can be read against the framework a user would otherwise call.

Run on the GPU machine: python3 scripts/torch-baseline.py
GB/s counts 2 x bytes written (read + write), as kernels/bench_test.go does.
"""
import torch


def gbps(fn, nbytes, reps=20):
    for _ in range(3):
        fn()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(reps):
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / 1e3)
    times.sort()
    return 2 * nbytes / times[len(times) // 2] / 1e9


def case(name, dst, src):
    nbytes = dst.numel() * dst.element_size()
    flat_d = torch.empty(nbytes, dtype=torch.uint8, device="cuda")
    flat_s = torch.ones(nbytes, dtype=torch.uint8, device="cuda")
    mem = gbps(lambda: flat_d.copy_(flat_s), nbytes)
    g = gbps(lambda: dst.copy_(src), nbytes)
    print(f"{name:28s} torch {g:7.0f} GB/s  memcpy {mem:7.0f} GB/s  {100 * g / mem:5.1f}%")
    del flat_d, flat_s


def main():
    torch.manual_seed(0)
    dev = "cuda"
    n = 16384
    a = torch.randn(n, n, device=dev)
    case("TransposeF32 16384^2", torch.empty(n, n, device=dev), a.t())
    del a
    a = torch.randint(0, 255, (32768, 32768), dtype=torch.uint8, device=dev)
    case("TransposeU8 32768^2", torch.empty(32768, 32768, dtype=torch.uint8, device=dev), a.t())
    del a
    a = torch.randn(n, n, device=dev).half()
    case("TransposeF16 16384^2", torch.empty(n, n, dtype=torch.half, device=dev), a.t())
    del a
    a = torch.randn(64, 64, 256, 256, device=dev)
    case("Permute3210 f32", torch.empty(256, 256, 64, 64, device=dev), a.permute(3, 2, 1, 0))
    del a
    a = torch.randn(n, 2 * n, device=dev)
    case("SliceStep2 f32", torch.empty(n, n, device=dev), a[:, ::2])
    del a
    row = torch.randn(1, n, device=dev)
    case("BroadcastRow f32", torch.empty(n, n, device=dev), row.expand(n, n))
    one = torch.randn((), device=dev)
    case("Fill f32", torch.empty(n, n, device=dev), one.expand(n, n))


if __name__ == "__main__":
    main()
