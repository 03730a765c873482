#!/usr/bin/env python3
"""Which HTTP client for the load generator's hot loop: httpx vs aiohttp vs optlog's own
(asyncio Protocol + httptools, timestamps in data_received), same server, same load.

    python bench/loadgen_clients.py [--repeats 3] [--concurrency 64] [--requests 1000]

Each client streams N requests (64 tokens of 1 ms, TTFT 20 ms) at concurrency C on one uvloop
event loop, keep-alive, the first content token timed the way each client allows: httpx and
aiohttp when their iterator hands the piece to the coroutine, optlog when the bytes arrive.
Reports requests/s and mean TTFT minus the server's own mean TTFT (its /metrics histogram).
aiohttp is not a project dependency: the row is skipped when it is not installed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BODY = json.dumps({"model": "m", "prompt": "hello world", "max_tokens": 64, "stream": True,
                   "stream_options": {"include_usage": True}}).encode()


async def _httpx(url: str, c: int, n: int) -> list[float]:
    import httpx

    ttfts: list[float] = []
    it = iter(range(n))
    async with httpx.AsyncClient(limits=httpx.Limits(max_connections=c, max_keepalive_connections=c),
                                 timeout=60) as cl:
        async def w() -> None:
            for _ in it:
                t0 = time.perf_counter()
                first = None
                async with cl.stream("POST", url, content=BODY, headers={"content-type": "application/json"}) as r:
                    async for chunk in r.aiter_raw():
                        if first is None and b"data: {" in chunk:
                            first = time.perf_counter()
                ttfts.append((first or t0) - t0)
        await asyncio.gather(*[w() for _ in range(c)])
    return ttfts


async def _aiohttp(url: str, c: int, n: int) -> list[float]:
    import aiohttp

    ttfts: list[float] = []
    it = iter(range(n))
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=c),
                                     timeout=aiohttp.ClientTimeout(total=60)) as cl:
        async def w() -> None:
            for _ in it:
                t0 = time.perf_counter()
                first = None
                async with cl.post(url, data=BODY, headers={"content-type": "application/json"}) as r:
                    async for chunk in r.content.iter_any():
                        if first is None and b"data: {" in chunk:
                            first = time.perf_counter()
                ttfts.append((first or t0) - t0)
        await asyncio.gather(*[w() for _ in range(c)])
    return ttfts


def _optlog(url: str, c: int, n: int) -> tuple[list[float], float]:
    from optlog.loadgen import runner

    spec = runner.Spec(target=runner.parse_target(url, None), model="m", prompts=[("hello world", 64)] * n,
                       levels=[c])
    lv = runner.run_sweep(spec)[0]
    return [r.ttft for r in lv.results if r.ttft is not None], lv.duration


def one(kind: str, url: str, c: int, n: int) -> None:
    """Runs in a fresh interpreter per measurement; prints one JSON line."""
    import uvloop

    t = time.perf_counter()
    if kind == "optlog":
        ttfts, dur = _optlog(url, c, n)
    else:
        uvloop.install()
        ttfts = asyncio.run(_httpx(url, c, n) if kind == "httpx" else _aiohttp(url, c, n))
        dur = time.perf_counter() - t
    print(json.dumps({"rps": len(ttfts) / dur, "ttft_mean_ms": statistics.mean(ttfts) * 1000, "n": len(ttfts)}))


def server_ttft(url: str) -> tuple[float, float]:
    s = c = 0.0
    with urllib.request.urlopen(url + "/metrics", timeout=10) as r:
        for ln in r.read().decode().splitlines():
            if ln.startswith("sglang:time_to_first_token_seconds_sum"):
                s = float(ln.rsplit(" ", 1)[1])
            if ln.startswith("sglang:time_to_first_token_seconds_count"):
                c = float(ln.rsplit(" ", 1)[1])
    return s, c


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--concurrency", type=int, default=64)
    ap.add_argument("--requests", type=int, default=1000)
    ap.add_argument("--one", nargs=4, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.one:
        one(a.one[0], a.one[1], int(a.one[2]), int(a.one[3]))
        return
    srv = subprocess.Popen([sys.executable, str(ROOT / "tests" / "testserver.py"), "--port", "0", "--ttft-ms", "20",
                            "--itl-ms", "1", "--tokens", "64"], stdout=subprocess.PIPE, text=True)
    base = srv.stdout.readline().split()[1]  # type: ignore[union-attr]
    url = base + "/v1/completions"
    print(f"load average: {Path('/proc/loadavg').read_text().split()[:3]}; c={a.concurrency} n={a.requests}")
    try:
        kinds = ["optlog", "aiohttp", "httpx"]
        rows: dict[str, list[dict]] = {k: [] for k in kinds}
        for _ in range(a.repeats):
            for k in kinds:
                s0, c0 = server_ttft(base)
                p = subprocess.run([sys.executable, __file__, "--one", k, url, str(a.concurrency), str(a.requests)],
                                   capture_output=True, text=True, timeout=600)
                if p.returncode != 0:
                    if "No module named 'aiohttp'" in p.stderr:
                        continue
                    raise RuntimeError(p.stderr[-2000:])
                s1, c1 = server_ttft(base)
                r = json.loads(p.stdout.strip().splitlines()[-1])
                r["distortion_ms"] = r["ttft_mean_ms"] - (s1 - s0) / max(c1 - c0, 1) * 1000
                rows[k].append(r)
        print(f"{'client':8} {'req/s':>8} {'TTFT mean ms':>13} {'TTFT - server ms':>17}   (medians of {a.repeats})")
        for k, rs in rows.items():
            if rs:
                med = lambda key: statistics.median(x[key] for x in rs)  # noqa: E731
                print(f"{k:8} {med('rps'):8.0f} {med('ttft_mean_ms'):13.1f} {med('distortion_ms'):17.1f}")
    finally:
        srv.terminate()


if __name__ == "__main__":
    main()
