"""The first read after a change (issue 47), worked out on plain SQL: `status`, `todo list`,
`hypothesis list` and `run list --limit N` under `--json` (and a plain `status`, from the same
document), when the read cache has no document for the current stamp, are answered by
`optlog.store.plainread` on the standard library's `sqlite3` or plain psycopg, before click,
SQLAlchemy or SQLModel are imported.

Only where that gives the full path's document exactly: the stamp says nothing is live, no
write-and-commit journal is pending (and, for the todo list, no queued list waits), the database
file is as optlog last knew it; and the full path itself last answered under the same *base* of the
stamp (optlog's version, the environment, `optlog.yaml`, the evidence folder, the migrations, the
database file and its schema revision: `store.readcache.Stamp.base`), so only data changed since:
rows written by optlog, hypothesis files. A hypothesis file changed since it was indexed (by
hand, by a pull) is read, validated and re-indexed with the full path's own loader
(`store.plainindex`). The document is stored in the read cache when no write raced it, as the full
path's would be; `status`'s parts but the todo list beside it (`core.statusdoc.parts`), which the
first `status` after a todo list alone assembles with the new list.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import partial
from typing import Any

from optlog import nocycles
from optlog.core import jsondoc
from optlog.core.text import json_shown
from optlog.paths import Workspace
from optlog.store import plainread, readcache, todoinbox


def answer(ws: Workspace, key: str, st: readcache.Stamp, *, reads: str, pg: Any = None,
           notices: list[str] | None = None) -> str | None:
    """The compact JSON text of read `key` (a cache key: the command's words without `--json`)
    worked out on plain SQL (`pg`: a `plainread.pg_connect` connection, else the SQLite file),
    or None (the full path answers). `notices`: what the full path would narrate on the way (a
    hand edit picked up), for the caller to say."""
    if not readcache.base_answered(ws, st):
        return None
    with nocycles.paused():  # (at 10,000 hypotheses ~2/3 of reading the briefs went to the collector)
        return _answer(ws, key, st, reads=reads, pg=pg, notices=notices)


def _answer(ws: Workspace, key: str, st: readcache.Stamp, *, reads: str, pg: Any,
            notices: list[str] | None) -> str | None:
    said: list[str] = []
    kept: dict[str, Any] = {}  # `status`'s parts worked out (core.statusdoc.parts), to keep beside the document
    doc = plainread.document(ws, jsondoc.loads(key), pg, said, status=partial(_status, st=st, kept=kept),
                             files=st.files)
    if notices is not None:
        notices.extend(said)  # said even when the read falls back: the index is written already
    if doc is None:
        return None
    # (a text is shown already: `plainread.hypothesis_list_text` joins entries kept as printed)
    text = doc if isinstance(doc, str) else json_shown(json.dumps(doc, default=str, ensure_ascii=False))
    after = readcache.stamp(ws, facts(pg), reads=reads, like=st)  # (the document reads the files as `st` listed them)
    if not said and after is not None and after.key == st.key:  # no write raced the read, nothing narrated
        readcache.put(ws, key, after, text, full=False)
        ps = readcache.parts_stamp(after)
        if "parts" in kept and ps is not None:
            readcache.put(ws, readcache.PARTS_KEY, ps, kept["parts"], full=False)
    return text


def _status(con: Any, ws: Workspace, files: dict[str, int], links: list[Any], *, st: readcache.Stamp,
            kept: dict[str, Any]) -> dict[str, Any] | None:
    """`status` on plain SQL: from the parts kept under the stamp but for the todo list where a
    todo list alone changed since (the hook's, a `todo write`: core.statusdoc.assemble), else
    worked out (its parts handed back in `kept`, compact JSON, to keep if no write raced)."""
    from optlog.store.plainstatus import status  # deferred: status's rules (core.statusdoc, core.discriminate: ~25 ms), which a read the cache answers never needs

    ps = readcache.parts_stamp(st)
    got = readcache.get(ws, readcache.PARTS_KEY, ps) if ps is not None else None
    return status(con, ws, files, links, parts=jsondoc.loads(got) if got else None, kept=kept)


def facts(pg: Any) -> Callable[[], readcache.DbFacts | None] | None:
    """The database facts of a stamp: on the `pg_connect` connection, else (None) SQLite's."""
    return None if pg is None else (lambda: plainread.pg_facts(pg))


def pg_connection(ws: Workspace) -> Any:
    """A plain psycopg connection to the workspace's PostgreSQL schema, or None (SQLite, or
    not answerable this way: the full path)."""
    if ws.sqlite_file is not None:
        return None
    return plainread.pg_connect(ws.db_url, ws.identity)


def apply_queued(ws: Workspace, pg: Any = None) -> None:
    """Apply the todo lists an agent's hook queued on plain SQL (`store.plaintodos`; `pg`: a
    `plainread.pg_connect` connection, else the SQLite file), where the full path last answered
    under the same base: the read of the todo list after the hook is then a first read like any
    other. Whatever it cannot apply, the full path applies."""
    if not todoinbox.pending(ws):
        return
    st = readcache.stamp(ws, facts(pg), reads="data")  # nothing live, no journal, the file as stamped
    if st is None or not readcache.base_answered(ws, st):
        return
    from optlog.store.plaintodos import drain  # deferred: applying a list (core.todos' checks): only after the hook

    drain(ws, ws.sqlite_file, pg)
