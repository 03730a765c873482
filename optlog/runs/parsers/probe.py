"""`probe` — the JSON line `python -m optlog.probes.gemm` prints (or writes with `--output`).

One run per object. Its numbers are metrics under the probe's own names — `tflops`, `gbps`,
`flops`, `bytes`, `time_s`, `time_min_s`, `intensity`, `wall_s`, `iters`, `batches` — which the
roofline diagnosis reads (work counts and achieved rates); its shape is labels: `op`, `m`, `k`, `n`,
`dtype`, `device`, `device_name`, `copy_bytes`.
"""

from __future__ import annotations

from typing import Any

from optlog.runs.parsers._common import Doc, ParsedResult, clean, fail, finite, jsonl_objects

TOOL = "probe"
LABELS = ("op", "m", "k", "n", "dtype", "device", "device_name", "copy_bytes")
METRICS = ("tflops", "gbps", "flops", "bytes", "time_s", "time_min_s", "intensity", "wall_s", "iters", "batches")


def parse(doc: Doc) -> list[ParsedResult]:
    out: list[ParsedResult] = []
    for i, (line, o) in enumerate(jsonl_objects(doc, TOOL)):
        if "op" not in o or not ("tflops" in o or "gbps" in o):
            raise fail(TOOL, doc.path, "not a probe result (no op, tflops or gbps key)", line=line, field_="op")
        labels: dict[str, Any] = {k: o[k] for k in LABELS if o.get(k) is not None}
        metrics: dict[str, float] = {}
        for k in METRICS:
            v = finite(o.get(k))
            if v is not None:
                metrics[k] = v
        labels["tool"] = TOOL
        rest = {k: v for k, v in o.items() if k not in LABELS and k not in METRICS}
        out.append(ParsedResult(labels=labels, metrics=metrics, raw=clean(rest), tool=TOOL,
                                source=f"{doc.path}:{line}", file=doc.path, index=i))
    return out
