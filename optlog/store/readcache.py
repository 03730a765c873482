"""The read cache: the JSON documents of the hot read commands, kept until the workspace changes.

Why: an agent calls `status`, `todo list`, `hypothesis list` and `run list` many times a minute,
mostly with nothing changed in between. Working the answer out again costs a process start with
SQLAlchemy, pydantic and 1,000 hypothesis files; checking that nothing changed costs a few stat
calls and one SQLite query with the standard library. So a successful read stores its document
under a *stamp* of everything it could depend on, and the next identical read is answered from it
when the stamp is unchanged. It is never stale, because the stamp covers every input of its read
(`reads_of` says which a read has):

- `optlog.yaml`, the committed evidence folder (`runs/evidence/`), the migration files, optlog's
  version, the `OPTLOG_*` environment; for `status` and `hypothesis list`, the hypothesis files
  (name, mtime, size, inode of each), which the todo and run lists do not read;
- the database: its schema revision, on SQLite the file's inode (a backup restored over it is
  another file) and its integrity stamp (a file changed behind optlog's back is checked first:
  store.integrity); and a change counter (every optlog write, `Database.write`, bumps one; a read
  that does not show the todo list uses the counter that todo writes leave alone; `hypothesis
  list`, whose document is the files and their index, none);
- no pending write-and-commit journal, and nothing live (a live launch can die unseen: recovery
  must run, so nothing is answered from the cache, or stored, while anything is queued or running).

A document is stored only when the stamp taken before the command equals the one taken after it
(no write raced it) and no stat'd file changed within the last `RACY_S` seconds (a file rewritten
twice within one timestamp tick, at the same size, would otherwise look unchanged: git's "racy
clean" problem). Only the standard library is imported here: the cache is consulted before the
CLI loads click, SQLAlchemy or the command tree. `OPTLOG_READ_CACHE=0` turns it off.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from optlog import __version__, settings
from optlog.core.statuses import LIVE_RUN_STATUSES
from optlog.paths import Workspace
from optlog.store import integrity

RACY_S = 1.0
CACHE_DIR = "readcache"
MIGRATIONS_VERSIONS = os.path.join(os.path.dirname(__file__), "migrations", "versions")
# live work: recovery (`service.recovery`) must look at it, so nothing is cached meanwhile
_LIVE_IN = ", ".join(f"'{s}'" for s in LIVE_RUN_STATUSES)  # constants of the vocabulary, never input
LIVE_SQL = (
    f"SELECT 1 FROM launch WHERE status IN ({_LIVE_IN}) "
    f"UNION ALL SELECT 1 FROM run WHERE status IN ({_LIVE_IN}) "
    "UNION ALL SELECT 1 FROM process_record WHERE alive = :t"
)
FACTS_SQL = (
    "SELECT (SELECT n FROM change_counter WHERE id = 1), (SELECT version_num FROM alembic_version), "
    f"EXISTS ({LIVE_SQL}), (SELECT n FROM change_counter WHERE id = 2)"
)

# (change counter, schema revision, anything live, the counter todo writes leave alone) of a
# database (store.db.Database.write: counter 2 is made by the first write after an upgrade)
DbFacts = tuple[object, object, bool, object]
def reads_of(words: list[str]) -> str:
    """What the document of a read (its words) depends on, beside what every stamp covers
    (optlog.yaml, the evidence folder, the database's identity and schema, nothing live):
    "all" (`status`: the hypothesis files and every write), "todos" (`todo list`: the todo table
    alone, moved by every write's counter), "data" (`run list`: the runs, every write but a todo
    list's), "files" (`hypothesis list`: the hypothesis files and their index, derived from them
    and written without moving a counter; an open hypothesis reads `testing` only while its runs
    are live, which is never cached). So a run recorded leaves the hypothesis list valid, and a
    file edited by hand or pulled leaves the todo and run lists valid (issue 47)."""
    if words[:1] == ["status"]:
        return "all"
    if words[:1] == ["todo"]:
        return "todos"
    return "files" if words[:2] == ["hypothesis", "list"] else "data"


def shows_todos(reads: str) -> bool:
    """Whether a read of this kind (`reads_of`) shows the todo list: a list the agent's hook
    queued (store.todoinbox) is applied before it is answered."""
    return reads in ("all", "todos")


@dataclass(frozen=True)
class Stamp:
    key: str  # a digest of every input
    settled: bool  # no stat'd file changed within RACY_S: safe to store under this stamp
    # a digest of the inputs other than the data (optlog's version, the environment, optlog.yaml,
    # the evidence folder, the migrations, the database file and its schema revision): the first
    # read after a change of the data alone may be worked out on plain SQL (optlog.api.firstread)
    # when the full path last answered under the same base (BASE_FILE)
    base: str = ""
    # id → modification time (ns) of each hypothesis file, as this stamp saw them, in the files'
    # name order (the full path's: store.hypfiles.list_files): the first read after a change
    # compares the index with these instead of listing the folder again
    files: dict[str, int] | None = field(default=None, compare=False, hash=False)
    # for `status` ("all"): the same stamp but for the todo list (the counter todo writes leave
    # alone): what the document's parts other than the todo list are kept under (PARTS_KEY)
    sans_todos: str = ""
    # a digest of the hypothesis files' listing (name, mtime, size, inode of each), for `stamp`'s
    # `like`: the stamp after a read worked out on plain SQL reuses the listing before it
    listing: str = field(default="", compare=False, hash=False)


def enabled() -> bool:
    return settings.read("read_cache", "1") != "0"


def _st(path: str) -> tuple[str, float]:
    try:
        s = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return "-", 0.0
    return f"{s.st_mtime_ns}:{s.st_size}:{s.st_ino}", s.st_mtime


def sqlite_facts(ws: Workspace) -> DbFacts | None:
    """The workspace's SQLite database facts, read with the standard library (read-only, no
    migration, no WAL switch); None when there is no database yet or it cannot be read."""
    f = ws.sqlite_file
    if f is None or not f.is_file():
        return None
    try:
        c = sqlite3.connect(f"file:{f}?mode=ro", uri=True, timeout=1.0)
        try:
            row = c.execute(FACTS_SQL.replace(":t", "1")).fetchone()
        finally:
            c.close()
    except sqlite3.Error:
        return None  # an old schema, a broken file: the normal path says what is wrong
    return row[0], row[1], bool(row[2]), row[3]


def db_facts(db: Any) -> DbFacts:
    """The same facts through an open `store.db.Database` (any backend: the MCP face's)."""
    from sqlalchemy import text  # deferred: SQLAlchemy Core (~130 ms); a read served from the cache never loads it

    with db.engine.connect() as c:
        row = c.execute(text(FACTS_SQL), {"t": True}).one()
    return row[0], row[1], bool(row[2]), row[3]


def stamp(ws: Workspace, facts: Callable[[], DbFacts | None] | None = None, *, reads: str = "all",
          like: Stamp | None = None) -> Stamp | None:
    """The stamp of the workspace now, or None when nothing may be answered from the cache
    (disabled, no database, something live, a journal pending). `facts` reads the database's
    facts (default: SQLite through the standard library; the MCP face passes its PostgreSQL one).
    `reads` (`reads_of`): what else the document depends on; a read whose document does not show
    the todo list (`hypothesis list`, `run list`) is not changed by a todo list written (by a
    command, or queued by an agent's hook: issue 47, after the hook every read took the full path
    until one applied the queue), `hypothesis list` by no write to the database, and the todo
    and run lists by no hypothesis file (they are not listed: at 10,000 files a listing costs
    ~40 ms, and the stamp is taken before and after each read).

    `like`: a stamp taken before a read whose document is a function of the hypothesis files as
    *that* stamp listed them (optlog.api.firstread: the index rows it reads must carry the listed
    modification times, else it declines): the files are not listed again, their part of the key
    and their settledness are `like`'s (at 10,000 files a listing is ~40 ms of the first read)."""
    todos = shows_todos(reads)
    scan = reads in ("all", "files")  # reads the hypothesis files
    if not enabled():
        return None
    if facts is None:
        if ws.sqlite_file is None:
            return None  # a shared database without a reader here: the normal path
        facts = lambda: sqlite_facts(ws)  # noqa: E731
    try:
        if any(n.endswith(".json") for n in os.listdir(ws.state_dir / "journal")):
            return None  # an interrupted write-and-commit: the normal path completes it
    except (FileNotFoundError, NotADirectoryError):
        pass
    try:
        if todos and any(n.endswith(".json") for n in os.listdir(ws.state_dir / "todo-inbox")):
            return None  # a todo list queued by an agent's hook (store.todoinbox): applied by the normal path
    except (FileNotFoundError, NotADirectoryError):
        pass
    now = time.time()
    newest = 0.0
    h = hashlib.blake2b(digest_size=16)
    env = settings.optlog_items("read_cache")
    h.update(json.dumps([__version__, str(ws.root), env]).encode())
    for p in (ws.config_file, ws.evidence_dir):
        s, mt = _st(str(p))
        h.update(s.encode() + b"\n")
        newest = max(newest, mt)
    try:
        # the migrations by name, not what else the folder holds: the interpreter's `__pycache__`
        # comes and goes with a checkout (each time, a read took the full path once for it)
        h.update("\n".join(sorted(n for n in os.listdir(MIGRATIONS_VERSIONS) if n.endswith(".py"))).encode())
    except FileNotFoundError:
        return None
    base = h.copy()
    files: dict[str, int] | None = None
    listing = ""
    files_settled = True
    if scan:
        if like is not None and like.listing:
            files, listing, files_settled = like.files, like.listing, like.settled
        else:
            files, listing, newest = _hypothesis_files(ws, newest)
        h.update(listing.encode())
    if ws.sqlite_file is not None:  # the same file (a restored backup is another inode)
        if not integrity.as_stamped(ws.sqlite_file):
            return None  # changed behind optlog's back: the normal path checks it (store.integrity)
        try:
            st = os.stat(ws.sqlite_file)
            h.update(f"db {st.st_dev}:{st.st_ino}\n".encode())
            base.update(f"db {st.st_dev}:{st.st_ino}\n".encode())
        except FileNotFoundError:
            return None
    got = facts()
    if got is None or got[2]:
        return None
    # counter 2 stands for counter 1 until a write made it (tagged: the three never look alike)
    counter = ("c0",) if reads == "files" else ("c1", got[0]) if todos or got[3] is None else ("c2", got[3])
    sans = h.copy()
    h.update(repr((reads, counter, got[1])).encode())
    base.update(repr(got[1]).encode())
    if reads == "all":
        sans.update(repr(("parts", ("c1", got[0]) if got[3] is None else ("c2", got[3]), got[1])).encode())
    return Stamp(h.hexdigest(), settled=files_settled and newest < now - RACY_S, base=base.hexdigest(), files=files,
                 sans_todos=sans.hexdigest() if reads == "all" else "", listing=listing)


def _hypothesis_files(ws: Workspace, newest: float) -> tuple[dict[str, int], str, float]:
    """List the hypothesis files: each one's id → mtime (ns), a digest of the listing (name,
    mtime, size, inode of each, by name), and the newest mtime seen (s).

    Every read pays for it, cached or not (at 10,000 files the `stat` calls alone are ~20 ms):
    the names are sorted before they are looked at and each is looked at relative to the open
    folder, so no entry object is made and no line is sorted (~36 -> ~29 ms at 10,000 files)."""
    hyp = []
    files: dict[str, int] = {}
    stat = os.stat
    try:
        fd = os.open(ws.hypotheses_dir, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except (FileNotFoundError, NotADirectoryError):
        hyp.append("-")
    else:
        try:
            for n in sorted(n for n in os.listdir(fd) if n.endswith(".yaml") and not n.startswith(".")):
                try:
                    st = stat(n, dir_fd=fd)
                except FileNotFoundError:
                    continue  # removed since it was listed (as a listing after the removal would see)
                files[n[:-5]] = st.st_mtime_ns
                hyp.append("%s:%d:%d:%d" % (n, st.st_mtime_ns, st.st_size, st.st_ino))
        finally:
            os.close(fd)
    newest = max(newest, max(files.values(), default=0) / 1e9)
    return files, hashlib.blake2b("\n".join(hyp).encode(), digest_size=16).hexdigest(), newest


PARTS_KEY = "status parts"  # `status`'s document but the todo list (core.statusdoc.parts), under Stamp.sans_todos


def parts_stamp(st: Stamp) -> Stamp | None:
    """The stamp `status`'s parts are kept under (`Stamp.sans_todos`), or None for another read."""
    return Stamp(st.sans_todos, settled=st.settled) if st.sans_todos else None


BASE_FILE = "base"  # the base of the stamp the full path last answered under (Stamp.base)


def base_answered(ws: Workspace, st: Stamp) -> bool:
    """Whether the full path last stored a document under this stamp's base: nothing but the data
    changed since (optlog.api.firstread may then work the read out on plain SQL)."""
    try:
        with open(os.path.join(ws.state_dir, CACHE_DIR, BASE_FILE), encoding="ascii") as f:
            return bool(st.base) and f.read() == st.base
    except (OSError, UnicodeDecodeError):
        return False


CEILINGS_FILE = "ceilings"  # the digest of optlog.yaml's ceilings under the configuration it came from


def config_key(ws: Workspace) -> tuple[str, bool]:
    """A digest of what the workspace's configuration is read from (optlog's version, the
    environment, `optlog.yaml` by name, mtime, size and inode), and whether it is settled (the file
    unchanged for RACY_S)."""
    s, mt = _st(str(ws.config_file))
    key = json.dumps([__version__, str(ws.root), settings.optlog_items("read_cache"), s])
    return hashlib.blake2b(key.encode(), digest_size=16).hexdigest(), mt < time.time() - RACY_S


def note_ceilings(ws: Workspace, ceil_key: str, ceilings: dict[str, float]) -> None:
    """The full path read the ceilings (`service.verdicts.due`): keep their digest beside the
    configuration's, and their values, so the first `status` on plain SQL (which reads no
    optlog.yaml) knows them: the digest says whether the memo of what is due still holds, the
    values are what a prediction's evidence fingerprint hashes when it does not."""
    key, settled = config_key(ws)
    if not settled or not enabled():
        return
    path = os.path.join(ws.state_dir, CACHE_DIR, CEILINGS_FILE)
    text = f"{key} {ceil_key} {json.dumps(ceilings, separators=(',', ':'))}"
    try:
        with open(path, encoding="ascii") as f:
            if f.read() == text:
                return
    except (OSError, UnicodeDecodeError):
        pass
    _replace(path, text, "ascii")


def _replace(path: str, text: str, encoding: str) -> bool:
    """Write `text` to `path` whole or not at all (a temporary file renamed over it); False on an
    OSError, the temporary file removed. Standard library only: the cached path loads no yamlio."""
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(tmp, "w", encoding=encoding) as f:
            f.write(text)
        os.replace(tmp, path)
        return True
    except OSError:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        return False


def noted_ceilings(ws: Workspace) -> tuple[str, dict[str, float]] | None:
    """The digest and the values of the ceilings `note_ceilings` kept, if the configuration is
    still the one it came from; else None."""
    try:
        with open(os.path.join(ws.state_dir, CACHE_DIR, CEILINGS_FILE), encoding="ascii") as f:
            key, ceil, values = f.read().split(" ", 2)
        got = json.loads(values)
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    if key != config_key(ws)[0] or not isinstance(got, dict):
        return None
    return ceil, got


# a kept rows file's first line: this optlog, this layout (2: the list entries as printed)
ROWS_HEAD = __version__ + " rows/2"
NEWER = ".newer"  # beside a kept rows file: the rows worked out since it was written whole (keep_rows)


def _lines(path: str) -> list[str]:
    """The lines of a kept rows file under this optlog's layout head (none under another's)."""
    try:
        with open(path, encoding="utf-8", newline="") as fh:
            head, _, text = fh.read().partition("\n")
    except (OSError, UnicodeDecodeError):
        return []
    return text.split("\n") if head == ROWS_HEAD else []  # (not splitlines: U+2028 is text)


def _read_rows(path: str, width: int) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for line in _lines(path):
        f = line.split("\t")
        if len(f) == width + 1:
            out[f[0]] = f[1:]
    return out


def _write_rows(path: str, rows: dict[str, list[str]]) -> None:
    """`rows` one line each, whole or not at all; a row with a tab or newline in its id or a field
    is left out (the next read works it out again)."""
    lines = [h + "\t" + "\t".join(fs) for h, fs in rows.items()]
    text = "\n".join(lines)
    # (one count of each, not a test of each field: a tab or newline inside a field breaks the count)
    if text.count("\t") != sum(map(len, rows.values())) or text.count("\n") != len(lines) - 1:
        lines = [x for x, fs in zip(lines, rows.values()) if x.count("\t") == len(fs) and "\n" not in x]
        text = "\n".join(lines)
    _replace(path, ROWS_HEAD + "\n" + text + ("\n" if lines else ""), "utf-8")


def kept_rows(ws: Workspace, name: str, width: int) -> dict[str, list[str]]:
    """The rows `keep_rows` kept under `name` by this version of optlog: id → its `width` fields
    (a line of tab-separated fields each; a line of another width is not ours), the newer ones
    over the whole file's. Keyed by what they are derived from (so never stale), they only save
    work: whatever mix of two processes' files is read, a row is right for the key it names."""
    path = os.path.join(ws.state_dir, CACHE_DIR, name)
    out = _read_rows(path, width)
    out.update(_read_rows(path + NEWER, width))
    return out


def keep_rows(ws: Workspace, name: str, rows: dict[str, list[str]], fresh: list[str] | None = None) -> None:
    """Keep text rows (id → fields: hashes, compact JSON texts, which hold no raw tab or newline)
    for `kept_rows`, one line each; a row with a tab or newline in a field is left out (worked out
    again by the next read). For values derived by file hash from 10,000 hypotheses: joined and
    split, not encoded twice as JSON. `fresh`: the ids worked out since `rows` were read, where
    every other row is as kept: those go to the small file of newer rows (at 10,000 hypotheses
    writing the whole file again was ~10 ms of a first read), until it holds an eighth of the rows."""
    if not enabled():
        return
    path = os.path.join(ws.state_dir, CACHE_DIR, name)
    if fresh is not None and os.path.exists(path):
        newer = {h: rows[h] for h in [*(x.partition("\t")[0] for x in _lines(path + NEWER)), *fresh] if h in rows}
        if len(newer) <= len(rows) // 8:
            _write_rows(path + NEWER, newer)
            return
    _write_rows(path, rows)
    try:
        os.unlink(path + NEWER)
    except OSError:
        pass


def _file(ws: Workspace, key: str) -> str:
    name = hashlib.blake2b(key.encode(), digest_size=12).hexdigest()
    return os.path.join(ws.state_dir, CACHE_DIR, f"{name}.json")


def get(ws: Workspace, key: str, st: Stamp) -> str | None:
    """The stored document text of read `key` under stamp `st`, or None."""
    try:
        with open(_file(ws, key), encoding="utf-8") as f:
            head = f.readline()
            if head.rstrip("\n") != f"{st.key} {key}":
                return None
            return f.read()
    except (OSError, UnicodeDecodeError):
        return None


MAX_ENTRIES = 64  # distinct argument lists kept (an agent uses a handful)


def _prune(d: str) -> None:
    """Keep the folder small: past MAX_ENTRIES documents, the least recently written go."""
    try:
        with os.scandir(d) as it:
            ents = [(e.stat().st_mtime_ns, e.path) for e in it if e.name.endswith(".json")]
    except OSError:
        return
    for _mt, p in sorted(ents)[: max(0, len(ents) - MAX_ENTRIES + 1)]:
        try:
            os.unlink(p)
        except OSError:
            pass


def put(ws: Workspace, key: str, st: Stamp, text: str, *, full: bool = True) -> bool:
    """Store `text` (one compact JSON document; a read's as printed, `core.text.json_shown`'s, which
    `optlog.cli.fast` prints as it is) for read `key` under stamp `st` (atomically);
    `full`: the full path worked it out (its base is recorded: BASE_FILE)."""
    if not st.settled or "\n" in key:
        return False
    path = _file(ws, key)
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        _prune(os.path.dirname(path))
    except OSError:
        return False
    if not _replace(path, f"{st.key} {key}\n{text}", "utf-8"):
        return False
    if full and st.base and not _replace(os.path.join(os.path.dirname(path), BASE_FILE), st.base, "ascii"):
        return False
    return True
