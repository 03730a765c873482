"""The load generator's pure part: SSE decoding, per-request results, aggregates. No I/O.

The client (`optlog.loadgen.client`) only timestamps bytes as they arrive; everything here runs
after a level has finished, so none of its cost lands inside a measurement.

Metric names follow SGLang's `bench_serving` (so `compare` and predictions treat optlog bench runs
like SGLang's): `request_throughput`, `input_throughput`, `output_throughput`,
`total_token_throughput` (SGLang: `total_throughput`), `{mean,median,p90,p95,p99}_{ttft,tpot,itl,
e2e_latency}_ms`, `completed`, `failed`, `duration` (and `duration_s`), `max_concurrency`,
`mean_inflight` (SGLang's measured `concurrency` = sum of E2E latencies / duration).

Definitions (SGLang's): TTFT = first content token arrival - request send; ITL = gaps between
content-token events; TPOT = (E2E - TTFT) / (output tokens - 1); E2E = end of the response - send.
"""

from __future__ import annotations

import json
import math
import random
from dataclasses import dataclass, field
from typing import Any, Iterable

# error kinds, in report order
ERROR_KINDS = (
    "connect",          # could not connect (refused, unreachable, name not found)
    "disconnected",     # the connection closed before a response status arrived
    "http_4xx",
    "http_5xx",
    "http_other",       # a non-2xx status outside 4xx/5xx (3xx: redirects are not followed)
    "stream_cut",       # the stream ended before [DONE] / a finish_reason (cut mid-way)
    "no_first_token",   # --timeout passed before any token arrived (a stalled server)
    "timeout",          # --timeout passed after some tokens
    "server_error",     # an SSE event carrying {"error": ...}
    "bad_response",     # unparseable HTTP or SSE payload
)


@dataclass
class Raw:
    """What the client saw for one request: timestamps (seconds, perf_counter) and bytes."""

    index: int
    start: float = 0.0                  # request bytes handed to the socket
    end: float = 0.0                    # the response ended (or failed)
    status: int = 0
    chunks: list[tuple[float, bytes]] = field(default_factory=list)   # body pieces as they arrived
    complete: bool = False              # the HTTP message ended cleanly
    error: str | None = None            # an error kind decided by the client (connect, cut, timeout…)
    detail: str = ""
    warmup: bool = False


@dataclass
class Result:
    """One request, decoded."""

    index: int
    ok: bool
    error: str | None
    detail: str
    start: float
    end: float
    ttft: float | None                  # seconds
    itls: list[float]                   # seconds
    e2e: float
    output_tokens: int                  # from usage when given, else counted token events
    input_tokens: int | None            # from usage (None when the server sent none)
    counted_tokens: int                 # content events counted in the stream
    usage: bool                         # the server reported usage
    text: str = ""

    @property
    def tpot(self) -> float | None:
        if self.ttft is None or self.output_tokens <= 1:
            return None
        return (self.e2e - self.ttft) / (self.output_tokens - 1)


# ---------------------------------------------------------------- SSE decoding


def sse_events(chunks: Iterable[tuple[float, bytes]]) -> list[tuple[float, str]]:
    """Decode an SSE byte stream into (arrival time, data) events.

    An event is dispatched at the blank line that ends it, so its time is the arrival time of the
    piece holding that blank line; events split across network pieces are joined. Comment lines
    (`: keep-alive`) and fields other than `data` are skipped; multi-line data is joined by \\n.
    Accepts \\n, \\r\\n and \\r line ends. An unterminated last event is dropped, as the spec says.
    """
    out: list[tuple[float, str]] = []
    buf = b""
    data: list[str] = []
    for t, piece in chunks:
        buf += piece
        if b"\r" in buf:
            # normalise line ends; keep a trailing \r (its \n may be in the next piece)
            tail = b"\r" if buf.endswith(b"\r") else b""
            buf = buf[: len(buf) - len(tail)].replace(b"\r\n", b"\n").replace(b"\r", b"\n") + tail
        while True:
            nl = buf.find(b"\n")
            if nl < 0:
                break
            line = buf[:nl]
            buf = buf[nl + 1:]
            if not line:
                if data:
                    out.append((t, "\n".join(data)))
                    data = []
                continue
            if line.startswith(b":"):
                continue
            name, _, value = line.partition(b":")
            if name == b"data":
                if value.startswith(b" "):
                    value = value[1:]
                data.append(value.decode("utf-8", "replace"))
    return out


def _content(ev: dict[str, Any]) -> str | None:
    """The generated text in one completions/chat chunk (None when it carries none)."""
    choices = ev.get("choices")
    if not choices or not isinstance(choices, list):
        return None
    c = choices[0]
    if not isinstance(c, dict):
        return None
    if "text" in c and c["text"]:
        return str(c["text"])
    d = c.get("delta")
    if isinstance(d, dict):
        for k in ("content", "reasoning_content", "reasoning"):
            v = d.get(k)
            if v:
                return str(v)
    return None


def _finished(ev: dict[str, Any]) -> bool:
    for c in ev.get("choices") or []:
        if isinstance(c, dict) and c.get("finish_reason"):
            return True
    return False


def decode(raw: Raw, keep_text: bool = False) -> Result:
    """Turn what the client saw into a request result (token times, usage, success)."""
    error, detail = raw.error, raw.detail
    times: list[float] = []
    usage: dict[str, Any] | None = None
    done = finished = False
    text: list[str] = []
    if 200 <= raw.status < 300 or (raw.status == 0 and raw.chunks):
        for t, data in sse_events(raw.chunks):
            if data.strip() == "[DONE]":
                done = True
                continue
            try:
                ev = json.loads(data)
            except ValueError:
                if error is None:
                    error, detail = "bad_response", f"not JSON in an SSE event: {data[:80]!r}"
                continue
            if not isinstance(ev, dict):
                continue
            if ev.get("error") and error is None:
                err = ev["error"]
                error = "server_error"
                detail = str(err.get("message") if isinstance(err, dict) else err)[:200]
                continue
            c = _content(ev)
            if c is not None:
                times.append(t)
                if keep_text:
                    text.append(c)
            if _finished(ev):
                finished = True
            u = ev.get("usage")
            if isinstance(u, dict) and u.get("completion_tokens") is not None:
                usage = u
    elif raw.status and error is None:
        s = raw.status
        error = "http_4xx" if 400 <= s < 500 else "http_5xx" if 500 <= s < 600 else "http_other"
        body = b"".join(c for _, c in raw.chunks)[:200].decode("utf-8", "replace")
        detail = f"HTTP {s}: {body}"
    if error == "stream_cut" and done and raw.error == "stream_cut":
        error, detail = None, ""  # a body delimited by closing the connection, after [DONE]
    if error is None and not (done or finished):
        error = "stream_cut"
        detail = "the stream ended without [DONE] or a finish_reason"
    if error in ("timeout", "no_first_token"):
        error = "timeout" if times else "no_first_token"
    if error == "stream_cut" and raw.error is None and raw.complete:
        detail = "the response ended cleanly but without [DONE] or a finish_reason"
    counted = len(times)
    out_tokens = int(usage["completion_tokens"]) if usage else counted
    in_tokens = usage.get("prompt_tokens") if usage else None
    ttft = times[0] - raw.start if times else None
    itls = [b - a for a, b in zip(times, times[1:])]
    return Result(index=raw.index, ok=error is None, error=error, detail=detail, start=raw.start, end=raw.end,
                  ttft=ttft, itls=itls, e2e=raw.end - raw.start,
                  output_tokens=out_tokens if error is None else counted,
                  input_tokens=int(in_tokens) if in_tokens is not None else None,
                  counted_tokens=counted, usage=usage is not None, text="".join(text))


# ---------------------------------------------------------------- aggregates


def percentile(sorted_vals: list[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default), on sorted input."""
    n = len(sorted_vals)
    if n == 0:
        return math.nan
    if n == 1:
        return sorted_vals[0]
    pos = (n - 1) * q / 100.0
    lo = int(math.floor(pos))
    hi = min(lo + 1, n - 1)
    return sorted_vals[lo] + (sorted_vals[hi] - sorted_vals[lo]) * (pos - lo)


def _dist(name: str, vals: list[float], out: dict[str, Any]) -> None:
    s = sorted(v * 1000.0 for v in vals)
    if not s:
        for k in ("mean", "median", "std", "p90", "p95", "p99"):
            out[f"{k}_{name}_ms"] = None
        return
    mean = sum(s) / len(s)
    out[f"mean_{name}_ms"] = mean
    out[f"median_{name}_ms"] = percentile(s, 50)
    out[f"std_{name}_ms"] = math.sqrt(sum((v - mean) ** 2 for v in s) / len(s))
    out[f"p90_{name}_ms"] = percentile(s, 90)
    out[f"p95_{name}_ms"] = percentile(s, 95)
    out[f"p99_{name}_ms"] = percentile(s, 99)


def aggregate(results: list[Result], duration: float, max_concurrency: int | None) -> dict[str, Any]:
    """SGLang-named aggregates over one level's measured requests (warm-up excluded by the caller)."""
    ok = [r for r in results if r.ok]
    failed = [r for r in results if not r.ok]
    dur = max(duration, 1e-9)
    tin = sum(r.input_tokens or 0 for r in ok)
    tout = sum(r.output_tokens for r in ok)
    m: dict[str, Any] = {
        "completed": len(ok),
        "failed": len(failed),
        "duration": duration,
        "duration_s": duration,
        "total_input_tokens": tin,
        "total_output_tokens": tout,
        "request_throughput": len(ok) / dur,
        "input_throughput": tin / dur,
        "output_throughput": tout / dur,
        "total_token_throughput": (tin + tout) / dur,
        "max_concurrency": max_concurrency,
    }
    m["total_throughput"] = m["total_token_throughput"]
    _dist("ttft", [r.ttft for r in ok if r.ttft is not None], m)
    _dist("tpot", [t for r in ok if (t := r.tpot) is not None], m)
    _dist("itl", [x for r in ok for x in r.itls], m)
    _dist("e2e_latency", [r.e2e for r in ok], m)
    # measured mean in flight: SGLang's `concurrency` (sum of E2E / duration), over all requests
    m["mean_inflight"] = sum(max(0.0, r.e2e) for r in results) / dur
    m["concurrency"] = m["mean_inflight"]
    m["max_concurrent_requests"] = peak_inflight(results)
    return m


def peak_inflight(results: list[Result]) -> int:
    ev: list[tuple[float, int]] = []
    for r in results:
        ev.append((r.start, 1))
        ev.append((r.end, -1))
    ev.sort(key=lambda x: (x[0], x[1]))
    cur = peak = 0
    for _, d in ev:
        cur += d
        peak = max(peak, cur)
    return peak


def error_counts(results: list[Result]) -> dict[str, int]:
    out: dict[str, int] = {}
    for r in results:
        if r.error:
            out[r.error] = out.get(r.error, 0) + 1
    return {k: out[k] for k in sorted(out, key=lambda k: ERROR_KINDS.index(k) if k in ERROR_KINDS else 99)}


# ---------------------------------------------------------------- workload (pure)

# Common short English words: almost every one is a single token, with its leading space, in the
# BPE vocabularies of current LLMs, so N words ≈ N tokens without a tokenizer.
WORDS = (
    "the of and to in is you that it he was for on are as with his they at be this have from or one "
    "had by word but not what all were we when your can said there use an each which she do how their "
    "if will up other about out many then them these so some her would make like him into time has "
    "look two more write go see number no way could people my than first water been call who oil its "
    "now find long down day did get come made may part over new sound take only little work know place "
    "year live me back give most very after thing our just name good sentence man think say great where "
    "help through much before line right too mean old any same tell boy follow came want show also around "
    "form three small set put end does another well large must big even such because turn here why ask "
    "went men read need land different home us move try kind hand picture again change off play spell "
    "air away animal house point page letter mother answer found study still learn should world high"
).split()


def random_prompt(rng: random.Random, n_words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(max(1, n_words)))


def poisson_offsets(n: int, rate: float, seed: int) -> list[float]:
    """Arrival offsets (seconds from the start) of n requests: Poisson at `rate`/s; all 0 for inf."""
    if math.isinf(rate):
        return [0.0] * n
    rng = random.Random(seed)
    t = 0.0
    out = []
    for _ in range(n):
        out.append(t)
        t += rng.expovariate(rate)
    return out


def parse_levels(text: str) -> list[int]:
    """`1,8,64` → [1, 8, 64]; raises ValueError naming the bad piece."""
    out = []
    for piece in str(text).split(","):
        p = piece.strip()
        if not p:
            raise ValueError(f"empty level in {text!r}")
        try:
            v = int(p)
        except ValueError:
            raise ValueError(f"{p!r} is not a whole number (in {text!r})") from None
        if v < 1:
            raise ValueError(f"a concurrency level is at least 1, got {v}")
        out.append(v)
    return out


def parse_rate(text: str) -> float:
    s = str(text).strip().lower()
    if s in ("inf", "infinity", "max"):
        return math.inf
    try:
        v = float(s)
    except ValueError:
        raise ValueError(f"{text!r} is not a number or 'inf'") from None
    if not (v > 0) or math.isnan(v):
        raise ValueError(f"a request rate is > 0 (or 'inf'), got {text!r}")
    return v


def length_warnings(results: list[Result], input_len: int | None, output_len: int | None) -> list[str]:
    """Warnings when the server's reported lengths are more than 10 % off the requested ones."""
    ok = [r for r in results if r.ok]
    out = []
    ins = [r.input_tokens for r in ok if r.input_tokens is not None]
    if input_len and ins:
        mean = sum(ins) / len(ins)
        if abs(mean - input_len) > 0.1 * input_len:
            out.append(f"input length: the server counted {mean:.0f} prompt tokens on average, "
                       f"--input-len asked for {input_len} ({(mean / input_len - 1) * 100:+.0f} %)")
    outs = [r.output_tokens for r in ok if r.usage]
    if output_len and outs:
        mean = sum(outs) / len(outs)
        if abs(mean - output_len) > 0.1 * output_len:
            out.append(f"output length: the server generated {mean:.0f} tokens on average, "
                       f"--output-len asked for {output_len} ({(mean / output_len - 1) * 100:+.0f} %); "
                       "try --ignore-eos if the server supports it")
    if ok and not any(r.usage for r in ok):
        out.append("the server sent no usage block: token counts are counted from the stream "
                   "(one per content event)")
    return out
