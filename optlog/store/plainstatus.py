"""`status` on plain SQL (issue 47, `store.plainread`'s first read after a change): its document
built by `core.statusdoc`, the same code the full path runs, from the index's JSON documents and
`plainread`'s reads. Its own module: status's rules (core.statusdoc and core.discriminate, ~25 ms
to import) load only when a status is worked out, never for a read the read cache answers."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any

from optlog.core import statusdoc as SD
from optlog.paths import Workspace
from optlog.store import readcache
from optlog.store.plainread import (TODO_OWNER_KEY, Query, due_memo, indexed_docs, planned_for, query, run_facts,
                                    sync_value, todo_list)


if TYPE_CHECKING:  # (importing it would load the verdict engine, which a memo that holds never needs)
    from optlog.store.evidencerows import Rows

class _Pred:
    """A prediction as `core.statusdoc` reads it, from its JSON dump."""

    __slots__ = ("id", "status", "post_hoc")

    def __init__(self, p: dict[str, Any]) -> None:
        self.id, self.status, self.post_hoc = p["id"], p["status"], p.get("post_hoc")


class IndexedDoc:
    """A hypothesis as `core.statusdoc` reads it (`core.hypothesis.HypothesisDoc`'s attributes),
    from the index's JSON dump of its model."""

    def __init__(self, d: dict[str, Any]) -> None:
        self.doc = d
        self.id: str = d["id"]
        self.title: str = d["title"]
        self.created: str | None = d.get("created")
        self.parent: str | None = d.get("parent")
        self.rivals: list[str] = list(d.get("rivals") or ())
        self.status: str = d["status"]
        self.auto_status: str | None = d.get("auto_status")
        self.override: dict[str, Any] | None = d.get("override") or None
        self.predictions = [_Pred(p) for p in d.get("predictions") or ()]
        self.verdicts: list[dict[str, Any]] = list(d.get("verdicts") or ())
        self.history: list[dict[str, Any]] = list(d.get("history") or ())

    def effective_status(self) -> str:
        return self.override["status"] if self.override else (self.auto_status or self.status)


def verdicts_due(q: Query, ws: Workspace, docs: dict[str, IndexedDoc],
                 rows: Rows, is_sqlite: bool,
                 keep: Callable[[dict[str, Any]], None]) -> dict[str, str] | None:
    """`service.verdicts.due` on plain SQL: from its memo where it was kept under the current
    evidence counter and ceilings for every hypothesis with predictions as it is now; else worked
    out as the full path works it out (`core.due` on `store.evidencerows`' evidence) for the
    hypotheses the memo does not hold, and the new memo handed to `keep`. None where the ceilings
    were never noted under this configuration (the full path reads optlog.yaml)."""
    hs = {h: d for h, d in docs.items() if d.predictions and not d.override}
    if not hs:
        return {}
    noted = readcache.noted_ceilings(ws)
    if noted is None:
        return None
    ceil_key, ceil = noted
    gen, memo = due_memo(q)
    digests = {h: SD.due_digest(d.doc.get("predictions") or [], None, d.verdicts[-1] if d.verdicts else None)
               for h, d in hs.items()}
    out, work = SD.due_from_memo(digests, gen, memo, ceil_key)
    if not work:
        return out
    from optlog.store.plaindue import judged  # deferred: the verdict engine (core.due, core.verdict, ~30 ms)

    out.update(judged({h: hs[h] for h in work}, ceil, rows, is_sqlite))
    if gen is not None:
        keep(SD.due_memo_doc(gen, ceil_key, digests, out))
    return {h: out[h] for h in hs if h in out}


def status(con: Any, ws: Workspace) -> dict[str, Any] | None:
    """`status` (the caller has checked nothing is live and no todo list is queued): None when a
    hypothesis file changed since it was indexed, or the ceilings were not noted under this
    configuration."""
    indexed = indexed_docs(con, ws.hypotheses_dir)
    if indexed is None:
        return None
    docs = {h: IndexedDoc(d) for h, d in indexed.items()}
    q = query(con)
    latest, last_at = SD.latest_verdicts(docs)
    f = run_facts(q, latest[0]["at"] if latest else "", SD.LIVE_CAP)
    if f.live_total:
        return None  # which hypotheses are testing: the full path (recovery first)
    runs = SD.runs_section(f, set())
    why = verdicts_due(q, ws, docs, lambda sql, params: con.execute(sql, params).fetchall(),
                       isinstance(con, sqlite3.Connection), partial(_keep, ws, con)) if runs["total"] else {}
    if why is None:
        return None
    owner = sync_value(q, TODO_OWNER_KEY)
    return SD.document(str(ws.root), docs, latest, last_at, runs, why, todo_list(con)["todos"], planned_for(q), owner)


def _keep(ws: Workspace, con: Any, memo: dict[str, Any]) -> None:
    """Keep the memo of what is due (`store.plaindue.keep`), loaded only when one was worked out."""
    from optlog.store.plaindue import keep  # deferred: the verdict engine (core.due, core.verdict, ~30 ms)

    keep(ws, con, memo)
