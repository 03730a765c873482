"""Ray llmperf (`token_benchmark_ray.py --results-dir`): `*_summary.json` (one run) and
`*_individual_responses.json` (the per-request records; one run computed from them).

Summary: times are in seconds (`results_ttft_s_*`) and become ms. Canonical metrics: `completed` ←
results_num_completed_requests, `failed` ← results_number_errors, `request_throughput` ←
results_num_completed_requests_per_min / 60, `output_throughput` ←
results_mean_output_throughput_token_per_s, `{mean,median,p90,p95,p99}_ttft_ms` ←
results_ttft_s_{mean,quantiles_p50,…}, `…_e2e_latency_ms` ← results_end_to_end_latency_s_*.
`{mean,median,p90,p95,p99}_ntpot_ms` ← results_inter_token_latency_s_*: despite its name not an
inter-token latency. llmperf (token_benchmark_ray.py, openai_chat_completions_client.py) sums, per
request, the TTFT and every later gap between content chunks (so the time to the last chunk) and
divides by the output tokens: a request's latency per output token, TTFT included — NTPOT
(normalized time per output token), neither ITL (the gaps alone) nor TPOT (after the first token).
Every numeric `results_*` key is kept as raw too. Labels: `model`, `concurrency` ← num_concurrent_requests, `input_len` /
`output_len` ← mean_input_tokens / mean_output_tokens, `tool_version` ← version, and every other
setting the file carries (the leaderboard's `framework`, `api`, `model_size`).

Per-request file (a JSON array of `{error_code, error_msg, ttft_s, end_to_end_latency_s,
inter_token_latency_s, number_input_tokens, number_output_tokens, …}`): `completed` = requests
without an error, `failed` = the others; the TTFT, NTPOT (llmperf's `inter_token_latency_s`, as above) and end-to-end
statistics (mean, median, p90, p95, p99, linear interpolation as llmperf's pandas quantiles) of the
completed ones. It has no
duration, so no throughput.
"""

from __future__ import annotations

import math
from typing import Any

from optlog.core.labels import setting_name
from optlog.runs.parsers._common import Doc, ParsedResult, clean, fail, finite, load_json, metric_key, put, set_label
from optlog.runs.parsers.keymap import apply_key_map

TOOL = "llmperf"
_STATS = {"mean": "mean", "median": "quantiles_p50", "p90": "quantiles_p90", "p95": "quantiles_p95",
          "p99": "quantiles_p99"}
OWN = {"version", "name", "model", "mean_input_tokens", "stddev_input_tokens", "mean_output_tokens",
       "stddev_output_tokens", "num_concurrent_requests", "timestamp", "additional_sampling_params", "llm_api"}


def is_summary(o: Any) -> bool:
    return isinstance(o, dict) and "results_ttft_s_mean" in o or isinstance(o, dict) and "results_num_completed_requests" in o


def is_individual(o: Any) -> bool:
    return isinstance(o, list) and bool(o) and isinstance(o[0], dict) and "ttft_s" in o[0] and "end_to_end_latency_s" in o[0]


def parse(doc: Doc) -> list[ParsedResult]:
    d = load_json(doc, TOOL)
    if is_individual(d):
        return [_individual(doc, d)]
    if not is_summary(d):
        raise fail(TOOL, doc.path, "no results_ttft_s_mean or results_num_completed_requests key, and not a list of "
                   "per-request records (is this llmperf's *_summary.json or *_individual_responses.json?)",
                   field_="results_ttft_s_mean")
    metrics: dict[str, float] = {}
    put(metrics, "completed", d.get("results_num_completed_requests"))
    put(metrics, "failed", d.get("results_number_errors"))
    rpm = finite(d.get("results_num_completed_requests_per_min"))
    if rpm is not None:
        metrics["request_throughput"] = rpm / 60.0
    put(metrics, "output_throughput", d.get("results_mean_output_throughput_token_per_s"))
    for short, base in (("ttft", "results_ttft_s_"), ("ntpot", "results_inter_token_latency_s_"),
                        ("e2e_latency", "results_end_to_end_latency_s_")):
        for st, key in _STATS.items():
            v = finite(d.get(base + key))
            if v is not None:
                metrics[f"{st}_{short}_ms"] = v * 1000.0
    for k, v in d.items():
        f = finite(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None
        if f is not None and k.startswith("results_"):
            metrics["raw." + metric_key(k)] = f
    labels: dict[str, Any] = {}
    set_label(labels, "model", d.get("model"))
    set_label(labels, "concurrency", d.get("num_concurrent_requests"))
    set_label(labels, "input_len", d.get("mean_input_tokens"))
    set_label(labels, "output_len", d.get("mean_output_tokens"))
    set_label(labels, "tool_version", d.get("version"))
    for k, v in d.items():  # what the tool did not write itself: the user's settings
        if k in OWN or k.startswith("results_") or isinstance(v, (dict, list)):
            continue
        name = setting_name(k)
        if name and name not in labels:
            set_label(labels, name, v)
    labels["tool"] = TOOL
    apply_key_map(doc, TOOL, d, metrics, labels)
    rest = {k: v for k, v in d.items() if not k.startswith("results_") or not isinstance(v, (int, float))}
    return [ParsedResult(labels=labels, metrics=metrics, raw=clean(rest), tool=TOOL, source=doc.path,
                         file=doc.path, index=0)]


def quantile(xs: list[float], q: float) -> float:
    """Linear interpolation between closest ranks (pandas/numpy default)."""
    s = sorted(xs)
    pos = (len(s) - 1) * q
    lo, hi = math.floor(pos), math.ceil(pos)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def _individual(doc: Doc, rows: list[Any]) -> ParsedResult:
    ok = [r for r in rows if isinstance(r, dict) and not r.get("error_code") and not r.get("error_msg")]
    metrics: dict[str, float] = {"completed": float(len(ok)), "failed": float(len(rows) - len(ok))}
    for short, key in (("ttft", "ttft_s"), ("ntpot", "inter_token_latency_s"), ("e2e_latency", "end_to_end_latency_s")):
        xs = [f * 1000.0 for r in ok if (f := finite(r.get(key))) is not None]
        if xs:
            metrics[f"mean_{short}_ms"] = sum(xs) / len(xs)
            for st, q in (("median", 0.5), ("p90", 0.9), ("p95", 0.95), ("p99", 0.99)):
                metrics[f"{st}_{short}_ms"] = quantile(xs, q)
    labels: dict[str, Any] = {"tool": TOOL}
    ins = [f for r in ok if (f := finite(r.get("number_input_tokens"))) is not None]
    if ins:
        metrics["raw.mean_input_tokens"] = sum(ins) / len(ins)
    outs = [f for r in ok if (f := finite(r.get("number_output_tokens"))) is not None]
    if outs:
        metrics["raw.mean_output_tokens"] = sum(outs) / len(outs)
    apply_key_map(doc, TOOL, {}, metrics, labels)
    return ParsedResult(labels=labels, metrics=metrics, raw={"requests": len(rows)}, tool=TOOL, source=doc.path,
                        file=doc.path, index=0)
