"""vLLM `vllm bench serve --save-result` (also `benchmarks/benchmark_serving.py`): one run per object.

`--save-result` writes one JSON object; `--append-result` appends objects one per line (JSONL); both
are read. `request_rate` is the string "inf" when unlimited. Old versions (~0.6–0.10) wrote the typo
key `request_goodput:` (kept as metric `raw.request_goodput`, like the current `request_goodput`).

Canonical metrics: `completed`, `failed`, `request_throughput`, `output_throughput`,
`total_token_throughput` (computed from token totals / duration when absent) as they are;
`duration` → `duration_s`; `total_input_tokens / duration` → `input_throughput`;
`{mean,median,p90,p95,p99}_{ttft,tpot,itl}_ms` as they are, and vLLM's `e2el` →
`e2e_latency` (`mean_e2el_ms` → `mean_e2e_latency_ms`, …). `mean_inflight` is computed as
sum(latencies) / duration when the file carries the per-request `latencies` (SGLang's definition of
its measured `concurrency`).

The tool's own keys: every other numeric key is kept as metric `raw.<key>` (`raw.p99.9_ttft_ms`,
`raw.std_ttft_ms`, `raw.max_concurrent_requests`, `raw.duration`, …); non-numeric fields (date,
backend, model_id, `--metadata` values …) go to `raw`; per-request arrays of more than 64 items are
dropped from `raw`.

Labels: `model` ← `model_id`, `concurrency` ← `max_concurrency`, `request_rate` (`inf`),
`num_prompts`, `backend` (← `backend` or `endpoint_type`), `label` (vLLM's `--label`),
`burstiness`, and `input_len`/`output_len`/`dataset` when `--metadata` set them.
"""

from __future__ import annotations

import re
from typing import Any

from optlog.runs.parsers._common import (
    Doc,
    ParsedResult,
    clean,
    fail,
    finite,
    jsonl_objects,
    put,
    set_label,
)
from optlog.runs.parsers.keymap import apply_key_map
from optlog.runs.parsers.sglang import serving_metrics

TOOL = "vllm"
_E2EL = re.compile(r"^(mean|median|std|p[0-9.]+)_e2el_ms$")


def parse(doc: Doc) -> list[ParsedResult]:
    out: list[ParsedResult] = []
    for i, (line, o) in enumerate(jsonl_objects(doc, TOOL)):
        if not any(k in o for k in ("output_throughput", "completed")):
            raise fail(TOOL, doc.path, "no output_throughput or completed key", line=line, field_="output_throughput")
        if "duration" not in o:
            raise fail(TOOL, doc.path, "no duration key", line=line, field_="duration")
        metrics, rest = serving_metrics(o, renames={"duration": "duration_s"})
        for k, v in o.items():
            m = _E2EL.match(k)
            if m:
                put(metrics, f"{m.group(1)}_e2e_latency_ms", v)
        dur = finite(o.get("duration"))
        tin = finite(o.get("total_input_tokens"))
        if "input_throughput" not in metrics and tin is not None and dur:
            metrics["input_throughput"] = tin / dur
        lat = o.get("latencies")
        if isinstance(lat, list) and lat and dur and all(finite(x) is not None for x in lat):
            metrics["mean_inflight"] = sum(float(x) for x in lat) / dur
        labels = _labels(o)
        labels["tool"] = TOOL
        apply_key_map(doc, TOOL, o, metrics, labels, line)
        out.append(ParsedResult(labels=labels, metrics=metrics, raw=clean(rest), tool=TOOL,
                                source=f"{doc.path}:{line}", file=doc.path, index=i))
    return out


def _labels(o: dict[str, Any]) -> dict[str, Any]:
    labels: dict[str, Any] = {}
    set_label(labels, "model", o.get("model_id"))
    set_label(labels, "concurrency", o.get("max_concurrency"))
    set_label(labels, "request_rate", o.get("request_rate"))
    set_label(labels, "num_prompts", o.get("num_prompts"))
    set_label(labels, "backend", o.get("backend") or o.get("endpoint_type"))
    set_label(labels, "label", o.get("label"))
    b = finite(o.get("burstiness"))
    if b is not None and b != 1.0:
        set_label(labels, "burstiness", b)
    for k in ("input_len", "output_len", "dataset", "dataset_name"):
        if o.get(k) is not None:
            set_label(labels, "dataset" if k == "dataset_name" else k, o.get(k))
    return labels
