"""`optlog report`: a session report (markdown, SVG plots beside it), committed to git.

Default file: `reports/report-YYYYMMDD-HHMM.md` (the time of writing, so successive reports do not
overwrite each other; `--out` names any file). The text itself holds no render-time clock: the same
data gives the same bytes, and an unchanged report makes no new commit. Plots beside the markdown:
`<stem>-<prediction id>.svg` for every prediction with `--per` (the workspace's own labels), and,
where runs carry `config` and `concurrency`, `<stem>-throughput[-N].svg` and
`<stem>-per-user-per-gpu[-N].svg`, and `<stem>-tune-<study>.svg` for each tuning study of several
objectives (its Pareto front). Links go only to files that exist.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from optlog.core import labels as L
from optlog.core import report as C
from optlog.core import text as TX
from optlog.core.plans import calibration
from optlog.core.timeutil import now_iso
from optlog.errors import BadInput
from optlog.gitlog import history
from optlog.gitlog import trailers as TR
from optlog.paths import STATE_DIR
from optlog.render import plots as PL
from optlog.render import report as R
from optlog.service import evidence, hypotheses, todos
from optlog.service import plans as plan_svc
from optlog.service import tune
from optlog.service.context import Ctx
from optlog.store.lock import workspace_lock
from optlog.store.runrows import report_rows
from optlog.yamlio import write_atomic


def collect(ctx: Ctx) -> dict[str, Any]:
    docs = hypotheses.sync(ctx)
    runs = report_rows(ctx.db)
    views, _ = plan_svc.evaluated(ctx, docs)
    cfg = ctx.config
    hw = cfg.hardware
    kind = hw.default or (next(iter(hw.gpus)) if hw.gpus else None)
    spec = hw.gpus.get(kind) if kind else None
    return {
        "name": cfg.name,
        "docs": docs,
        "runs": runs,
        "notes": evidence.list_notes(ctx),
        "todos": todos.list_(ctx),
        "plans": views,
        "calibration": calibration(views),
        "plans_prefix": cfg.plans.prefix,
        "studies": tune.report_studies(ctx),
        "power_limit_w": spec.power_limit_w if spec else None,
        "gpu_kind": kind,
        "gpu_count": spec.count if spec else None,
    }


def _target(ctx: Ctx, out: str | None) -> Path:
    if out:
        p = Path(out)
        if not p.is_absolute():
            p = ctx.ws.root / p
        if p.suffix.lower() != ".md":
            raise BadInput(f"a report is markdown: the file name must end in .md, got {out!r}", field="--out")
        if p.exists() and p.is_dir():
            raise BadInput(f"{out} is a folder", field="--out")
        # a report is a decision record of this workspace: inside it, never in git's own folder
        # (symbolic links resolved, so neither can be reached through one)
        real, root = p.resolve(), ctx.ws.root.resolve()
        try:
            inner = real.relative_to(root)
        except ValueError:
            raise BadInput(f"{out} is outside the workspace {root}: write reports inside it (e.g. reports/NAME.md)",
                           field="--out", code="outside_workspace") from None
        if ".git" in inner.parts or STATE_DIR in inner.parts[:1]:
            raise BadInput(f"{out} is inside {'.git' if '.git' in inner.parts else STATE_DIR}/: "
                           f"write reports elsewhere in the workspace (e.g. reports/NAME.md)", field="--out")
        return p
    stamp = now_iso()
    name = f"report-{stamp[0:4]}{stamp[5:7]}{stamp[8:10]}-{stamp[11:13]}{stamp[14:16]}.md"
    return ctx.ws.reports_dir / name


def build(ctx: Ctx, path: Path, draw: bool = True) -> tuple[str, list[tuple[Path, Any]]]:
    """The markdown text and the plots to draw (path, drawing function) for a report at `path`."""

    data = collect(ctx)
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
        metric = next((m for m in ("total_token_throughput", "output_throughput", "request_throughput")
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
    # a plot per prediction with --per, from its latest verdict (the workspace's own labels)
    plot_refs["predictions"] = []
    for hid in sorted(data["docs"]):
        doc = data["docs"][hid]
        for pred in doc.predictions:
            pp = C.prediction_plot(doc, pred)
            if pp is None:
                continue
            p = folder / f"{stem}-{re.sub(r'[^A-Za-z0-9_.-]+', '-', pred.id)}.svg"
            todo.append((p, (PL.per_level, (str(p), pp))))
            plot_refs["predictions"].append({"prediction": pred.id, "href": p.name,
                                             "alt": f"{pred.id}: {pp['y_title']} by {pp['per']}, every run a dot"})
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


def write(ctx: Ctx, out: str | None = None, commit: bool = True) -> dict[str, Any]:
    path = _target(ctx, out)
    with workspace_lock(ctx.ws):
        text, todo = build(ctx, path)
        if commit and _inside(ctx, path):
            history.refuse_overwriting_hand_edits(
                ctx, {path: text.encode("utf-8")},
                "Write the report to another file (`--out`), or put the remark in a note (`optlog note add`)")
        path.parent.mkdir(parents=True, exist_ok=True)
        if not (path.is_file() and path.read_bytes() == text.encode("utf-8")):
            write_atomic(path, text)
        plots = []
        for p, (fn, args) in todo:
            tmp = p.with_name(f".{p.name}.tmp")
            fn(str(tmp), *args[1:])
            if p.is_file() and p.read_bytes() == tmp.read_bytes():
                tmp.unlink()
            else:
                os.replace(tmp, p)
            plots.append(p)
        sha = None
        inside = _inside(ctx, path)
        if commit and inside:
            rel = ctx.ws.rel(path)
            sha = history.record(ctx, [path, *plots], f"optlog: report {rel}", "", trailers={TR.EVENT: "report"})
    return {"file": ctx.ws.rel(path), "plots": [ctx.ws.rel(p) for p in plots], "commit": sha, "bytes": len(text.encode())}


def _inside(ctx: Ctx, p: Path) -> bool:
    try:
        p.resolve().relative_to(ctx.ws.root.resolve())
        return True
    except ValueError:
        return False
