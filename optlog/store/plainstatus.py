"""`status` on plain SQL (issue 47, `store.plainread`'s first read after a change): its document
built by `core.statusdoc`, the same code the full path runs, from the index's JSON documents and
`plainread`'s reads. Its own module: status's rules (core.statusdoc and core.discriminate, ~25 ms
to import) load only when a status is worked out, never for a read the read cache answers."""

from __future__ import annotations

from typing import Any

from optlog.core import statusdoc as SD
from optlog.paths import Workspace
from optlog.store import readcache
from optlog.store.plainread import (TODO_OWNER_KEY, Query, due_memo, indexed_docs, planned_for, query, run_facts,
                                    sync_value, todo_list)


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


def verdicts_due(q: Query, ws: Workspace, docs: dict[str, IndexedDoc]) -> dict[str, str] | None:
    """`service.verdicts.due` from its memo alone: None unless the memo was kept under the current
    evidence counter and ceilings and holds every hypothesis with predictions as it is now (else
    the full path works it out from the runs)."""
    hs = {h: d for h, d in docs.items() if d.predictions and not d.override}
    if not hs:
        return {}
    ceil_key = readcache.noted_ceilings(ws)
    gen, memo = due_memo(q)
    if ceil_key is None or gen is None or not isinstance(memo, dict) or memo.get("gen") != gen \
            or memo.get("ceilings") != ceil_key:
        return None
    known = memo.get("hyps") or {}
    out: dict[str, str] = {}
    for h, d in hs.items():
        k = known.get(h)
        preds = d.doc.get("predictions") or []
        vs = d.verdicts
        if not (isinstance(k, list) and len(k) == 2 and k[0] == SD.due_digest(preds, None, vs[-1] if vs else None)):
            return None
        if k[1]:
            out[h] = str(k[1])
    return out


def status(con: Any, ws: Workspace) -> dict[str, Any] | None:
    """`status` (the caller has checked nothing is live and no todo list is queued): None when a
    hypothesis file changed since it was indexed, or what is due must be worked out from the runs."""
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
    why = verdicts_due(q, ws, docs) if runs["total"] else {}
    if why is None:
        return None
    owner = sync_value(q, TODO_OWNER_KEY)
    return SD.document(str(ws.root), docs, latest, last_at, runs, why, todo_list(con)["todos"], planned_for(q), owner)
