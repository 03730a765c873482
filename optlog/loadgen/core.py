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

from optlog.core.numfmt import fmt_share, fmt_whole, plural
from optlog.core.windows import join_windows

# error kinds, in report order
ERROR_KINDS = (
    "connect",          # could not connect (refused, unreachable, name not found)
    "disconnected",     # the connection closed before a response status arrived
    "http_4xx",
    "http_5xx",
    "http_other",       # a non-2xx status outside 4xx/5xx (3xx: redirects are not followed)
    "stream_cut",       # the stream ended before [DONE] / a finish_reason (cut mid-way)
    "short",            # the stream ended "cleanly" but is not a whole answer: no finish_reason, or
                        # fewer tokens than ignore_eos/min_tokens demanded (real servers do this)
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
    max_tokens: int = 0                 # what the request asked for
    min_tokens: int = 0                 # what it demanded (ignore_eos: max_tokens; min_tokens): fewer is short
    prompt_tokens: int | None = None    # client-side count of the prompt optlog built (None: unknown)


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
    finish_reason: str | None = None
    max_tokens: int = 0
    input_source: str | None = None     # "server" (usage), "client" (counted from optlog's prompt), None
    cached_tokens: int | None = None    # prompt tokens served from the server's cache, where reported
    timings: dict[str, float] | None = None   # llama.cpp's own per-response `timings`, where sent

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


def _finish_reason(ev: dict[str, Any]) -> str | None:
    for c in ev.get("choices") or []:
        if isinstance(c, dict) and c.get("finish_reason"):
            return str(c["finish_reason"])
    return None


def _cached(u: dict[str, Any]) -> int | None:
    d = u.get("prompt_tokens_details")
    if isinstance(d, dict) and isinstance(d.get("cached_tokens"), (int, float)):
        return int(d["cached_tokens"])
    return None


TIMING_KEYS = ("prompt_n", "prompt_ms", "predicted_n", "predicted_ms", "cache_n")


def decode(raw: Raw, keep_text: bool = False) -> Result:
    """Turn what the client saw into a request result (token times, usage, success).

    A request is complete only when its stream carried a finish_reason and, when the request
    demanded a length (`raw.min_tokens`: ignore_eos or min_tokens), at least that many tokens: a
    real server may end a stream with `[DONE]` early, or with no finish_reason at all, and a load
    generator that trusts `[DONE]` reports the wrong numbers. Those requests are `short`.
    """
    error, detail = raw.error, raw.detail
    times: list[float] = []
    usage: dict[str, Any] | None = None
    timings: dict[str, float] | None = None
    done = False
    finish: str | None = None
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
            finish = _finish_reason(ev) or finish
            u = ev.get("usage")
            if isinstance(u, dict) and u.get("completion_tokens") is not None:
                usage = u
            tm = ev.get("timings")
            if isinstance(tm, dict):
                timings = {k: float(tm[k]) for k in TIMING_KEYS
                           if isinstance(tm.get(k), (int, float)) and not isinstance(tm.get(k), bool)}
    elif raw.status and error is None:
        s = raw.status
        error = "http_4xx" if 400 <= s < 500 else "http_5xx" if 500 <= s < 600 else "http_other"
        body = b"".join(c for _, c in raw.chunks)[:200].decode("utf-8", "replace")
        detail = f"HTTP {s}: {body}"
    if error == "stream_cut" and done and raw.error == "stream_cut":
        error, detail = None, ""  # a body delimited by closing the connection, after [DONE]
    if error is None and not (done or finish):
        error = "stream_cut"
        detail = "the stream ended without [DONE] or a finish_reason"
    if error in ("timeout", "no_first_token"):
        error = "timeout" if times else "no_first_token"
    if error == "stream_cut" and raw.error is None and raw.complete:
        detail = "the response ended cleanly but without [DONE] or a finish_reason"
    counted = len(times)
    out_tokens = int(usage["completion_tokens"]) if usage else counted
    if error is None and finish is None:
        error, detail = "short", f"[DONE] after {plural(out_tokens, 'token')} without any finish_reason"
    elif error is None and raw.min_tokens and out_tokens < raw.min_tokens:
        error, detail = "short", (f"finish_reason {finish!r} after {out_tokens} of the {raw.min_tokens} "
                                  "tokens the request demanded (ignore_eos/min_tokens)")
    in_tokens = usage.get("prompt_tokens") if usage else None
    source = "server" if in_tokens is not None else ("client" if raw.prompt_tokens is not None else None)
    if in_tokens is None:
        in_tokens = raw.prompt_tokens
    cached = _cached(usage) if usage else None
    if cached is None and timings and "cache_n" in timings:
        cached = int(timings["cache_n"])
    ttft = times[0] - raw.start if times else None
    itls = [b - a for a, b in zip(times, times[1:])]
    return Result(index=raw.index, ok=error is None, error=error, detail=detail, start=raw.start, end=raw.end,
                  ttft=ttft, itls=itls, e2e=raw.end - raw.start,
                  output_tokens=out_tokens if error in (None, "short") else counted,
                  input_tokens=int(in_tokens) if in_tokens is not None else None,
                  counted_tokens=counted, usage=usage is not None, text="".join(text),
                  finish_reason=finish, max_tokens=raw.max_tokens, input_source=source, cached_tokens=cached,
                  timings=timings)


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
    # Unknown input lengths stay unknown (None), never 0: a server that sends no usage did not
    # process zero prompt tokens. Prompts optlog built are counted client-side instead.
    known_in = all(r.input_tokens is not None for r in ok)
    tin = sum(r.input_tokens or 0 for r in ok) if known_in else None
    tout = sum(r.output_tokens for r in ok)
    m: dict[str, Any] = {
        "completed": len(ok),
        "failed": len(failed),
        "short": sum(1 for r in results if r.error == "short"),
        "duration": duration,
        "duration_s": duration,
        "total_input_tokens": tin,
        "total_output_tokens": tout,
        "request_throughput": len(ok) / dur,
        "input_throughput": tin / dur if tin is not None else None,
        "output_throughput": tout / dur,
        "total_token_throughput": (tin + tout) / dur if tin is not None else None,
        "max_concurrency": max_concurrency,
        "input_tokens_client_counted": sum(1 for r in ok if r.input_source == "client"),
        "client_counted_output_tokens": sum(r.counted_tokens for r in results),
    }
    m["total_throughput"] = m["total_token_throughput"]
    # per-request output lengths against what was asked (every answered request, short ones too)
    answered = sorted(r.output_tokens for r in results if r.ok or r.error == "short")
    asked = sorted(r.max_tokens for r in results if r.max_tokens)
    m["min_output_tokens"] = answered[0] if answered else None
    m["median_output_tokens"] = percentile([float(x) for x in answered], 50) if answered else None
    m["max_output_tokens"] = answered[-1] if answered else None
    m["requested_output_tokens"] = percentile([float(x) for x in asked], 50) if asked else None
    cached = [r.cached_tokens for r in results if r.cached_tokens is not None]
    m["cached_prompt_tokens"] = sum(cached) if cached else None
    prompt_known = sum(r.input_tokens or 0 for r in results if r.cached_tokens is not None)
    m["cached_prompt_fraction"] = (sum(cached) / prompt_known) if cached and prompt_known else None
    # the server's own per-response timings (llama.cpp), over completed requests
    tms = [r.timings for r in ok if r.timings]
    pn = sum(t.get("predicted_n", 0.0) for t in tms)
    m["server_predicted_tokens"] = pn if tms else None
    m["server_mean_tpot_ms"] = (sum(t.get("predicted_ms", 0.0) for t in tms) / pn) if pn else None
    pms = sorted(t["prompt_ms"] for t in tms if "prompt_ms" in t)
    m["server_median_prompt_ms"] = percentile(pms, 50) if pms else None
    _dist("ttft", [r.ttft for r in ok if r.ttft is not None], m)
    _dist("tpot", [t for r in ok if (t := r.tpot) is not None], m)
    _dist("itl", [x for r in ok for x in r.itls], m)
    _dist("e2e_latency", [r.e2e for r in ok], m)
    # measured mean in flight: SGLang's `concurrency` (sum of E2E / duration), over all requests
    m["mean_inflight"] = sum(max(0.0, r.e2e) for r in results) / dur
    m["concurrency"] = m["mean_inflight"]
    m["max_concurrent_requests"] = peak_inflight(results)
    m.update(phase_metrics(ok))
    return m


def phase_metrics(ok: list[Result]) -> dict[str, float]:
    """Each phase's wall time and how many requests were in it at once (issue 43: prefill and decode
    diagnosed apart): `prefill_window_s` / `decode_window_s`, the union of the requests' prefill
    (send → first token) and decode (first token → end) stretches, and `mean_prefilling` /
    `mean_decoding`, the sum of those stretches over the union (1.0 at concurrency 1)."""
    out: dict[str, float] = {}
    for name, mean, spans in (("prefill", "mean_prefilling", [(r.start, r.start + r.ttft) for r in ok if r.ttft is not None]),
                              ("decode", "mean_decoding", [(r.start + r.ttft, r.end) for r in ok if r.ttft is not None])):
        joined = join_windows(spans, max_n=1 << 30)
        union = sum(b - a for a, b in joined)
        if union > 0:
            out[f"{name}_window_s"] = union
            out[mean] = sum(max(0.0, b - a) for a, b in spans) / union
    return out


def windows(results: list[Result], wall_offset: float, max_n: int = 64) -> dict[str, Any]:
    """The level's measured phase on the wall clock (`perf_counter + wall_offset`): `measured` from the
    first request sent to the last response's end, `decode` each answered request's stretch from its
    first token to its end, overlapping ones joined and the closest joined until at most `max_n`
    remain. Telemetry summarises its counters over these (prefill, gaps and start-up left out)."""
    sent = [r for r in results if r.start]
    if not sent:
        return {}
    out: dict[str, Any] = {"measured": [round(min(r.start for r in sent) + wall_offset, 4),
                                        round(max(r.end for r in sent) + wall_offset, 4)]}
    dec = [(r.start + r.ttft, r.end) for r in sent if r.ok and r.ttft is not None]
    joined = join_windows(dec, max_n=max_n)
    if joined:
        out["decode"] = [[round(a + wall_offset, 4), round(b + wall_offset, 4)] for a, b in joined]
    # each request's prefill: from its send to its first token (issue 43: the phases diagnosed apart)
    pre = join_windows([(r.start, r.start + r.ttft) for r in sent if r.ok and r.ttft is not None], max_n=4 * max_n)
    if pre:
        out["prefill"] = [[round(a + wall_offset, 4), round(b + wall_offset, 4)] for a, b in pre]
    return out


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
    ins = [r.input_tokens for r in ok if r.input_tokens is not None and r.input_source == "server"]
    if input_len and ins:
        mean = sum(ins) / len(ins)
        if abs(mean - input_len) > 0.1 * input_len:
            out.append(f"input length: the server counted {fmt_whole(mean)} prompt tokens on average, "
                       f"--input-len asked for {input_len} ({fmt_share(mean / input_len - 1, signed=True)})")
    outs = [r.output_tokens for r in ok if r.usage]
    if output_len and outs:
        mean = sum(outs) / len(outs)
        if abs(mean - output_len) > 0.1 * output_len:
            out.append(f"output length: the server generated {fmt_whole(mean)} tokens on average, "
                       f"--output-len asked for {output_len} ({fmt_share(mean / output_len - 1, signed=True)}); "
                       "try --ignore-eos if the server supports it")
    if ok and not any(r.usage for r in ok):
        how = ("counted client-side from the prompts optlog built" if all(r.input_source == "client" for r in ok)
               else "unknown (not reported as 0)")
        out.append("the server sent no usage block: output tokens are counted from the stream "
                   f"(one per content event); input tokens are {how}")
    return out


CACHE_FLAG_FRACTION = 0.10
AGREEMENT_WARN = 0.02


def cache_warning(metrics: dict[str, Any]) -> str | None:
    """A level whose prompts were largely served from the server's prompt cache measures the cache."""
    f = metrics.get("cached_prompt_fraction")
    if f is not None and f > CACHE_FLAG_FRACTION:
        return (f"prompt cache: {fmt_share(f)} of the prompt tokens were served from the server's cache "
                "(its TTFT measures the cache, not prefill); fresh prompts are the default, --reuse-prompts opts out")
    return None


def short_warning(results: list[Result]) -> str | None:
    short = [r for r in results if r.error == "short"]
    if not short:
        return None
    return (f"{plural(len(short), 'short stream')} counted as failed, excluded from the latency percentiles "
            f"(e.g. {short[0].detail})")


def agreement(client_tokens: float, server_tokens: float | None) -> float | None:
    """Client-counted output tokens over the server's own counter delta (1.0: they agree)."""
    if server_tokens is None or server_tokens <= 0:
        return None
    return client_tokens / server_tokens


def agreement_warning(ratio: float | None, counter: str) -> str | None:
    if ratio is None or abs(ratio - 1.0) <= AGREEMENT_WARN + 1e-12:  # exactly 2 % apart is within
        return None
    return (f"output tokens: the client counted {fmt_share(ratio, places=1)} of what the server's {counter} says it "
            f"generated (more than {fmt_share(AGREEMENT_WARN)} apart)")
