"""Run rows with their labels and metrics: inserting one, and reading a set in two queries. Every
layer that stores, shows or judges runs (the launcher's summary, telemetry's diagnosis, the
service's listings, the import of a clone's committed runs) needs the same rows, so the SQL lives
here, below all of them, once."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from optlog.core import labels as L
from optlog.core.timeutil import now_iso

if TYPE_CHECKING:
    from sqlmodel import Session

    from optlog.store.models import Run

# SQLite's default limit on bound parameters is 999: ask for run ids in chunks below it.
_CHUNK = 900


def saved_id(run: Run) -> int:
    """The id of a run read from the database (the model allows None only for a row not yet saved)."""
    if run.id is None:
        raise ValueError("a run row without an id was never saved")
    return run.id


def insert_run(
    s: Session,
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
    """Insert one run with its labels and metrics inside an open write session; returns its id.
    What it is given is stored as it is (the service redacts secrets first).

    Every run gets a fresh random `uid` (its identity across clones) unless `uid` is given (a run
    imported from committed evidence)."""
    from optlog.core.ids import new_id
    from optlog.store.models import EvidenceLink, Metric, Run, RunLabel

    now = now_iso()
    uid = fields.pop("uid", None)
    run = Run(status=status, source=source, name=name, hypothesis_id=hypothesis_id, note=note,
              created_at=fields.pop("created_at", None) or now,
              started_at=fields.pop("started_at", now), finished_at=fields.pop("finished_at", now),
              raw=raw or {}, environment=environment or {}, launch_id=launch_id, host=fields.pop("host", None), **fields)
    s.add(run)
    s.flush()
    rid = saved_id(run)
    run.uid = uid or new_id("run", rid, now)
    for k, v in labels.items():
        s.add(RunLabel(run_id=rid, key=k, value=L.canonical(v), num=L.as_number(v)))
    for k, v in metrics.items():
        if v is None or (isinstance(v, float) and math.isnan(v)):
            continue
        s.add(Metric(run_id=rid, name=k, value=float(v)))
    if hypothesis_id:
        s.add(EvidenceLink(hypothesis_id=hypothesis_id, run_id=rid, kind="linked", created_at=now))
    return rid


def labels_metrics(s: Session, run_ids: Sequence[int]) -> tuple[dict[int, dict[str, Any]], dict[int, dict[str, float]]]:
    """(labels by run id, metrics by run id) for `run_ids`; every id has an entry, empty if it has none."""
    from sqlmodel import col, select

    from optlog.store.models import Metric, RunLabel

    labels: dict[int, dict[str, Any]] = {i: {} for i in run_ids}
    metrics: dict[int, dict[str, float]] = {i: {} for i in run_ids}
    for start in range(0, len(run_ids), _CHUNK):
        chunk = list(run_ids[start:start + _CHUNK])
        for rl in s.exec(select(RunLabel).where(col(RunLabel.run_id).in_(chunk))).all():
            labels[rl.run_id][rl.key] = L.typed(rl.value)
        for m in s.exec(select(Metric).where(col(Metric.run_id).in_(chunk))).all():
            metrics[m.run_id][m.name] = m.value
    return labels, metrics


def with_labels(s: Session, runs: Sequence[Run]) -> list[tuple[Run, dict[str, Any], dict[str, float]]]:
    """(run row, typed labels, metrics) for each of `runs`, in their order."""
    labels, metrics = labels_metrics(s, [saved_id(r) for r in runs])
    return [(r, labels[saved_id(r)], metrics[saved_id(r)]) for r in runs]


def runs_by_id(s: Session, run_ids: Sequence[int]) -> list[tuple[Run, dict[str, Any], dict[str, float]]]:
    """(run row, typed labels, metrics) for each of `run_ids` that exists, in id order."""
    from sqlmodel import col, select

    from optlog.store.models import Run

    out: list[tuple[Run, dict[str, Any], dict[str, float]]] = []
    for start in range(0, len(run_ids), _CHUNK):
        chunk = list(run_ids[start:start + _CHUNK])
        out.extend(with_labels(s, s.exec(select(Run).where(col(Run.id).in_(chunk)).order_by(col(Run.id))).all()))
    return sorted(out, key=lambda t: saved_id(t[0]))
