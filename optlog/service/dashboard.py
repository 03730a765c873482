"""Read models for the dashboard (TUI): cheap change detection and paged loading.

The TUI asks `change_token` twice a second; only when it moves does it reload, and then only
what is on screen (a page of runs, not all of them).
"""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping
from typing import Any

from optlog.core import labels as L
from optlog.core import units as U
from optlog.core.findings import prediction_clause
from optlog.core.report import group_names
from optlog.core.statuses import reader_text
from optlog.core.diagnosis import diagnose
from optlog.core.timeutil import now_iso, parse_iso
from optlog.core.todos import open_first
from optlog.core.verdict import quantity_unit
from optlog.needs import Index, Reads
from optlog.paths import Workspace
from optlog.runs.executors.registry import on_this_machine
from optlog.runs.serving import read_tail
from optlog.service import hypotheses as H
from optlog.service.status import status
from optlog.service.tune import live_summary
from optlog.store.launchrows import launch_label
from optlog.store.launchrows import live_launches as rows_of_live
from optlog.store.launchrows import run_states
from optlog.store.quickread import hypothesis_index
from optlog.store.runrows import metric_names_by_use, predicted_metrics, table_rows
from optlog.telemetry.live import LiveSampler


def files_token(ws: Workspace) -> tuple[int, int]:
    """(count, newest mtime) of the hypothesis files: a hand edit or a new file moves it."""
    d = ws.hypotheses_dir
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


def change_token(ctx: Reads) -> tuple[Any, ...]:
    """Moves whenever another process writes the database or touches a hypothesis file."""
    return (ctx.db.change_token(), *files_token(ctx.ws))


def hypotheses_tree(ctx: Reads) -> list[dict[str, Any]]:
    """Hypotheses as nested nodes (parent → children), each with status and prediction counts."""
    return hypotheses_view(ctx)[0]


RUN_METRICS_SHOWN = 3  # metric columns before the user chooses (`M` in the runs table)


def runs_index(ctx: Index, metrics: list[str] | None = None) -> dict[str, Any]:
    """Every run as a light row for the runs table (`core.runtable`): id, status, invalidated,
    launch, hypothesis, labels, and only the chosen metrics' values; plus the metric names the runs
    have (most common first). Light enough to sort and filter 10,000 runs in memory
    (`store.runrows.table_rows`). `metrics` None chooses: the prediction metrics the runs have,
    then the most common, three in all."""

    with ctx.db.read() as s:
        known = metric_names_by_use(s)
        if metrics is None:
            asked = predicted_metrics(s)
            metrics = ([m for m in known if m in asked] + [m for m in known if m not in asked])[:RUN_METRICS_SHOWN]
        rows = table_rows(s, metrics)
    return {"rows": rows, "metrics": list(metrics), "known_metrics": known}


LAUNCH_LOG_LINES = 6
LAUNCH_FAILURES = 5


def live_sampler() -> Any:
    """A sampler of this machine for the overview's live telemetry (telemetry.live)."""

    return LiveSampler()


def live_launches(ctx: Reads) -> list[dict[str, Any]]:
    """The launches now queued or running, as the overview's launch pane shows them, from what the
    launcher already records (the launch row's progress, its runs, `launches/<id>/launch.log`): the
    point being measured (of how many), seconds elapsed since the launch was created and an
    estimate of those left (the mean point so far times the points left), its failed runs with
    their error, and the log's last lines. A launch of `optlog tune` also carries its study
    (`service.tune.live_summary`: the trials by state, the best so far)."""

    now = parse_iso(now_iso())
    with ctx.db.read() as s:
        rows = sorted(rows_of_live(s), key=lambda r: r.id or 0)
        out = []
        for r in rows:
            pr = dict(r.progress or {})
            runs = run_states(s, r.id or 0)
            failed = [{"id": i, "error": e, "cause": c} for i, st, e, c in runs if st == "failed"]
            elapsed = max(0.0, (now - parse_iso(r.created_at)).total_seconds()) if r.created_at else None
            done, total = int(pr.get("done") or 0), int(pr.get("total") or len(runs))
            per_point = (float(pr.get("elapsed_s") or 0.0) / done) if done else None
            remaining = per_point * max(0, total - done) if per_point is not None else None
            executor = (r.spec or {}).get("executor", "local") if isinstance(r.spec, dict) else "local"
            here = on_this_machine(executor) and (not r.host or r.host == socket.gethostname())
            out.append({"id": r.id, "status": r.status, "spec": r.spec_path, "progress": pr, "here": here,
                        "done": done, "total": total, "current": pr.get("current"), "elapsed_s": elapsed,
                        "remaining_s": remaining, "failed": failed[-LAUNCH_FAILURES:], "failed_total": len(failed)})
            spec = (r.spec or {}).get("spec") if isinstance(r.spec, dict) else None
            if isinstance(spec, dict) and spec.get("search"):  # an optlog tune worker: its runs name the study
                out[-1]["study_name"] = launch_label(s, r.id or 0, "study")
    for la in out:
        if la.get("study_name"):
            la["study"] = live_summary(ctx, str(la["study_name"]))
        la["log_tail"] = read_tail(ctx.ws.state_dir / "launches" / str(la["id"]) / "launch.log",
                                   LAUNCH_LOG_LINES).splitlines()
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

    db = ws.sqlite_file
    if db is None or not db.exists():
        return None
    try:
        mtimes: dict[str, int] = {}
        with os.scandir(ws.hypotheses_dir) as it:
            for e in it:
                if e.name.endswith(".yaml"):
                    mtimes[e.name[:-5]] = e.stat().st_mtime_ns
    except OSError:
        return None
    index = hypothesis_index(db)
    if index is None:
        return None
    rows, preds = index
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


def hypotheses_view(ctx: Reads) -> tuple[list[dict[str, Any]], Mapping[str, Any]]:
    """The tree (nested nodes: id, title, status, parent, prediction statuses, children_nodes) and the
    documents, from ONE sync and in linear time (first paint reads the hypothesis files once)."""

    docs = H.sync(ctx)
    nodes = {d.id: {"id": d.id, "title": d.title, "status": d.effective_status(), "parent": d.parent,
                    "created": d.created, "predictions": [{"id": p.id, "status": p.status, "expect": p.expect} for p in d.predictions],
                    "children_nodes": []} for d in docs.values()}
    return _tree(nodes), docs


def overview(ctx: Reads, todos: list[dict[str, Any]], docs: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """What the first screen shows beside the tree: the agent's open todos (in progress first, with
    the `activeForm` it gave), the latest verdicts and the hypotheses whose verdict is due, as
    `optlog status` finds them (one definition of 'due'). `docs` are the documents the tree was
    just built from (`hypotheses_view`): status does not read the hypothesis files again."""

    st = status(ctx, docs=docs, all_todos=todos)
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


LOG2_SPAN = 8  # a numeric axis spanning this factor or more (64 → 512) is drawn on log2


def log2_axis(xs: list[float] | None) -> bool:
    """Concurrency-like levels (positive numbers spanning three doublings or more) read on a log2
    axis: 64, 128, 256, 512 equally spaced, not bunched at the left of a linear one."""
    if not xs or any(x <= 0 for x in xs):
        return False
    return max(xs) / min(xs) >= LOG2_SPAN


def prediction_series(h: dict[str, Any]) -> dict[str, Any] | None:
    """What the prediction plot draws, from the per-level table of the first prediction that has
    one: the metric of each group (a, b) at each level with the spread of its repeats (min, max),
    the level values as numbers when they are (`log2` when they span like concurrency does), and
    the tested quantity's estimate and interval at each level with the threshold the prediction
    expects (`a/b` in [0.3, 0.6], `a` < 0.05 × peak), with the units of the metric and of the
    quantity (its axes' labels): {"title", "x", "xv", "log2", "groups", "spread", "quantity",
    "unit", "quantity_unit", "estimates", "ci", "threshold"}."""

    for p in h.get("predictions", []):
        levels = latest_levels(h, p["id"])
        if not levels:
            continue
        xl = [" ".join(str(v) for v in (lv.get("level") or {}).values()) or "all" for lv in levels]
        nums = [L.as_number(x) for x in xl]
        xv = [float(n) for n in nums if n is not None] if all(n is not None for n in nums) else None
        num = lambda v: v if isinstance(v, (int, float)) else None  # noqa: E731

        def spread(g: str) -> list[tuple[float, float] | None]:
            out: list[tuple[float, float] | None] = []
            for lv in levels:
                vals = [v for v in ((lv.get("values") or {}).get(g) or []) if isinstance(v, (int, float))]
                out.append((min(vals), max(vals)) if len(vals) > 1 else None)
            return out

        na, nb = group_names(dict(p.get("a") or {}), dict(p.get("b") or {})) if p.get("b") else (_sel(p.get("a"), "a"), "b")
        thr = next((lv.get("threshold") for lv in levels if lv.get("threshold") is not None), None)
        return {"title": f"{U.with_unit(p.get('metric') or 'metric')} by {p.get('per') or 'level'} ({p['id']})", "x": xl,
                "xv": xv, "log2": log2_axis(xv),
                "groups": {na: [num(lv.get("a")) for lv in levels], nb: [num(lv.get("b")) for lv in levels]},
                "spread": {na: spread("a"), nb: spread("b")},
                "quantity": (q := next((lv.get("quantity") for lv in levels if lv.get("quantity")), None)),
                "unit": U.unit(p.get("metric") or ""), "quantity_unit": quantity_unit(q, p.get("metric")),
                "estimates": [num(lv.get("estimate")) for lv in levels],
                "ci": [lv.get("ci") for lv in levels], "threshold": thr, "expect": p.get("expect")}
    return None


LINKED_SHOWN = 30


def hypothesis_detail(ctx: Reads, hid: str, docs: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """`hypothesis show` plus what the dashboard draws: per-level tables and explanations of each
    prediction, the plot series, and for linked runs a one-line telemetry summary and diagnosis."""

    h = H.show(ctx, hid, docs)  # docs: the reload's own read of the files
    for p in h["predictions"]:
        p["levels"] = latest_levels(h, p["id"])
        p["explanation"] = latest_explanation(h, p["id"])
        if p["levels"]:  # in the words and with the number of the report's findings (one statistic)
            p["explanation"] = prediction_clause({**p, "levels": p["levels"]}, p.get("status"))  # shown beside it
        elif p["explanation"]:
            p["explanation"] = reader_text(p["explanation"], p.get("status"))
    for v in h.get("verdicts") or []:
        v["summary"] = reader_text(v.get("summary") or "", v.get("status"))
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
            diag = dg.headline()
        except Exception:
            diag = ""
        linked.append({"id": r["id"], "status": r["status"], "invalidated": r.get("invalidated"),
                       "labels": r.get("labels") or {}, "telemetry": tel, "diagnosis": diag})
    h["linked"] = linked
    h["linked_total"] = len(h.get("runs", []))
    return h
