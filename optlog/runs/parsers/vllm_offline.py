"""vLLM's offline benchmarks: `vllm bench throughput --output-json` and `vllm bench latency
--output-json` (also `benchmarks/benchmark_throughput.py` / `benchmark_latency.py`): one run per file.

throughput (`{elapsed_time, num_requests, total_num_tokens, requests_per_second,
tokens_per_second}`, newer also `total_output_tokens`): `duration_s` ← elapsed_time, `completed` ←
num_requests, `request_throughput` ← requests_per_second, `total_token_throughput` ←
tokens_per_second, `output_throughput` ← total_output_tokens / elapsed_time where given.
latency (`{avg_latency, latencies: [...], percentiles: {"10": …, "50": …, "90": …, "99": …}}`, in
seconds; one batch per iteration): `mean_e2e_latency_ms` ← avg_latency, `median_/p90_/p99_…` ←
percentiles; the iterations' count → `raw.iterations` (the latencies list is left out).
Neither file records its settings (batch size, lengths): give them with `--label`.
"""

from __future__ import annotations

from typing import Any

from optlog.runs.parsers._common import Doc, ParsedResult, clean, fail, finite, load_json, put
from optlog.runs.parsers.keymap import apply_key_map

THROUGHPUT = "vllm-throughput"
LATENCY = "vllm-latency"


def kind(o: Any) -> str | None:
    if not isinstance(o, dict):
        return None
    if "elapsed_time" in o and ("tokens_per_second" in o or "requests_per_second" in o):
        return THROUGHPUT
    if "avg_latency" in o and ("percentiles" in o or "latencies" in o):
        return LATENCY
    return None


def parse(doc: Doc, tool: str) -> list[ParsedResult]:
    d = load_json(doc, tool)
    if kind(d) != tool:
        want = "elapsed_time and tokens_per_second" if tool == THROUGHPUT else "avg_latency and percentiles"
        raise fail(tool, doc.path, f"no {want} keys (is this vllm bench {tool.split('-')[1]} --output-json?)",
                   field_="elapsed_time" if tool == THROUGHPUT else "avg_latency")
    metrics: dict[str, float] = {}
    if tool == THROUGHPUT:
        put(metrics, "duration_s", d.get("elapsed_time"))
        put(metrics, "completed", d.get("num_requests"))
        put(metrics, "request_throughput", d.get("requests_per_second"))
        put(metrics, "total_token_throughput", d.get("tokens_per_second"))
        out_tok, dur = finite(d.get("total_output_tokens")), finite(d.get("elapsed_time"))
        if out_tok is not None and dur:
            metrics["output_throughput"] = out_tok / dur
        for k in ("total_num_tokens", "total_output_tokens", "num_requests"):
            put(metrics, f"raw.{k}", d.get(k))
    else:
        avg = finite(d.get("avg_latency"))
        if avg is not None:
            metrics["mean_e2e_latency_ms"] = avg * 1000.0
        pct = d.get("percentiles") if isinstance(d.get("percentiles"), dict) else {}
        for st, key in (("median", "50"), ("p90", "90"), ("p95", "95"), ("p99", "99")):
            v = finite(pct.get(key))
            if v is not None:
                metrics[f"{st}_e2e_latency_ms"] = v * 1000.0
        lat = d.get("latencies")
        if isinstance(lat, list):
            metrics["raw.iterations"] = float(len(lat))
    labels: dict[str, Any] = {"tool": tool}
    apply_key_map(doc, tool, d, metrics, labels)
    rest = {k: v for k, v in d.items() if k != "latencies"}
    return [ParsedResult(labels=labels, metrics=metrics, raw=clean(rest), tool=tool, source=doc.path,
                         file=doc.path, index=0)]
