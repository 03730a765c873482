"""Hypotheses: add, list, show, set status (manual override), and the file ↔ index sync.

Every change to a hypothesis goes through `mutate`: lock, read the file (hash h0), change the
model, write only if the file still has h0, update the index, commit to git.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from pydantic import ValidationError

from optlog import nocycles
from optlog.core.hypothesis import HYP_STATUSES, HypothesisDoc, Override, StatusChange, check_id, link_problems, slugify
from optlog.core import family
from optlog.core import statusdoc as SD
from optlog.core.text import windows_reserved
from optlog.core.timeutil import now_iso
from optlog.errors import BadInput, NotFound, no_space, not_found, out_of_space, param
from optlog.gitlog import history
from optlog.gitlog import trailers as TR
from optlog.needs import Index, Reads, Writes
from optlog.paths import Workspace
from optlog.service import evidence, journal
from optlog.service import documents
from optlog.service.evidence import live_hypotheses
from optlog.service.refs import require  # noqa: F401  (re-exported: links are checked through hypotheses.require too)
from optlog.store import cas, hypfiles, hypindex
from optlog.store.lock import workspace_lock
from optlog.yamlio import line_of, read_text

# ---------------------------------------------------------------- index sync


def sync(ctx: Reads) -> hypindex.Hypotheses:
    """Bring the database index in line with the files; return every hypothesis by id.

    Unchanged files (same mtime) are not re-read: where this optlog has validated every index
    document (`store.hypindex.CHECKED_KEY`), each is validated from its index row when first read
    (`store.hypindex.Hypotheses`) and the links are checked from the rows' link columns; else
    every index document is validated now, each that fails read again from its file, and that
    noted. A changed file is validated (errors name file, line, field) and re-indexed; a hand
    edit is reported once. It only reads and indexes: what an interrupted optlog left half
    written is committed by opening a session that may write (`service.context`, the journal
    step), never as a side effect of a read, which sees those files as written and calls them
    no hand edit."""
    ctx.db  # noqa: B018  (opened: for a session that may write, the journal step has run)
    stamps = hypfiles.stamps(ctx.ws)  # (stat'ed once: at 10,000 files a second pass was ~25 ms of every write)
    memo = ctx.hypothesis_memo
    if memo and len(memo) == len(stamps) and all(memo.get(k, (None,))[0] == mt for k, mt in stamps.items()):
        return hypindex.Hypotheses(ctx.ws, {k: memo[k][1] for k in stamps})  # type: ignore[misc]
    with nocycles.paused():  # (10,000 rows and their links, no cycle: ~50 ms of collector passes)
        entries, changed, rows, checked = _read_index(ctx, stamps)
    _check_links(ctx.ws, entries)
    gone = set(rows) - set(stamps)
    if changed or gone:
        with ctx.db.write_core(touches="index") as s:
            for ld in changed:
                hypindex.index(s, ld)
            for hid in gone:
                hypindex.unindex(s, hid)
            if not checked:
                hypindex.note_checked(s)
    elif not checked:
        _note_checked(ctx)
    memo.clear()
    memo.update({k: (stamps[k], e) for k, e in entries.items() if k in stamps})
    return hypindex.Hypotheses(ctx.ws, entries)


def _read_index(ctx: Reads, stamps: dict[str, int]) -> tuple[dict[str, HypothesisDoc | hypindex.Unread],
                                                               list[hypfiles.Loaded], dict[str, Any], bool]:
    """`sync`'s reading: each hypothesis as the index holds it (`store.hypindex.Unread`, or validated
    now where this optlog has not checked the index) or, changed since, from its file; the files
    to index again; the index rows; whether this optlog checked the index."""
    entries: dict[str, HypothesisDoc | hypindex.Unread] = {}
    with ctx.db.connect() as c:
        rows = hypindex.index_rows(c)
        checked = hypindex.checked_here(c)
    changed: list[hypfiles.Loaded] = []
    for hid, mt in stamps.items():
        row = rows.get(hid)
        if row is not None and row[1] == mt:
            if checked:
                entries[hid] = hypindex.Unread(hid, row)
                continue
            try:
                doc = row[2]
                entries[hid] = (HypothesisDoc.model_validate_json(doc) if isinstance(doc, str)
                                else HypothesisDoc.model_validate(doc))
                continue
            except ValidationError:
                pass  # indexed by an optlog that accepted it: the file is read and judged again below
        path = ctx.ws.hypotheses_dir / f"{hid}.yaml"
        loaded = hypfiles.load_file(ctx.ws, path)
        entries[loaded.doc.id] = loaded.doc
        if row is None or row[0] != loaded.hash:
            if row is not None and not _left_pending(ctx.ws, path):
                ctx.notice(f"picked up an edit of {ctx.ws.rel(path)} made outside optlog")
            changed.append(loaded)
        else:
            changed.append(loaded)  # same content, new mtime: refresh the mtime only
    return entries, changed, rows, checked


def _note_checked(ctx: Index) -> None:
    """Note that this optlog validated every index document (`store.hypindex.CHECKED_KEY`) where
    `sync` wrote nothing else: only a saving (the next `sync` validates them all again), so a busy
    writer or a database that takes no write leaves it be."""
    try:
        with ctx.db.write_core(touches="index") as s:
            hypindex.note_checked(s)
    except Exception:  # noqa: BLE001  (whatever it is, nothing was read wrong: the next sync checks again)
        pass


def _left_pending(ws: Workspace, path: Path) -> bool:
    """`path` is a file an interrupted optlog wrote and has yet to commit (`service.journal`), not a
    hand edit."""
    return ws.rel(path) in journal.pending_paths(ws)


def _check_links(ws: Workspace, docs: Mapping[str, Any]) -> None:
    """A parent or rival that names itself or no hypothesis, or a parent cycle, is refused with
    the file, line and field (before anything is indexed or committed)."""

    probs = link_problems(docs)
    if not probs:
        return
    hid, loc, msg = probs[0]
    path = ws.hypothesis_file(hid)
    line = None
    try:
        line = line_of(read_text(path), loc)
    except Exception:  # the location is a courtesy; the error stands without it
        pass
    more = f" (and {len(probs) - 1} more)" if len(probs) > 1 else ""
    raise BadInput(msg + more, file=ws.rel(path), line=line, field=".".join(str(p) for p in loc),
                   code="invalid_field")


def all_docs(ctx: Reads) -> Mapping[str, HypothesisDoc]:
    return sync(ctx)


def get(ctx: Reads, hid: str) -> HypothesisDoc:
    docs = sync(ctx)
    if hid not in docs:
        raise not_found("hypothesis", hid, docs, field="hid")
    return docs[hid]


# ---------------------------------------------------------------- writing


def mutate(
    ctx: Writes,
    hid: str,
    change: Callable[[HypothesisDoc], dict[str, Any] | None],
    *,
    event: str,
    subject: str | Callable[[], str],
    body: str = "",
    trailers: dict[str, str] | None = None,
    also: Callable[[], list[Path]] | None = None,
) -> tuple[HypothesisDoc, bool]:
    """Apply `change` to the hypothesis, write it (compare-and-swap), index it, commit it.

    `change` edits the doc in place; it may return extra trailers. `also`, called under the lock
    only when the file changes, writes further files that belong in the same commit (the evidence a
    verdict used) and returns them. `subject` may be a function, called after `change` (a subject
    that says what `change` found under the lock). Returns (doc, changed)."""

    with workspace_lock(ctx.ws):
        ld = hypfiles.load(ctx.ws, hid)
        history.check_trackable(ctx, [ld.path])

        doc = ld.doc.model_copy(deep=True)
        try:
            extra = change(doc) or {}
        except ValidationError as e:  # a part built by `change` (an override's reason, say)
            raise bad_value(e) from None
        doc = checked(doc.model_dump(mode="json", by_alias=True))
        hand = history.uncommitted(ctx, [ld.path])  # a hand edit this commit will include
        tr = {TR.EVENT: event, TR.HYPOTHESIS: hid, **(trailers or {}), **extra}
        subj = subject() if callable(subject) else subject
        changed = _write_and_commit(ctx, doc, ld, subj, body, tr, hand=hand, also=also)
        if changed and hand:
            ctx.notice(f"{', '.join(hand)} had an edit made outside optlog; this commit includes it")
        return doc, changed


@dataclass
class Decision:
    """One hypothesis's change in a batch (`mutate_many`): the change, and the subject, reason and
    trailers its own commit would have had."""

    hid: str
    change: Callable[[HypothesisDoc], dict[str, Any] | None]
    subject: str
    summary: str  # its own reason, after the body the batch shares (a cause)
    trailers: dict[str, str] = field(default_factory=dict)


def mutate_many(ctx: Writes, decisions: list[Decision], *, event: str, subject: Callable[[list[Decision]], str],
                body: str = "", also: Callable[[list[str]], list[Path]] | None = None,
                ) -> dict[str, tuple[HypothesisDoc, bool]]:
    """`mutate` for several hypotheses, committed together: one commit whose trailers hold one group
    per decision (its event, hypothesis, own subject and summary), so `optlog log` still lists each
    as its own event. Why: a `verdict --all` that changed 200 verdicts made 200 commits (a dozen git
    processes each) and read every hypothesis back after each: 132 s at 2,000 hypotheses. Where only
    one file changes, its commit is `mutate`'s, byte for byte the same. `subject(changed)` names
    the batch; `also(hids)` writes further files for the hypotheses that changed (as in `mutate`).
    Returns {hid: (doc, changed)}."""

    out: dict[str, tuple[HypothesisDoc, bool]] = {}
    with workspace_lock(ctx.ws):
        loads = {d.hid: hypfiles.load(ctx.ws, d.hid) for d in decisions}
        history.check_trackable(ctx, [ld.path for ld in loads.values()])
        todo: list[tuple[Decision, HypothesisDoc, dict[str, Any]]] = []
        for d in decisions:
            doc = loads[d.hid].doc.model_copy(deep=True)
            try:
                extra = d.change(doc) or {}
            except ValidationError as e:
                raise bad_value(e) from None
            doc = checked(doc.model_dump(mode="json", by_alias=True))
            out[d.hid] = (doc, False)
            if hypfiles.content_hash(hypfiles.render(doc).encode("utf-8")) != loads[d.hid].hash:
                todo.append((d, doc, extra))
        if not todo:
            return out
        hand = history.uncommitted(ctx, [loads[d.hid].path for d, _, _ in todo])  # hand edits these include
        if len(todo) == 1:
            d, doc, extra = todo[0]
            tr = {TR.EVENT: event, TR.HYPOTHESIS: d.hid, **d.trailers, **extra}
            own = (body.rstrip() + "\n\n" if body.strip() else "") + d.summary
            changed = _write_and_commit(ctx, doc, loads[d.hid], d.subject, own, tr, hand=hand,
                                        also=(lambda: also([d.hid])) if also else None)
        else:
            groups = []
            for d, _doc, extra in todo:
                rel = ctx.ws.rel(loads[d.hid].path)
                groups.append({TR.EVENT: event, TR.HYPOTHESIS: d.hid, **d.trailers, **extra,
                               **({TR.HAND_EDIT: rel} if rel in hand else {}), TR.SUBJECT: d.subject,
                               TR.SUMMARY: d.summary})
            shared = (body.rstrip() + "\n\n" if body.strip() else "") + history.hand_edit_note(hand) if hand else body
            hids = [d.hid for d, _, _ in todo]
            _write_many_and_commit(ctx, [(doc, loads[d.hid]) for d, doc, _ in todo], subject([d for d, _, _ in todo]),
                                   shared, groups, (lambda: also(hids)) if also else None)
            changed = True
        for d, doc, _ in todo:
            out[d.hid] = (doc, changed)
        if changed and hand:
            ctx.notice(f"{', '.join(hand)} had an edit made outside optlog; this commit includes it")
    return out


def _write_many_and_commit(ctx: Writes, items: list[tuple[HypothesisDoc, hypfiles.Loaded]], subject: str, body: str,
                           groups: list[dict[str, str]], also: Callable[[], list[Path]] | None) -> None:
    """`_write_and_commit` for several files and one commit (see `mutate_many`): each file written
    by compare-and-swap, all indexed in one transaction, one journal intent for them all; any
    failure puts every file, its index row and what `also` made back as they were."""

    paths = [ctx.ws.hypothesis_file(doc.id) for doc, _ in items]
    afters = [hypfiles.content_hash(hypfiles.render(doc).encode("utf-8")) for doc, _ in items]
    olds = [p.read_bytes() for p in paths]
    saved: list[tuple[Path, hypfiles.Loaded, bytes, str]] = []
    made: list[Path] = []
    try:
        with journal.intent(ctx.ws, [(p, old.hash, a) for p, (_, old), a in zip(paths, items, afters)], subject, body,
                            {}, groups):
            fresh = []
            for (doc, old), path, old_bytes in zip(items, paths, olds):
                new_hash, _ = hypfiles.save(ctx.ws, doc, old.hash)
                saved.append((path, old, old_bytes, new_hash))
                fresh.append(hypfiles.Loaded(doc, new_hash, hypfiles.mtime_ns(path), path))
            with ctx.db.write_core(touches="index") as s:
                for ld in fresh:
                    hypindex.index(s, ld)
            _remember(ctx, fresh)
            made = list(also() if also else [])
            history.record(ctx, [*paths, *made], subject, body, {}, groups=groups)
    except BaseException as e:
        for path, old, old_bytes, new_hash in saved:
            _roll_back(ctx, path, old, old_bytes, new_hash)
        for p in made:
            p.unlink(missing_ok=True)
        if isinstance(e, Exception) and out_of_space(e, ctx.ws.hypotheses_dir):
            raise no_space(ctx.ws.rel(ctx.ws.hypotheses_dir), f"{len(paths)} hypothesis files put back as they "
                           "were; nothing was indexed or committed") from None
        raise


def _remember(ctx: Reads, fresh: list[hypfiles.Loaded]) -> None:
    """Files this process just wrote and indexed, as `sync` would find them: so the next `sync`
    need not read every hypothesis again because these changed (it still checks every mtime)."""
    memo = ctx.hypothesis_memo
    if memo:
        for ld in fresh:
            memo[ld.doc.id] = (ld.mtime_ns, ld.doc)


def _write_and_commit(ctx: Writes, doc: HypothesisDoc, old: hypfiles.Loaded | None, subject: str, body: str,
                      trailers: dict[str, str], *, hand: list[str] | tuple[str, ...] = (),
                      also: Callable[[], list[Path]] | None = None) -> bool:
    """Write the file (exact compare-and-swap against what was read), index it, commit it; the
    caller holds the workspace lock. Any failure on the way (the index, the commit, a full disk)
    puts the file, its index row and the files `also` made back as they were, and a full disk is
    said as such (`disk_full`, with what was put back); a process killed on the way leaves an
    intent the next command completes (service.journal)."""

    path = ctx.ws.hypothesis_file(doc.id)
    before = old.hash if old is not None else None
    after = hypfiles.content_hash(hypfiles.render(doc).encode("utf-8"))
    if after == before:
        return False
    old_bytes = path.read_bytes() if old is not None else None
    tr = {**trailers, TR.ACTOR: trailers.get(TR.ACTOR) or ctx.actor}  # as `record` writes them
    if hand:
        tr[TR.HAND_EDIT] = ",".join(hand)
    new_hash: str | None = None
    made: list[Path] = []
    try:
        with journal.intent(ctx.ws, [(path, before, after)], subject,
                            (body.rstrip() + "\n\n" if body.strip() else "") + history.hand_edit_note(list(hand))
                            if hand else body, tr):
            new_hash, changed = hypfiles.save(ctx.ws, doc, before)
            if not changed:
                return False
            fresh = hypfiles.Loaded(doc, new_hash, hypfiles.mtime_ns(path), path)
            with ctx.db.write_core(touches="index") as s:
                hypindex.index(s, fresh)
            _remember(ctx, [fresh])
            extra = also() if also else []
            made = list(extra)  # files made new for this commit (the evidence of a verdict)
            history.record(ctx, [path, *extra], subject, body, trailers, hand_edited=hand)
    except BaseException as e:
        if new_hash is not None:
            _roll_back(ctx, path, old, old_bytes, new_hash)
        for p in made:
            p.unlink(missing_ok=True)  # evidence files made for this commit only
        if isinstance(e, Exception) and out_of_space(e, path.parent):
            what = "created" if old is None else "changed"
            raise no_space(ctx.ws.rel(path.parent), f"{ctx.ws.rel(path)} was not {what} (put back as it was), nothing was indexed or committed"
                           ) from None
        raise
    return True


def _roll_back(ctx: Index, path: Path, old: hypfiles.Loaded | None, old_bytes: bytes | None, new_hash: str) -> None:
    """Put the file (and its index row) back as it was, unless something changed it since. The
    file first: the index is only a cache of the files (`sync` mends a row that could not be)."""

    try:
        if old_bytes is None:
            if hypfiles.current_hash(path) == new_hash:
                path.unlink()
        else:
            cas.replace(path, old_bytes, new_hash, lambda b: None if b is None else hypfiles.content_hash(b))
    except (cas.Changed, OSError):
        return
    try:
        with ctx.db.write_core(touches="index") as s:
            if old is None:
                hypindex.unindex(s, path.stem)
            else:
                hypindex.index(s, hypfiles.Loaded(old.doc, old.hash, hypfiles.mtime_ns(path), path))
    except Exception:  # noqa: BLE001 - a full disk may refuse this too; the next sync re-reads the file
        pass


def checked(data: dict[str, Any], flags: dict[str, str] | None = None) -> HypothesisDoc:
    """The document after a change, validated; a bad value is BadInput naming the field (the CLI
    option where `flags` maps the field to one), never a pydantic traceback."""

    try:
        return HypothesisDoc.model_validate(data)
    except ValidationError as e:
        raise bad_value(e, flags) from None


def bad_value(e: Any, flags: dict[str, str] | None = None) -> BadInput:
    err = e.errors()[0]
    loc = ".".join(str(p) for p in err.get("loc", ()))
    top = loc.split(".", 1)[0]
    msg = str(err["msg"]).removeprefix("Value error, ")
    return BadInput(msg, field=(flags or {}).get(top, _PARAMS.get(top, loc or None)), code="invalid_field")


# a document's field → the verb parameter that sets it (the faces spell it: `--id` on the CLI)
_PARAMS = {"title": "title", "statement": "statement", "rationale": "rationale", "parent": "parent", "why": "why",
           "id": "hid"}


def create(ctx: Writes, doc: HypothesisDoc, *, event: str = "hypothesis-add", subject: str | None = None,
           body: str = "", trailers: dict[str, str] | None = None) -> HypothesisDoc:
    path = ctx.ws.hypothesis_file(doc.id)
    history.check_trackable(ctx, [path])
    with workspace_lock(ctx.ws):
        tr = {TR.EVENT: event, TR.HYPOTHESIS: doc.id}
        if doc.parent:
            tr[TR.PARENT] = doc.parent
        if doc.rivals:
            tr[TR.RIVALS] = ",".join(doc.rivals)
        tr.update(trailers or {})
        if subject is None:
            subject = f"optlog: add hypothesis {doc.id}" + (f" (pivot from {doc.parent})" if doc.parent else "")
        if not body:
            body = "\n\n".join(x for x in (doc.title, doc.statement and f"Statement: {doc.statement}",
                                             doc.rationale and f"Rationale: {doc.rationale}") if x)
        _write_and_commit(ctx, doc, None, subject, body, tr)
    return doc


def add(
    ctx: Writes,
    title: str,
    *,
    hid: str | None = None,
    statement: str = "",
    rationale: str = "",
    parent: str | None = None,
    rivals: list[str] | tuple[str, ...] = (),
) -> HypothesisDoc:
    if not title.strip():
        raise BadInput("the title must not be empty", field="title")
    docs = sync(ctx)
    if hid is not None:
        try:
            check_id(hid)
        except ValueError as e:
            raise BadInput(str(e), field="hid") from None
        if hid in docs:
            raise BadInput(f"hypothesis {hid!r} exists already", field="hid")
    else:
        base = slugify(title)
        hid, n = base, 2
        while hid in docs or windows_reserved(hid) or ctx.ws.hypothesis_file(hid).exists():
            hid = f"{base}-{n}"
            n += 1
    if parent is not None and parent not in docs:
        raise not_found("parent hypothesis", parent, docs, field="parent")
    for r in rivals:
        if r not in docs:
            raise not_found("rival hypothesis", r, docs, field="rivals")
        if r == hid:
            raise BadInput("a hypothesis cannot be its own rival", field="rivals")
    doc = checked(dict(
        id=hid, title=title.strip(), statement=statement, rationale=rationale, parent=parent,
        rivals=list(dict.fromkeys(rivals)), created=now_iso(), created_by=ctx.actor,
    ), {"title": "TITLE", "rivals": "rivals"})
    return create(ctx, doc)


def set_status(ctx: Writes, hid: str, status: str, why: str) -> HypothesisDoc:
    """A manual status (an override): kept beside the automatic verdict, never undone by it."""
    if status not in HYP_STATUSES:
        raise BadInput(f"unknown status {status!r}; one of {', '.join(HYP_STATUSES)}", field="status")
    if not why or not why.strip():
        raise BadInput(f"a manual status change needs {param('why')}", field="why")
    get(ctx, hid)

    def change(doc: HypothesisDoc) -> None:
        at = now_iso()
        prev = doc.effective_status()
        doc.override = Override(status=status, why=why.strip(), by=ctx.actor, at=at)  # type: ignore[arg-type]
        doc.status = status  # type: ignore[assignment]
        doc.history.append(StatusChange(at=at, by=ctx.actor, to=status, why=why.strip(), kind="manual",  # type: ignore[arg-type]
                                        **{"from": prev}))

    doc, _ = mutate(ctx, hid, change, event="override", subject=f"optlog: {hid} → {status} (override)",
                    body=why.strip(), trailers={TR.STATUS: status})
    return doc


def clear_override(ctx: Writes, hid: str, why: str) -> HypothesisDoc:
    get(ctx, hid)

    def change(doc: HypothesisDoc) -> None:
        at = now_iso()
        prev = doc.effective_status()
        doc.override = None
        doc.status = doc.auto_status or "open"
        doc.history.append(StatusChange(at=at, by=ctx.actor, to=doc.status, why=why, kind="manual", **{"from": prev}))

    def change_tr(doc: HypothesisDoc) -> dict[str, str]:
        change(doc)
        return {TR.STATUS: doc.status}

    doc, _ = mutate(ctx, hid, change_tr, event="override", subject=f"optlog: {hid} override cleared", body=why)
    return doc


def edit(ctx: Writes, hid: str, *, title: str | None = None, statement: str | None = None,
         rationale: str | None = None, add_rivals: tuple[str, ...] = ()) -> HypothesisDoc:
    docs = sync(ctx)
    if hid not in docs:
        raise not_found("hypothesis", hid, docs, field="hid")
    for r in add_rivals:
        if r not in docs or r == hid:
            raise NotFound(f"no rival hypothesis {r!r}", field="rivals")
    if title is not None and not title.strip():
        raise BadInput("the title must not be empty", field="title")

    def change(doc: HypothesisDoc) -> None:
        if title is not None:
            doc.title = title
        if statement is not None:
            doc.statement = statement
        if rationale is not None:
            doc.rationale = rationale
        for r in add_rivals:
            if r not in doc.rivals:
                doc.rivals.append(r)

    fields = [n for n, v in (("title", title), ("statement", statement), ("rationale", rationale)) if v is not None]
    if add_rivals:
        fields.append("rivals")
    body = "\n".join(f"{n.capitalize()}: {v}" for n, v in (("title", title), ("statement", statement),
                                                          ("rationale", rationale)) if v is not None)
    if add_rivals:
        body += ("\n" if body else "") + "Rivals added: " + ", ".join(add_rivals)
    subject = f"optlog: edit hypothesis {hid}" + (f" ({', '.join(fields)})" if fields else "")
    doc, _ = mutate(ctx, hid, change, event="hypothesis-edit", subject=subject, body=body)
    return doc


# ---------------------------------------------------------------- reading


def rivals_of(docs: Mapping[str, HypothesisDoc], hid: str) -> list[str]:
    """Rivalry is symmetric: stated on either side (the links alone: no hypothesis validated)."""
    links = hypindex.links_of(docs)
    out = set(links[hid].rivals) if hid in links else set()
    out |= {d.id for d in links.values() if hid in d.rivals}
    out.discard(hid)
    return sorted(out)


def children_of(docs: Mapping[str, HypothesisDoc], hid: str) -> list[str]:
    return sorted(d.id for d in hypindex.links_of(docs).values() if d.parent == hid)


def summary(doc: HypothesisDoc, docs: Mapping[str, HypothesisDoc],
            relations: tuple[dict[str, list[str]], dict[str, list[str]]] | None = None) -> dict[str, Any]:
    children, rivals = relations if relations is not None else (
        {doc.id: children_of(docs, doc.id)}, {doc.id: rivals_of(docs, doc.id)})
    return {
        "id": doc.id,
        "title": doc.title,
        "status": doc.effective_status(),
        "auto_status": doc.auto_status,
        "override": doc.override.model_dump(mode="json") if doc.override else None,
        "parent": doc.parent,
        "children": children.get(doc.id, []),
        "rivals": rivals.get(doc.id, []),
        "predictions": [
            {"id": p.id, "version": p.version, "metric": p.metric, "expect": p.expect, "status": p.status}
            for p in doc.predictions
        ],
        "created": doc.created,
    }


def _testing(ctx: Index, rows: list[dict[str, Any]]) -> None:
    """An open hypothesis whose runs are queued or running reads `testing` (DESIGN §5)."""
    if not any(r["status"] == "open" for r in rows):
        return

    live = live_hypotheses(ctx)
    for r in rows:
        if r["status"] == "open" and r["id"] in live:
            r["status"] = "testing"


def verdict_history(doc: HypothesisDoc) -> list[dict[str, Any]]:
    return SD.verdict_history(doc.verdicts, doc.history)


def show(ctx: Reads, hid: str, docs: Mapping[str, HypothesisDoc] | None = None) -> dict[str, Any]:
    """`docs`: a caller's fresh `sync` (the dashboard's reload), not read again."""
    if docs is None:
        docs = sync(ctx)
    if hid not in docs:
        raise not_found("hypothesis", hid, docs, field="hid")
    doc = docs[hid]
    out = summary(doc, docs)
    _testing(ctx, [out])
    out.update(
        statement=doc.statement,
        rationale=doc.rationale,
        created_by=doc.created_by,
        verdicts=verdict_history(doc),
        verdict_details=[v.model_dump(mode="json") for v in doc.verdicts],
        history=[h.model_dump(mode="json", by_alias=True) for h in doc.history],
        file=ctx.ws.rel(ctx.ws.hypothesis_file(hid)),
    )
    out["predictions"] = [p.model_dump(mode="json") for p in doc.predictions]
    if ctx.db_exists():
        out["notes"] = evidence.notes_for(ctx, hid)
        out["runs"] = evidence.runs_for_hypothesis(ctx, hid)
    else:
        out["notes"], out["runs"] = [], []
    if doc.override and doc.auto_status and doc.override.status != doc.auto_status:
        out["disagreement"] = (
            f"manual status {doc.override.status} (by {doc.override.by}: {doc.override.why}) "
            f"disagrees with the automatic verdict {doc.auto_status}"
        )
    return out


def list_(ctx: Reads, status: str | None = None) -> list[dict[str, Any]]:
    if status is not None and status not in HYP_STATUSES:
        raise BadInput(f"unknown status {status!r}; one of {', '.join(HYP_STATUSES)}", field="status")
    docs = sync(ctx)
    rel = family.links((d.id, d.parent, d.rivals) for d in docs.values())
    out = [summary(d, docs, rel) for d in sorted(docs.values(), key=lambda d: (d.created or "", d.id))]
    _testing(ctx, out)
    if status:
        out = [h for h in out if h["status"] == status]
    return out


# ---------------------------------------------------------------- the verbs' documents (every face)


def ack(h: documents.HypothesisShow) -> documents.HypothesisAck:
    """What a write acknowledges with (an agent's default): ids and statuses, not the object."""
    return {"id": h["id"], "status": h["status"], "title": h["title"], "parent": h["parent"],
            "predictions": [{"id": p["id"], "status": p["status"]} for p in h["predictions"]]}


def brief(h: documents.HypothesisShow) -> documents.HypothesisBrief:
    """`hypothesis show` without the evidence values (an agent's default)."""
    full: dict[str, Any] = dict(h)
    out: dict[str, Any] = {k: full[k] for k in ("id", "title", "status", "parent", "children", "rivals") if k in full}
    if h.get("statement"):
        out["statement"] = h["statement"]
    out["predictions"] = [{"id": p["id"], "version": p["version"], "status": p["status"], "expect": p["expect"],
                           "metric": p.get("metric")} for p in h["predictions"]]
    out["verdicts"] = [{**v, "summary": v["summary"][:160]} for v in h["verdicts"][-2:]]
    out["verdicts_total"] = len(h["verdicts"])
    out["notes_total"] = len(h.get("notes") or [])
    out["runs_total"] = len(h.get("runs") or [])
    if h.get("disagreement"):
        out["disagreement"] = h["disagreement"]
    return cast(documents.HypothesisBrief, out)


def written(ctx: Reads, hid: str, detail: bool) -> documents.HypothesisShow | documents.HypothesisAck:
    """What a write of hypothesis `hid` answers with: the hypothesis as `show` gives it, or (`detail=False`)
    its acknowledgement."""
    h = cast(documents.HypothesisShow, show(ctx, hid))
    return h if detail else ack(h)
