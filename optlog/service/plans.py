"""Improvement plans: add, list, show, set, render, import.

The database holds the plan records (`Plan`, id = NN, the stable creation number); the ranking is
computed at read time from the hypothesis files (core.plans.evaluate), never stored, so a verdict,
an override or an invalidation shows on the next list or render. `render` writes the plan files and
the index and commits exactly those files. The files' front matter carries the whole record: a fresh
clone (no `.optlog/`) rebuilds the table from them, automatically when the table is empty.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, cast

from optlog.core import plans as P
from optlog.core.numfmt import fmt_score, plural
from optlog.core.timeutil import now_iso
from optlog.errors import BadInput, NotFound, not_found, param
from optlog.gitlog import history
from optlog.gitlog import trailers as TR
from optlog.needs import Index, Reads, Writes
from optlog.paths import Workspace
from optlog.render import plans as R
from optlog.render.md import split_front_matter
from optlog.service import hypotheses
from optlog.service import documents, envelope
from optlog.store import planrows
from optlog.store.lock import workspace_lock
from optlog.store.planrows import last_plan_number, plans_in_order
from optlog.yamlio import parse_text, read_text, write_atomic

_FIELDS = ("id", "title", "gain_low", "gain_high", "effort", "confidence", "status", "measured_gain", "needs",
           "change", "rationale", "steps", "risks", "validation", "why", "history", "created_at", "updated_at")


def prefix(ctx: Reads) -> str:
    return ctx.config.plans.prefix


def plans_dir(ctx: Reads) -> Path:
    return ctx.ws.plans_dir(prefix(ctx))


def _row_dict(r: Any) -> dict[str, Any]:
    d = {k: getattr(r, k) for k in _FIELDS}
    d["needs"] = list(d["needs"] or [])
    d["steps"] = list(d["steps"] or [])
    d["risks"] = list(d["risks"] or [])
    d["history"] = list(d["history"] or [])
    return d


def _plan_files(ctx: Reads) -> dict[int, Path]:
    pre = prefix(ctx)
    d = plans_dir(ctx)
    out: dict[int, Path] = {}
    if not d.is_dir():
        return out
    pat = re.compile(rf"^{re.escape(pre)}-(\d+)\.md$")
    for f in sorted(d.iterdir()):
        m = pat.match(f.name)
        if m and f.is_file():
            out[int(m.group(1))] = f
    return out


def _records(ctx: Reads) -> list[dict[str, Any]]:
    """All plan records, importing them from the plan files first when the table is empty."""

    with ctx.db.read() as s:
        rows = [_row_dict(r) for r in plans_in_order(s)]
    if not rows and _plan_files(ctx):
        res = import_(ctx)
        if res["imported"]:
            ctx.notice(f"rebuilt {plural(len(res['imported']), 'plan record')} from {ctx.ws.rel(plans_dir(ctx))}/")
        with ctx.db.read() as s:
            rows = [_row_dict(r) for r in plans_in_order(s)]
    return rows


def _docs(ctx: Reads) -> Mapping[str, Any]:
    return hypotheses.sync(ctx)


def evaluated(ctx: Reads, docs: Mapping[str, Any] | None = None) -> tuple[list[dict[str, Any]], Mapping[str, Any]]:
    """(plan views in rank order, hypothesis docs): computed now, from the current files (or from
    `docs`, a caller's fresh `hypotheses.sync`, so one command syncs once)."""
    recs = [r for r in _records(ctx) if r["status"] != P.REMOVED]
    if docs is None:
        docs = _docs(ctx)
    return P.evaluate(recs, docs), docs


def _public(v: dict[str, Any], pre: str) -> dict[str, Any]:
    return {
        "id": v["id"],
        "title": v["title"],
        "rank": v["rank"],
        "score": v["score"],
        "status": v["status"],
        "needs": list(v["needs"]),
        "needs_status": [{"id": n["id"], "expects": n["expects"], "status": n["status"], "reason": n["reason"],
                          **({"post_hoc": n["post_hoc"]} if n.get("post_hoc") else {})}
                         for n in v["needs_info"]],
        "weight": v["weight"],
        "reason": v["reason"],
        "score_reason": v["score_reason"],
        "measured": v["measured"],
        "tier": v["tier"],
        "gain_basis": v["gain_basis"],
        "change": v.get("change"),
        "measured_effect": v["measured_effect"],
        "gain": [v["gain_low"], v["gain_high"]],
        "effort": v["effort"],
        "confidence": v["confidence"],
        "measured_gain": v["measured_gain"],
        "file": f"{pre}/{pre}-{v['id']:02d}.md",
    }


# ---------------------------------------------------------------- verbs


def add(
    ctx: Reads,
    title: str,
    *,
    gain: str,
    effort: str,
    confidence: str | float,
    needs: list[str] | tuple[str, ...] = (),
    rationale: str | None = None,
    steps: list[str] | tuple[str, ...] = (),
    risks: list[str] | tuple[str, ...] = (),
    validation: str | None = None,
    change: str | dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Add a plan. Everything is checked before anything is written. `change` (`parallel=1->4`):
    the one label the plan moves; where optlog measured it, the measured effect is ranked."""
    if not title or not title.strip():
        raise BadInput("a plan needs a title", field="title")
    lo, hi = P.parse_gain(gain)
    if (wide := P.wide_range(lo, hi)) is not None:
        ctx.notice(f"plan: {wide}")
    eff = P.parse_effort(effort)
    conf = P.parse_confidence(confidence)
    chg = P.parse_change(change) if change else None
    need_ids = _check_needs(ctx, needs)
    with workspace_lock(ctx.ws):
        _check_title(ctx, title)  # also: a fresh clone takes the numbers the files already use
        now = now_iso()
        taken = max(_plan_files(ctx), default=0)
        with ctx.db.write() as s:
            pid = max(last_plan_number(s), taken) + 1
            row = planrows.new_plan(id=pid, title=title.strip(), gain_low=lo, gain_high=hi, effort=eff,
                                    confidence=conf, status=P.PROPOSED, needs=need_ids, change=chg, rationale=rationale or None,
                                    steps=[x for x in steps if x.strip()], risks=[x for x in risks if x.strip()],
                                    validation=validation or None, history=[], created_at=now, updated_at=now)
            s.add(row)
            s.flush()
    return show(ctx, pid)


@contextmanager
def _plan_row(ctx: Index, pid: int) -> Iterator[tuple[Any, Any]]:
    """A write session and the plan's row in it (the caller holds the workspace lock)."""
    with ctx.db.write() as s:
        row = planrows.plan(s, pid)
        if row is None:  # pragma: no cover - removed between the read and the write
            raise NotFound(f"no plan {pid}", field="pid")
        yield s, row


def _check_needs(ctx: Reads, needs: list[str] | tuple[str, ...]) -> list[str]:
    """`HYP` / `HYP=falsified` → stored needs, each hypothesis existing, each named once."""
    docs = _docs(ctx)
    out: list[str] = []
    seen: dict[str, str] = {}
    for text in needs:
        hid, want = P.parse_need(text)
        if hid not in docs:
            raise not_found("hypothesis", hid, docs, field="needs")
        if hid in seen and seen[hid] != want:
            raise BadInput(f"{hid} is needed both confirmed and falsified", field="needs")
        if hid not in seen:
            seen[hid] = want
            out.append(P.need_text(hid, want))
    return out


def _check_title(ctx: Reads, title: str, pid: int | None = None) -> None:
    """A title names one plan: another plan (any status but removed) with the same title is refused."""
    key = P.title_key(title)
    for r in _records(ctx):
        if r["id"] != pid and r["status"] != P.REMOVED and P.title_key(r["title"]) == key:
            raise BadInput(f"plan {r['id']:02d} already has the title {r['title']!r}: edit it "
                           f"(`optlog plan edit {r['id']}`) or choose another title", field="title")


def edit(ctx: Writes, pid: int | str, *, title: str | None = None, gain: str | None = None, effort: str | None = None,
         confidence: str | float | None = None, needs: list[str] | tuple[str, ...] | None = None,
         rationale: str | None = None, steps: list[str] | tuple[str, ...] | None = None,
         risks: list[str] | tuple[str, ...] | None = None, validation: str | None = None,
         why: str | None = None, change: str | None = None) -> dict[str, Any]:
    """Change a plan's fields (None: unchanged; an empty `needs`, `steps` or `risks` list clears
    it). Checked before anything is written; the change is in the record's history with the old
    values, and the plan files are rendered and committed, so git keeps every version."""

    changes: dict[str, Any] = {}
    if title is not None:
        if not title.strip():
            raise BadInput("a plan needs a title", field="title")
        changes["title"] = title.strip()
    if gain is not None:
        changes["gain_low"], changes["gain_high"] = P.parse_gain(gain)
        if (wide := P.wide_range(changes["gain_low"], changes["gain_high"])) is not None:
            ctx.notice(f"plan: {wide}")
    if effort is not None:
        changes["effort"] = P.parse_effort(effort)
    if confidence is not None:
        changes["confidence"] = P.parse_confidence(confidence)
    if needs is not None:
        changes["needs"] = _check_needs(ctx, needs)
    if change is not None:
        changes["change"] = P.parse_change(change) if change.strip() else None
    for k, v in (("rationale", rationale), ("validation", validation)):
        if v is not None:
            changes[k] = v or None
    for k, lst in (("steps", steps), ("risks", risks)):
        if lst is not None:
            changes[k] = [x for x in lst if x.strip()]
    if not changes:
        raise BadInput(f"nothing to change: give {param('title')}, {param('gain')}, {param('effort')}, {param('confidence')}, {param('needs')}, {param('change')}, {param('rationale')}, "
                       f"{param('steps')}, {param('risks')} or {param('validation')}", field="title")
    view, _, _ = _view(ctx, pid)
    with workspace_lock(ctx.ws):
        _refuse_hand_edited_files(ctx)
        if "title" in changes:
            _check_title(ctx, changes["title"], view["id"])
        with _plan_row(ctx, view["id"]) as (s, row):
            old = {k: getattr(row, k) for k in changes if getattr(row, k) != changes[k]}
            if not old:
                ctx.notice(f"plan {view['id']:02d} already has those values; nothing changed")
                return show(ctx, view["id"])
            now = now_iso()
            entry: dict[str, Any] = {"at": now, "by": ctx.actor, "from": row.status, "to": row.status,
                                     "edited": {k: (list(x) if isinstance(x, list) else x) for k, x in old.items()}}
            if why and why.strip():
                entry["why"] = why.strip()
            for k, x in changes.items():
                setattr(row, k, x)
            row.history = [*list(row.history or []), entry]
            row.updated_at = now
            s.add(row)
    render(ctx, subject=f"optlog: edit plan {view['id']:02d}: {', '.join(sorted(old))}")
    return show(ctx, view["id"])


def rm(ctx: Writes, pid: int | str, why: str) -> dict[str, Any]:
    """Remove a plan: its file is deleted in a commit (git history keeps it, with the reason); the
    record stays, marked removed, so its number is never given to another plan."""

    if not why or not why.strip():
        raise BadInput(f"say why the plan is removed: {param('why')} TEXT", field="why")
    v, _, _ = _view(ctx, pid)
    with workspace_lock(ctx.ws):
        _refuse_hand_edited_files(ctx)
        with _plan_row(ctx, v["id"]) as (s, row):
            now = now_iso()
            row.history = [*list(row.history or []), {"at": now, "by": ctx.actor, "from": row.status, "to": P.REMOVED,
                                                     "why": why.strip()}]
            row.status, row.why, row.updated_at = P.REMOVED, why.strip(), now
            s.add(row)
    res = render(ctx, subject=f"optlog: remove plan {v['id']:02d} {v['title'][:80]}", body=why.strip())
    return {"id": v["id"], "title": v["title"], "removed": True, "why": why.strip(), "commit": res["commit"],
            "file": f"{prefix(ctx)}/{prefix(ctx)}-{v['id']:02d}.md"}


def list_(ctx: Reads, status: str | None = None, docs: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """`docs`: a caller's fresh `hypotheses.sync` (the dashboard's reload), not read again."""
    if status is not None:
        P.check_status(status)
    views, _ = evaluated(ctx, docs)
    pre = prefix(ctx)
    rows = [_public(v, pre) for v in views if status is None or v["status"] == status]
    return {"plans": rows, "calibration": P.calibration(views)}


def _view(ctx: Reads, pid: int | str) -> tuple[dict[str, Any], list[dict[str, Any]], Mapping[str, Any]]:
    try:
        n = int(str(pid).lstrip("#"))
    except ValueError:
        raise BadInput(f"a plan id is a number, got {pid!r}", field="pid") from None
    views, docs = evaluated(ctx)
    for v in views:
        if v["id"] == n:
            return v, views, docs
    raise NotFound(f"no plan {n}", field="pid")


def show(ctx: Reads, pid: int | str) -> dict[str, Any]:
    v, _, _ = _view(ctx, pid)
    out = _public(v, prefix(ctx))
    out.update(
        rationale=v["rationale"], steps=v["steps"], risks=v["risks"], validation=v["validation"], why=v["why"],
        history=v["history"], created_at=v["created_at"], updated_at=v["updated_at"],
    )
    return out


def set_(ctx: Writes, pid: int | str, status: str | None = None, measured_gain: str | float | None = None,
         why: str | None = None) -> dict[str, Any]:
    if status is None and measured_gain is None:
        raise BadInput(f"nothing to change: give {param('status')} and/or {param('measured')}", field="status")
    if status is not None:
        P.check_status(status)
    mg = P.parse_percent(measured_gain) if measured_gain is not None else None
    v, _, _ = _view(ctx, pid)
    with workspace_lock(ctx.ws):
        with _plan_row(ctx, v["id"]) as (s, row):
            now = now_iso()
            entry: dict[str, Any] = {"at": now, "by": ctx.actor, "from": row.status, "to": status or row.status}
            if mg is not None:
                entry["measured_gain"] = mg
                row.measured_gain = mg
            if why and why.strip():
                entry["why"] = why.strip()
                row.why = why.strip()
            if status is not None:
                row.status = status
            row.history = [*list(row.history or []), entry]
            row.updated_at = now
            s.add(row)
    return show(ctx, v["id"])


# ---------------------------------------------------------------- render

KEEP_THE_EDIT = "Put it in the plan's record (`optlog plan edit N …`; the file is rebuilt from it)"


def _refuse_hand_edited_files(ctx: Writes) -> None:
    """Before a change that re-renders the plans (edit, rm): a hand edit of any plan file refuses
    it now, before the record changes, rather than in the render after it."""
    files = [*_plan_files(ctx).values(), plans_dir(ctx) / "README.md"]
    history.refuse_overwriting_hand_edits(ctx, {p: b"" for p in files if p.is_file()}, KEEP_THE_EDIT)


def render(ctx: Writes, subject: str | None = None, body: str | None = None) -> dict[str, Any]:
    """Write every plan file and the index, delete the files of removed plans; commit them (only
    them) when anything changed."""

    pre = prefix(ctx)
    d = plans_dir(ctx)
    with workspace_lock(ctx.ws):
        views, docs = evaluated(ctx)
        total = sum(1 for v in views if v["rank"] is not None)
        outputs: dict[Path, str] = {}
        for v in views:
            outputs[d / R.plan_filename(pre, v["id"])] = R.render_plan(v, docs, total)
        cal = P.calibration(views)
        outputs[d / "README.md"] = R.render_index(views, cal, pre, ctx.config.name)
        history.refuse_overwriting_hand_edits(ctx, {p: text.encode("utf-8") for p, text in outputs.items()}, KEEP_THE_EDIT)
        changed: list[str] = []
        gone = [path for n, path in _plan_files(ctx).items() if path not in outputs]
        for path in gone:  # a removed plan (plan rm): the deletion is committed below
            path.unlink()
            changed.append(ctx.ws.rel(path))
        for path, text in outputs.items():
            data = text.encode("utf-8")
            if path.is_file() and path.read_bytes() == data:
                continue
            write_atomic(path, text)
            changed.append(ctx.ws.rel(path))
        ranked = [v for v in views if v["rank"] is not None]
        ranking = "\n".join(f"{v['rank']}. #{v['id']:02d} {v['title'][:100]} (score {fmt_score(v['score'])})" for v in ranked)
        body = (body + "\n\n" if body else "") + ranking
        sha = history.record(ctx, sorted([*outputs, *gone]), subject or f"optlog: render {plural(len(views), 'plan')} to {pre}/",
                             body, trailers={TR.EVENT: "plan-render"})
    return {
        "files": [ctx.ws.rel(p) for p in sorted(outputs)],
        "changed": sorted(changed),
        "commit": sha,
        "plans": [_public(v, pre) for v in views],
    }


# ---------------------------------------------------------------- import (fresh clone)


def _read_record(ws: Workspace, pid: int, path: Path) -> dict[str, Any]:
    rel = ws.rel(path)
    fm, _ = split_front_matter(read_text(path, rel))
    if fm is None:
        raise BadInput("a plan file must begin with YAML front matter (---)", file=rel, line=1, field="front matter")
    data = parse_text(fm, rel)
    if not isinstance(data, dict):
        raise BadInput("the front matter must be a mapping", file=rel, line=2, field="front matter")

    def need(key: str) -> Any:
        if data.get(key) is None:
            raise BadInput(f"the front matter lacks {key!r}", file=rel, field=key)
        return data[key]

    if int(need("id")) != pid:
        raise BadInput(f"id {data['id']!r} does not match the file name {path.name!r}", file=rel, field="id")
    gain = need("gain")
    if not isinstance(gain, dict) or "low" not in gain or "high" not in gain:
        raise BadInput("gain must be {low: L, high: H}", file=rel, field="gain")
    lo, hi = P.parse_gain(f"{gain['low']}..{gain['high']}", field="gain")
    status = P.check_status(str(data.get("status") or P.PROPOSED), field="status")
    needs = [P.need_text(*P.parse_need(f"{n['id']}={n.get('expects') or 'confirmed'}" if isinstance(n, dict) else str(n),
                                       field="needs")) for n in (data.get("needs") or [])]
    mg = data.get("measured_gain")
    chg = data.get("change")
    return {
        "id": pid,
        "title": str(need("title")),
        "gain_low": lo,
        "gain_high": hi,
        "effort": P.parse_effort(str(need("effort")), field="effort"),
        "confidence": P.parse_confidence(need("confidence"), field="confidence"),
        "status": status,
        "measured_gain": P.parse_percent(mg, field="measured_gain") if mg is not None else None,
        "needs": needs,
        "change": P.parse_change(chg, field="change") if chg else None,
        "rationale": data.get("rationale"),
        "steps": [str(x) for x in data.get("steps") or []],
        "risks": [str(x) for x in data.get("risks") or []],
        "validation": data.get("validation"),
        "why": data.get("why"),
        "history": list(data.get("history") or []),
        "created_at": str(data.get("created") or now_iso()),
        "updated_at": str(data.get("updated") or data.get("created") or now_iso()),
    }


def import_(ctx: Reads, replace: bool = False) -> dict[str, Any]:
    """Rebuild plan records from the plan files' front matter: ids not in the table are added;
    with `replace`, records the files also hold are overwritten by them. All files are read and
    checked before anything is written."""
    files = _plan_files(ctx)
    recs = [_read_record(ctx.ws, pid, path) for pid, path in sorted(files.items())]
    imported, skipped = [], []
    with workspace_lock(ctx.ws):
        with ctx.db.write() as s:
            for r in recs:
                row = planrows.plan(s, r["id"])
                if row is not None and not replace:
                    skipped.append(r["id"])
                    continue
                if row is None:
                    row = planrows.new_plan(**r)
                else:
                    for k, val in r.items():
                        setattr(row, k, val)
                s.add(row)
                imported.append(r["id"])
    return {"imported": imported, "skipped": skipped}


# ---------------------------------------------------------------- the verbs' documents (every face)


def ack(p: dict[str, Any]) -> documents.PlanAck:
    """What a plan write acknowledges with (an agent's default)."""
    return cast(documents.PlanAck, {k: p.get(k) for k in ("id", "title", "rank", "score", "status", "reason", "file")})
