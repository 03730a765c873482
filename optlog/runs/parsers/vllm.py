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
`burstiness`; and every key vLLM does not write itself: `--metadata K=V` keys (text, so
`framework=sgl` and `framework=vllm` runs stay apart) and, in a `vllm bench sweep` record (it has
`run_number`), the sweep's serve and bench parameters (`max_num_seqs`, …) and `repeat` ←
`run_number`, named through the one label vocabulary (`core.labels.setting_name`: `random_input_len`
→ `input_len`, `tensor_parallel_size` → `tp`, …).

Counts: `failed` as written; where an older file lacks it, `num_prompts − completed` (every prompt is
sent). A result with 0 completed is a failed run without latency or throughput (see `_common.settle`).
A file with latency statistics only (no throughput or counts) is read.

`vllm bench sweep`: `run=N.json` files are rewritten by the sweep with its parameters;
`summary.json` is a JSON array of the same records, so importing a sweep folder finds each
measurement twice: `unique` keeps one.
"""

from __future__ import annotations

import re
from typing import Any

from optlog.core.labels import setting_name
from optlog.core.numfmt import fmt_count
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
# The keys vLLM writes itself (settings, counts, per-request arrays): everything else in a result
# object was put there by the user (`--metadata`) or by `vllm bench sweep` (its parameters).
OWN = {"date", "backend", "endpoint_type", "label", "model_id", "tokenizer_id", "num_prompts", "request_rate",
       "burstiness", "max_concurrency", "ramp_up_strategy", "ramp_up_start_rps", "ramp_up_end_rps", "best_of",
       "use_beam_search", "input_lens", "output_lens", "ttfts", "itls", "generated_texts", "errors", "start_times",
       "latencies", "rps_change_events", "spec_decode", "diffusion", "probe", "percentile_metrics",
       "metric_percentiles", "request_goodput:"}
_OWN_METRIC = re.compile(r"^((mean|median|std|min|max|p[0-9.]+)_\w+_ms|duration|completed|failed|rtfx|total_input_tokens|"
                         r"total_output_tokens|request_throughput|request_goodput|output_throughput|"
                         r"total_token_throughput|max_output_tokens_per_s|max_concurrent_requests|"
                         r"input_sequence_throughput|spec_decode_\w+|probe_\w+)$")
_HAS_FIGURE = re.compile(r"^(output_throughput|completed|request_throughput|(mean|median|p\d+)_(ttft|tpot|itl|e2el)_ms)$")


def parse(doc: Doc) -> list[ParsedResult]:
    out: list[ParsedResult] = []
    for i, (line, o) in enumerate(jsonl_objects(doc, TOOL)):
        if not any(_HAS_FIGURE.match(k) for k in o):
            raise fail(TOOL, doc.path, "no output_throughput, completed or TTFT/TPOT/ITL/E2EL statistics key",
                       line=line, field_="output_throughput")
        sweep = "run_number" in o
        own = {k: v for k, v in o.items() if k in OWN or
               (k != "run_number" and isinstance(v, (int, float)) and not isinstance(v, bool) and (not sweep or _OWN_METRIC.search(k)))
               or isinstance(v, (dict, list)) or v is None}
        metrics, rest = serving_metrics(own, renames={"duration": "duration_s"})
        for k, v in own.items():
            m = _E2EL.match(k)
            if m:
                put(metrics, f"{m.group(1)}_e2e_latency_ms", v)
        notes: list[str] = []
        dur = finite(o.get("duration"))
        tin = finite(o.get("total_input_tokens"))
        if "input_throughput" not in metrics and tin is not None and dur:
            metrics["input_throughput"] = tin / dur
        lat = o.get("latencies")
        if isinstance(lat, list) and lat and dur and all(finite(x) is not None for x in lat):
            metrics["mean_inflight"] = sum(float(x) for x in lat) / dur
        sent, done = finite(o.get("num_prompts")), finite(o.get("completed"))
        if "failed" not in o and sent is not None and done is not None and sent >= done:
            metrics["failed"] = sent - done
            if sent > done:
                notes.append(f"failed = num_prompts − completed = {fmt_count(sent)} − {fmt_count(done)} "
                             "(the file has no failed key)")
        labels = _labels(o)
        for k, v in o.items():
            if k in own:
                continue
            name = setting_name(k)
            if name and name not in labels:
                set_label(labels, name, v)
                rest.pop(k, None)
        labels["tool"] = TOOL
        apply_key_map(doc, TOOL, o, metrics, labels, line)
        out.append(ParsedResult(labels=labels, metrics=metrics, raw=clean(rest), tool=TOOL,
                                source=f"{doc.path}:{line}", file=doc.path, index=i, notes=notes))
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
    return labels
