"""GEMM-shape probe: time C = A·B for one (M, K, N, dtype), or a device copy, and print one JSON document
with the work counts (FLOPs, minimal bytes moved), the time and the rates. A bench command in a run
spec (`parser: json`) and the source of work counts for the diagnosis.

    python -m optlog.probes.gemm --m 16 --k 8192 --n 8192 --dtype bf16 --device cuda
    python -m optlog.probes.gemm --copy-bytes 4294967296 --device cuda

GPU: PyTorch (CUDA events around batches of products, median over batches, after warm-up; random
inputs, never zeros). CPU: NumPy (bf16/fp16 run as float32 there; `dtype_used` says so).
`--min-time-s` repeats batches until that much time passed (telemetry needs a few 100 ms windows).
Bytes are the fewest a kernel must move: A and B read once, C written once (copy: read + write).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

DTYPES = {"bf16": 2, "fp16": 2, "fp32": 4, "tf32": 4, "fp64": 8, "fp8": 1, "int8": 1}
# output element bytes where they differ from the inputs' (fp8 → bf16 out, int8 → int32 out)
OUT_BYTES = {"fp8": 2, "int8": 4}


def cuda_torch() -> Any:
    """PyTorch when it is installed and sees a CUDA GPU, else None (the probes and `calibrate` then
    measure the CPU)."""
    try:
        import torch  # deferred: optional, and seconds to import

        return torch if torch.cuda.is_available() else None
    except Exception:
        return None


def gemm_counts(m: int, k: int, n: int, dtype: str) -> tuple[float, float]:
    e = DTYPES[dtype]
    return 2.0 * m * k * n, float(e * (m * k + k * n) + OUT_BYTES.get(dtype, e) * m * n)


def run_gpu(a: argparse.Namespace, torch: Any) -> dict[str, Any]:
    dev = torch.device("cuda")
    out: dict[str, Any] = {"device": "cuda", "device_name": torch.cuda.get_device_name(0)}
    if a.copy_bytes:
        nel = a.copy_bytes // 4
        src = torch.rand(nel, device=dev, dtype=torch.float32)
        dst = torch.empty_like(src)
        fn = lambda: dst.copy_(src)  # noqa: E731
        flops, bytes_ = 0.0, 2.0 * nel * 4
        out.update(op="copy", copy_bytes=nel * 4)
    elif a.dtype in ("fp8", "int8"):
        # the low-precision tensor-core paths (issue 43: a model's compute type has its own peak):
        # fp8 e4m3 through torch._scaled_mm (B column-major, bf16 out), int8 through torch._int_mm with B
        # column-major too: with B row-major cuBLAS takes a path ~7x slower (H100, 8192³: 131 TOPS against
        # 989 column-major; docs/gpu-proof/diagnosis/2026-12-06-h100/), which made a wrong int8 ceiling.
        if a.dtype == "fp8":
            f8 = torch.float8_e4m3fn
            A = torch.randn(a.m, a.k, device=dev).to(f8)
            B = torch.randn(a.n, a.k, device=dev).to(f8).t()
            one_ = torch.tensor(1.0, device=dev)
            fn = lambda: torch._scaled_mm(A, B, scale_a=one_, scale_b=one_, out_dtype=torch.bfloat16)  # noqa: E731
        else:
            A = torch.randint(-64, 64, (a.m, a.k), device=dev, dtype=torch.int8)
            B = torch.randint(-64, 64, (a.n, a.k), device=dev, dtype=torch.int8).t()
            fn = lambda: torch._int_mm(A, B)  # noqa: E731
        flops, bytes_ = gemm_counts(a.m, a.k, a.n, a.dtype)
        out.update(op="gemm", m=a.m, k=a.k, n=a.n)
    else:
        td = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32, "tf32": torch.float32,
              "fp64": torch.float64}[a.dtype]
        if a.dtype == "tf32":
            torch.backends.cuda.matmul.allow_tf32 = True
        else:
            torch.backends.cuda.matmul.allow_tf32 = False
        A = torch.randn(a.m, a.k, device=dev, dtype=torch.float32).to(td)
        B = torch.randn(a.k, a.n, device=dev, dtype=torch.float32).to(td)
        C = torch.empty(a.m, a.n, device=dev, dtype=td)
        fn = lambda: torch.matmul(A, B, out=C)  # noqa: E731
        flops, bytes_ = gemm_counts(a.m, a.k, a.n, a.dtype)
        out.update(op="gemm", m=a.m, k=a.k, n=a.n)
    for _ in range(a.warmup):
        fn()
    torch.cuda.synchronize()
    # size a batch to ~20 ms
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    fn()
    e.record()
    torch.cuda.synchronize()
    one = max(s.elapsed_time(e) / 1000.0, 1e-6)
    batch = a.iters or max(1, min(10000, int(0.02 / one)))
    times: list[float] = []
    _announce()
    wall0 = time.time()
    t_start = time.perf_counter()
    while len(times) < a.repeats or time.perf_counter() - t_start < a.min_time_s:
        s.record()
        for _ in range(batch):
            fn()
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e) / 1000.0 / batch)
    out.update(iters=batch * len(times), batches=len(times), wall_s=time.perf_counter() - t_start,
               windows={"measured": [round(wall0, 4), round(time.time(), 4)]})  # the timed loop, for telemetry
    return _finish(out, flops, bytes_, times)


def run_cpu(a: argparse.Namespace) -> dict[str, Any]:
    import numpy as np  # deferred: numpy only where numbers are crunched

    rng = np.random.default_rng(0)
    out: dict[str, Any] = {"device": "cpu", "device_name": "cpu"}
    fn: Callable[[], object]
    if a.copy_bytes:
        nel = a.copy_bytes // 4
        src = rng.random(nel, dtype=np.float32)
        dst = np.empty_like(src)
        fn = lambda: np.copyto(dst, src)  # noqa: E731
        flops, bytes_ = 0.0, 2.0 * nel * 4
        out.update(op="copy", copy_bytes=nel * 4)
    else:
        npd = {"fp64": np.float64}.get(a.dtype, np.float32)
        A = rng.standard_normal((a.m, a.k)).astype(npd)
        B = rng.standard_normal((a.k, a.n)).astype(npd)
        C = np.empty((a.m, a.n), dtype=npd)
        fn = lambda: np.matmul(A, B, out=C)  # noqa: E731
        flops = 2.0 * a.m * a.k * a.n
        e = np.dtype(npd).itemsize
        bytes_ = float(e * (a.m * a.k + a.k * a.n + a.m * a.n))
        out.update(op="gemm", m=a.m, k=a.k, n=a.n, dtype_used=np.dtype(npd).name)
    for _ in range(a.warmup):
        fn()
    t0 = time.perf_counter()
    fn()
    one = max(time.perf_counter() - t0, 1e-7)
    batch = a.iters or max(1, min(1000, int(0.02 / one)))
    times: list[float] = []
    _announce()
    wall0 = time.time()
    t_start = time.perf_counter()
    while len(times) < a.repeats or time.perf_counter() - t_start < a.min_time_s:
        t0 = time.perf_counter()
        for _ in range(batch):
            fn()
        times.append((time.perf_counter() - t0) / batch)
    out.update(iters=batch * len(times), batches=len(times), wall_s=time.perf_counter() - t_start,
               windows={"measured": [round(wall0, 4), round(time.time(), 4)]})  # the timed loop, for telemetry
    return _finish(out, flops, bytes_, times)


def _announce() -> None:
    """Tell a watcher (stderr) that set-up is over and the timed part starts (telemetry aligns to it)."""
    print("optlog.probe: timing", file=sys.stderr, flush=True)


def _finish(out: dict[str, Any], flops: float, bytes_: float, times: list[float]) -> dict[str, Any]:
    t = statistics.median(times)
    out.update(flops=flops, bytes=bytes_, time_s=t, time_min_s=min(times),
               tflops=flops / t / 1e12, gbps=bytes_ / t / 1e9,
               intensity=(flops / bytes_) if bytes_ else None)
    return out


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m optlog.probes.gemm", description=__doc__.split("\n\n")[0])
    p.add_argument("--m", type=int, default=4096)
    p.add_argument("--k", type=int, default=4096)
    p.add_argument("--n", type=int, default=4096)
    p.add_argument("--dtype", default="bf16", choices=sorted(DTYPES))
    p.add_argument("--iters", type=int, default=0, help="products per timed batch (0: sized to ~20 ms)")
    p.add_argument("--repeats", type=int, default=10, help="timed batches (the median is reported)")
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--min-time-s", type=float, default=0.0, help="keep timing batches at least this long")
    p.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto")
    p.add_argument("--copy-bytes", type=int, default=0, help="time a device copy of this many bytes instead")
    p.add_argument("--output", metavar="FILE", help="also write the JSON document to FILE (for `parser: probe`)")
    return p


def probe(argv: list[str]) -> dict[str, Any]:
    a = parser().parse_args(argv)
    for name in ("m", "k", "n"):
        if getattr(a, name) < 1:
            raise SystemExit(f"--{name} must be at least 1")
    torch = None
    if a.device in ("auto", "cuda"):
        torch = cuda_torch()
        if torch is None and a.device == "cuda":
            raise SystemExit("--device cuda: PyTorch with a CUDA GPU is not available here")
    if torch is None and a.dtype in ("fp8", "int8"):
        raise SystemExit(f"--dtype {a.dtype} needs a CUDA GPU (the CPU path multiplies fp32/fp64 only)")
    res = run_gpu(a, torch) if torch is not None else run_cpu(a)
    res["dtype"] = a.dtype
    if a.output:
        Path(a.output).parent.mkdir(parents=True, exist_ok=True)
        Path(a.output).write_text(json.dumps(res) + "\n", encoding="utf-8")
    return res


def main(argv: list[str] | None = None) -> int:
    res = probe(list(sys.argv[1:] if argv is None else argv))
    print(json.dumps(res), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
