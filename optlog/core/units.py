"""The unit of a metric or label, from its name: the one place a report, a plot axis or the dashboard
looks it up (`median_ttft_ms` → ms, `output_throughput` → tok/s, `gpu_power_w` → W).

Why from the name: optlog's metrics come from many tools (its own load generator, SGLang, vLLM,
llama.cpp, telemetry) with no unit field; their names follow a handful of habits (a `_ms` suffix, a
`throughput` in tokens per second). A name that follows none has no unit (None): an axis then shows
the bare name rather than a guessed unit. Pure.
"""

from __future__ import annotations

# exact names first (their suffixes would mislead), then suffixes, longest first
_EXACT = {
    "request_throughput": "req/s",
    "goodput": "req/s",  # requests per second that met the run's limits (the `slo_*` labels)
    "good_requests": "requests",
    "mean_inflight": "requests",
    "concurrency": "requests in flight",
    "input_len": "tokens",
    "output_len": "tokens",
    "random_input_len": "tokens",
    "random_output_len": "tokens",
    "prompt_len": "tokens",
    "context": "tokens",
    "num_prompts": "prompts",
    # model facts (core.modelfacts): what a launch's console line and a diagnosis name
    "active_params": "parameters",
    "total_params": "parameters",
    "expert_params": "parameters",
    "param_bytes": "bytes/parameter",
    "weight_bytes": "bytes",
    "kv_bytes_per_token": "bytes/token",
    "n_expert": "experts",
    "n_expert_used": "experts",
}
_SUFFIX = (
    ("_throughput", "tok/s"), ("_tok_s", "tok/s"), ("tokens_per_joule", "tok/J"), ("_ms", "ms"), ("_us", "µs"),
    ("_s", "s"), ("_w", "W"), ("_j", "J"), ("_gbps", "GB/s"), ("_tflops", "TFLOPS"), ("tflops", "TFLOPS"),
    ("_gib", "GiB"), ("_mhz", "MHz"), ("_c", "°C"), ("_pct", "%"), ("_frac", "fraction"), ("_tokens", "tokens"),
)
_STATS = ("_mean", "_max", "_min", "_p50", "_p90", "_p95", "_p99", "_std", "_median", "_count")


def unit(name: str | None) -> str | None:
    """The unit `name` is measured in, or None when its name does not say."""
    if not name:
        return None
    n = name.lower().removeprefix("raw.")
    if n in _EXACT:
        return _EXACT[n]
    for st in _STATS:  # `gpu_power_w_mean` is in W, `srv_ttft_ms_p99` in ms
        if n.endswith(st) and len(n) > len(st):
            if st == "_count":
                return None
            n = n[: -len(st)]
            break
    if n in _EXACT:
        return _EXACT[n]
    for suf, u in _SUFFIX:
        if n.endswith(suf):
            return u
    return None


def with_unit(name: str, u: str | None = None) -> str:
    """`median_ttft_ms (ms)`: an axis title or a table header; the bare name when it has no unit."""
    u = u if u is not None else unit(name)
    return f"{name} ({u})" if u else name


HIGHER_IS_BETTER = ("throughput", "tok_s", "tokens_per_s", "tflops", "qps", "rps", "goodput", "good_request", "bw",
                    "gbps")


def higher_is_better(metric: str | None) -> bool:
    """Whether more of `metric` is better (tokens/s, TFLOPS), from its name; a time (`_ms`, `_s`) never is."""
    m = (metric or "").lower()
    return any(w in m for w in HIGHER_IS_BETTER) and not m.endswith("_ms") and not m.endswith("_s")


_BOUNDED = ("_share", "_frac", "_fraction", "_prob", "_probability")
"""Name endings of quantities that are a part of a whole: a share, a fraction, a probability."""


def bounds(name: str | None) -> tuple[float, float] | None:
    """The range a metric named `name` can take when its name says (issue 45): a share, fraction or
    probability (`cpu_share`, `gpu_power_frac_mean`, `accept_probability`) lies in [0, 1]. None when
    the name does not say (a percentage may be summed over CPUs: `cpu_busy_pct` reaches 200)."""
    if not name:
        return None
    n = name.lower().removeprefix("raw.")
    for st in _STATS:
        if n.endswith(st) and len(n) > len(st):
            if st in ("_count", "_std"):
                return None
            n = n[: -len(st)]
            break
    if n in ("share", "fraction", "probability") or n.endswith(_BOUNDED):
        return (0.0, 1.0)
    return None
