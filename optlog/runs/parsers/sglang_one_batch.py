"""SGLang `bench_one_batch_server` (`--result-filename`, appended JSONL): one run per line.

Old keys: `run_name, batch_size, input_len, output_len, latency, output_throughput,
overall_throughput`; new ones add `input_throughput, last_ttft, last_gen_throughput, acc_length,
total_output_tokens, …`. One line is one batch of `batch_size` requests sent at once.

Canonical metrics: `output_throughput` and `input_throughput` as they are, `overall_throughput` →
`total_token_throughput`, `latency` (seconds, the whole batch) → `duration_s`. Every other numeric
key is kept as metric `raw.<key>` (including `raw.latency`, `raw.overall_throughput`,
`raw.last_ttft`); non-numeric ones (`run_name`) go to `raw`.

Labels: `batch_size`, `concurrency` (= batch_size: the batch is sent at once, so it is the cap),
`input_len`, `output_len`, `run_name`.
"""

from __future__ import annotations

from optlog.core import metrics as M
from optlog.runs.parsers._common import Doc, ParsedResult, clean, fail, jsonl_objects, put, set_label, split_flat
from optlog.runs.parsers.keymap import apply_key_map

TOOL = "sglang-one-batch"


def parse(doc: Doc) -> list[ParsedResult]:
    out: list[ParsedResult] = []
    for i, (line, o) in enumerate(jsonl_objects(doc, TOOL)):
        if "batch_size" not in o:
            raise fail(TOOL, doc.path, "no batch_size key", line=line, field_="batch_size")
        if not any(k in o for k in ("latency", "output_throughput", "overall_throughput")):
            raise fail(TOOL, doc.path, "no latency, output_throughput or overall_throughput key", line=line,
                       field_="latency")
        metrics, rest = split_flat(o, canonical_same=M.canonical())
        put(metrics, "output_throughput", o.get("output_throughput"))
        put(metrics, "input_throughput", o.get("input_throughput"))
        put(metrics, "total_token_throughput", o.get("overall_throughput"))
        put(metrics, "duration_s", o.get("latency"))
        labels: dict = {}
        set_label(labels, "batch_size", o.get("batch_size"))
        set_label(labels, "concurrency", o.get("batch_size"))
        set_label(labels, "input_len", o.get("input_len"))
        set_label(labels, "output_len", o.get("output_len"))
        set_label(labels, "run_name", o.get("run_name"))
        labels["tool"] = TOOL
        apply_key_map(doc, TOOL, o, metrics, labels, line)
        out.append(ParsedResult(labels=labels, metrics=metrics, raw=clean(rest), tool=TOOL,
                                source=f"{doc.path}:{line}", file=doc.path, index=i))
    return out
