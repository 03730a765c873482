"""`optlog report`: a session report (markdown, SVG plots beside it), committed to git.

Default file: one per scope, replaced by the next report of that scope (`default_name`:
`reports/report.md`, `report-HYP.md`, `report-since-WHEN.md`; `--keep` writes a time-stamped file
instead; `--out` names any file). The text itself holds no render-time clock: the same data gives
the same bytes, and an unchanged report makes no new commit. Plots beside the markdown:
`<stem>-<prediction id>.svg` for every judged prediction (its measured relation:
core.report.relation), and, where runs carry `config` and `concurrency`, `<stem>-throughput[-N].svg`
and `<stem>-per-user-per-gpu[-N].svg`, and `<stem>-tune-<study>.svg` for each tuning study of several
objectives (its Pareto front). Links go only to files that exist.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from optlog.core import labels as L
from optlog.core import metrics as M
from optlog.core import report as C
from optlog.core import text as TX
from optlog.core.plans import calibration
from optlog.core.timeutil import at_or_after, now_iso, since_time
from optlog.errors import BadInput
from optlog.gitlog import history
from optlog.gitlog import trailers as TR
from optlog.needs import Index, Reads, Writes
from optlog.paths import STATE_DIR, Workspace
from optlog.render import plots as PL
from optlog.render import report as R
from optlog.service import evidence, hypotheses, todos
from optlog.service import plans as plan_svc
from optlog.service import tune
from optlog.service.history import shallow_notice
from optlog.store.lock import workspace_lock
from optlog.store.runrows import report_machines, report_rows
from optlog.yamlio import write_atomic
from optlog.core import jsondoc


_PLOT_LINK = re.compile(r"\]\(<([^>/\\]+\.svg)>\)")


def _machines(ctx: Index) -> tuple[dict[str, str], dict[int, str]]:
    """A description of each host the runs ran on (`vm (Linux x86_64, 2 CPUs)`, its GPUs when it had
    any: from the environment of one run per host), and each launch's spec file."""
    machines: dict[str, str] = {}
    envs, specs = report_machines(ctx.db)
    for host, env in envs:
        if not host:
            continue
        try:
            e = jsondoc.loads(env) if isinstance(env, str) else (env or {})
        except ValueError:
            e = {}
        if not isinstance(e, dict):
            e = {}
        h: dict[str, Any] = e["host"] if isinstance(e.get("host"), dict) else {}
        bits = [" ".join(str(h[k]) for k in ("platform", "machine") if h.get(k))]
        if h.get("cpus"):
            bits.append(f"{h['cpus']} CPUs")
        gpus = [g.get("name") for g in e.get("gpus") or [] if isinstance(g, dict) and g.get("name")]
        if gpus:
            bits.append(", ".join(f"{n}× {g}" for g, n in sorted(Counter(gpus).items())))
        bits = [b for b in bits if b]
        machines[str(host)] = f"{host} ({', '.join(bits)})" if bits else str(host)
    return machines, specs


def _family(docs: Mapping[str, Any], hid: str) -> set[str]:
    """A hypothesis, its pivots (children, recursively) and the rivals of those: what a report
    scoped to it covers."""
    fam = {hid}
    grew = True
    while grew:
        n = len(fam)
        fam |= {h for h, d in docs.items() if d.parent in fam}
        fam |= {r for h in list(fam) if h in docs for r in docs[h].rivals}
        fam |= {h for h, d in docs.items() if set(d.rivals) & fam}
        grew = len(fam) > n
    return fam


def collect(ctx: Reads, hypothesis: str | None = None, since: str | None = None) -> dict[str, Any]:
    all_docs: Mapping[str, Any] = hypotheses.sync(ctx)
    runs = report_rows(ctx.db)
    views, _ = plan_svc.evaluated(ctx, all_docs)
    notes, tds = evidence.list_notes(ctx), todos.list_(ctx)
    docs: Mapping[str, Any] = all_docs
    scope = []
    if hypothesis:
        if hypothesis not in all_docs:
            raise BadInput(f"no hypothesis {hypothesis!r} (optlog hypothesis list)", field="hypothesis",
                           code="not_found")
        fam = _family(all_docs, hypothesis)
        docs = {h: d for h, d in all_docs.items() if h in fam}
        used = {i for d in docs.values() for v in d.verdicts for p in v.predictions if isinstance(p, dict)
                for lv in p.get("levels") or [] if isinstance(lv, dict) for ids in (lv.get("runs") or {}).values()
                for i in ids}
        runs = [r for r in runs if r["hypothesis"] in fam or r["id"] in used]
        notes = [n for n in notes if n.get("hypothesis") in fam]
        tds = [t for t in tds if t.get("hypothesis") in fam]
        views = [v for v in views if {n.split("=")[0] for n in v.get("needs") or []} & fam]
        scope.append(f"hypothesis {hypothesis}" + (f" with {', '.join(sorted(fam - {hypothesis}))}" if len(fam) > 1 else ""))
    at = since_time(since)
    if at:
        runs = [r for r in runs if at_or_after(r["created_at"] or "", at)]
        run_hyps = {r["hypothesis"] for r in runs}
        docs = {h: d for h, d in docs.items() if at_or_after(str(d.created or ""), at) or h in run_hyps
                or any(at_or_after(str(v.at), at) for v in d.verdicts)}
        notes = [n for n in notes if at_or_after(n.get("created_at") or "", at)]
        scope.append(f"since {since}")
    cfg = ctx.config
    machines, specs = _machines(ctx)
    hw = cfg.hardware
    kind = hw.default or (next(iter(hw.gpus)) if hw.gpus else None)
    spec = hw.gpus.get(kind) if kind else None
    return {
        "name": cfg.name,
        "docs": docs,
        "runs": runs,
        "scope": "; ".join(scope) or None,
        "notes": notes,
        "todos": tds,
        "plans": views,
        "calibration": calibration(views),
        "plans_prefix": cfg.plans.prefix,
        "studies": tune.report_studies(ctx),
        "power_limit_w": spec.power_limit_w if spec else None,
        "gpu_kind": kind,
        "gpu_count": spec.count if spec else None,
        "machines": machines,
        "launch_specs": specs,
        "history_note": shallow_notice(cut) if (cut := history.shallow_cut(ctx.ws.root)) else None,
    }


def _target(ws: Workspace, out: str | None, hypothesis: str | None = None, since: str | None = None,
            keep: bool = False) -> Path:
    if out:
        p = Path(out)
        if not p.is_absolute():
            p = ws.root / p
        if p.suffix.lower() != ".md":
            raise BadInput(f"a report is markdown: the file name must end in .md, got {out!r}", field="out")
        if p.exists() and p.is_dir():
            raise BadInput(f"{out} is a folder", field="out")
        # a report is a decision record of this workspace: inside it, never in git's own folder
        # (symbolic links resolved, so neither can be reached through one)
        real, root = p.resolve(), ws.root.resolve()
        try:
            inner = real.relative_to(root)
        except ValueError:
            raise BadInput(f"{out} is outside the workspace {root}: write reports inside it (e.g. reports/NAME.md)",
                           field="out", code="outside_workspace") from None
        if ".git" in inner.parts or STATE_DIR in inner.parts[:1]:
            raise BadInput(f"{out} is inside {'.git' if '.git' in inner.parts else STATE_DIR}/: "
                           f"write reports elsewhere in the workspace (e.g. reports/NAME.md)", field="out")
        return p
    return ws.reports_dir / default_name(hypothesis, since, keep)


def default_name(hypothesis: str | None = None, since: str | None = None, keep: bool = False) -> str:
    """The file a report of this scope goes to: `report.md` (the whole workspace),
    `report-HYP.md`, `report-since-WHEN.md`. Each scope has one current file, replaced by the next
    report of that scope (git keeps the earlier ones), so a report written by a mistaken step never
    stays beside the real one; `keep` stamps the name with the time of writing instead
    (`report-YYYYMMDD-HHMM[-scope].md`), a file no later report replaces."""
    scope = "".join([f"-{hypothesis}" if hypothesis else "",
                     f"-since-{re.sub(r'[^0-9A-Za-z]+', '', since)}" if since else ""])
    if keep:
        stamp = now_iso()
        return f"report-{stamp[0:4]}{stamp[5:7]}{stamp[8:10]}-{stamp[11:13]}{stamp[14:16]}{scope}.md"
    return f"report{scope}.md"


def _dram_scale(ceilings: dict[str, float]) -> float | None:
    """GPM dram_bw_util's 100 % over the calibrated bandwidth: what puts the report's DRAM column on the
    scale the diagnosis reads (core.diagnosis.counter_view)."""
    cal = ceilings.get("measured_mem_bw_gbps") or ceilings.get("mem_bw_gbps")
    full = ceilings.get("measured_dram_counter_full_gbps") or ceilings.get("datasheet_mem_bw_gbps")
    return full / cal if full and cal else None


def build(ctx: Reads, path: Path, draw: bool = True, hypothesis: str | None = None,
          since: str | None = None) -> tuple[str, list[tuple[Path, Any]]]:
    """The markdown text and the plots to draw (path, drawing function) for a report at `path`."""

    data = collect(ctx, hypothesis, since)
    stem = path.stem
    folder = path.parent
    data["plans_href"] = Path(os.path.relpath(ctx.ws.plans_dir(data["plans_prefix"]), folder)).as_posix()
    fams = data["fams"] = C.config_runs(data["runs"])
    todo: list[tuple[Path, Any]] = []
    plot_refs: dict[str, list[dict[str, Any]]] = {"throughput": [], "per_user": []}
    per_user_rows: list[tuple[str, str, Any, float, float]] = []
    many = len(fams) > 1
    for fi, (fk, fruns) in enumerate(fams.items()):
        fname = C.family_name(fk)
        suffix = f"-{fi + 1}" if many else ""
        metric = next((m for m in M.PLOT_THROUGHPUT
                       if any(m in r["metrics"] for r in fruns)), None)
        if metric:
            configs, levels, cells = C.grid(fruns, metric)
            series = {c: [(float(L.as_number(lv) or 0), cells[(c, L.canonical(lv))]["median"]) for lv in levels
                          if (c, L.canonical(lv)) in cells] for c in configs}
            p = folder / f"{stem}-throughput{suffix}.svg"
            title = f"{metric} vs concurrency" + (f" ({fname})" if fk else "")
            todo.append((p, (PL.throughput_vs_concurrency, (str(p), title, metric, series))))
            plot_refs["throughput"].append({"family": fi, "href": p.name, "alt": title})
        pts = C.per_user_per_gpu(fruns, data["gpu_count"])
        if pts:
            p = folder / f"{stem}-per-user-per-gpu{suffix}.svg"
            title = "per-user vs per-GPU output throughput" + (f" ({fname})" if fk else "")
            todo.append((p, (PL.per_user_vs_per_gpu, (str(p), title, pts))))
            plot_refs["per_user"].append({"family": fi, "href": p.name, "alt": title})
            for cfg, ps in pts.items():
                for x, y, c in ps:
                    per_user_rows.append((fname, cfg, c, x, y))
    data["per_user_rows"] = per_user_rows
    # the measured relation of every judged prediction: a table and a plot over the label it varies
    plot_refs["predictions"] = []
    for hid in sorted(data["docs"]):
        doc = data["docs"][hid]
        for pred in doc.predictions:
            try:
                rel = C.relation(doc, pred)
            except (ArithmeticError, ValueError) as e:  # one prediction's numbers never stop the report (issue 42)
                ctx.notice(f"{pred.id}: its relation is not drawn: its values are beyond what a double can "
                           f"compute with ({type(e).__name__}: {e})")
                continue
            if rel is None:
                continue
            p = folder / f"{stem}-{re.sub(r'[^A-Za-z0-9_.-]+', '-', pred.id)}.svg"
            todo.append((p, (PL.per_level, (str(p), rel))))
            plot_refs["predictions"].append({"prediction": pred.id, "href": p.name, "relation": rel,
                                             "alt": f"{pred.id}: {rel['metric']} by {rel['per']}, every run a dot"})
    # what bounds each launched configuration (issue 43): its diagnosis, the hypotheses that name a bound
    # against it, and the roofline under the calibrated ceilings
    try:
        ceilings = ctx.config.ceilings()
    except Exception:
        ceilings = {}
    data["diagnoses"] = C.diagnoses(data["runs"], ceilings)
    data["bound_verdicts"] = C.bound_verdicts(data["docs"], data["diagnoses"])
    data["dram_scale"] = _dram_scale(ceilings)
    # the link ceilings a multi-GPU run's link counters are held against (issue 43)
    data["link_ceilings"] = {k: v for k, v in ceilings.items()
                             if k in ("measured_link_gbps", "interconnect_gbps", "measured_allreduce_busbw_gbps")}
    plot_refs["roofline"] = []
    view = C.roofline_view(data["diagnoses"], ceilings)
    if view:
        p = folder / f"{stem}-roofline.svg"
        title = "roofline: each configuration under the calibrated ceilings"
        todo.append((p, (PL.roofline, (str(p), title, view))))
        plot_refs["roofline"].append({"href": p.name, "alt": title})
    # a Pareto plot per tuning study of several objectives
    plot_refs["tune"] = []
    for st in data["studies"]:
        tp = C.tune_pareto(st)
        if tp is None:
            continue
        p = folder / f"{stem}-tune-{re.sub(r'[^A-Za-z0-9_.-]+', '-', st['study'])}.svg"
        title = f"study {st['study']}: the trials and the Pareto front"
        todo.append((p, (PL.tune_front, (str(p), title, tp))))
        plot_refs["tune"].append({"study": st["study"], "href": p.name, "alt": title})
    # link only the plan files that exist (a report written before `plan render` has none)
    pdir = ctx.ws.plans_dir(data["plans_prefix"])
    data["plan_files"] = {int(m.group(1)) for f in (pdir.iterdir() if pdir.is_dir() else [])
                          if (m := re.match(rf"{re.escape(data['plans_prefix'])}-(\d+)\.md$", f.name))}
    text = R.render(data, plot_refs)
    return TX.shown(text), todo  # the output rule: no data (a result file, a commit) puts raw ESC or bidi bytes in it


def write(ctx: Writes, out: str | None = None, commit: bool = True, *, hypothesis: str | None = None,
          since: str | None = None, keep: bool = False) -> dict[str, Any]:
    """Write the report of a scope (the whole workspace, `hypothesis` and its pivots and rivals,
    what happened `since`) to its current file (`default_name`) or `out`, replacing that file's
    earlier report and its plots that this one no longer draws."""
    path = _target(ctx.ws, out, hypothesis, since, keep)
    with workspace_lock(ctx.ws):
        text, todo = build(ctx, path, hypothesis=hypothesis, since=since)
        if commit and _inside(ctx.ws, path):
            history.refuse_overwriting_hand_edits(
                ctx, {path: text.encode("utf-8")},
                "Write the report to another file (`--out`), or put the remark in a note (`optlog note add`)")
        path.parent.mkdir(parents=True, exist_ok=True)
        # the plots the earlier report in this file linked (its own, by name: no other file's)
        old_plots = _PLOT_LINK.findall(path.read_text(encoding="utf-8", errors="replace")) if path.is_file() else []
        if not (path.is_file() and path.read_bytes() == text.encode("utf-8")):
            write_atomic(path, text)
        plots = []
        for p, (fn, args) in todo:
            tmp = p.with_name(f".{p.name}.tmp")
            try:
                fn(str(tmp), *args[1:])
            except (ArithmeticError, ValueError) as e:  # one plot's numbers never stop the report (issue 42)
                why = f"its values are beyond what the chart can scale ({type(e).__name__}: {e})"
                PL.not_drawn(str(tmp), p.name, why)
                ctx.notice(f"{ctx.ws.rel(p)}: not drawn: {why}")
            if p.is_file() and p.read_bytes() == tmp.read_bytes():
                tmp.unlink()
            else:
                os.replace(tmp, p)
            plots.append(p)
        # the plots of this file's earlier report that this one does not draw (a prediction removed)
        drawn = {p.name for p in plots}
        stale = [path.parent / n for n in sorted(set(old_plots) - drawn) if (path.parent / n).is_file()]
        for f in stale:
            f.unlink()
        sha = None
        inside = _inside(ctx.ws, path)
        if commit and inside:
            rel = ctx.ws.rel(path)
            sha = history.record(ctx, [path, *plots, *stale], f"optlog: report {rel}", "", trailers={TR.EVENT: "report"})
    return {"file": ctx.ws.rel(path), "plots": [ctx.ws.rel(p) for p in plots], "commit": sha,
            "bytes": len(text.encode()), "deleted": [ctx.ws.rel(p) for p in stale]}


def _inside(ws: Workspace, p: Path) -> bool:
    try:
        p.resolve().relative_to(ws.root.resolve())
        return True
    except ValueError:
        return False
