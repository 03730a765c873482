"""`status` on plain SQL (issue 47, `store.plainread`'s first read after a change): its document
built by `core.statusdoc`, the same code the full path runs, from the index's JSON documents and
`plainread`'s reads. Its own module: status's rules (core.statusdoc and core.discriminate, ~25 ms
to import) load only when a status is worked out, never for a read the read cache answers."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Callable, Collection, Mapping
from functools import partial
from typing import TYPE_CHECKING, Any

from optlog import __version__
from optlog.core import duestate as DS
from optlog.core import jsondoc
from optlog.core import statusdoc as SD
from optlog.paths import Workspace
from optlog.store import plainwrite, readcache
from optlog.store.plainread import (DUE_MEMO_KEY, LINK_ROWS_SQL, SYNC_SET_SQL, TODO_OWNER_KEY, Query, as_listed,
                                    counting_runs, documents, due_memo, kept_by_hash, planned_for, query, run_facts,
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


class Brief:
    """A hypothesis as `core.statusdoc` reads it, from its row kept by file hash (`briefs`): what
    `status` asks of every hypothesis (its links, statuses, whether it has predictions, verdicts,
    status changes) from the row's columns; the rest (`core.statusdoc.brief`: the title, the
    predictions, the verdicts and status changes) parsed from the row's JSON when asked: for the
    few `status` shows, and all at once (`read`) where many are (at 10,000 hypotheses parsing and
    wrapping every brief was ~40 ms of each first `status`)."""

    __slots__ = ("id", "created", "parent", "rivals", "status", "auto_status", "override", "n_predictions",
                 "_verdicts", "_history", "_text", "_doc")

    def __init__(self, hid: str, f: list[str]) -> None:
        # f: a `BRIEFS` row: its file hash, its due digest (`_row`), then these
        _fh, _dg, created, parent, rivals, self.status, auto, ov, npred, nv, nh, self._text = f
        self.id, self.created, self.parent = hid, created or None, parent or None
        self.rivals: list[str] = json.loads(rivals) if rivals else []
        self.auto_status, self.override = auto or None, {"status": ov} if ov else None
        self.n_predictions, self._verdicts, self._history = int(npred), nv != "0", nh != "0"
        self._doc: dict[str, Any] | None = None

    def effective_status(self) -> str:
        return self.override["status"] if self.override else (self.auto_status or self.status)

    @property
    def doc(self) -> dict[str, Any]:
        if self._doc is None:
            self._doc = json.loads(self._text)
        return self._doc

    @property
    def title(self) -> str:
        return str(self.doc["title"])

    @property
    def predictions(self) -> list[_Pred]:
        return [_Pred(p) for p in self.doc["predictions"]] if self.n_predictions else []

    @property
    def verdicts(self) -> list[dict[str, Any]]:
        return list(self.doc["verdicts"]) if self._verdicts else []

    @property
    def history(self) -> list[dict[str, Any]]:
        return list(self.doc["history"]) if self._history else []


def read(docs: Any) -> None:
    """Parse the briefs of these `Brief`s not parsed yet, in one call (each alone costs more)."""
    todo = [d for d in docs if d._doc is None]
    for d, got in zip(todo, json.loads("[" + ",".join(d._text for d in todo) + "]")):
        d._doc = got


def _row(d: dict[str, Any]) -> list[str]:
    """A hypothesis's `BRIEFS` row from its index document: its due digest, then what `Brief`
    reads of every hypothesis, then its brief (`core.statusdoc.brief`) as compact JSON."""
    b = SD.brief(d)
    return [SD.due_digest(d.get("predictions") or [], None, (d.get("verdicts") or [None])[-1]),
            b["created"] or "", b["parent"] or "", json.dumps(b["rivals"], separators=(",", ":")) if b["rivals"] else "",
            b["status"], b["auto_status"] or "", b["override"]["status"] if b["override"] else "",
            str(len(b["predictions"])), str(len(b["verdicts"])), str(len(b["history"])),
            json.dumps(b, separators=(",", ":"), ensure_ascii=False)]


def verdicts_due(q: Query, ws: Workspace, due_in: dict[str, Any], docs: Callable[[], dict[str, Brief] | None],
                 few: Callable[[list[str]], dict[str, dict[str, Any]]],
                 rows: Rows, is_sqlite: bool, keep: Callable[[dict[str, Any]], None],
                 full: Callable[[list[str]], dict[str, IndexedDoc]]) -> Mapping[str, str] | None:
    """`service.verdicts.due` on plain SQL: from its memo where it was kept under the current
    evidence counter and ceilings for every hypothesis with predictions as it is now; where the
    writes since only appended runs (their journal: `store.db.Database.appended`), the memo carried
    over the new runs (their labels read, not the runs before them): up to `core.duestate.LAZY_RUNS`
    of them only as far as `status` shows it (`core.statusdoc.due_carried`: the memo is left as it
    was), more by `core.duestate.carry_over` (the memo is kept again); else
    worked out as the full path works it out (`core.due` on `store.evidencerows`' evidence) for the
    hypotheses the memo does not hold, and the new memo handed to `keep`. None where the
    ceilings were never noted under this configuration (the full path reads optlog.yaml), or a
    hypothesis read is no longer as indexed.
    `due_in`: what it reads of every hypothesis (`_due_in`: the due digests of those with
    predictions and no manual status, `core.statusdoc.due_digest`, and which of them have verdicts);
    `docs`: every hypothesis as `status` reads it (`Brief`), only where the memo is carried over
    or worked out for all (None: one changed meanwhile); `few`: the briefs of some
    (`core.statusdoc.brief`), which carrying over as far as `status` shows reads; `full`: the
    whole documents of some, which judging reads."""
    digests: dict[str, str] = due_in["digests"]
    if not digests:
        return {}
    noted = readcache.noted_ceilings(ws)
    if noted is None:
        return None
    ceil_key, ceil = noted
    gen, memo, journal = due_memo(q)

    def views(ids: Collection[str]) -> dict[str, DS.View]:
        got = few(list(ids))
        if len(got) != len(set(ids)):  # (the caller reads NotCarried as: the full path works it out)
            raise DS.NotCarried("a hypothesis was indexed again meanwhile")
        return _views(got)

    carried = SD.due_carried(digests, gen, memo, journal, ceil_key, views, due_in["verdicted"],
                             lambda since: counting_runs(q, since))
    if carried is not None:
        return carried  # (in the digests' order; the memo is kept again by a read after more runs, or the full path)
    briefs = docs()
    if briefs is None:
        return None
    out, work, states, current = SD.due_known(
        digests, gen, memo, journal, ceil_key,
        lambda: _views(_parsed({h: briefs[h] for h in digests})),
        lambda since: counting_runs(q, since))
    if current:
        return out
    if work:
        from optlog.store.plaindue import judged  # deferred: the verdict engine (core.due, core.verdict, ~30 ms)

        whole = full(work)
        if len(whole) != len(work):
            return None  # a row gone meanwhile: the full path
        out.update(judged(whole, ceil, rows, is_sqlite, states))
    if gen is not None:  # (carried over too, as the full path keeps it: at 10,000 hypotheses carrying over is ~50 ms)
        keep(SD.due_memo_doc(gen, ceil_key, digests, out, states))
    return {h: out[h] for h in digests if h in out}


def _parsed(hs: dict[str, Brief]) -> dict[str, dict[str, Any]]:
    """Each brief's JSON (`core.statusdoc.brief`), every one not parsed yet parsed in one call."""
    read(hs.values())
    return {h: d.doc for h, d in hs.items()}


def _views(briefs: Mapping[str, dict[str, Any]]) -> dict[str, DS.View]:
    """What carrying over reads of each (`core.duestate.View`), from its brief."""
    return {h: (b.get("predictions") or [], b["verdicts"][-1] if b.get("verdicts") else None)
            for h, b in briefs.items()}


def _due_in(docs: dict[str, Brief], digests: dict[str, str]) -> dict[str, Any]:
    """What `verdicts_due` reads of every hypothesis: the due digest of each with predictions and no
    manual status (`service.verdicts.due` judges those), in the files' order, and which of them have
    verdicts (as JSON data, kept with `status`'s side)."""
    hs = [h for h, d in docs.items() if SD.predicts(d) and not d.override]
    return {"digests": {h: digests[h] for h in hs}, "verdicted": [h for h in hs if docs[h]._verdicts]}


BRIEFS = "status-briefs"  # store.readcache.keep_rows: each hypothesis's `_row` by file hash


def briefs(ws: Workspace, con: Any, files: dict[str, int],
           links: list[Any] | None = None) -> tuple[dict[str, Brief], dict[str, str]] | None:
    """Each hypothesis as `status` reads it (a `Brief`: `core.statusdoc.brief` of its index
    document) and its due digest (`core.statusdoc.due_digest`), in the full path's order (the
    files by name), when every file is as indexed; else None. Both are functions of the file's
    bytes, so they are kept by file hash (`plainread.kept_by_hash`): a first `status` after one
    file changed reads that one's index document only (at 10,000 hypotheses reading and parsing
    every document was ~130 ms)."""
    kept = kept_by_hash(ws, con, files, links, BRIEFS, 12, _row)
    if kept is None:
        return None
    _rows, got = kept  # id → [file hash, due digest, *Brief's columns, brief JSON]
    # the full path's order: the files by name (store.hypfiles.list_files, as `files` lists them),
    # not the index rows' (kept_by_hash has checked that they name the same hypotheses)
    return {h: Brief(h, got[h]) for h in files}, {h: got[h][1] for h in files}


SIDE_KEY = "status side"  # store.readcache.put: `status`'s side (`core.statusdoc.side`) and `_due_in`, by `_side_stamp`


def _side_stamp(rows: list[Any]) -> readcache.Stamp:
    """What `status`'s side is kept under: a digest of optlog's version and each index row's id and
    file hash (in the rows' order: another order only misses). Both parts are functions of the
    hypotheses' files as indexed (`core.statusdoc.side` of their briefs), so nothing but a
    hypothesis changed moves it: not a run, a launch, a plan or a todo list."""
    text = " ".join([f"{r[0]} {r[2]}" for r in rows])
    return readcache.Stamp(hashlib.blake2b(f"{__version__}\n{text}".encode(), digest_size=16).hexdigest(),
                           settled=True)


def _worked_side(ws: Workspace, con: Any, files: dict[str, int],
                 rows: list[Any]) -> tuple[dict[str, Brief], dict[str, Any]] | None:
    """Every hypothesis as `status` reads it (`briefs`) and what `status` reads of them all:
    `core.statusdoc.side` and `_due_in`; None where a file is not as indexed."""
    got = briefs(ws, con, files, rows)
    if got is None:
        return None
    docs, digests = got
    told = {h: d for h, d in docs.items() if d._verdicts or d._history}  # (no other has a verdict or status change)
    read(told.values())  # (latest_verdicts reads them: parsed at once)
    latest, last_at = SD.latest_verdicts(told)
    return docs, {"side": SD.side(docs, latest, last_at), "due": _due_in(docs, digests)}


def status(con: Any, ws: Workspace, files: dict[str, int], links: list[Any] | None = None,
           parts: dict[str, Any] | None = None, kept: dict[str, Any] | None = None) -> dict[str, Any] | None:
    """`status` (the caller has checked nothing is live and no todo list is queued): None when a
    hypothesis file changed since it was indexed, or the ceilings were not noted under this
    configuration. `parts`: the document but the todo list (`core.statusdoc.parts`), kept under
    a stamp that nothing but todo writes moved since: assembled with the todo list as it is now.
    `kept`: gets the parts worked out (compact JSON). `links`: the index rows `plainread.reindexed`
    read and checked (else read here).

    What it reads of the hypotheses (`core.statusdoc.side`, and the due digests) is kept by the
    index's file hashes (`SIDE_KEY`): the first `status` after a run, a launch or a plan reads no
    brief but the few what is due shows (at 10,000 hypotheses reading and wrapping every brief,
    and the side worked out from them, were ~40 ms of it)."""
    q = query(con)
    if isinstance(parts, dict):  # (kept under a stamp that names optlog's version: parts this version wrote)
        return SD.assemble(parts, todo_list(con)["todos"], sync_value(q, TODO_OWNER_KEY))
    rows = links
    if not rows:  # (`reindexed` fills `links` only where it found every file as indexed: checked so)
        rows = con.execute(LINK_ROWS_SQL).fetchall()
        if not as_listed(rows, files):
            return None
    side_st = _side_stamp(rows)
    text = readcache.get(ws, SIDE_KEY, side_st)
    held = jsondoc.loads(text) if text else None
    docs: dict[str, Brief] | None = None
    if not isinstance(held, dict):
        worked = _worked_side(ws, con, files, rows)
        if worked is None:
            return None
        docs, held = worked
        readcache.put(ws, SIDE_KEY, side_st, json.dumps(held, separators=(",", ":"), ensure_ascii=False), full=False)

    def every() -> dict[str, Brief] | None:
        nonlocal docs
        if docs is None:
            got = briefs(ws, con, files, rows)
            docs = got[0] if got is not None else None
        return docs

    def few(ids: list[str]) -> dict[str, dict[str, Any]]:
        if docs is not None:
            return _parsed({h: docs[h] for h in ids})
        got = documents(con, ids, files)
        return {h: SD.brief(d) for h, (_fh, d) in got.items()}

    side = held["side"]
    latest = side["latest"]
    keeps: dict[str, Any] = {}  # derived values to keep (sync_stamp key → value), in one write at the end
    f = run_facts(q, latest[0]["at"] if latest else "", SD.LIVE_CAP, keeps.__setitem__)
    if f.live_total:
        return None  # which hypotheses are testing: the full path (recovery first)
    runs = SD.runs_section(f, set())
    try:
        why = verdicts_due(q, ws, held["due"], every, few, lambda sql, params: con.execute(sql, params).fetchall(),
                           isinstance(con, sqlite3.Connection), partial(keeps.__setitem__, DUE_MEMO_KEY),
                           lambda ids: {h: IndexedDoc(d) for h, (_fh, d) in documents(con, ids, files).items()}) \
            if runs["total"] else {}
        if why is None:
            return None
        if keeps:
            _keep(ws, con, keeps)
        p = SD.parts_of(str(ws.root), side, runs, why, planned_for(q))
    except DS.NotCarried:
        return None  # a kept state that did not fit after all: the full path works what is due out
    if kept is not None:
        kept["parts"] = json.dumps(p, separators=(",", ":"), ensure_ascii=False, default=str)  # (as the document is)
    return SD.assemble(p, todo_list(con)["todos"], sync_value(q, TODO_OWNER_KEY))


def _keep(ws: Workspace, con: Any, values: dict[str, Any]) -> None:
    """Keep derived values (sync_stamp key → JSON data: the memo of what is due, as the full path
    keeps it, `store.statusrows.set_due_memo`; the newest evidence) in one derived write (no counter
    moved); each is only a saving, so a busy writer or an error leaves it for the next read to work out."""
    pg = None if isinstance(con, sqlite3.Connection) else con
    try:
        with plainwrite.writing(ws.sqlite_file if pg is None else None, pg) as w:
            for k, v in values.items():
                for sql in SYNC_SET_SQL:
                    w.run(sql, {"k": k, "v": json.dumps(v, separators=(",", ":"))})
    except Exception:  # noqa: BLE001  (the memo is worked out again by the next read that needs it)
        pass
