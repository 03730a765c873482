"""Runs a benchmark: a sweep of concurrency levels, each with warm-up, arrivals and a clock.

`run_sweep(spec)` is synchronous (it owns one event loop for the whole sweep, uvloop when
installed) and returns one `Level` per concurrency level, each decoded and aggregated after its
clock stopped.
"""

from __future__ import annotations

import asyncio
import gc
import json
import math
import resource
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Callable
from urllib.parse import urlsplit

from optlog.core.numfmt import fmt_seconds
from optlog.loadgen import core
from optlog.loadgen.client import Pool, new_loop


@dataclass
class Target:
    url: str           # full endpoint URL (…/v1/completions or …/v1/chat/completions)
    host: str
    port: int
    tls: bool
    path: str
    api: str           # completions | chat


@dataclass
class Spec:
    target: Target
    model: str
    prompts: list[tuple[str, int]]          # (prompt, max_tokens) for each measured request
    levels: list[int | None]                # None: no cap
    request_rate: float = math.inf
    warmup: int = 0
    seed: int = 0
    timeout: float = 600.0
    ignore_eos: bool = False
    headers: dict[str, str] = field(default_factory=dict)
    extra_body: dict[str, Any] = field(default_factory=dict)
    max_failures: int | None = None
    progress: bool = False
    include_usage: bool = True
    # Fresh prompts: one list per level (the service builds them; None: `prompts` at every level,
    # which lets a server with a prompt cache answer later levels from it), warm-up prompts of their
    # own (never the measured ones), warm-up at the first level only (after a server (re)start).
    prompt_sets: list[list[tuple[str, int]]] | None = None
    warmup_prompts: list[tuple[str, int]] | None = None
    warmup_first: int = 0
    count_prompt_tokens: bool = False       # prompts optlog built: N words = N tokens, by construction
    # The server's own counters around each level (set by the service: it knows the server's
    # dialects): `probe()` reads them (None: not available), `deltas(before, after)` gives
    # {"output_tokens", "output_counter", "prompt_tokens", "cached_prompt_tokens"} where known.
    probe: Callable[[], Any] | None = None
    deltas: Callable[[Any, Any], dict[str, Any]] | None = None

    @property
    def min_tokens(self) -> int | None:
        """The length every answer must reach (None: any length is a whole answer)."""
        mt = self.extra_body.get("min_tokens")
        if isinstance(mt, int) and not isinstance(mt, bool) and mt > 0:
            return mt
        return None


@dataclass
class Level:
    concurrency: int | None
    request_rate: float
    results: list[core.Result]
    duration: float
    metrics: dict[str, Any]
    errors: dict[str, int]
    aborted: bool
    started_at: float   # wall clock (time.time())
    finished_at: float
    server: dict[str, Any] = field(default_factory=dict)   # the server's own counter deltas over the level
    warnings: list[str] = field(default_factory=list)
    # the measured phase in wall-clock seconds (telemetry's clock): {"measured": [first send, last end],
    # "decode": [[first token, end], …] of the requests, joined where they overlap} (core.windows)
    windows: dict[str, Any] = field(default_factory=dict)


def parse_target(url: str, api: str | None) -> Target:
    """Accept a base URL (`http://h:p`), `…/v1`, or the full endpoint; raise ValueError if not HTTP(S)."""
    u = urlsplit(url.strip())
    if u.scheme not in ("http", "https") or not u.hostname:
        raise ValueError(f"not an http or https URL: {url!r} (expected e.g. http://127.0.0.1:30000)")
    try:
        port = u.port or (443 if u.scheme == "https" else 80)
    except ValueError:
        raise ValueError(f"bad port in {url!r}") from None
    path = u.path.rstrip("/")
    if path.endswith("/chat/completions"):
        found = "chat"
    elif path.endswith("/completions"):
        found = "completions"
    else:
        found = None
    if found and api and api != found:
        raise ValueError(f"the URL names the {found} endpoint but --api is {api}")
    api = found or api or "completions"
    if not found:
        if not path.endswith("/v1"):
            path += "/v1"
        path += "/chat/completions" if api == "chat" else "/completions"
    if u.query:
        path += "?" + u.query
    host = u.hostname
    netloc = f"[{host}]" if ":" in host else host
    return Target(url=f"{u.scheme}://{netloc}:{port}{path}", host=host, port=port, tls=u.scheme == "https",
                  path=path, api=api)


def build_payload(spec: Spec, prompt: str, max_tokens: int) -> bytes:
    t = spec.target
    body: dict[str, Any] = {"model": spec.model, "max_tokens": max_tokens, "stream": True, "temperature": 0.0}
    if t.api == "chat":
        body["messages"] = [{"role": "user", "content": prompt}]
    else:
        body["prompt"] = prompt
    if spec.include_usage:
        body["stream_options"] = {"include_usage": True}
    if spec.ignore_eos:
        body["ignore_eos"] = True
    body.update(spec.extra_body)
    data = json.dumps(body, ensure_ascii=False).encode()
    host = t.host if ":" not in t.host else f"[{t.host}]"
    default_port = 443 if t.tls else 80
    hosthdr = host if t.port == default_port else f"{host}:{t.port}"
    lines = [f"POST {t.path} HTTP/1.1", f"Host: {hosthdr}", "Content-Type: application/json",
             "Accept: text/event-stream", "User-Agent: optlog-bench", f"Content-Length: {len(data)}"]
    for k, v in spec.headers.items():
        lines.append(f"{k}: {v}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1", "replace") + data


class _Progress:
    def __init__(self, label: str, total: int, enabled: bool) -> None:
        self.label, self.total, self.enabled = label, total, enabled
        self.done = self.failed = 0
        self.t0 = time.monotonic()
        self.handle: asyncio.TimerHandle | None = None

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        if self.enabled:
            self.handle = loop.call_later(0.25, self.tick, loop)

    def tick(self, loop: asyncio.AbstractEventLoop) -> None:
        self.draw()
        self.handle = loop.call_later(0.25, self.tick, loop)

    def draw(self, end: str = "") -> None:
        width = 24
        frac = self.done / self.total if self.total else 1.0
        bar = "#" * int(frac * width) + "-" * (width - int(frac * width))
        sys.stderr.write(f"\r{self.label} [{bar}] {self.done}/{self.total} failed {self.failed} "
                         f"{fmt_seconds(time.monotonic() - self.t0):>7}{end}")
        sys.stderr.flush()

    def stop(self) -> None:
        if self.handle is not None:
            self.handle.cancel()
        if self.enabled:
            self.draw("\n")


def _raws(spec: Spec, prompts: list[tuple[str, int]], warmup: bool) -> list[core.Raw]:
    need = spec.min_tokens
    out = []
    for i, (prompt, mt) in enumerate(prompts):
        demand = min(need, mt) if need else (mt if spec.ignore_eos else 0)
        out.append(core.Raw(index=i, warmup=warmup, max_tokens=mt, min_tokens=demand,
                            prompt_tokens=len(prompt.split()) if spec.count_prompt_tokens else None))
    return out


async def _run_level(spec: Spec, pool: Pool, payloads: list[bytes], cap: int | None, label: str,
                     warmup: bool, raws: list[core.Raw]) -> tuple[list[core.Raw], float, bool, float]:
    loop = asyncio.get_running_loop()
    n = len(payloads)
    workers = min(cap or n, n) if n else 0
    await pool.prewarm(workers if cap else min(workers, 256))
    prog = _Progress(label, n, spec.progress and not warmup)
    state = {"failed": 0, "aborted": False}
    offsets = [0.0] * n if warmup else core.poisson_offsets(n, spec.request_rate, spec.seed)
    queue: asyncio.Queue[int | None] = asyncio.Queue()
    timeout = spec.timeout
    max_fail = spec.max_failures

    async def worker() -> None:
        while True:
            i = await queue.get()
            if i is None or state["aborted"]:
                return
            raw = raws[i]
            await pool.request(raw, payloads[i], timeout)
            if raw.error == "aborted":
                return
            prog.done += 1
            if raw.error is not None or not (200 <= raw.status < 300):
                prog.failed += 1
                state["failed"] += 1
                if max_fail is not None and state["failed"] > max_fail and not warmup:
                    state["aborted"] = True
                    for _ in range(workers):
                        queue.put_nowait(None)
                    pool.abort_busy()

    async def dispatch(t0: float) -> None:
        for i, off in enumerate(offsets):
            if state["aborted"]:
                return
            delay = t0 + off - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            queue.put_nowait(i)
        for _ in range(workers):
            queue.put_nowait(None)

    prog.start(loop)
    # No cyclic GC pauses inside the clock: each piece of each stream allocates a tuple, and a
    # collection stalls every stream's timestamps at once. Collected after the level instead.
    gc_was = gc.isenabled()
    gc.disable()
    t0 = time.perf_counter()
    if all(o == 0.0 for o in offsets):
        for i in range(n):
            queue.put_nowait(i)
        for _ in range(workers):
            queue.put_nowait(None)
        tasks = [loop.create_task(worker()) for _ in range(workers)]
    else:
        tasks = [loop.create_task(worker()) for _ in range(workers)]
        tasks.append(loop.create_task(dispatch(t0)))
    try:
        await asyncio.gather(*tasks)
    finally:
        t1 = time.perf_counter()
        if gc_was:
            gc.enable()
    prog.stop()
    return raws, t1 - t0, bool(state["aborted"]), t0


def _raise_fd_limit(need: int) -> None:
    """One socket per concurrent stream: lift the soft open-files limit toward the hard one."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = need + 64
    if soft != resource.RLIM_INFINITY and soft < want:
        new = want if hard == resource.RLIM_INFINITY else min(want, hard)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (new, hard))
        except (ValueError, OSError):
            pass


def run_sweep(spec: Spec, on_level: Callable[[Level], None] | None = None,
              notice: Callable[[str], None] | None = None) -> list[Level]:
    _raise_fd_limit(max((c or len(spec.prompts)) for c in spec.levels))
    loop = new_loop()
    try:
        return loop.run_until_complete(_sweep(spec, on_level, notice))
    finally:
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.close()


def _probe(spec: Spec) -> Any:
    if spec.probe is None:
        return None
    try:
        return spec.probe()
    except Exception:  # a server without /metrics (or --metrics off): no server-side check
        return None


async def _sweep(spec: Spec, on_level: Callable[[Level], None] | None,
                 notice: Callable[[str], None] | None) -> list[Level]:
    t = spec.target
    loop = asyncio.get_running_loop()
    pool = Pool(t.host, t.port, t.tls, connect_timeout=min(spec.timeout, 30.0))
    sets = spec.prompt_sets or [spec.prompts] * len(spec.levels)
    warm = spec.warmup_prompts or spec.prompts
    levels: list[Level] = []
    try:
        for li, cap in enumerate(spec.levels):
            prompts = sets[li % len(sets)]
            payloads = [build_payload(spec, p, mt) for p, mt in prompts]
            nwarm = spec.warmup or (spec.warmup_first if li == 0 else 0)
            if nwarm:
                wp = [warm[i % len(warm)] for i in range(nwarm)]
                await _run_level(spec, pool, [build_payload(spec, p, mt) for p, mt in wp],
                                 min(cap or nwarm, nwarm), "warm-up", True, _raws(spec, wp, True))
            label = f"c={cap if cap else 'inf'}"
            before = await loop.run_in_executor(None, _probe, spec)
            wall0 = time.time()
            raws, duration, aborted, _ = await _run_level(spec, pool, payloads, cap, label, False,
                                                          _raws(spec, prompts, False))
            wall1 = time.time()
            after = await loop.run_in_executor(None, _probe, spec) if before is not None else None
            results = [core.decode(r) for r in raws if (r.start or r.error) and r.error != "aborted"]
            metrics = core.aggregate(results, duration, cap)
            windows = core.windows(results, time.time() - time.perf_counter())
            server = spec.deltas(before, after) if (spec.deltas and before is not None and after is not None) else {}
            warnings: list[str] = []
            if server:
                metrics.update({f"server_{k}": v for k, v in server.items() if isinstance(v, (int, float))})
                ratio = core.agreement(metrics["client_counted_output_tokens"], server.get("output_tokens"))
                metrics["output_tokens_agreement"] = ratio
                w = core.agreement_warning(ratio, str(server.get("output_counter")))
                if w:
                    warnings.append(w)
                if metrics.get("cached_prompt_tokens") is None and server.get("cached_prompt_tokens") is not None:
                    metrics["cached_prompt_tokens"] = server["cached_prompt_tokens"]
                    tin = metrics.get("total_input_tokens") or sum(r.input_tokens or 0 for r in results)
                    if tin:
                        metrics["cached_prompt_fraction"] = server["cached_prompt_tokens"] / tin
            for w in (core.cache_warning(metrics), core.short_warning(results)):
                if w:
                    warnings.append(w)
            metrics["prompt_cache_hit"] = 1 if core.cache_warning(metrics) else 0
            lv = Level(concurrency=cap, request_rate=spec.request_rate, results=results, duration=duration,
                       metrics=metrics, errors=core.error_counts(results),
                       aborted=aborted, started_at=wall0, finished_at=wall1, server=server, warnings=warnings,
                       windows=windows)
            levels.append(lv)
            if on_level is not None:
                on_level(lv)
            if aborted:
                if notice is not None and li + 1 < len(spec.levels):
                    notice(f"--max-failures {spec.max_failures} exceeded at {label}; the remaining levels are skipped")
                break
    finally:
        pool.close()
    return levels
