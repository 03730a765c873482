"""Recorded evidence: runs done elsewhere (`run record`), notes and links, run listing and details."""

from __future__ import annotations

import math
import socket
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from optlog.core import labels as L
from optlog.core.ids import check_id
from optlog.core.shape import page_facts
from optlog.core.statuses import RUN_STATUSES
from optlog.core.text import check as check_text
from optlog.core.timeutil import now_iso
from optlog.errors import BadInput, NotFound, not_found, param
from optlog.needs import Index, Reads, Writes
from optlog.paths import Workspace
from optlog.runs.redact import redact
from optlog.service import documents
from optlog.service.refs import require
from optlog.store import noterows, runrows
from optlog.store.runrows import insert_run as insert_row
from optlog.store.runrows import label_keys, labels_metrics, linked_runs, run_page, runs_by_id, with_labels
from optlog.store.telemetryrows import has_samples
from optlog.telemetry.summary import run_telemetry


def _check_metric_name(name: str) -> str:
    return L.check_key(name, "metrics")


def insert_run(
    s: Any,
    *,
    labels: dict[str, Any],
    metrics: dict[str, float],
    raw: dict[str, Any] | None = None,
    environment: dict[str, Any] | None = None,
    **fields: Any,
) -> int:
    """Insert one run with its labels and metrics inside an open write session; returns its id.
    What is stored is redacted (secrets never stored); the row itself is `store.runrows.insert_run`."""

    return insert_row(s, labels=redact(labels), metrics=metrics, raw=redact(raw), environment=redact(environment),
                      **fields)


def record(
    ctx: Reads,
    labels: dict[str, Any],
    metrics: dict[str, float],
    hypothesis: str | None = None,
    note: str | None = None,
) -> dict[str, Any]:
    """Store a run done elsewhere (typed labels and metrics: a face parses its own syntax, e.g. the
    CLI's `K=V`). All input is checked before anything is written."""
    lab = {L.check_key(str(k), "labels"): L.check_value(str(k), check_text(str(v), "labels", multiline=False))
           for k, v in labels.items()}
    met: dict[str, float] = {}
    for k, v in metrics.items():
        n = L.as_number(v)
        if isinstance(v, bool) or n is None or not math.isfinite(n):
            raise BadInput(f"metric {k!r} must be a finite number, got {v!r}", field="metrics")
        met[L.check_key(str(k), "metrics")] = n
    if not met:
        raise BadInput(f"a recorded run needs at least one {param('metrics')} NAME=VALUE", field="metrics")
    if hypothesis:
        require(ctx, hypothesis)
    with ctx.db.write(touches="append") as s:  # a new run, whole: journalled for the memo of what is due
        rid = insert_run(s, labels=lab, metrics=met, hypothesis_id=hypothesis, note=note, host=socket.gethostname())
        ctx.db.appended(rid)
    return show_run(ctx, rid)


def runs_with_labels(ctx: Index, run_ids: list[int]) -> list[tuple[Any, dict[str, Any], dict[str, float]]]:
    """(run row, typed labels, metrics) for each of `run_ids` that exists, in id order."""
    with ctx.db.read() as s:
        return list(runs_by_id(s, run_ids))


def run_summary(r: Any, labels: dict[str, Any], metrics: dict[str, float]) -> dict[str, Any]:
    return {
        "id": r.id,
        "uid": r.uid,
        "status": r.status,
        "source": r.source,
        "name": r.name,
        "hypothesis": r.hypothesis_id,
        "created_at": r.created_at,
        "invalidated": r.invalidated,
        "labels": labels,
        "metrics": metrics,
    }


def list_runs(ctx: Index, **kw: Any) -> list[dict[str, Any]]:
    """Runs in id order (oldest first); the filters of `runs_page`."""
    return runs_page(ctx, **kw)["runs"]


def runs_page(
    ctx: Index,
    *,
    status: str | None = None,
    hypothesis: str | None = None,
    labels: dict[str, Any] | None = None,
    limit: int | None = None,
    offset: int = 0,
    include_invalidated: bool = True,
    newest: bool = False,
    since: str | None = None,
    launch: int | None = None,
    count: bool = False,
) -> dict[str, Any]:
    """A page of runs: `{"runs": [...]}` plus, with `count`, `total`, `offset`, `next_offset`.
    `labels`: typed selectors (`{"concurrency": 256}` and `{"concurrency": "256"}` select the same
    runs). A label key no run has is an error with a did-you-mean (the runs have `m`, the call said `M`)."""
    if status is not None and status not in RUN_STATUSES:
        raise BadInput(f"unknown run status {status!r}; one of {', '.join(RUN_STATUSES)}", field="status")
    if limit is not None and limit < 0:
        raise BadInput(f"{param('limit')} must be at least 0", field="limit")
    sel = {L.check_key(str(k), "labels"): v for k, v in (labels or {}).items()}
    with ctx.db.read() as s:
        if sel:
            keys = label_keys(s.connection(), sorted(sel))
            for k in sel:
                if k not in keys:
                    raise not_found("run label", k, sorted(label_keys(s.connection())), field="labels")
        rows, total = run_page(s, status=status, hypothesis=hypothesis, launch=launch, since=since,
                               include_invalidated=include_invalidated,
                               labels={k: L.canonical(v) for k, v in sel.items()}, newest=newest, offset=offset,
                               limit=limit, count=count)
        runs = with_labels(s, rows)
    out: dict[str, Any] = {"runs": [run_summary(*t) for t in runs]}
    if total is not None:
        out.update(page_facts(total, offset, len(runs)))
    return out


def get_run(ctx: Index, run_id: int | str, field: str = "run_id") -> Any:
    try:
        rid = check_id(int(run_id), field)
    except (TypeError, ValueError):
        raise BadInput(f"a run id is a number, got {run_id!r}", field=field) from None
    with ctx.db.read() as s:
        r = runrows.run(s, rid)
    if r is None:
        raise NotFound(f"no run {rid}", field=field)
    return r


def show_run(ctx: Reads, run_id: int | str, telemetry: bool = True, field: str = "run_id") -> dict[str, Any]:
    r = get_run(ctx, run_id, field)
    with ctx.db.read() as s:
        labels, metrics = labels_metrics(s, [r.id])
    out = run_summary(r, labels[r.id], metrics[r.id])
    out.update(
        started_at=r.started_at,
        finished_at=r.finished_at,
        exit_code=r.exit_code,
        error=r.error,
        cause=r.cause,
        invalid_reason=r.invalid_reason,
        note=r.note,
        host=r.host,
        launch_id=r.launch_id,
        repeat=r.repeat,
        environment=r.environment or {},
        artifacts=_artifacts(ctx.ws, r),
        telemetry=_telemetry(ctx, r.id, metrics[r.id], labels[r.id]) if telemetry else {},
        raw=r.raw or {},
    )
    return out


def _artifacts(ws: Workspace, r: Any) -> list[dict[str, Any]]:
    if not r.artifacts_dir:
        return []
    d = Path(r.artifacts_dir)
    if not d.is_absolute():
        d = ws.root / d
    if not d.is_dir():
        return []
    return [{"path": ws.rel(p), "bytes": p.stat().st_size} for p in sorted(d.rglob("*")) if p.is_file()]


TELEMETRY_SIGNS = ("telemetry_samples", "telemetry_gpus", "energy_j", "flops", "tflops", "gbps", "bytes",
                   "model_active_params")
"""Metrics that mean a run has telemetry or work counts to diagnose; without any of them (and no model
facts among its labels or found ones, `model_*`) there is nothing to show, and numpy is not imported."""
MODEL_FACTS = ("active_params", "active_params_per_token", "kv_bytes_per_token")


def _telemetry(ctx: Reads, run_id: int, metrics: dict[str, float], labels: dict[str, Any] | None = None) -> dict[str, Any]:
    if not any(k in metrics for k in TELEMETRY_SIGNS) and not any(k in (labels or {}) for k in MODEL_FACTS):
        with ctx.db.connect() as c:  # samples stored without summaries (one indexed probe)
            if not has_samples(c, run_id):
                return {}
    return run_telemetry(ctx, run_id, metrics)


def runs_for_hypothesis(ctx: Index, hid: str) -> list[dict[str, Any]]:
    with ctx.db.connect() as c:
        ids = sorted({r for _, r in linked_runs(c, [hid])})
    if not ids:
        return []
    with ctx.db.read() as s:
        return [run_summary(*t) for t in runs_by_id(s, ids)]


def add_note(ctx: Writes, text: str, hypothesis: str | None = None, link: str | None = None,
             run: int | None = None) -> documents.Note:
    if not text.strip():
        raise BadInput("a note needs text", field="text")
    if link is not None:
        u = urlparse(link)
        if not (u.scheme and (u.netloc or u.scheme == "file")):
            raise BadInput(f"not a URL: {link!r} (expected e.g. https://…)", field="link")
    if hypothesis:
        require(ctx, hypothesis)
    if run is not None:
        get_run(ctx, run)
    with ctx.db.write() as s:
        n = noterows.add_note(s, text=text.strip(), hypothesis_id=hypothesis, link=link, run_id=run, by=ctx.actor,
                              created_at=now_iso())
        out = _note(n)
    return out


def _note(n: Any) -> documents.Note:
    return {"id": n.id, "text": n.text, "hypothesis": n.hypothesis_id, "run": n.run_id, "link": n.link,
            "by": n.by, "created_at": n.created_at}


def list_notes(ctx: Index, hypothesis: str | None = None, since: str | None = None) -> list[documents.Note]:
    """Notes, oldest first (of one hypothesis, at or after `since`)."""
    with ctx.db.connect() as c:
        rows = [_note(n) for n in noterows.notes(c, hypothesis)]
    return [n for n in rows if str(n["created_at"]) >= since] if since else rows


def notes_for(ctx: Index, hid: str) -> list[documents.Note]:
    return list_notes(ctx, hid)


def live_hypotheses(ctx: Index) -> set[str]:
    """Hypotheses with a queued or running run, their own or linked (DESIGN §5: their status is
    `testing`)."""
    if not ctx.db_exists():
        return set()
    with ctx.db.connect() as c:
        return runrows.live_hypotheses(c)


def count_runs(ctx: Index, statuses: tuple[str, ...] | None = None) -> int:
    """How many runs (with one of `statuses`, if given)."""
    with ctx.db.connect() as c:
        return runrows.count_runs(c, statuses)


# ---------------------------------------------------------------- the verbs' documents (every face)


BRIEF_RUN = ("environment", "raw", "artifacts")  # what `run show --brief` leaves out (counted instead)


def brief_run(doc: dict[str, Any]) -> dict[str, Any]:
    """`run show --brief`: without the environment, raw result and artifact list (counted instead),
    the telemetry cut to its text."""
    doc = dict(doc, artifacts_total=len(doc["artifacts"]))
    for k in BRIEF_RUN:
        doc.pop(k, None)
    tel = doc.get("telemetry") or {}
    if tel:
        doc["telemetry"] = {"text": tel.get("text")} if tel.get("text") else {k: tel[k] for k in list(tel)[:8]}
    return doc
