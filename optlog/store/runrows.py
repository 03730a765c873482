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
