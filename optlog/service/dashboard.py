"""Read models for the dashboard (TUI): cheap change detection and paged loading.

The TUI asks `change_token` twice a second; only when it moves does it reload, and then only
what is on screen (a page of runs, not all of them).
"""

from __future__ import annotations

import os
from typing import Any

from optlog.core.diagnosis import diagnose
from optlog.core.todos import open_first
from optlog.service.context import Ctx


def files_token(ctx: Ctx) -> tuple[int, int]:
    """(count, newest mtime) of the hypothesis files: a hand edit or a new file moves it."""
    d = ctx.ws.hypotheses_dir
    newest, n = 0, 0
    try:
        newest = os.stat(d).st_mtime_ns
        with os.scandir(d) as it:
            for e in it:
                if e.name.endswith(".yaml"):
                    n += 1
                    m = e.stat().st_mtime_ns
                    if m > newest:
                        newest = m
    except FileNotFoundError:
        pass
    return n, newest


def change_token(ctx: Ctx) -> tuple[Any, ...]:
    """Moves whenever another process writes the database or touches a hypothesis file."""
    return (ctx.db.change_token(), *files_token(ctx))


def hypotheses_tree(ctx: Ctx) -> list[dict[str, Any]]:
    """Hypotheses as nested nodes (parent → children), each with status and prediction counts."""
    return hypotheses_view(ctx)[0]


def runs_page(ctx: Ctx, offset: int = 0, limit: int = 200) -> dict[str, Any]:
    from optlog.service import evidence as E

    return {"runs": E.list_runs(ctx, limit=limit, offset=offset), "total": E.count_runs(ctx), "offset": offset}


def live_launches(ctx: Ctx) -> list[dict[str, Any]]:
    from optlog.store.launchrows import live_launches as rows_of_live

    with ctx.db.read() as s:
        rows = rows_of_live(s)
        out: list[dict[str, Any]] = [{"id": r.id, "status": r.status, "spec": r.spec_path, "progress": r.progress or {}} for r in rows]
    from optlog.runs.launcher import read_tail

    for la in out:
        la["log_tail"] = read_tail(ctx.ws.state_dir / "launches" / str(la["id"]) / "launch.log", 5).splitlines()
    return out


def _tree(nodes: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Nodes (each with id, parent, created, children_nodes) linked parent → children; the roots, in
    creation order."""
    roots: list[dict[str, Any]] = []
    for hid in sorted(nodes, key=lambda i: (nodes[i]["created"] or "", i)):
        n = nodes[hid]
        p = n["parent"]
        if p and p in nodes:
            nodes[p]["children_nodes"].append(n)
        else:
            roots.append(n)
    return roots


def quick_tree(ws: Any) -> list[dict[str, Any]] | None:
    """The hypothesis tree for the dashboard's first frame, read with the standard library only (no
    SQLAlchemy, pydantic or YAML to import: those cost most of a second): the SQLite index's rows,
    trusted only if every hypothesis file is there with the very mtime the index recorded. Anything
    else — PostgreSQL, no database yet, a file edited, added or removed, any error — gives None and the
    full load (a sync through the service layer) paints the tree instead. It replaces this one anyway."""
    import sqlite3

    db = ws.sqlite_file
    if db is None or not db.exists():
        return None
    try:
        mtimes: dict[str, int] = {}
        with os.scandir(ws.hypotheses_dir) as it:
            for e in it:
                if e.name.endswith(".yaml"):
                    mtimes[e.name[:-5]] = e.stat().st_mtime_ns
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=0.2)
        try:
            rows = con.execute("SELECT id, title, status, parent, file_mtime_ns, created_at FROM hypothesis").fetchall()
            preds = con.execute("SELECT hypothesis_id, id, status, expect FROM prediction ORDER BY id").fetchall()
        finally:
            con.close()
    except (OSError, sqlite3.Error):
        return None
    if len(rows) != len(mtimes):
        return None
    nodes: dict[str, dict[str, Any]] = {}
    for hid, title, status, parent, mt, created in rows:
        if mtimes.get(hid) != mt:
            return None
        nodes[hid] = {"id": hid, "title": title, "status": status, "parent": parent, "created": created,
                      "predictions": [], "children_nodes": []}
    for hid, pid, st, expect in preds:
        if hid in nodes:
            nodes[hid]["predictions"].append({"id": pid, "status": st, "expect": expect})
    return _tree(nodes)


def hypotheses_view(ctx: Ctx) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The tree (nested nodes: id, title, status, parent, prediction statuses, children_nodes) and the
    documents, from ONE sync and in linear time (first paint reads the hypothesis files once)."""
    from optlog.service import hypotheses as H

    docs = H.sync(ctx)
    nodes = {d.id: {"id": d.id, "title": d.title, "status": d.effective_status(), "parent": d.parent,
                    "created": d.created, "predictions": [{"id": p.id, "status": p.status, "expect": p.expect} for p in d.predictions],
                    "children_nodes": []} for d in docs.values()}
    return _tree(nodes), docs


def overview(ctx: Ctx, todos: list[dict[str, Any]]) -> dict[str, Any]:
    """What the first screen shows beside the tree: the agent's open todos (in progress first, with
    the `activeForm` it gave), the latest verdicts and the hypotheses whose verdict is due, as
    `optlog status` finds them (one definition of 'due')."""
    from optlog.service.status import status

    st = status(ctx)
    # status leaves out a section with nothing to say
    return {"todos": open_first(todos), "todos_total": len(todos), "verdicts": st.get("latest_verdicts") or [],
            "due": st.get("verdict_due") or []}


def latest_levels(h: dict[str, Any], pid: str) -> list[dict[str, Any]]:
    """The per-level table of prediction `pid` from the newest verdict record that judged it."""
    for v in reversed(h.get("verdict_details") or []):
        for p in v.get("predictions") or []:
            if p.get("id") == pid:
                return list(p.get("levels") or [])
    return []


def latest_explanation(h: dict[str, Any], pid: str) -> str | None:
    for v in reversed(h.get("verdict_details") or []):
        for p in v.get("predictions") or []:
            if p.get("id") == pid:
                return p.get("explanation")
    return None


def _sel(d: dict[str, Any] | None, fallback: str) -> str:
    return " ".join(f"{k}={v}" for k, v in (d or {}).items()) or fallback


def prediction_series(h: dict[str, Any]) -> dict[str, Any] | None:
    """Metric against the prediction's --per label for each group (a, b) of the first prediction with
    per-level evidence: {"title", "x": [level labels], "groups": {name: [value or None]}}."""
    for p in h.get("predictions", []):
        levels = latest_levels(h, p["id"])
        if not levels:
            continue
        xl = [" ".join(str(v) for v in (lv.get("level") or {}).values()) or "all" for lv in levels]
        num = lambda v: v if isinstance(v, (int, float)) else None  # noqa: E731
        groups = {_sel(p.get("a"), "a"): [num(lv.get("a")) for lv in levels],
                  _sel(p.get("b"), "b"): [num(lv.get("b")) for lv in levels]}
        return {"title": f"{p.get('metric') or 'metric'} by {p.get('per') or 'level'} ({p['id']})", "x": xl,
                "groups": groups}
    return None


LINKED_SHOWN = 30


def hypothesis_detail(ctx: Ctx, hid: str) -> dict[str, Any]:
    """`hypothesis show` plus what the dashboard draws: per-level tables and explanations of each
    prediction, the plot series, and for linked runs a one-line telemetry summary and diagnosis."""
    from optlog.service import hypotheses as H

    h = H.show(ctx, hid)
    for p in h["predictions"]:
        p["levels"] = latest_levels(h, p["id"])
        p["explanation"] = latest_explanation(h, p["id"])
    h["plot"] = prediction_series(h)
    try:
        ceilings = ctx.config.ceilings()
    except Exception:
        ceilings = {}
    linked = []
    for r in h.get("runs", [])[:LINKED_SHOWN]:
        m = r.get("metrics") or {}
        tel = {k: m[k] for k in ("gpu_power_w", "tensor_active", "dram_bw_util", "energy_j") if k in m}
        try:
            dg = diagnose(m, ceilings, r.get("labels") or {})
            diag = f"{dg.bound}-bound" if dg.bound else "undecided"
        except Exception:
            diag = ""
        linked.append({"id": r["id"], "status": r["status"], "invalidated": r.get("invalidated"),
                       "labels": r.get("labels") or {}, "telemetry": tel, "diagnosis": diag})
    h["linked"] = linked
    h["linked_total"] = len(h.get("runs", []))
    return h
