"""The hot reads' documents on a plain DB-API connection (the standard library's `sqlite3`): the
first read after a change (issue 47) answers `todo list`, `run list --limit N` and `hypothesis
list` without SQLAlchemy, SQLModel or pydantic, which cost most of a second to import.

Each function reads exactly what its read shows and builds the document the full path builds
(`service.todos.list_doc`, `service.evidence.runs_doc`, `service.hypotheses.list_doc`): the same
rows in the same order, the same keys in the same order (tests/cli/test_first_read_plain.py
compares the output bytes). The SQL of the todo list is this module's (store.todorows runs the
same text through SQLAlchemy). A function returns None where it cannot answer exactly (a
hypothesis file changed since it was indexed: the full path reads, validates and re-indexes it).
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import Any

from optlog.core import jsondoc
from optlog.core import labels as L
from optlog.core.shape import page_facts
from optlog.store.faults import pg_connect_args
from optlog.store.readcache import FACTS_SQL

# the todo list in list order (store.todorows.todo_rows runs the same text)
TODO_LIST_SQL = "SELECT id, content, status, priority, hypothesis_id, extra FROM todo{where} ORDER BY position, seq"
# the columns of a run summary (service.evidence.run_summary), in id order
_RUN_COLS = "id, uid, status, source, name, hypothesis_id, created_at, invalidated"
_CHUNK = 900  # bound parameters per statement (store.runrows._CHUNK)


def connect(sqlite_file: Path) -> sqlite3.Connection:
    """Read-only, no migration, no WAL switch (the caller has checked the schema is current)."""
    return sqlite3.connect(f"file:{sqlite_file}?mode=ro", uri=True, timeout=1.0)


def pg_connect(url: str, identity: str | None) -> Any:
    """A plain psycopg connection (autocommit) to the workspace's own schema (`optlog_<identity>`,
    store.db.schema_for) on the PostgreSQL of `url`, or None: not PostgreSQL, no identity, no such
    schema yet (the full path makes it), a workspace from before identities (its tables in
    `public`: the full path decides whose they are), or any connection error."""
    if not url.startswith(("postgresql://", "postgresql+psycopg://", "postgres://")) or not identity:
        return None
    import psycopg  # deferred: PostgreSQL's driver, only for a workspace on PostgreSQL
    plain = "postgresql://" + url.split("://", 1)[1]
    try:
        con = psycopg.connect(plain, autocommit=True, **pg_connect_args(url))
    except psycopg.Error:
        return None
    try:
        schema = f"optlog_{identity}"
        if con.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", (schema,)).fetchone() is None:
            con.close()
            return None
        con.execute("SELECT set_config('search_path', %s, false)", (schema,))
    except psycopg.Error:
        con.close()
        return None
    return con


def pg_facts(con: Any) -> Any:
    """store.readcache's database facts on a `pg_connect` connection, or None on any error."""
    import psycopg  # deferred: loaded already by pg_connect
    try:
        row = con.execute(FACTS_SQL.replace(":t", "true")).fetchone()
    except psycopg.Error:
        return None
    return row[0], row[1], bool(row[2]), row[3]


def _mark(con: Any) -> str:
    """The driver's parameter mark: sqlite3's `?`, psycopg's `%s`."""
    return "?" if isinstance(con, sqlite3.Connection) else "%s"


def document(sqlite_file: Path | None, hypotheses_dir: Path, cmd: list[str], pg: Any = None) -> dict[str, Any] | None:
    """The document of the read `cmd` (its words, without `--json`): `todo list`, `hypothesis
    list`, `run list --limit N`, on the SQLite file or (`pg`) a `pg_connect` connection; None for
    another read, or where this module cannot answer it exactly, or on any database error (the full
    path says what is wrong)."""
    errors: tuple[type[BaseException], ...] = (sqlite3.Error, OSError, ValueError, KeyError, TypeError)
    if pg is not None:
        import psycopg  # deferred: loaded already by pg_connect

        errors = (*errors, psycopg.Error)
    try:
        if pg is None and sqlite_file is None:
            return None
        con = pg if pg is not None else connect(sqlite_file)  # type: ignore[arg-type]
        try:
            if cmd == ["todo", "list"]:
                return todo_list(con)
            if cmd == ["hypothesis", "list"]:
                return hypothesis_list(con, hypotheses_dir)
            if cmd[:3] == ["run", "list", "--limit"] and len(cmd) == 4 and cmd[3].isascii() and cmd[3].isdigit():
                return run_list(con, int(cmd[3]))
            return None
        finally:
            if pg is None:
                con.close()
    except errors:
        return None


def todo_list(con: Any) -> dict[str, Any]:
    """`todo list` (no filters, no page): `{"todos": [...]}` in the shape `todo write` takes."""
    out = []
    for tid, content, st, prio, hyp, extra in con.execute(TODO_LIST_SQL.format(where="")).fetchall():
        if isinstance(extra, str):
            extra = jsondoc.loads(extra)
        d = {"id": tid, "content": content, "status": st, "priority": prio, "hypothesis": hyp}
        for k, v in (extra or {}).items():
            d.setdefault(k, v)
        out.append(d)
    return {"todos": out}


def run_list(con: Any, limit: int) -> dict[str, Any]:
    """`run list --limit N` (oldest first, no filters): the page and its facts."""
    total = int(con.execute("SELECT count(*) FROM run").fetchone()[0])
    q = _mark(con)
    rows = con.execute(f"SELECT {_RUN_COLS} FROM run ORDER BY run.id LIMIT {q} OFFSET 0", (limit,)).fetchall()
    ids = [r[0] for r in rows]
    labels: dict[int, dict[str, Any]] = {i: {} for i in ids}
    metrics: dict[int, dict[str, float]] = {i: {} for i in ids}
    for start in range(0, len(ids), _CHUNK):
        chunk = ids[start:start + _CHUNK]
        marks = ", ".join([q] * len(chunk))
        for rid, key, value, _num in con.execute(
                f"SELECT run_label.run_id, run_label.key, run_label.value, run_label.num FROM run_label "
                f"WHERE run_label.run_id IN ({marks})", chunk).fetchall():
            labels[rid][key] = L.typed(value)
        for rid, name, value in con.execute(
                f"SELECT metric.run_id, metric.name, metric.value FROM metric WHERE metric.run_id IN ({marks})",
                chunk).fetchall():
            metrics[rid][name] = value
    runs = [{"id": r[0], "uid": r[1], "status": r[2], "source": r[3], "name": r[4], "hypothesis": r[5],
             "created_at": r[6], "invalidated": bool(r[7]), "labels": labels[r[0]], "metrics": metrics[r[0]]}
            for r in rows]
    return {"runs": runs, **page_facts(total, 0, len(runs))}


def hypothesis_list(con: Any, hypotheses_dir: Path) -> dict[str, Any] | None:
    """`hypothesis list` (no filters, no page) from the index, when every file is as indexed (the
    same names, each with the modification time the index recorded); None otherwise. Nothing may
    be live (the caller checks): an open hypothesis would read `testing` while its runs run."""
    try:
        with os.scandir(hypotheses_dir) as it:
            stamps = {e.name[:-5]: e.stat().st_mtime_ns for e in it
                      if e.name.endswith(".yaml") and not e.name.startswith(".")}
    except (FileNotFoundError, NotADirectoryError):
        stamps = {}
    rows = con.execute("SELECT id, file_mtime_ns, doc FROM hypothesis").fetchall()
    if len(rows) != len(stamps) or any(stamps.get(hid) != mt for hid, mt, _doc in rows):
        return None
    docs = [jsondoc.loads(doc) if isinstance(doc, str) else doc for _hid, _mt, doc in rows]
    children: dict[str, list[str]] = {}
    rivals: dict[str, set[str]] = {}
    for d in docs:  # service.hypotheses._relations
        if d.get("parent"):
            children.setdefault(d["parent"], []).append(d["id"])
        for r in d.get("rivals") or ():
            if r != d["id"]:
                rivals.setdefault(d["id"], set()).add(r)
                rivals.setdefault(r, set()).add(d["id"])
    kids = {k: sorted(v) for k, v in children.items()}
    rivs = {k: sorted(v) for k, v in rivals.items()}
    out = []
    for d in sorted(docs, key=lambda d: (d.get("created") or "", d["id"])):  # service.hypotheses.summary
        ov = d.get("override")
        out.append({
            "id": d["id"],
            "title": d["title"],
            "status": ov["status"] if ov else (d.get("auto_status") or d["status"]),
            "auto_status": d.get("auto_status"),
            "override": ov or None,
            "parent": d.get("parent"),
            "children": kids.get(d["id"], []),
            "rivals": rivs.get(d["id"], []),
            "predictions": [{"id": p["id"], "version": p["version"], "metric": p.get("metric"), "expect": p["expect"],
                             "status": p["status"]} for p in d.get("predictions") or ()],
            "created": d.get("created"),
        })
    return {"hypotheses": out}
