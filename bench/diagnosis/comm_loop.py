#!/usr/bin/env python3
"""Issue 43, multi-GPU: the two workloads whose calls differ on the links, one process per GPU under
`torch.distributed.run` (started by bench/diagnosis/comm.sh through `optlog run launch`):

- `--mode allreduce`: an NCCL all-reduce of `--mib` MiB (bf16) in a loop for `--seconds`: the links
  busy, the SMs waiting (NCCL's kernels hold a few of them) → communication-bound;
- `--mode gemm`: each GPU multiplies `--size`³ bf16 matrices for `--seconds`, no communication: the
  tensor cores busy, the links idle → compute-bound on the tensor cores.

Rank 0 writes OUT/result.json: the loop's own figures (all-reduce: `duration_s` and the bus bandwidth
per nccl-tests, algbw × 2(n−1)/n, for `parser: json`; GEMM: the GEMM probe's keys with flops/bytes/time_s
per GPU, the work counts the diagnosis reads, for `parser: probe`) and
`windows.measured` (wall-clock start/end of the timed loop, between barriers) so telemetry summarises
the loop only. NVLink multicast stays off (NCCL_NVLS_ENABLE=0 … set by comm.sh).
"""

from __future__ import annotations

import argparse
import json
import os
import time


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mode", choices=["allreduce", "gemm"], required=True)
    ap.add_argument("--seconds", type=float, default=15.0)
    ap.add_argument("--mib", type=int, default=256)
    ap.add_argument("--size", type=int, default=8192)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    import torch  # deferred: the device's PyTorch
    import torch.distributed as dist

    rank, n = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    local = int(os.environ.get("LOCAL_RANK", rank))
    torch.cuda.set_device(local)
    dev = torch.device(f"cuda:{local}")
    dist.init_process_group("nccl", device_id=dev)
    res: dict = {"mode": a.mode, "world_size": n}
    if a.mode == "allreduce":
        nbytes = a.mib << 20
        x = torch.ones(nbytes // 2, dtype=torch.bfloat16, device=dev)
        for _ in range(5):
            dist.all_reduce(x)
        torch.cuda.synchronize()
        dist.barrier()
        w0, t0, it = time.time(), time.perf_counter(), 0
        while time.perf_counter() - t0 < a.seconds:
            for _ in range(10):
                dist.all_reduce(x)
            torch.cuda.synchronize()
            it += 10
        dist.barrier()
        t, w1 = time.perf_counter() - t0, time.time()
        algbw = nbytes * it / t / 1e9
        # parser json: duration_s is the canonical key; no flops/bytes: the links are not DRAM traffic
        res.update(duration_s=t, iterations=it, message_bytes=nbytes, algbw_gbps=algbw,
                   busbw_gbps=algbw * 2 * (n - 1) / n)
    else:
        s = a.size
        x = torch.randn(s, s, dtype=torch.bfloat16, device=dev)
        y = torch.randn(s, s, dtype=torch.bfloat16, device=dev)
        for _ in range(5):
            z = x @ y
        torch.cuda.synchronize()
        dist.barrier()
        w0, t0, it = time.time(), time.perf_counter(), 0
        while time.perf_counter() - t0 < a.seconds:
            for _ in range(20):
                z = x @ y
            torch.cuda.synchronize()
            it += 20
        t = time.perf_counter() - t0
        dist.barrier()
        w1 = time.time()
        del z
        flops, nbytes = 2.0 * s ** 3 * it, 3.0 * s * s * 2 * it  # per GPU: A, B read, C written once
        # parser probe: the GEMM probe's keys (work counts per GPU, which the roofline reads)
        res.update(op="gemm", m=s, k=s, n=s, dtype="bf16", iters=it, time_s=t, flops=flops, bytes=nbytes,
                   tflops=flops / t / 1e12)
    res["windows"] = {"measured": [round(w0, 4), round(w1, 4)]}
    if rank == 0:
        os.makedirs(a.out, exist_ok=True)
        with open(os.path.join(a.out, "result.json"), "w") as f:
            json.dump(res, f)
        print(json.dumps(res))
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
