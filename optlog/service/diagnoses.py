"""Stored diagnoses follow their inputs: one diagnosis per run, from known ceilings and model facts.

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

from optlog.core import bounds as B
from optlog.core import modelfacts as MF
from optlog.core.diagnosis import CEILING_KEYS, DIAG_PREFIXES, diagnose, diagnosis_inputs, same, stored
from optlog.core.numfmt import fmt_sig, plural
from optlog.needs import Index, Reads
from optlog.runs.modelfacts import MODEL_FLAGS, argv_value, from_path, kv_bytes_of
from optlog.store import runrows
from optlog.store.runrows import diagnosed_run_ids, labels_metrics, replace_metrics


def _optlog_made(old: dict[str, float], metrics: dict[str, float]) -> bool:
    """A diagnosis optlog made or could have made (at launch, or a re-diagnosis), not a `bound_*` metric
    someone recorded by hand: it carries its ceilings or its basis, or the run has optlog's telemetry
    (whose launch diagnosed it, undecided ones included)."""
    return "telemetry_window_s" in metrics or (bool(old) and (any(k in old for k in CEILING_KEYS)
                                                            or "roofline_basis" in old))


def _model_path(env: dict[str, Any]) -> str | None:
    """The model file a run's stored environment names: llama.cpp's `/props` report, else the server
    command's -m/--model/--model-path."""
    rep = ((env or {}).get("server") or {}).get("report") or {}
    if isinstance(rep, dict) and isinstance(rep.get("model_path"), str):
        return str(rep["model_path"])
    argv = ((env or {}).get("commands") or {}).get("server")
    if isinstance(argv, list):
        return argv_value([str(a) for a in argv], MODEL_FLAGS)
    return None


def _found_facts(ctx: Index, ids: list[int], metrics: dict[int, dict[str, float]]) -> dict[int, Any]:
    """Model facts that became available for runs diagnosed without them: the model file their
    environment names is readable now (an older optlog did not read it). {run: ModelFacts}."""
    want = [rid for rid in ids if not MF.from_metrics(metrics[rid]) and _optlog_made(stored(metrics[rid]), metrics[rid])]
    if not want:
        return {}
    with ctx.db.read() as s:
        envs = {rid: (getattr(runrows.run(s, rid), "environment", None) or {}) for rid in want}
    out: dict[int, Any] = {}
    cache: dict[str, Any] = {}
    for rid, env in envs.items():
        path = _model_path(env)
        if not path:
            continue
        if path not in cache:
            cache[path] = from_path(path, kv_bytes_of((env.get("commands") or {}).get("server") or []))
        mf = cache[path]
        if mf is not None and mf.facts:
            out[rid] = mf
    return out


def refresh(ctx: Reads, write: bool = True) -> list[dict[str, Any]]:
    """Re-make the stored diagnoses whose inputs changed: other ceilings (`optlog calibrate`, a hand
    edit of optlog.yaml), model facts that became available (a label given since, or the model file
    its environment names, read now: stored as `model_*` metrics), or an optlog whose diagnosis
    changed. Returns `[{run, before: {peak, bw, bound}, after: {...}}]` for the runs changed (their
    metrics replaced; with `write=False` the runs that would change, nothing written)."""

    try:
        ceilings = ctx.config.ceilings()
    except Exception:
        return []
    with ctx.db.connect() as c:
        # only runs optlog diagnosed or could have (see _optlog_made): the rest have nothing to go stale
        ids = diagnosed_run_ids(c, ["telemetry_window_s"], DIAG_PREFIXES)
    if not ids:
        return []
    with ctx.db.read() as s:
        labels, metrics = labels_metrics(s, ids)
    found = _found_facts(ctx, ids, metrics)
    changed: list[tuple[int, dict[str, float], dict[str, float]]] = []
    for rid in ids:
        old = stored(metrics[rid])
        if not _optlog_made(old, metrics[rid]):
            # never diagnosed by optlog: nothing stored to go stale, and a `bound_*` metric someone
            # recorded by hand is theirs, not optlog's to rewrite
            continue
        inputs = diagnosis_inputs(metrics[rid])
        facts = found[rid].metrics() if rid in found else {}
        new = diagnose({**inputs, **facts}, ceilings, labels[rid],
                       fact_sources=found[rid].sources if rid in found else None).metrics()
        if facts or not same(old, new):
            changed.append((rid, old, {**facts, **new}))
    if not changed:
        return []
    if write:
        with ctx.db.write() as s:
            for rid, old, new in changed:
                replace_metrics(s, rid, list(old) + [k for k in new if k.startswith(MF.FACT_PREFIX)], new)
    return [{"run": rid, "before": _summary(old), "after": _summary(new),
             **({"facts_from": found[rid].sources.get("active_params") or found[rid].model} if rid in found else {})}
            for rid, old, new in changed]


def _summary(m: dict[str, float]) -> dict[str, Any]:
    bound = B.from_metrics(m)
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
    facts = [c for c in changes if c.get("facts_from")]
    why = "the current ceilings" if moved else "the same ceilings (the diagnosis itself changed)"
    if facts:
        why += f"; model facts found for {len(facts)} of them (from {facts[0]['facts_from']})"
    return f"re-diagnosed {plural(len(changes), 'run')} with {why}: " + "; ".join(parts) + more


def _f(v: float | None) -> str:
    return "none" if v is None else fmt_sig(v)


def reads_diagnosis(pred: Any) -> bool:
    text = f"{getattr(pred, 'expect', '')} {getattr(pred, 'metric', '') or ''}"
    return any(p in text for p in DIAG_PREFIXES)
