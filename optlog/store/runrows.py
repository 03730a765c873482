"""Reading a set of runs' labels and metrics in two queries: every layer that shows or judges runs
(the launcher's summary, telemetry's diagnosis, the service's listings) needs the same rows, so
the SQL lives here, below all of them, once."""

from __future__ import annotations

from typing import Any

from optlog.core import labels as L

# SQLite's default limit on bound parameters is 999: ask for run ids in chunks below it.
_CHUNK = 900


def labels_metrics(s: Any, run_ids: list[int]) -> tuple[dict[int, dict[str, Any]], dict[int, dict[str, float]]]:
    """(labels by run id, metrics by run id) for `run_ids`; every id has an entry, empty if it has none."""
    from sqlmodel import select

    from optlog.store.models import Metric, RunLabel

    labels: dict[int, dict[str, Any]] = {i: {} for i in run_ids}
    metrics: dict[int, dict[str, float]] = {i: {} for i in run_ids}
    for start in range(0, len(run_ids), _CHUNK):
        chunk = run_ids[start:start + _CHUNK]
        for rl in s.exec(select(RunLabel).where(RunLabel.run_id.in_(chunk))).all():  # type: ignore[attr-defined]
            labels[rl.run_id][rl.key] = L.typed(rl.value)
        for m in s.exec(select(Metric).where(Metric.run_id.in_(chunk))).all():  # type: ignore[attr-defined]
            metrics[m.run_id][m.name] = m.value
    return labels, metrics


def insert_run(
    s: Any,
    *,
    labels: dict[str, Any],
    metrics: dict[str, float],
    status: str = "succeeded",
    source: str = "recorded",
    hypothesis_id: str | None = None,
    note: str | None = None,
    raw: dict[str, Any] | None = None,
    environment: dict[str, Any] | None = None,
    name: str | None = None,
    launch_id: int | None = None,
    **fields: Any,
) -> int:
    """Insert one run row with its labels and metrics inside an open write session; returns its id.
    The caller redacts what it stores (`service.evidence.insert_run` does; the launcher has its own
    redactor). Every run gets a fresh random `uid` (its identity across clones) unless `uid` is given
    (a run imported from committed evidence); a run of a hypothesis is linked to it."""
    import math

    from optlog.core.ids import new_id
    from optlog.core.timeutil import now_iso
    from optlog.store.models import EvidenceLink, Metric, Run, RunLabel

    now = now_iso()
    uid = fields.pop("uid", None)
    run = Run(status=status, source=source, name=name, hypothesis_id=hypothesis_id, note=note,
              created_at=fields.pop("created_at", None) or now,
              started_at=fields.pop("started_at", now), finished_at=fields.pop("finished_at", now),
              raw=raw or {}, environment=environment or {}, launch_id=launch_id, host=fields.pop("host", None), **fields)
    s.add(run)
    s.flush()
    assert run.id is not None
    run.uid = uid or new_id("run", run.id, now)
    for k, v in labels.items():
        s.add(RunLabel(run_id=run.id, key=k, value=L.canonical(v), num=L.as_number(v)))
    for k, v in metrics.items():
        if v is None or (isinstance(v, float) and math.isnan(v)):
            continue
        s.add(Metric(run_id=run.id, name=k, value=float(v)))
    if hypothesis_id:
        s.add(EvidenceLink(hypothesis_id=hypothesis_id, run_id=run.id, kind="linked", created_at=now))
    return run.id
