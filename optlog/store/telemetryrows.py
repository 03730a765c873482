"""Telemetry chunk rows: the SQL side of `telemetry.store`, which packs and unpacks the samples
(numpy) and stays free of queries; this module stays free of numpy."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from sqlalchemy import insert, text

if TYPE_CHECKING:
    from sqlalchemy import Connection
    from sqlmodel import Session

    from optlog.store.models import TelemetryChunk


def insert_chunks(s: Session, rows: Sequence[dict[str, Any]]) -> None:
    """Insert chunk rows ({run_id, launch_id, gpu, field, t0, n, data}) in one executemany: a
    run's samples are hundreds of rows, which ORM objects would make slow to store."""
    if not rows:
        return

    from optlog.store.models import TelemetryChunk  # deferred: the row models load SQLModel (the ORM)

    s.execute(insert(TelemetryChunk), list(rows))


def chunks(s: Session, *, run_id: int | None = None, launch_id: int | None = None) -> list[TelemetryChunk]:
    """The chunks of a run (or, with `launch_id` and no run, a launch's samples taken outside any
    point), by GPU, then time, then insertion order: the order `telemetry.store` joins them in."""
    from sqlmodel import col, select  # deferred: SQLModel is the ORM, loaded with the database

    from optlog.store.models import TelemetryChunk  # deferred: the row models load SQLModel (the ORM)

    q = select(TelemetryChunk)
    if run_id is not None:
        q = q.where(TelemetryChunk.run_id == run_id)
    else:
        q = q.where(TelemetryChunk.launch_id == launch_id, TelemetryChunk.run_id == None)  # noqa: E711
    q = q.order_by(col(TelemetryChunk.gpu), col(TelemetryChunk.t0), col(TelemetryChunk.id))
    return list(s.exec(q).all())


def has_samples(c: Connection, run_id: int) -> bool:
    """Whether a run has stored samples (one indexed probe): a run without telemetry metrics may
    still have samples to summarise, and without either numpy is never imported."""
    return c.execute(text("SELECT 1 FROM telemetry_chunk WHERE run_id = :r LIMIT 1"), {"r": run_id}).first() is not None
