"""SGLang `bench_serving` (`python -m sglang.bench_serving --output-file X.jsonl`): one run per line.

The file is JSONL, appended one object per benchmark run. Both key sets are read:
- new (`sglang.benchmark.serving`): adds `total_throughput`, p90/p95 percentiles, `server_info`, `tag`;
- old (mid-2025 `bench_serving.py`): no `total_throughput` (computed here as
  (total_input_tokens + total_output_tokens) / duration, its definition), no p90/p95;
- the second writer (`benchmark/metrics.py::save_results`): `total_input`/`total_output`.
Bare `Infinity`/`NaN` tokens (the default `--request-rate inf`) are accepted.

Canonical metrics: keys already named canonically (`completed`, `request_throughput`,
`input_throughput`, `output_throughput`, `{mean,median,p90,p95,p99}_{ttft,tpot,itl,e2e_latency}_ms`)
are stored once under that name; `duration` → `duration_s`, `total_throughput` →
`total_token_throughput`, measured `concurrency` → `mean_inflight`.

The tool's own keys: every other numeric key (including the renamed ones: `duration`,
`total_throughput`, `concurrency`, `std_*`, token totals …) is kept as metric `raw.<key>`; the
non-numeric fields (backend, dataset, `server_info`, …) are kept in `raw`. Per-request arrays of
`--output-details` (more than 64 items) are dropped from `raw`.

Labels: `concurrency` ← `max_concurrency` (the configured cap; absent when unlimited),
`request_rate` (`inf`, or "trace"), `dataset` ← `dataset_name`, `input_len`/`output_len` ←
`random_input_len`/`random_output_len` for random datasets with their `random_range_ratio` (the
lengths are upper bounds unless it is 1; `output_len` ← `sharegpt_output_len` when set), `backend`, `tag`, and from `server_info` when present: `model` (model_path), `tp`, `pp`,
`ep`, `dp`, `sglang_version`.
"""

from __future__ import annotations

from typing import Any

from optlog.core import metrics as M
from optlog.runs.parsers._common import (
    Doc,
    ParsedResult,
    clean,
    fail,
    jsonl_objects,
    put,
    set_label,
    split_flat,
    total_token_throughput,
)
from optlog.runs.parsers.keymap import apply_key_map

RENAMES = {"duration": "duration_s", "total_throughput": "total_token_throughput", "concurrency": "mean_inflight"}
REQUIRED_ANY = ("output_throughput", "completed")


def serving_metrics(o: dict[str, Any], renames: dict[str, str] = RENAMES) -> tuple[dict[str, float], dict[str, Any]]:
    """Canonical + `raw.*` metrics and the non-numeric rest of one flat serving-benchmark object."""
    canonical = M.canonical()
    metrics, rest = split_flat(o, canonical_same=canonical)
    for k in canonical:
        if k in o:
            put(metrics, k, o[k])
    for src, dst in renames.items():
        if src in o and dst not in metrics:
            put(metrics, dst, o[src])
    tin = o.get("total_input_tokens", o.get("total_input"))
    tout = o.get("total_output_tokens", o.get("total_output"))
    total_token_throughput(metrics, tin, tout, o.get("duration"))
    return metrics, rest


def serving_labels(o: dict[str, Any], tool: str = "sglang") -> dict[str, Any]:
    labels: dict[str, Any] = {}
    set_label(labels, "concurrency", o.get("max_concurrency"))
    set_label(labels, "request_rate", o.get("request_rate"))
    ds = o.get("dataset_name")
    set_label(labels, "dataset", ds)
    if isinstance(ds, str) and ds.startswith("random") or ds in ("image", "generated-shared-prefix"):
        set_label(labels, "input_len", o.get("random_input_len"))
        set_label(labels, "output_len", o.get("random_output_len"))
        if tool == "sglang":
            # SGLang draws the lengths from [ratio x len, len]: with ratio 0 a "1024" run sent ~512-token
            # prompts on average, so runs of different ratios are different workloads (a real file:
            # tests/fixtures/real/sglang/h200-*.jsonl, ratio 0.0 beside another of that repo's 1.0).
            # optlog's own bench writes 0.0 for SGLang's readers but sends exactly input_len tokens.
            set_label(labels, "random_range_ratio", o.get("random_range_ratio"))
    if o.get("sharegpt_output_len") is not None and ds == "sharegpt":
        set_label(labels, "output_len", o.get("sharegpt_output_len"))
    set_label(labels, "backend", o.get("backend"))
    set_label(labels, "tag", o.get("tag"))
    set_label(labels, "num_prompts", o.get("num_prompts"))
    set_label(labels, "model", o.get("model") or o.get("model_id"))
    si = o.get("server_info")
    if isinstance(si, dict):
        server_labels(labels, si)
    return labels


def server_labels(labels: dict[str, Any], si: dict[str, Any]) -> None:
    """Effective configuration from SGLang's `/server_info` (as embedded in new result lines)."""
    if isinstance(si.get("decode"), list) and si["decode"] and isinstance(si["decode"][0], dict):
        si = si["decode"][0]  # PD disaggregation: the decode side
    if "model" not in labels:
        set_label(labels, "model", si.get("served_model_name") or si.get("model_path"))
    for key, names in (("tp", ("tp_size",)), ("pp", ("pp_size",)), ("ep", ("ep_size",)), ("dp", ("dp_size",))):
        for n in names:
            if si.get(n) is not None:
                set_label(labels, key, si.get(n))
                break
    set_label(labels, "sglang_version", si.get("version"))


def parse_serving(doc: Doc, tool: str, required: tuple[str, ...] = REQUIRED_ANY) -> list[ParsedResult]:
    out: list[ParsedResult] = []
    for i, (line, o) in enumerate(jsonl_objects(doc, tool)):
        if not any(k in o for k in required):
            raise fail(tool, doc.path, f"no {' or '.join(required)} key", line=line, field_=required[0])
        metrics, rest = serving_metrics(o)
        labels = serving_labels(o, tool)
        labels["tool"] = tool
        apply_key_map(doc, tool, o, metrics, labels, line)
        out.append(ParsedResult(labels=labels, metrics=metrics, raw=clean(rest), tool=tool,
                                source=f"{doc.path}:{line}", file=doc.path, index=i))
    return out


def parse(doc: Doc) -> list[ParsedResult]:
    return parse_serving(doc, "sglang")
