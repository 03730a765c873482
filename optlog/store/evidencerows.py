"""The evidence the verdict engine judges (`core.verdict.Evidence`), read with plain SQL on a
DB-API cursor: 10,000 runs carry ~50,000 label rows, and ORM/Core row objects would cost more than
the evaluation itself. One reading for the full path (`store.runrows.counting_evidence`, on
SQLAlchemy's driver cursor) and the first `status` after a run is recorded on plain SQL
(`store.plainstatus`, issue 47, on sqlite3 or psycopg): no SQLAlchemy imported here."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from optlog.core.verdict import Evidence, RunRow

# SQL text and its positional parameters → the rows (the driver's mark: `?` on SQLite, `%s` on PostgreSQL)
Rows = Callable[[str, tuple[Any, ...]], Sequence[Any]]


def counting_evidence(rows: Rows, is_sqlite: bool, metric_names: set[str]) -> Evidence:
    """Runs that count (succeeded, not invalidated) with their labels, what launched runs were
    configured with, their uids, and the named metrics."""
    runs: dict[int, RunRow] = {}
    uids: dict[int, str] = {}
    # launch and repeat (a launch cycle) and start/end: the design a verdict judges (paired cycles,
    # separate time blocks); a run imported from another clone keeps its launch in `raw`
    origin = ("CASE WHEN launch_id IS NULL THEN json_extract(raw, '$.origin_launch') END" if is_sqlite
              else "CASE WHEN launch_id IS NULL THEN (raw ->> 'origin_launch')::int END")
    for rid, uid, launch, rep, t0, t1, olaunch in rows(
            f"SELECT id, uid, launch_id, repeat, started_at, finished_at, {origin} FROM run "
            "WHERE status = 'succeeded' AND NOT invalidated", ()):
        runs[rid] = RunRow(rid, {}, {}, launch=launch if launch is not None else olaunch, repeat=rep or 0,
                           t0=t0, t1=t1)
        uids[rid] = uid
    if runs:
        for rid, k, v, num in rows("SELECT run_id, key, value, num FROM run_label", ()):
            row = runs.get(rid)
            if row is None:
                continue
            # stored text is canonical already; the typed value (core.labels.typed) comes from
            # the stored number, without re-parsing text
            row.canon[k] = v
            if num is None or num != num or num in (float("inf"), float("-inf")):
                row.labels[k] = v
            else:
                row.labels[k] = int(num) if num.is_integer() and abs(num) < 1e15 else num
        # what launched runs name beyond their labels (runs.record): only that part of `raw`
        cfg_sql = ("SELECT id, json_extract(raw, '$.config') FROM run" if is_sqlite
                   else "SELECT id, raw -> 'config' FROM run")
        for rid, cfg in rows(cfg_sql + " WHERE status = 'succeeded' AND NOT invalidated AND launch_id IS NOT NULL", ()):
            row = runs.get(rid)
            if row is not None and cfg:
                row.config = json.loads(cfg) if isinstance(cfg, str) else dict(cfg)
        names = sorted(metric_names)
        for i in range(0, len(names), 500):
            chunk = names[i:i + 500]
            marks = ", ".join(["%s" if not is_sqlite else "?"] * len(chunk))
            for rid, name, val in rows(f"SELECT run_id, name, value FROM metric WHERE name IN ({marks})",
                                       tuple(chunk)):
                row = runs.get(rid)
                if row is not None:
                    row.metrics[name] = val
    ev = Evidence(list(runs.values()))
    ev.uids = uids
    return ev
