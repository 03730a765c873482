"""Helpers for the verdict tests: put runs straight into a test workspace's database (the behaviour
under test then goes through the real CLI). Same database as the CLI: the workspace's SQLite file,
or the per-test PostgreSQL database named in the workspace's environment."""

from __future__ import annotations

from typing import Any


def seed_runs(ws: Any, rows: list[tuple[dict[str, Any], dict[str, float]]], **fields: Any) -> list[int]:
    from optlog.paths import Workspace as OWs
    from optlog.service.evidence import insert_run
    from optlog.store.db import Database

    db = Database(OWs(ws.root), url=ws.env.get("OPTLOG_DB_URL"))
    try:
        with db.write() as s:
            return [insert_run(s, labels=lab, metrics=met, **fields) for lab, met in rows]
    finally:
        db.dispose()


def repeats(labels: dict[str, Any], metric: str, values: list[float]) -> list[tuple[dict[str, Any], dict[str, float]]]:
    return [({**labels, "repeat": i}, {metric: v}) for i, v in enumerate(values)]
