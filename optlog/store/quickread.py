"""Reads with the standard library's `sqlite3` only, for a face's first frame: no SQLAlchemy,
pydantic or YAML to import (those cost most of a second). The SQL stays here, in store/, beside the
tables it names; the caller decides whether the rows are still true (the dashboard compares each
hypothesis file's mtime with the one the index recorded)."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any


def hypothesis_index(sqlite_file: Path) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]] | None:
    """The index's hypothesis rows `(id, title, status, parent, file_mtime_ns, created_at)` and
    prediction rows `(hypothesis_id, id, status, expect)` in id order, read-only; None on any
    database error (locked past 0.2 s, no such table, not a database)."""
    try:
        con = sqlite3.connect(f"file:{sqlite_file}?mode=ro", uri=True, timeout=0.2)
        try:
            rows = con.execute("SELECT id, title, status, parent, file_mtime_ns, created_at FROM hypothesis").fetchall()
            preds = con.execute("SELECT hypothesis_id, id, status, expect FROM prediction ORDER BY id").fetchall()
        finally:
            con.close()
    except (OSError, sqlite3.Error):
        return None
    return rows, preds
