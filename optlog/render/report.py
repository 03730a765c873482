"""The session report as markdown: a function of the collected data (no clock, no I/O)."""

from __future__ import annotations

from typing import Any

from optlog.core import labels as L
from optlog.core import findings as F
from optlog.core import report as C
from optlog.core import posthoc as PH
from optlog.core import metrics as M
from optlog.core import units as U
from optlog.core.statuses import reader_text
from optlog.core.numfmt import (plural, fmt_gain, fmt_num, fmt_p, fmt_pct, fmt_ratio, fmt_score,
                                 fmt_share, fmt_signed, fmt_value, fmt_written)
from optlog.core.plans import calibration_line, calibration_rows, gain_cell
from optlog.render import md
from optlog.render.plans import verdict_tables

OTHER_ROWS_MAX = 100
OTHER_METRICS_MAX = 8
CONSTANT_METRICS_SHOWN = 6  # metrics with one value in every run, named in the line above a table


def _at(s: Any) -> str:
    s = str(s or "")
    return s[:16].replace("T", " ") if s else "–"


def _kv(labels: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in labels.items())


def render(data: dict[str, Any], plots: dict[str, Any]) -> str:
    docs: dict[str, Any] = data["docs"]
    runs: list[dict[str, Any]] = data["runs"]
    out: list[str] = [md.heading(1, f"Session report: {data['name']}")]

    tl = C.timeline(docs, runs, data["notes"], data["plans"])
    first = next((e["at"] for e in tl if e["at"]), None)
    last = max((e["at"] for e in tl if e["at"]), default=None)
    npred = sum(len(d.predictions) for d in docs.values())
    nverd = sum(len(d.verdicts) for d in docs.values())
    ninv = sum(1 for r in runs if r.get("invalidated"))
    scope = data.get("scope") or "the whole workspace"
    out.append(md.inline(
        f"Scope: {scope}. Covers {_at(first)} to {_at(last)} (UTC): {len(docs)} hypotheses, {npred} predictions, "
        f"{nverd} verdicts, {len(runs)} runs" + (f" ({ninv} invalidated)" if ninv else "")
        + f", {len(data['notes'])} notes, {len(data['todos'])} todos, {len(data['plans'])} plans. "
        "Written by optlog report from the hypothesis files, the recorded runs, notes, todos and plans."
    ))
    if data.get("history_note"):  # a shallow clone: the decision log behind this report is cut
        out.append(md.inline(f"Note: {data['history_note']}."))

    # ---- findings first: a section a reader can forward
    f = F.findings(docs, runs, data["plans"], data.get("machines"), data.get("launch_specs"))
    out.append(md.heading(2, "Findings"))
    for key, head, empty in (("questions", "The questions", "No hypotheses recorded."),
                             ("measured", "What was measured", "No runs recorded."),
                             ("decided", "What was decided", "No verdict yet."),
                             ("pivots", "What changed course", ""),
                             ("next", "What to do next", "No plans ranked.")):
        items = f[key]
        if not items and not empty:
            continue
        out.append(f"**{head}**")
        out.append(md.bullets((md.inline(x) for x in items), ordered=key == "next") if items else md.inline(empty))

    # ---- hypotheses, pivots, rivals
    out.append(md.heading(2, "Hypotheses"))
    if docs:
        rows = []
        for hid in _hyp_order(docs):
            d = docs[hid]
            preds = ", ".join(f"{p.id} {p.status}" for p in d.predictions) or "–"
            rows.append([md.code(hid), md.text(d.title), f"**{md.text(d.effective_status())}**",
                         md.text(d.parent or "–"), md.text(", ".join(_rivals(docs, hid)) or "–"), md.text(preds)])
        out.append(md.raw_table(["id", "title", "status", "parent", "rivals", "predictions"], rows))
        pivots = [(d.parent, d.id) for d in docs.values() if d.parent]
        if pivots:
            out.append(md.heading(3, "Pivots"))
            items = []
            for par, child in sorted(pivots):
                ps = docs[par].effective_status() if par in docs else "missing"
                items.append(md.inline(f"{par} ({ps}) → {child} ({docs[child].effective_status()})"))
            out.append(md.bullets(items))
        pairs = sorted({tuple(sorted((h, r))) for h in docs for r in _rivals(docs, h)})
        if pairs:
            out.append(md.heading(3, "Rivals"))
            out.append(md.bullets(md.inline(f"{a} ({_st(docs, a)}) ⟷ {b} ({_st(docs, b)})") for a, b in pairs))
    else:
        out.append(md.inline("No hypotheses recorded."))

    # ---- predictions and verdicts
    shown_relations: dict[Any, str] = {}
    with_preds = [h for h in _hyp_order(docs) if docs[h].predictions or docs[h].verdicts]
    out.append(md.heading(2, "Predictions and verdicts"))
    if not with_preds:
        out.append(md.inline("No predictions recorded."))
    for hid in with_preds:
        d = docs[hid]
        out.append(md.heading(3, f"{hid}: {d.title} ({d.effective_status()})"))
        if d.predictions:
            rows = [[md.code(p.id), md.code(p.expect), md.text(p.metric or "–"), md.text(fmt_value(p.a) or "–"),
                     md.text(fmt_value(p.b) or "–"), md.text(p.where or "–"), md.text(p.per or "–"),
                     md.text(PH.status_text(p.status, p.post_hoc)
                             + (" (edited after evidence)" if p.edited_after_evidence else ""))]
                    for p in d.predictions]
            out.append(md.raw_table(["prediction", "expect", "metric", "a", "b", "where", "per", "status"], rows))
            for pl in plots.get("predictions", []):
                if pl["prediction"] in {p.id for p in d.predictions}:
                    out.extend(_relation(pl, shown_relations))
        if d.override is not None:
            o = d.override
            out.append(f"Set by hand to **{md.text(o.status)}** by {md.text(o.by)} at {md.text(o.at)}: "
                       f"{md.text(o.why)}")
        if d.verdicts:
            v = d.verdicts[-1]
            said = reader_text(v.summary, v.status)
            out.append(f"Latest verdict ({md.text(_at(v.at))}, by {md.text(v.by)}): **{md.text(v.status)}**"
                       + (f": {md.text(said)}" if said else ""))
            out.extend(verdict_tables(v))
            if len(d.verdicts) > 1:
                out.append(md.heading(4, "Verdict history"))
                out.append(md.table(["at", "by", "status", "summary"],
                                    [[_at(x.at), x.by, x.status, reader_text(x.summary, x.status)] for x in d.verdicts]))

    # ---- timeline (the record behind the findings)
    out.append(md.heading(2, "Timeline"))
    if tl:
        out.append(md.table(["at (UTC)", "what", "by", "event"],
                            [[_at(e["at"]), e["kind"], e.get("by") or "", e["text"]] for e in tl]))
    else:
        out.append(md.inline("Nothing recorded yet."))

    # ---- throughput by configuration
    # only where the workspace's runs carry these labels (a serving sweep); nothing is said otherwise
    fams = data.get("fams") or C.config_runs(runs)
    if fams:
        out.append(md.heading(2, "Throughput by configuration"))
    for fi, (fk, fruns) in enumerate(fams.items()):
        if len(fams) > 1 or fk:
            out.append(md.heading(3, C.family_name(fk)))
        for pl in plots.get("throughput", []):
            if pl["family"] == fi:
                out.append(f"![{md.text(pl['alt'])}](<{pl['href']}>)")
        for metric in (*M.REPORT_THROUGHPUT, *M.REPORT_LATENCY):
            configs, levels, cells = C.grid(fruns, metric)
            if not cells:
                continue
            base = configs[0]
            header = [M.LOAD_POINT, *configs] + [f"{c} / {base}" for c in configs[1:]]
            rows = []
            for lv in levels:
                k = L.canonical(lv)
                vals = [cells.get((c, k)) for c in configs]
                row = [str(lv)] + [(fmt_value(v["median"]) + (f" (n={v['n']})" if v["n"] > 1 else "")) if v else "–"
                                   for v in vals]
                b = cells.get((base, k))
                for c in configs[1:]:
                    x = cells.get((c, k))
                    row.append(fmt_ratio(x["median"] / b["median"]) if x and b and b["median"] else "–")
                rows.append(row)
            out.append(md.heading(4, metric))
            out.append(md.table(header, rows, ["r"] * len(header)))

    # ---- per-user vs per-GPU
    pu = plots.get("per_user", [])
    if pu or data.get("per_user_rows"):
        out.append(md.heading(2, "Per-user and per-GPU throughput"))
        out.append(md.inline(
            "Per user: 1000 / median TPOT where recorded, else output throughput ÷ concurrency (or the measured "
            "mean in-flight requests). Per GPU: output throughput ÷ GPUs (the gpus label, else tp × pp × dp)."
        ))
        for pl in pu:
            out.append(f"![{md.text(pl['alt'])}](<{pl['href']}>)")
        rows = [[fam, cfg, str(c), fmt_num(x), fmt_num(y)] for fam, cfg, c, x, y in data.get("per_user_rows", [])]
        if rows:
            out.append(md.table(["workload", "config", "concurrency", "output tok/s per user", "output tok/s per GPU"],
                                rows, ["l", "l", "r", "r", "r"]))

    # ---- tuning studies (optlog tune)
    if data.get("studies"):
        out.append(md.heading(2, "Tuning"))
        out.append("Studies of optlog tune (docs/tune.md): each trial one launched run. The best is named after it "
                   "was re-measured; *shrink* is (first reading − re-measured median) / median: how much of a "
                   "trial's lead was luck (the winner's curse).")
        for st in data["studies"]:
            out.extend(_tuning(st, [pl for pl in plots.get("tune", []) if pl["study"] == st["study"]]))

    # ---- what bounds each configuration (issue 43)
    out.extend(_bounds(data, plots.get("roofline", [])))

    # ---- telemetry and energy
    names, trows = C.telemetry_groups(runs, data.get("dram_scale"), data.get("link_ceilings"))
    out.append(md.heading(2, "Telemetry and energy"))
    if trows:
        out.append(md.inline("Over each run's measured phase (the load generator's decode windows, a bench's timed "
                             "loop) where it was recorded, else the whole point; DRAM bandwidth "
                             + ("on the calibrated bandwidth" if data.get("dram_scale") else "as GPM reports it "
                                "(no calibrated counter scale)")
                             + ("; `link_util`: the busiest GPU's link as a share of the link bandwidth"
                                if "link_util" in names else "") + ": the figures the diagnosis reads."))
    lim = data.get("power_limit_w")
    if lim:
        out.append(md.inline(f"GPU power limit: {fmt_written(lim)} W ({data.get('gpu_kind') or 'default GPU'}, from optlog.yaml)."))
    if trows:
        header = ["labels", *names]
        add_frac = bool(lim) and any(n.startswith("gpu_power_w") for n in names) and "gpu_power_frac" not in names
        if add_frac:
            header.append("power / limit")
        header.append("runs")
        rows = []
        # the labels that tell the rows apart (those every row shares are said once, above the table)
        varying = {k for k in {k for lab, _t, _n in trows for k in lab}
                   if len({str(lab.get(k)) for lab, _t, _n in trows}) > 1}
        shared = {k: v for k, v in trows[0][0].items() if k not in varying} if trows else {}
        if shared and len(trows) > 1:
            out.append(md.inline("All rows: " + _kv(shared) + ". Every statistic of every metric: `optlog run show ID`."))
        for lab, tvals, n in trows:
            own = {k: v for k, v in lab.items() if k in varying} if len(trows) > 1 else lab
            row = [_kv(own)] + [fmt_value(tvals.get(k)) for k in names]
            if add_frac and lim:
                pw = next((tvals[k] for k in names if k.startswith("gpu_power_w") and k in tvals), None)
                row.append(fmt_share(pw / lim) if pw is not None else "–")
            row.append(str(n))
            rows.append(row)
        out.append(md.table(header, rows))
    else:
        out.append(md.inline("No telemetry recorded (gpu_power_w, energy_j, tokens_per_joule, tensor_active, …)."))

    # ---- other measurements
    others = C.other_runs(runs)
    if others:
        out.append(md.heading(2, "Other measurements"))
        tested = C.tested_metrics(docs)
        for keys, rs in others.items():
            t = C.runs_table(rs[:OTHER_ROWS_MAX], tested, OTHER_METRICS_MAX)
            ids = [r["id"] for r in rs]
            span = (f"run {ids[0]}" if len(ids) == 1 else f"runs {ids[0]}–{ids[-1]}"
                    if ids == list(range(ids[0], ids[-1] + 1)) else f"{len(ids)} runs")
            head = f"launch {keys[1]}: {span}" if keys[:1] == ("launch",) else span
            out.append(md.heading(3, head))
            cm = t["constant_metrics"]
            if t["constants"] or cm:
                shown_cm = {k: fmt_value(v) for k, v in list(cm.items())[:CONSTANT_METRICS_SHOWN]}
                more = len(cm) - len(shown_cm)
                out.append(md.inline(
                    "Every run: " + _kv({**t["constants"], **shown_cm})
                    + (f" and {more} more metrics with one value" if more > 0 else "") + "."))
            marks = any(r["marks"] for r in t["rows"])
            notes = any(r["note"] for r in t["rows"])
            header = ["run"] + (["marks"] if marks else []) + ["status"] + t["labels"] + [
                U.with_unit(m) + (" (tested)" if m in t["tested"] else "") for m in t["metrics"]] + (["note"] if notes else [])
            rows = []
            for r in t["rows"]:
                rows.append([str(r["id"])] + ([", ".join(r["marks"])] if marks else []) + [r["status"]]
                            + [fmt_value(v) for v in r["labels"]] + [fmt_value(v) for v in r["metrics"]]
                            + ([r["note"]] if notes else []))
            out.append(md.table(header, rows))
            extra = []
            if len(rs) > OTHER_ROWS_MAX:
                extra.append(f"… and {len(rs) - OTHER_ROWS_MAX} more runs")
            if t["more_metrics"] > 0:
                extra.append(f"{t['more_metrics']} more metrics vary (and `raw.*` fields): `optlog run show ID`")
            if extra:
                out.append(md.inline("; ".join(extra)))

    bad = [r for r in runs if r.get("invalidated")]
    if bad:
        out.append(md.heading(2, "Invalidated runs"))
        out.append(md.table(["run", "labels", "reason"], [[r["id"], _kv(r["labels"]), r.get("invalid_reason") or ""]
                                                          for r in bad[:OTHER_ROWS_MAX]]))

    # ---- notes, todos, plans
    out.append(md.heading(2, "Notes and links"))
    if data["notes"]:
        items = []
        for n in data["notes"]:
            s = f"{md.inline(_at(n['created_at']))}: "
            if n.get("hypothesis"):
                s += f"\\[{md.text(n['hypothesis'])}\\] "
            s += md.text(n["text"])
            if n.get("link"):
                s += " " + md.link(n["link"], n["link"])
            items.append(s)
        out.append(md.bullets(items))
    else:
        out.append(md.inline("No notes."))
    out.append(md.heading(2, "Todo list"))
    if data["todos"]:
        out.append(md.table(["status", "priority", "todo", "hypothesis"],
                            [[t["status"], t.get("priority") or "–", t["content"], t.get("hypothesis") or "–"]
                             for t in data["todos"]]))
    else:
        out.append(md.inline("No todos."))
    out.append(md.heading(2, "Plans"))
    views = data["plans"]
    if views:
        out.append(md.inline(calibration_line(data["calibration"])))
        if data["calibration"]["plans"]:
            out.append(md.bullets(md.inline(x) for x in calibration_rows(data["calibration"])))
        rows = []
        for v in views:
            title = f"{v['id']:02d} {v['title']}"
            link = (md.link(title, f"{data['plans_href']}/{data['plans_prefix']}-{v['id']:02d}.md")
                    if v["id"] in data.get("plan_files", ()) else md.text(title))
            measured = fmt_pct(v.get("measured_gain")) if v.get("measured_gain") is not None else "–"
            rows.append([str(v["rank"]) if v["rank"] is not None else "–", link, fmt_score(v['score']),
                         md.text(gain_cell(v.get("measured_effect"), v["gain_low"], v["gain_high"])), md.text(measured), v["effort"],
                         fmt_written(v['confidence']), md.text(v["status"]), md.text(v["score_reason"] + "; " + v["reason"])])
        out.append(md.raw_table(["rank", "plan", "score", "gain", "measured", "effort", "confidence", "status", "why"],
                                rows, ["r", "l", "r", "r", "r", "l", "r", "l", "l"]))
    else:
        out.append(md.inline("No plans."))
    return "\n\n".join(x for x in out if x) + "\n"


def _relation(pl: dict[str, Any], shown: dict[Any, str]) -> list[str]:
    """One prediction's measured relation: its plot, and the table it is drawn from (a row per x,
    a column per group: median, n and spread), the metric's unit in the header. A table already
    shown for another prediction on the same runs is named, not repeated (`shown`: table → id)."""
    rel = pl["relation"]
    out = [md.heading(4, f"{rel['id']}: {rel['metric']} by {rel['per']}, as measured")]
    if pl.get("href"):
        out.append(f"![{md.text(pl['alt'])}](<{pl['href']}>)")
    key = (rel["per"], rel["metric"], tuple((r["series"], str(r["x"]), r["median"], r["n"]) for r in rel["rows"]))
    if key in shown:
        out.append(md.inline(f"The same runs as {shown[key]} (table above); the dashed lines are what this "
                             f"prediction claims."))
        return out
    shown[key] = rel["id"]
    unit = f" ({rel['unit']})" if rel.get("unit") else ""
    groups = list(rel["series"])
    header = [U.with_unit(rel["per"], rel.get("x_unit")) if rel["numeric"] else rel["per"]]
    header += [f"{g}: median{unit}" if len(groups) > 1 else f"median{unit}" for g in groups]
    cells = {(r["series"], str(r["x"])): r for r in rel["rows"]}
    rows = []
    for x in rel["x"]:
        row = [fmt_value(x)]
        for g in groups:
            r = cells.get((g, str(x)))
            row.append("–" if r is None else fmt_value(r["median"]) + (
                f" (n={r['n']}, {fmt_value(r['min'])}–{fmt_value(r['max'])})" if r["n"] > 1 else " (n=1)"))
        rows.append(row)
    out.append(md.table(header, rows, ["r" if rel["numeric"] else "l"] + ["r"] * len(groups)))
    out.append(md.inline("Each cell: the median of the runs, their number n and their spread (min–max). The "
                         "verdict's figure is computed from every run (a ratio: of the groups' geometric means), "
                         "not from these medians, so the two differ when the runs spread."))
    return out


def _tuning(st: dict[str, Any], plots: list[dict[str, Any]]) -> list[str]:
    """One study: its trials, its best with the winner's curse, its claim, importances, front."""
    objs = st.get("objectives") or []
    dirs = st.get("directions") or []
    trials = st.get("trials") or []
    out = [md.heading(3, f"{st['study']}: " + ", ".join(f"{d} {m}" for m, d in zip(objs, dirs)))]
    facts = (f"{plural(len(trials), 'trial')}, sampler {md.text(st.get('sampler') or '–')}, spec {md.code(st.get('spec') or '–')}"
             + (", constraints " + "; ".join(md.code(c) for c in st["constraints"]) if st.get("constraints") else ""))
    out.append(facts + ".")
    rows = []
    for t in trials:
        note = (f"= trial {t['same_as']}" if "same_as" in t else f"retry of {t['retry_of']}" if "retry_of" in t
                else t.get("error") or t.get("warning") or (f"pruned: {t['pruned']}" if t.get("pruned") else ""))
        vals = t.get("values") or []
        rows.append([str(t["number"]), md.text(_kv(t.get("params") or {})),
                     *[fmt_value(vals[i]) if i < len(vals) else "–" for i in range(len(objs))],
                     md.text(t["state"]), {True: "yes", False: "**no**", None: "–"}[t.get("feasible")],
                     str(t["run"]) if t.get("run") is not None else "–", md.text(note)])
    out.append(md.raw_table(["trial", "params", *[md.text(m) for m in objs], "state", "feasible", "run", "note"], rows,
                            ["r", "l", *["r"] * len(objs), "l", "l", "r", "l"]))
    best = st.get("best") or []
    rm = st.get("remeasure") or {}
    by = {t["number"]: t for t in trials}
    named = {b["number"] for b in best}
    label = "the best" if len(dirs) == 1 else "on the Pareto front"
    rem_trials = (rm.get("trials") or {}) if rm.get("current") else {}
    if rem_trials:
        rows = []
        for n, r in sorted(rem_trials.items(), key=lambda kv: int(kv[0])):
            params = (by.get(int(n)) or {}).get("params") or {}
            for i, m in enumerate(objs):
                sh = r["shrink_pct"][i] if i < len(r["shrink_pct"]) else None
                rows.append([str(n), md.text(_kv(params)), md.text(m), fmt_value(r["first"][i]),
                             f"{fmt_value(r['values'][i])} (n={r['n']})", f"{fmt_signed(sh, 3)} %" if sh is not None else "–",
                             "**yes**" if int(n) in named else "no"])
        out.append(f"Re-measured, interleaved, {rm.get('rounds')} times each; {label} named by the re-measured medians "
                   f"(feasible trials only):")
        out.append(md.raw_table(["trial", "params", "objective", "first reading", "re-measured median", "shrink",
                                 label], rows, ["r", "l", "l", "r", "r", "r", "l"]))
        if rm.get("changed"):
            out.append("The re-measure changed the best: the trial that led on its first reading lost its lead.")
    elif best:
        rows = [[str(b["number"]), md.text(_kv(b["params"])), md.text(m), fmt_value(b["values"][i])]
                for b in best for i, m in enumerate(objs)]
        out.append(f"Trials {label} by their first readings (feasible trials only; not re-measured, so the winner's "
                   f"curse is not measured):")
        out.append(md.raw_table(["trial", "params", "objective", "first reading"], rows, ["r", "l", "l", "r"]))
    else:
        out.append("No feasible completed trial.")
    sep = rm.get("separation") or {}
    if sep and rem_trials:
        p = sep.get("p")
        ptext = "" if p is None else fmt_p(p)
        out.append(f"The best against the runner-up (trial {sep.get('runner_up')}): "
                   + (f"{md.text(sep['test'])} {ptext}, "
                      + ("told apart." if sep.get("distinct") else "not told apart: either may be the better.")
                      if sep.get("test") else f"{md.text(sep.get('why', ''))}."))
    c = st.get("claim")
    if c:
        claim = (f"Claim ({md.code(c['hypothesis'])}): tuning gains ≥ {fmt_written(c['pct'])} % {md.text(c['metric'])} over the "
                 f"default settings ({md.text(_kv(c['default'] or {}))})")
        if c.get("verdict"):
            claim += (f": **{md.text(c['verdict'])}**"
                      + (f", measured {fmt_signed(c['gain_pct'], 3)} %" if c.get("gain_pct") is not None else "")
                      + f" (trial {c['tuned']} against the default settings, {c['rounds']} interleaved runs each).")
        else:
            claim += ": not judged yet."
        out.append(claim)
    imps = st.get("importances") or {}
    params = sorted({k for v in imps.values() for k in v if k != "why"})
    if params:
        out.append(md.inline("Parameter importances (Optuna's PED-ANOVA over the completed trials: how much each "
                             "parameter decides reaching the best 10 %; they sum to 1 per objective):"))
        irows = [[md.text(p), *[fmt_value(imps[m].get(p)) if p in imps.get(m, {}) else "–" for m in objs]]
                 for p in sorted(params, key=lambda p: -max(float(imps[m].get(p, 0)) for m in objs if m in imps))]
        out.append(md.raw_table(["parameter", *[md.text(m) for m in objs]], irows, ["l", *["r"] * len(objs)]))
    for m in objs:
        if "why" in imps.get(m, {}):
            out.append(md.inline(f"No importances for {m}: {imps[m]['why']}."))
    for pl in plots:
        out.append(f"![{md.text(pl['alt'])}](<{pl['href']}>)")
    return out


def _rivals(docs: dict[str, Any], hid: str) -> list[str]:
    s = set(docs[hid].rivals) | {d.id for d in docs.values() if hid in d.rivals}
    s.discard(hid)
    return sorted(s)


def _st(docs: dict[str, Any], hid: str) -> str:
    return docs[hid].effective_status() if hid in docs else "missing"


def _hyp_order(docs: dict[str, Any]) -> list[str]:
    return sorted(docs, key=lambda h: (docs[h].created or "", h))


def _bounds(data: dict[str, Any], plots: list[dict[str, Any]]) -> list[str]:
    """Each launched configuration's diagnosis (whole point, then each phase: bound, efficiency, evidence,
    what would change its mind), the hypotheses that name a bound against it, and the roofline."""
    rows = data.get("diagnoses") or []
    if not rows:
        return []
    out = [md.heading(2, "What bounds each configuration")]
    out.append(md.inline("optlog's own diagnosis of each launched configuration (its latest run, today's calibrated "
                         "ceilings; `optlog run show ID` has every figure). Efficiency: the bounding unit's share "
                         "of its ceiling (latency, host: the share of the time spent waiting)."))
    table = []
    for row in rows:
        d = row["diagnosis"]
        name = row.get("name") or _kv({k: v for k, v in row["labels"].items()
                                        if k in ("model", "concurrency", "config", "size", "m", "bench")})
        for ph, dd in [("whole", d)] + [(p.get("phase", ""), p) for p in d.get("phases") or []]:
            eff = dd.get("efficiency")
            why = (dd.get("reason") or "").split("; ")[0]
            table.append([f"{name} (run {row['run']})" if ph == "whole" else "", ph, dd.get("headline") or "undecided",
                          fmt_share(eff) if eff is not None else "–", _clip(why),
                          _clip((dd.get("would_change_its_mind") or "").split("; ")[0])])
    out.append(md.table(["configuration", "phase", "bound", "efficiency", "evidence", "would change its mind"], table))
    for pl in plots:
        out.append(f"![{md.text(pl['alt'])}](<{pl['href']}>)")
    bv = data.get("bound_verdicts") or []
    if bv:
        out.append(md.heading(3, "Hypotheses about bounds against the diagnosis"))
        items = []
        for v in bv:
            agree = ", ".join(f"run {a['run']}" + (f" ({a['phase']})" if a.get("phase") else "") for a in v["agrees"])
            dis = ", ".join(f"run {a['run']} ({a['call']})" for a in v["disagrees"])
            text = f"{v['hypothesis']} names {v['named']}-bound: " + (f"agrees: {agree}" if agree else "no run agrees")
            if dis:
                text += f"; disagrees: {dis}"
            items.append(md.text(text))
        out.append(md.bullets(items))
    return out


def _clip(text: str, n: int = 160) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"
