"""Stored diagnoses follow the ceilings: one diagnosis per run, from known ceilings.

A launched run stores its diagnosis as metrics (`bound_*`, `roofline_*`: predictions such as
`a.bound_compute > 0.5` read them), and the ceilings it used go with it (`roofline_peak_tflops`,
`roofline_mem_bw_gbps`). When the ceilings change (`optlog calibrate`, a hand edit of optlog.yaml) a
stored diagnosis made with other ceilings is stale: `run show` would diagnose with the new ones while
predictions judged the old. `refresh` re-diagnoses every such run from its stored inputs and replaces
its diagnosis metrics; `verdicts.rediagnose` also re-judges the hypotheses whose predictions read
them, as invalidation does (event `rediagnose`, with the cause).
"""

from __future__ import annotations

from typing import Any

from optlog.core.diagnosis import CEILING_KEYS, DIAG_PREFIXES, diagnose, diagnosis_inputs, same, stored
from optlog.core.numfmt import fmt_sig
from optlog.service.context import Ctx
from optlog.store.runrows import counting_run_ids, labels_metrics, replace_metrics


def refresh(ctx: Ctx) -> list[dict[str, Any]]:
    """Re-diagnose the runs whose stored diagnosis differs from one made with today's ceilings; returns
    `[{run, before: {peak, bw, bound}, after: {...}}]` for the runs changed (their metrics replaced)."""

    try:
        ceilings = ctx.config.ceilings()
    except Exception:
        return []
    with ctx.db.read() as s:
        ids = counting_run_ids(s)
        labels, metrics = labels_metrics(s, ids)
    changed: list[tuple[int, dict[str, float], dict[str, float]]] = []
    for rid in ids:
        old = stored(metrics[rid])
        if not any(k in old for k in CEILING_KEYS):
            # never diagnosed by optlog with known ceilings: nothing stored to go stale, and a
            # `bound_*` metric someone recorded by hand is theirs, not optlog's to rewrite
            continue
        new = diagnose(diagnosis_inputs(metrics[rid]), ceilings, labels[rid]).metrics()
        if not any(not same({k: old[k]}, {k: new[k]}) if k in old and k in new else (k in old) != (k in new)
                   for k in CEILING_KEYS):
            continue  # the ceilings it used are today's: what it said stands (14.9 re-diagnoses on a change)
        if not same(old, new):
            changed.append((rid, old, new))
    if not changed:
        return []
    with ctx.db.write() as s:
        for rid, old, new in changed:
            replace_metrics(s, rid, list(old), new)
    return [{"run": rid, "before": _summary(old), "after": _summary(new)} for rid, old, new in changed]


def _summary(m: dict[str, float]) -> dict[str, Any]:
    bound = next((k[6:] for k in ("bound_compute", "bound_memory", "bound_latency") if m.get(k) == 1.0), None)
    return {"bound": bound, "peak_tflops": m.get("roofline_peak_tflops"), "mem_bw_gbps": m.get("roofline_mem_bw_gbps")}


def describe(changes: list[dict[str, Any]]) -> str:
    """One line: which runs were re-diagnosed and how their ceilings and bounds moved."""
    parts = []
    for c in changes[:6]:
        b, a = c["before"], c["after"]
        ceil = []
        for k, unit in (("peak_tflops", "TF/s"), ("mem_bw_gbps", "GB/s")):
            if b[k] != a[k]:
                ceil.append(f"{k} {_f(b[k])} → {_f(a[k])} {unit}")
        move = f"{b['bound'] or 'undecided'} → {a['bound'] or 'undecided'}" if b["bound"] != a["bound"] else (
            a["bound"] or "undecided")
        parts.append(f"run {c['run']} ({', '.join(ceil) or 'same ceilings'}; {move})")
    more = f" and {len(changes) - 6} more" if len(changes) > 6 else ""
    moved = any(c["before"][k] != c["after"][k] for c in changes for k in ("peak_tflops", "mem_bw_gbps"))
    why = "the current ceilings" if moved else "the same ceilings (the diagnosis itself changed)"
    return f"re-diagnosed {len(changes)} run(s) with {why}: " + "; ".join(parts) + more


def _f(v: float | None) -> str:
    return "none" if v is None else fmt_sig(v)


def reads_diagnosis(pred: Any) -> bool:
    text = f"{getattr(pred, 'expect', '')} {getattr(pred, 'metric', '') or ''}"
    return any(p in text for p in DIAG_PREFIXES)
