"""Scrape a server's Prometheus `/metrics` (SGLang `sglang:*` with --enable-metrics, vLLM `vllm:*`,
llama.cpp `llamacpp:*` with --metrics) and turn a point's scrapes into metrics of the point.

llama.cpp exports counters and gauges only (no histograms): its per-request latencies come from the
client or from the `timings` of each response (`optlog.loadgen.core`).

- counters: delta between the point's first and last scrape (`srv_<name>_delta`), summed over label sets;
- histograms: percentiles from the bucket deltas (linear inside a bucket, as Prometheus'
  histogram_quantile does): `srv_ttft_ms_p50/p90/p99`, `srv_itl_ms_*`, `srv_queue_ms_*`, `srv_e2e_ms_*`
  and the mean from _sum/_count deltas;
- gauges: mean and max over every scrape during the point (`srv_running_mean`, `srv_queued_max`,
  `srv_kv_usage_mean`, …).
Names are normalised (prefix stripped, `:`→`_`); the well-known SGLang/vLLM ones get short aliases.
"""

from __future__ import annotations

import math
import time
import urllib.request
from typing import Any

# (family name without prefix) -> short alias
HIST_ALIASES = {
    "time_to_first_token_seconds": "ttft",
    "inter_token_latency_seconds": "itl",
    "time_per_output_token_seconds": "tpot",
    "request_queue_time_seconds": "queue",
    "queue_time_seconds": "queue",
    "e2e_request_latency_seconds": "e2e",
}
GAUGE_ALIASES = {
    "num_running_reqs": "running",
    "num_requests_running": "running",
    "num_queue_reqs": "queued",
    "num_requests_waiting": "queued",
    "token_usage": "kv_usage",
    "gpu_cache_usage_perc": "kv_usage",
    "kv_cache_usage_perc": "kv_usage",
    "gen_throughput": "gen_throughput",
    "requests_processing": "running",       # llama.cpp
    "requests_deferred": "queued",          # llama.cpp
}
PREFIXES = ("sglang:", "vllm:", "llamacpp:", "sglang_", "vllm_")
# The counters (names without prefix or _total) that count a server's own tokens, per role: the
# load generator checks its client-side counts against their deltas (`token_deltas`).
OUTPUT_COUNTERS = ("tokens_predicted", "generation_tokens")      # llama.cpp; vLLM and SGLang
PROMPT_COUNTERS = ("prompt_tokens",)
CACHED_COUNTERS = ("prompt_tokens_cached", "prefix_cache_hits", "cached_tokens")  # llama.cpp; vLLM; SGLang
QUANTILES = (0.5, 0.9, 0.99)


def _strip(name: str) -> str:
    for p in PREFIXES:
        if name.startswith(p):
            return name[len(p):]
    return name


def parse(text: str) -> dict[str, Any]:
    """Prometheus text → {"counters": {name: total}, "gauges": {name: value},
    "hists": {name: {"buckets": {le: cumulative}, "sum": s, "count": c}}} (label sets summed;
    only sglang:/vllm:/llamacpp: families, or every family when none of those is present)."""
    from prometheus_client.parser import text_string_to_metric_families  # deferred: only when a /metrics endpoint is scraped

    fams = list(text_string_to_metric_families(text))
    ours = [f for f in fams if f.name.startswith(PREFIXES)]
    if ours:
        fams = ours
    out: dict[str, Any] = {"counters": {}, "gauges": {}, "hists": {}}
    for f in fams:
        name = _strip(f.name).replace(":", "_")
        if f.type == "counter":
            tot = sum(s.value for s in f.samples if s.name.endswith("_total") or s.name == f.name)
            out["counters"][name] = out["counters"].get(name, 0.0) + tot
        elif f.type == "gauge":
            out["gauges"][name] = out["gauges"].get(name, 0.0) + sum(s.value for s in f.samples)
        elif f.type == "histogram":
            h = out["hists"].setdefault(name, {"buckets": {}, "sum": 0.0, "count": 0.0})
            for s in f.samples:
                if s.name.endswith("_bucket"):
                    le = float(s.labels.get("le", "inf").replace("+Inf", "inf"))
                    h["buckets"][le] = h["buckets"].get(le, 0.0) + s.value
                elif s.name.endswith("_sum"):
                    h["sum"] += s.value
                elif s.name.endswith("_count"):
                    h["count"] += s.value
    return out


def quantile(q: float, buckets: dict[float, float]) -> float | None:
    """histogram_quantile over cumulative bucket counts {le: count}."""
    les = sorted(buckets)
    if not les:
        return None
    total = buckets[les[-1]]
    if total <= 0:
        return None
    rank = q * total
    prev_le, prev_c = 0.0, 0.0
    for le in les:
        c = buckets[le]
        if c >= rank:
            if math.isinf(le):
                return prev_le  # the highest finite bound, like Prometheus
            if c == prev_c:
                return le
            return prev_le + (le - prev_le) * (rank - prev_c) / (c - prev_c)
        prev_le, prev_c = le, c
    return les[-1]


def point_metrics(scrapes: list[dict[str, Any]]) -> dict[str, float]:
    """Metrics of one point from its scrapes (parsed, in time order; at least the first and last)."""
    out: dict[str, float] = {}
    if len(scrapes) < 1:
        return out
    a, b = scrapes[0], scrapes[-1]
    for name, v in b["counters"].items():
        if name in a["counters"]:
            out[f"srv_{name}_delta"] = max(0.0, v - a["counters"][name])
    for name, hb in b["hists"].items():
        ha = a["hists"].get(name, {"buckets": {}, "sum": 0.0, "count": 0.0})
        d = {le: c - ha["buckets"].get(le, 0.0) for le, c in hb["buckets"].items()}
        cnt = hb["count"] - ha["count"]
        alias = HIST_ALIASES.get(name, name)
        seconds = name.endswith("_seconds")
        scale = 1000.0 if seconds else 1.0
        stem = f"srv_{alias}_ms" if seconds else f"srv_{alias}"
        if cnt > 0:
            out[f"{stem}_mean"] = (hb["sum"] - ha["sum"]) / cnt * scale
            out[f"{stem}_count"] = cnt
            for q in QUANTILES:
                v = quantile(q, d)
                if v is not None:
                    out[f"{stem}_p{int(q * 100)}"] = v * scale
    gauges: dict[str, list[float]] = {}
    for s in scrapes:
        for name, v in s["gauges"].items():
            gauges.setdefault(name, []).append(v)
    for name, vs in gauges.items():
        alias = GAUGE_ALIASES.get(name, name)
        out[f"srv_{alias}_mean"] = sum(vs) / len(vs)
        out[f"srv_{alias}_max"] = max(vs)
    return out


def scrape(url: str, timeout: float = 2.0) -> dict[str, Any]:
    with urllib.request.urlopen(url, timeout=timeout) as r:  # noqa: S310 - a URL the user configured
        text = r.read().decode("utf-8", "replace")
    d = parse(text)
    d["t"] = time.time()
    return d


def token_deltas(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """The server's own token counts between two parsed scrapes: {"output_tokens", "output_counter",
    "prompt_tokens", "cached_prompt_tokens"} — each only where the server exports such a counter."""
    out: dict[str, Any] = {}
    ca, cb = a.get("counters", {}), b.get("counters", {})
    for role, names in (("output_tokens", OUTPUT_COUNTERS), ("prompt_tokens", PROMPT_COUNTERS),
                        ("cached_prompt_tokens", CACHED_COUNTERS)):
        for n in names:
            if n in ca and n in cb:
                out[role] = max(0.0, cb[n] - ca[n])
                if role == "output_tokens":
                    out["output_counter"] = n
                break
    return out
