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

import json
import re
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from optlog.core import duestate as DS
from optlog.core import family, jsondoc
from optlog.core import labels as L
from optlog.core.shape import page_facts
from optlog.core.text import json_shown
from optlog.paths import Workspace
from optlog.store import readcache
from optlog.store.faults import pg_connect_args
from optlog.store.readcache import FACTS_SQL

# the todo list in list order (store.todorows.todo_rows runs the same text)
TODO_LIST_SQL = "SELECT id, content, status, priority, hypothesis_id, extra FROM todo{where} ORDER BY position, seq"
# the columns of a run summary (service.evidence.run_summary), in id order
_RUN_COLS = "id, uid, status, source, name, hypothesis_id, created_at, invalidated"
CHUNK = 900  # bound parameters per statement (store.runrows.CHUNK)

# sync_stamp keys that `status` reads (store.runsync, store.todorows, store.statusrows write them)
MADE_HERE_KEY = "made_here"  # set by `init` of a new workspace: this database is no fresh clone's
TODO_OWNER_KEY = "todo_list_owner"  # the agent tool whose writes replace the whole todo list
LAUNCHES_SEEN_KEY = "verdict_launches_seen"  # what the last committed verdict had seen of launches
DUE_MEMO_KEY = "verdict_due"  # which verdicts are due, as service.verdicts.due found them
APPENDS_KEY = "evidence_appends"  # the runs appended by the latest evidence writes (store.db.Database.appended)
NEWEST_KEY = "newest_evidence"  # each hypothesis's newest evidence under the evidence counter (newest_evidence)
# keeping a derived value under a sync_stamp key (the memo of what is due: store.statusrows.set_due_memo and
# store.plainstatus run this text; the newest evidence; the journal of appends: store.db)
SYNC_SET_SQL = ("DELETE FROM sync_stamp WHERE key = :k", "INSERT INTO sync_stamp (key, value) VALUES (:k, :v)")
EVIDENCE_COUNTER_SQL = "SELECT n FROM change_counter WHERE id = 3"  # store.db.COUNTERS: writes that may change the evidence
SYNC_STAMP_SQL = "SELECT value FROM sync_stamp WHERE key = :k"

# a query as `status` runs it: SQL text with `:name` parameters → its rows (on SQLAlchemy, sqlite3 or psycopg)
Query = Callable[[str, dict[str, Any]], list[Any]]


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


def query(con: Any) -> Query:
    """`Query` on a plain connection: sqlite3 takes `:name` as it is; psycopg's mark is `%(name)s`."""
    if isinstance(con, sqlite3.Connection):
        return lambda sql, args: con.execute(sql, args).fetchall()
    return lambda sql, args: con.execute(re.sub(r":(\w+)", r"%(\1)s", sql), args).fetchall()


def _mark(con: Any) -> str:
    """The driver's parameter mark: sqlite3's `?`, psycopg's `%s`."""
    return "?" if isinstance(con, sqlite3.Connection) else "%s"


def document(ws: Workspace, cmd: list[str], pg: Any = None, notices: list[str] | None = None,
             status: Callable[[Any, Workspace, dict[str, int], list[Any]], dict[str, Any] | None] | None = None,
             files: dict[str, int] | None = None) -> dict[str, Any] | str | None:
    """The document of the read `cmd` (its words, without `--json`): `status`, `todo list`,
    `hypothesis list` (as its compact JSON text: `hypothesis_list_text`), `run list --limit N`, on
    the SQLite file or (`pg`) a `pg_connect` connection; None for another read, or where this
    module cannot answer it exactly, or on any database error (the full path says what is wrong). A read that shows the hypotheses first
    re-indexes the files changed since they were indexed (`store.plainindex`, SQLite), with the
    full path's notices appended to `notices`. `status`: `store.plainstatus.status`, which the
    caller loads only when it asks for a status (status's rules cost ~25 ms to import). `files`:
    the hypothesis files' modification times (id → ns) as the read cache's stamp saw them
    (`store.readcache.Stamp.files`): `status` and `hypothesis list` are answered only with them."""
    sqlite_file = ws.sqlite_file
    errors: tuple[type[BaseException], ...] = (sqlite3.Error, OSError, ValueError, KeyError, TypeError)
    if pg is not None:
        import psycopg  # deferred: loaded already by pg_connect

        errors = (*errors, psycopg.Error)
    try:
        if pg is None and sqlite_file is None:
            return None
        links: list[Any] = []  # the index rows `reindexed` read, where nothing was re-indexed
        if cmd in (["status"], ["hypothesis", "list"]):
            if files is None:
                return None  # (the read cache's stamp lists the files for these reads: store.readcache.stamp)
            said = reindexed(ws, sqlite_file, files, pg, links)
            if said is None:
                return None
            if notices is not None:
                notices.extend(said)
        con = pg if pg is not None else connect(sqlite_file)  # type: ignore[arg-type]
        try:
            with one_moment(con):
                if cmd == ["status"]:
                    return status(con, ws, files, links) if status is not None and files is not None else None
                if cmd == ["todo", "list"]:
                    return todo_list(con)
                if cmd == ["hypothesis", "list"]:
                    return hypothesis_list_text(ws, con, files, links) if files is not None else None
                if cmd[:3] == ["run", "list", "--limit"] and len(cmd) == 4 and cmd[3].isascii() and cmd[3].isdigit():
                    return run_list(con, int(cmd[3]))
                return None
        finally:
            if pg is None:
                con.close()
    except errors:
        return None


@contextmanager
def one_moment(con: Any) -> Iterator[None]:
    """A document's statements read the database as of one moment, whatever another process commits
    between them (`run list` counted 1 run and then read a page of 2): a read transaction, as the
    full path's reads are one (store.db.Database.read). SQLite: a deferred BEGIN (in WAL, a
    snapshot from the first read; its writes go through their own connection, store.plainwrite).
    PostgreSQL (a `pg_connect` connection, autocommit): REPEATABLE READ, committed at the end, so
    that the memo `status` keeps on the way (store.plainstatus: a savepoint of it, under the write
    lock) is written with it."""
    if isinstance(con, sqlite3.Connection):
        con.execute("BEGIN")
        try:
            yield
        finally:
            con.rollback()
        return
    con.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
    try:
        yield
    except BaseException:
        con.execute("ROLLBACK")
        raise
    con.execute("COMMIT")


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
    for start in range(0, len(ids), CHUNK):
        chunk = ids[start:start + CHUNK]
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


LIST_ENTRIES = "hypothesis-list-entries"  # store.readcache.keep_rows: each hypothesis's list entry by file hash
# each hypothesis's index row as a first read checks it against the files and reads its links
LINK_ROWS_SQL = "SELECT id, file_mtime_ns, file_hash, parent, rivals FROM hypothesis"


def hypothesis_list_text(ws: Workspace, con: Any, files: dict[str, int], links: list[Any] | None = None) -> str | None:
    """`hypothesis list` (no filters, no page) as its JSON text as printed (`core.text.json_shown`'s:
    each kept entry is shown already, and the ids between them need no escaping), from the index, when every
    file is as indexed (the same names, each with the modification time the index recorded); None
    otherwise. Nothing may be live (the caller checks): an open hypothesis would read `testing`
    while its runs run.

    Each entry but its children and rivals is a function of its file's bytes, so its JSON text is
    kept by file hash (LIST_ENTRIES): after one file changed only that one's index document is read,
    the others' texts are joined around the children and rivals the index's link columns give (at
    10,000 hypotheses reading and writing every document was ~300 ms of the first read)."""
    got = kept_by_hash(ws, con, files, links, LIST_ENTRIES, 4, lambda d: [d.get("created") or "", *_entry_texts(d)])
    if got is None:
        return None
    rows, entries = got  # id → [file hash, created, head, tail]
    kids, rivs = family.links((hid, parent, family.rival_ids(rv)) for hid, _mt, _fh, parent, rv in rows)
    shown = []
    for hid in sorted(entries, key=lambda h: (entries[h][1], h)):  # service.hypotheses.list_doc's order
        _fh, _created, head, tail = entries[hid]
        shown.append(f'{head}, "children": {_ids(kids.get(hid))}, "rivals": {_ids(rivs.get(hid))}, {tail}')
    return '{"hypotheses": [' + ", ".join(shown) + "]}"


def as_listed(rows: list[Any], files: dict[str, int]) -> bool:
    """The index rows (LINK_ROWS_SQL's) name the listed files, each with the modification time
    listed (`store.readcache.Stamp.files`): every file is as indexed."""
    return len(rows) == len(files) and all(files.get(hid) == mt for hid, mt, _fh, _p, _r in rows)


def kept_by_hash(ws: Workspace, con: Any, files: dict[str, int], links: list[Any] | None, name: str, width: int,
                 derive: Callable[[dict[str, Any]], list[str]]) -> tuple[list[Any], dict[str, list[str]]] | None:
    """The index rows (LINK_ROWS_SQL's; `links`: as `reindexed` read and checked them) and, for
    each hypothesis, [its file hash, *`derive` of its index document] (`width` fields in all), kept
    under `name` by file hash (`store.readcache.keep_rows`): only the documents of the files changed
    since are read (in one statement with their own hash: `documents`), and what changed is kept
    again. None where a file is not as indexed (the same names, each with the modification time the
    index recorded: `files`, from `store.readcache.Stamp.files`) or a row was indexed again meanwhile."""
    rows = links
    if not rows:  # (`reindexed` fills `links` only where it found every file as indexed: checked so)
        rows = con.execute(LINK_ROWS_SQL).fetchall()
        if not as_listed(rows, files):
            return None
    known = readcache.kept_rows(ws, name, width)
    got: dict[str, list[str]] = {}
    need: list[str] = []
    for hid, _mt, fh, _p, _r in rows:
        k = known.get(hid)
        if k is not None and fh and k[0] == fh:
            got[hid] = k
        else:
            need.append(hid)
    for hid, (fh, d) in documents(con, need, files).items():
        got[hid] = [fh, *derive(d)]
    if len(got) != len(rows):
        return None  # a row indexed again meanwhile: the full path
    gone = len(known) - (len(rows) - len(need)) - sum(h in known for h in need)  # kept rows of no hypothesis now
    if need or gone:
        readcache.keep_rows(ws, name, got, None if gone else need)  # (only the changed ones, where no row is gone)
    return rows, got


def _dumps(x: Any) -> str:
    return json.dumps(x, ensure_ascii=False)  # as the document is written (optlog.api.firstread)


def _ids(ids: list[str] | None) -> str:
    """A list of hypothesis ids as `_dumps` writes it; ids (core.text.ID_RE: a-z, 0-9, -) need no
    escaping, so at 10,000 hypotheses the 10,000 lists are joined, not encoded."""
    if not ids:
        return "[]"
    if all(i.replace("-", "").isalnum() and i.isascii() for i in ids):
        return '["' + '", "'.join(ids) + '"]'
    return _dumps(ids)


def _entry_texts(d: dict[str, Any]) -> tuple[str, str]:
    """A hypothesis's `hypothesis list` entry (service.hypotheses.summary) from its index document,
    as the JSON text before its children and the text after its rivals, each as printed
    (`core.text.json_shown`: escaping is per character, so the joined list is shown as its parts are;
    at 10,000 hypotheses scanning the 3 MB list again cost ~8 ms of each first read)."""
    ov = d.get("override")
    head = {"id": d["id"], "title": d["title"], "status": ov["status"] if ov else (d.get("auto_status") or d["status"]),
            "auto_status": d.get("auto_status"), "override": ov or None, "parent": d.get("parent")}
    tail = {"predictions": [{"id": p["id"], "version": p["version"], "metric": p.get("metric"), "expect": p["expect"],
                             "status": p["status"]} for p in d.get("predictions") or ()],
            "created": d.get("created")}
    return json_shown(_dumps(head)[:-1]), json_shown(_dumps(tail)[1:])


def documents(con: Any, ids: list[str], files: dict[str, int]) -> dict[str, tuple[str, dict[str, Any]]]:
    """The file hash and index document (the hypothesis model's JSON dump) of each of `ids` whose
    index row still carries the modification time the stamp listed (`files`): read in one statement
    with its hash, so what is kept by that hash is that document, whatever another process indexes
    between two statements (a row that moved is left out: the caller then declines)."""
    out: dict[str, tuple[str, dict[str, Any]]] = {}
    mark = _mark(con)
    for start in range(0, len(ids), CHUNK):
        chunk = ids[start:start + CHUNK]
        marks = ", ".join([mark] * len(chunk))
        for hid, mt, fh, doc in con.execute(
                f"SELECT id, file_mtime_ns, file_hash, doc FROM hypothesis WHERE id IN ({marks})", chunk).fetchall():
            if files.get(hid) == mt:
                out[hid] = (fh or "", json.loads(doc) if isinstance(doc, str) else doc)
    return out


def reindexed(ws: Workspace, sqlite_file: Path | None, stamps: dict[str, int], pg: Any = None,
              links: list[Any] | None = None) -> list[str] | None:
    """Bring the index in line with the hypothesis files, as `service.hypotheses.sync` does: [] when
    every file is as indexed (the usual case: a stat of each file and one query); else the changed
    files re-indexed on plain SQL by `store.plainindex` (which loads the hypothesis model: pydantic
    and YAML), with its notices, or None (the full path does it). `stamps`: `store.readcache.Stamp.files`.
    `links`: where every file was as indexed, filled with the rows read (LINK_ROWS_SQL's), which the
    read's document then reads instead of asking again (at 10,000 hypotheses ~10 ms)."""
    con = pg if pg is not None else connect(sqlite_file)  # type: ignore[arg-type]
    try:  # (not the documents: the read after this one reads those, and a re-index needs only the links)
        got = con.execute(LINK_ROWS_SQL).fetchall()
    finally:
        if pg is None:
            con.close()
    if as_listed(got, stamps):
        if links is not None:
            links.extend(got)
        return []
    rows = {hid: (fh, mt, parent, rivals) for hid, mt, fh, parent, rivals in got}
    from optlog.store.plainindex import reindex  # deferred: the hypothesis model (pydantic, YAML), only for a changed file

    return reindex(ws, rows, stamps, sqlite_file, pg)


# ------------------------------------------------------------------ status


@dataclass
class RunFacts:
    total: int = 0
    live_total: int = 0
    live: list[dict[str, Any]] = field(default_factory=list)  # {id, status, name, launch, hypothesis}
    launches: list[dict[str, Any]] = field(default_factory=list)  # {id, status, hypothesis, finished_at, error, runs}
    invalid_total: int = 0
    invalid: list[tuple[int, str | None]] = field(default_factory=list)  # (run, reason), newest first
    newest: dict[str, str] = field(default_factory=dict)  # hypothesis → its newest finished evidence
    made_here: bool = False  # `init` made this workspace with this database (so it is no fresh clone)


def sync_value(q: Query, key: str) -> str | None:
    rows = q(SYNC_STAMP_SQL, {"k": key})
    return None if not rows or rows[0][0] is None else str(rows[0][0])


def run_facts(q: Query, since: str, live_cap: int, keep: Callable[[str, Any], None] | None = None) -> RunFacts:
    """The runs' totals, up to `live_cap` live runs (running first), the 5 newest launches live or
    ended badly since `since` (with their runs counted by status), the 3 newest invalidations, and
    each hypothesis's newest succeeded evidence (`newest_evidence`; `keep` is its). `status`'s
    one reading of the runs, on either path (store.statusrows runs it through SQLAlchemy)."""
    total = int(q("SELECT COUNT(*) FROM run", {})[0][0] or 0)
    if not total:
        return RunFacts(made_here=sync_value(q, MADE_HERE_KEY) is not None)
    live_total = int(q("SELECT COUNT(*) FROM run WHERE status IN ('queued','running')", {})[0][0] or 0)
    live = [{"id": r[0], "status": r[1], "name": r[2], "launch": r[3], "hypothesis": r[4]} for r in q(
        "SELECT id, status, name, launch_id AS launch, hypothesis_id AS hypothesis FROM run "
        "WHERE status IN ('queued','running') ORDER BY (status = 'running') DESC, id LIMIT :n", {"n": live_cap})]
    seen = _launches_seen(q)
    args: dict[str, Any]
    if seen is None:  # no verdict committed since launches were stamped: by time, as before
        cond, args = "COALESCE(finished_at, created_at) >= :since", {"since": since}
    else:  # launches the last verdict had not seen end: created after it, or live then (issue 42)
        cond, args = "(id > :top" + (f" OR id IN ({', '.join(str(int(i)) for i in seen[1])})" if seen[1] else "") + ")", \
            {"top": seen[0]}
    launches = [{"id": r[0], "status": r[1], "hypothesis": r[2], "finished_at": r[4], "error": r[5]} for r in q(
        "SELECT id, status, hypothesis_id AS hypothesis, created_at, finished_at, error FROM launch "
        "WHERE status IN ('queued','running') OR (status IN ('failed','cancelled','interrupted') "
        f"AND {cond}) ORDER BY id DESC LIMIT 5", args)]
    for la in launches:
        la["runs"] = {s: int(n) for s, n in q("SELECT status, COUNT(*) FROM run WHERE launch_id = :l GROUP BY status",
                                              {"l": la["id"]})}
    inv_total = int(q("SELECT COUNT(*) FROM run WHERE invalidated = :t", {"t": True})[0][0] or 0)
    invalid = [(int(r[0]), r[1]) for r in q(
        "SELECT id, invalid_reason FROM run WHERE invalidated = :t ORDER BY id DESC LIMIT 3", {"t": True})]
    return RunFacts(total, live_total, live, launches, inv_total, invalid, newest_evidence(q, keep))


# each hypothesis's newest succeeded evidence (its own runs and the runs linked to it), of the runs
# `{only}` restricts it to (evidence_link is looked up by run through ix_evidence_link_run_id, 0003)
NEWEST_SQL = (
    "SELECT h, MAX(at) FROM (SELECT hypothesis_id AS h, COALESCE(finished_at, created_at) AS at FROM run "
    "WHERE hypothesis_id IS NOT NULL AND status = 'succeeded' AND invalidated = :f{only} "
    "UNION ALL SELECT e.hypothesis_id AS h, COALESCE(r.finished_at, r.created_at) AS at FROM evidence_link e "
    "JOIN run r ON r.id = e.run_id WHERE r.status = 'succeeded' AND r.invalidated = :f{r_only}) x GROUP BY h")
NEWEST_ALL_SQL = NEWEST_SQL.format(only="", r_only="")


def newest_evidence(q: Query, keep: Callable[[str, Any], None] | None = None) -> dict[str, str]:
    """Each hypothesis's newest succeeded evidence, as kept under the evidence counter (NEWEST_KEY,
    a derived value in the database itself, so a database restored or swapped never reads another's):
    as kept where the counter has not moved, the kept one with the runs appended since (the journal of
    appends: a newest only grows by them) where only runs were appended (kept again once more than
    `core.duestate.LAZY_RUNS` of them were), else read from every run
    (at 100,000 runs ~60 ms of a first `status`). `keep(key, value)`: what to keep, if anything moved;
    without it (the full path) every run is read, so the full path is the plain path's reference."""
    if keep is None:
        return dict(q(NEWEST_ALL_SQL, {"f": False}))
    row = q(f"SELECT ({EVIDENCE_COUNTER_SQL}), (SELECT value FROM sync_stamp WHERE key = :k), "
            "(SELECT value FROM sync_stamp WHERE key = :j)", {"k": NEWEST_KEY, "j": APPENDS_KEY})[0]
    gen = None if row[0] is None else int(row[0])  # read first: what is read after it is at least as new
    kept, journal = _json(row[1]), _json(row[2])
    if gen is not None and isinstance(kept, dict) and isinstance(kept.get("map"), dict):
        if kept.get("gen") == gen:
            return dict(kept["map"])
        since = DS.journal_since(kept.get("gen"), gen, journal)
        if since is not None:
            out = dict(kept["map"])
            for i in range(0, len(since), CHUNK):
                args = {f"r{j}": int(r) for j, r in enumerate(since[i:i + CHUNK])}
                marks = ", ".join(f":{k}" for k in args)
                for h, at in q(NEWEST_SQL.format(only=f" AND id IN ({marks})", r_only=f" AND r.id IN ({marks})"),
                               {"f": False, **args}):
                    if at is not None and (h not in out or at > out[h]):
                        out[h] = at
            if len(since) > DS.LAZY_RUNS:  # (else carried over again by the next read: no write)
                keep(NEWEST_KEY, {"gen": gen, "map": out})
            return out
    out = dict(q(NEWEST_ALL_SQL, {"f": False}))
    if gen is not None:
        keep(NEWEST_KEY, {"gen": gen, "map": out})
    return out


def _launches_seen(q: Query) -> tuple[int, list[int]] | None:
    raw = sync_value(q, LAUNCHES_SEEN_KEY)
    try:
        d = json.loads(raw) if raw else None
        return (int(d["top"]), [int(i) for i in d["live"]]) if isinstance(d, dict) else None
    except (ValueError, TypeError, KeyError):
        return None


def planned_for(q: Query) -> set[str]:
    """The hypotheses some plan needs (a plan's `needs`: `HYP` or `HYP=falsified`)."""
    out: set[str] = set()
    for (needs,) in q("SELECT needs FROM plan", {}):
        for n in (json.loads(needs) if isinstance(needs, str) else needs) or []:
            out.add(str(n).split("=", 1)[0])
    return out


def due_memo(q: Query) -> tuple[int | None, Any, Any]:
    """(the evidence counter, or None before the first write that made it; the kept memo of what is
    due, or None; the journal of runs appended since, or None), in one snapshot."""
    row = q(f"SELECT ({EVIDENCE_COUNTER_SQL}), (SELECT value FROM sync_stamp WHERE key = :k), "
            "(SELECT value FROM sync_stamp WHERE key = :j)", {"k": DUE_MEMO_KEY, "j": APPENDS_KEY})[0]
    gen = None if row[0] is None else int(row[0])
    return gen, _json(row[1]), _json(row[2])


def _json(raw: Any) -> Any:
    try:
        return json.loads(raw) if raw else None
    except ValueError:
        return None  # not ours to trust: worked out again


def counting_runs(q: Query, ids: list[int]) -> list[tuple[int, str, dict[str, str]]]:
    """(id, uid, canonical labels) of the runs among `ids` that count (succeeded, not invalidated),
    as `store.evidencerows.counting_evidence` reads them: the runs appended since the memo of what
    is due was kept (`core.duestate.carry_over`), on either path."""
    got: dict[int, tuple[str, dict[str, str]]] = {}
    for i in range(0, len(ids), CHUNK):
        args = {f"r{j}": int(r) for j, r in enumerate(ids[i:i + CHUNK])}
        marks = ", ".join(f":{k}" for k in args)
        for rid, uid in q(f"SELECT id, uid FROM run WHERE id IN ({marks}) AND status = 'succeeded' "
                          "AND NOT invalidated", args):
            got[int(rid)] = (str(uid), {})
        for rid, k, v in q(f"SELECT run_id, key, value FROM run_label WHERE run_id IN ({marks})", args):
            if int(rid) in got:
                got[int(rid)][1][k] = v
    return [(rid, uid, canon) for rid, (uid, canon) in sorted(got.items())]
