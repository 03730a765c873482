"""The first read after a hand edit or a `git pull` (issue 47): the changed hypothesis files
re-indexed on the standard library's `sqlite3`, without SQLAlchemy, SQLModel or click.

Each changed file is read and validated by the full path's own loader (`store.hypfiles.load_file`:
the size bound, UTF-8, YAML without duplicate keys, the pydantic model, ids) and the links between
hypotheses are checked as `service.hypotheses.sync` checks them (`core.hypothesis.link_problems`);
the rows written are the ones `store.hypindex.index` writes (`hypfiles.index_row`,
`hypfiles.prediction_rows`), in one write transaction under the workspace's write lock
(`plainwrite.writing`: SQLite's `BEGIN IMMEDIATE`, PostgreSQL's advisory lock) that moves no change counter (an index write: `store.db.COUNTERS["index"]`).
Anything not plainly so (a file the loader refuses, a broken link, an index row another process
moved meanwhile, any error) leaves everything as it was and returns None: the full path reads,
reports and indexes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from optlog.core.family import rival_ids
from optlog.core.hypothesis import link_problems
from optlog.core.timeutil import now_iso
from optlog.paths import Workspace
from optlog.store import hypfiles
from optlog.store.plainwrite import Writer, writing

_HYP_COLS = ("title", "status", "parent", "rivals", "file_hash", "file_mtime_ns", "updated_at", "doc")
_JSON = {"rivals", "doc", "spec"}  # JSON columns: stored as SQLAlchemy's JSON type stores them (json.dumps)


class _Links:
    """A hypothesis's links, as `link_problems` reads them."""

    def __init__(self, parent: str | None, rivals: list[str]) -> None:
        self.parent, self.rivals = parent, rivals


def _sql_value(k: str, v: Any) -> Any:
    return json.dumps(v) if k in _JSON else v


def reindex(ws: Workspace, rows: dict[str, tuple[str, int, str | None, Any]], stamps: dict[str, int],
            sqlite_file: Path | None, pg: Any = None) -> list[str] | None:
    """Re-index the files whose modification time differs from the index (`rows`: id → (file
    hash, mtime, parent, rivals) as read; `stamps`: id → each file's mtime now), on the SQLite file or
    (`pg`) a `plainread.pg_connect` connection. Returns the notices the full path gives (a hand
    edit, once), or None (nothing written: the full path does it)."""
    try:
        changed: list[hypfiles.Loaded] = []
        notices: list[str] = []
        for hid in sorted(stamps):
            row = rows.get(hid)
            if row is not None and row[1] == stamps[hid]:
                continue
            path = ws.hypotheses_dir / f"{hid}.yaml"
            loaded = hypfiles.load_file(ws, path)
            if row is not None and row[0] != loaded.hash:
                notices.append(f"picked up an edit of {ws.rel(path)} made outside optlog")
            changed.append(loaded)
        gone = sorted(set(rows) - set(stamps))
        links: dict[str, Any] = {}
        for hid in stamps:
            if hid in rows and rows[hid][1] == stamps[hid]:
                # the index's links columns (store.hypfiles.index_row), not its whole document
                links[hid] = _Links(rows[hid][2], rival_ids(rows[hid][3]))
        for ld in changed:
            links[ld.doc.id] = ld.doc
        if link_problems(links):
            return None
        with writing(sqlite_file, pg) as w:
            _write(w, rows, changed, gone)
    except Exception:  # noqa: BLE001  (whatever it is, the full path meets it again and says what is wrong)
        return None
    return notices


class _Moved(Exception):
    """An index row another process rewrote since it was read."""


def _write(w: Writer, rows: dict[str, tuple[str, int, str | None, Any]], changed: list[hypfiles.Loaded], gone: list[str]) -> None:
    """The rows of `store.hypindex.index` / `unindex`, if the index rows touched are still as read
    (else _Moved: the transaction rolls back)."""
    for hid in [ld.doc.id for ld in changed] + gone:
        now_row = w.run("SELECT file_hash, file_mtime_ns FROM hypothesis WHERE id = :id", {"id": hid}).fetchone()
        was = rows.get(hid)
        if (now_row is None) != (was is None) or (was is not None and tuple(now_row) != (was[0], was[1])):
            raise _Moved(hid)
    now = now_iso()
    for ld in changed:
        d = ld.doc
        row = hypfiles.index_row(ld, now)
        vals = {k: _sql_value(k, row[k]) for k in _HYP_COLS}
        cur = w.run("UPDATE hypothesis SET " + ", ".join(f"{k} = :{k}" for k in _HYP_COLS) + " WHERE id = :id",
                    {**vals, "id": d.id})
        if not cur.rowcount:
            w.run("INSERT INTO hypothesis (id, created_at, " + ", ".join(_HYP_COLS) + ") VALUES "
                  "(:id, :created_at, " + ", ".join(f":{k}" for k in _HYP_COLS) + ")",
                  {**vals, "id": d.id, "created_at": d.created or now})
        w.run("DELETE FROM prediction WHERE hypothesis_id = :h", {"h": d.id})
        preds = hypfiles.prediction_rows(ld)
        if preds:
            cols = list(preds[0])
            w.many(f"INSERT INTO prediction ({', '.join(cols)}) VALUES ({', '.join(':' + k for k in cols)})",
                   [{k: _sql_value(k, p[k]) for k in cols} for p in preds])
    for hid in gone:
        w.run("DELETE FROM prediction WHERE hypothesis_id = :h", {"h": hid})
        w.run("DELETE FROM hypothesis WHERE id = :h", {"h": hid})
