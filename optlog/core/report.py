"""What a session report says, computed from plain data (no I/O): the timeline, the comparison
tables with ratios, the telemetry and energy summaries, the series the plots draw.

Runs come in as dicts {id, status, created_at, invalidated, invalid_reason, hypothesis, note,
labels, metrics}; hypotheses as HypothesisDoc (read defensively: the verdict structure may grow).
"""

from __future__ import annotations

import functools
import math
import re
import statistics
from collections import defaultdict
from typing import Any

from optlog.core import bounds as B
from optlog.core import labels as L
from optlog.core import runtable as RT
from optlog.core.diagnosis import diagnose, diagnosis_inputs, links_view
from optlog.core import units as U
from optlog.core.numfmt import fmt_verdict, fmt_written
from optlog.core.plans import selector_name
from optlog.core.scaling import Fit
from optlog.core.stats import CONF
from optlog.core.timeutil import parse_iso
from optlog.core.tune import pareto_front
from optlog.core import metrics as M
from optlog.core.comparable import flag_keys
from optlog.core.statuses import reader_text
from optlog.core.verdict import must_agree_across_groups

TELEMETRY_PREFIXES = ("gpu_power_w", "gpu_power_frac", "energy_j", "tokens_per_joule", "gpu_util", "sm_clock_mhz",
                      "mem_used_gib", "gpu_temp_c", "pcie_rx_gbps", "pcie_tx_gbps", "nvlink_gbps", "sm_occupancy",
                      "sm_active", "tensor_active", "dram_bw_util", "throttle")
# The telemetry columns a report shows, in this order: one mean figure each (the statistics of every
# metric, 90 columns on a GPU run, are in `optlog run show`).
TELEMETRY_HEADLINE = ("gpu_power_w", "gpu_power_frac", "energy_j", "tokens_per_joule", "sm_active", "sm_occupancy", "tensor_active",
                      "dram_bw_util", "gpu_util", "nvlink_gbps", "pcie_tx_gbps", "pcie_rx_gbps", "link_util")
KIND_ORDER = {"hypothesis": 0, "prediction": 1, "runs": 2, "note": 3, "verdict": 4, "override": 5, "plan": 6}


def _c(r: dict[str, Any], key: str) -> str:
    """A run's label as canonical text (labels read from the database are canonical already)."""
    v = r["labels"][key]
    return v if isinstance(v, str) else L.canonical(v)


def is_telemetry(name: str) -> bool:
    return name.startswith(TELEMETRY_PREFIXES)


def _get(obj: Any, key: str, default: Any = None) -> Any:
    if isinstance(obj, dict):
        return obj.get(key, default)
    return getattr(obj, key, default)


def median(xs: list[float]) -> float:
    return float(statistics.median(xs))


def usable(r: dict[str, Any]) -> bool:
    return r.get("status") == "succeeded" and not r.get("invalidated")


# ---------------------------------------------------------------- timeline


RUN_GROUP_GAP_S = 600.0  # runs further apart than this start a new timeline entry


def gap_s(a: Any, b: Any) -> float:
    try:
        return (parse_iso(str(b)) - parse_iso(str(a))).total_seconds()
    except (TypeError, ValueError):
        return 0.0


def _summarise_labels(runs: list[dict[str, Any]], max_values: int = 5) -> str:
    vals: dict[str, list[Any]] = {}
    for r in runs:
        for k, v in r["labels"].items():
            lst = vals.setdefault(k, [])
            if v not in lst:
                lst.append(v)
    parts = []
    for k, vs in vals.items():
        if k == "repeat":
            continue
        vs = sorted(vs, key=L.sort_key)
        shown = ", ".join(str(v) for v in vs[:max_values])
        more = f", … (+{len(vs) - max_values})" if len(vs) > max_values else ""
        parts.append(f"{k}={shown}{more}")
    return "; ".join(parts)


def timeline(docs: dict[str, Any], runs: list[dict[str, Any]], notes: list[dict[str, Any]],
             plans: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Events in time order; consecutive runs fold into one entry."""
    ev: list[tuple[str, int, str, dict[str, Any]]] = []

    def add(at: Any, kind: str, key: str, **kw: Any) -> None:
        ev.append((str(at or ""), KIND_ORDER.get(kind, 9), key, {"at": str(at or ""), "kind": kind, **kw}))

    for hid in sorted(docs):
        d = docs[hid]
        par = _get(d, "parent")
        rivals = list(_get(d, "rivals") or [])
        txt = f"{hid} added: {_get(d, 'title')}"
        if par:
            txt += f" (pivot from {par})"
        if rivals:
            txt += f" (rival of {', '.join(rivals)})"
        add(_get(d, "created"), "hypothesis", hid, text=txt, by=_get(d, "created_by"))
        for p in _get(d, "predictions") or []:
            metric = _get(p, "metric")
            add(_get(p, "created") or _get(d, "created"), "prediction", f"{hid}/{_get(p, 'id')}",
                text=f"{hid}: prediction {_get(p, 'id')}: {_get(p, 'expect')}" + (f" on {metric}" if metric else ""),
                by=None)
        for i, v in enumerate(_get(d, "verdicts") or []):
            summ = _get(v, "summary") or ""
            summ = reader_text(summ, _get(v, "status"))
            add(_get(v, "at"), "verdict", f"{hid}/{i:06d}", text=f"{hid} → {_get(v, 'status')}" + (f": {summ}" if summ else ""),
                by=_get(v, "by"))
        for i, h in enumerate(_get(d, "history") or []):
            if _get(h, "kind", "manual") != "manual":
                continue
            frm = _get(h, "from_") or _get(h, "from")
            add(_get(h, "at"), "override", f"{hid}/{i:06d}",
                text=f"{hid} {frm or '?'} → {_get(h, 'to')} (by hand): {_get(h, 'why')}", by=_get(h, "by"))
    for n in notes:
        txt = n["text"] + (f" <{n['link']}>" if n.get("link") else "")
        if n.get("hypothesis"):
            txt = f"[{n['hypothesis']}] {txt}"
        add(n.get("created_at"), "note", f"{n['id']:012d}", text=txt, by=n.get("by"), link=n.get("link"))
    for p in plans:
        add(p.get("created_at"), "plan", f"{p['id']:06d}",
            text=f"plan {p['id']:02d} proposed: {p['title']} ({fmt_written(p['gain_low'])}–{fmt_written(p['gain_high'])}%, effort {p['effort']})",
            by=None)
        for i, h in enumerate(p.get("history") or []):
            mg = h.get("measured_gain")
            txt = f"plan {p['id']:02d} {h.get('from')} → {h.get('to')}"
            if mg is not None:
                txt += f", measured {fmt_written(mg)}% (predicted {fmt_written(p['gain_low'])}–{fmt_written(p['gain_high'])}%)"
            if h.get("why"):
                txt += f": {h['why']}"
            add(h.get("at"), "plan", f"{p['id']:06d}/{i:06d}", text=txt, by=h.get("by"))
    for r in runs:
        at = str(r.get("created_at") or "")
        ev.append((at, KIND_ORDER["runs"], f"{r['id']:012d}", {"at": at, "kind": "runs", "run": r}))
    ev.sort(key=lambda e: (e[0], e[1], e[2]))
    out: list[dict[str, Any]] = []
    pending: list[dict[str, Any]] = []

    def flush() -> None:
        if not pending:
            return
        ids = [r["id"] for r in pending]
        span = f"run {ids[0]}" if len(ids) == 1 else f"runs {ids[0]}–{ids[-1]}" if ids == list(range(ids[0], ids[-1] + 1)) else f"{len(ids)} runs"
        hyps = sorted({r["hypothesis"] for r in pending if r.get("hypothesis")})
        bad = sum(1 for r in pending if r.get("invalidated"))
        txt = f"{span} ({len(ids)} recorded"
        if bad:
            txt += f", {bad} later invalidated"
        txt += ")"
        lab = _summarise_labels(pending)
        if lab:
            txt += f": {lab}"
        if hyps:
            txt += f" → run for {', '.join(hyps)}"  # not "evidence for": they may have falsified it
        out.append({"at": pending[0]["created_at"], "kind": "runs", "text": txt, "by": None, "run_ids": ids})
        pending.clear()

    for _, _, _, e in ev:
        if e["kind"] == "runs":
            if pending and gap_s(pending[-1].get("created_at"), e["run"].get("created_at")) > RUN_GROUP_GAP_S:
                flush()
            pending.append(e["run"])
            continue
        flush()
        out.append(e)
    flush()
    return out


# ---------------------------------------------------------------- comparisons


LOAD_POINT_LABELS = M.LOAD_POINT_LABELS


def family_key(labels: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    """The workload a run belongs to: the labels the verdict engine requires to agree across the
    compared groups (workload, model, software), not configuration details (tp, pp, a server's
    settings) nor what scales with the load point — the same rule as comparability."""
    return tuple(sorted((k, v if isinstance(v, str) else L.canonical(v)) for k, v in labels.items()
                        if _family_label(k)))


@functools.lru_cache(maxsize=4096)
def _family_label(k: str) -> bool:
    """Whether label `k` names the workload (a handful of distinct keys over 10,000s of runs: cached)."""
    return k not in M.SHAPE_LABELS and k not in LOAD_POINT_LABELS and must_agree_across_groups(k)


def family_name(key: tuple[tuple[str, str], ...]) -> str:
    return ", ".join(f"{k}={v}" for k, v in key) or "all runs"


def config_runs(runs: list[dict[str, Any]]) -> dict[tuple[tuple[str, str], ...], list[dict[str, Any]]]:
    """Usable runs that have both `config` and `concurrency`, by workload family (first seen first)."""
    fams: dict[tuple[tuple[str, str], ...], list[dict[str, Any]]] = {}
    for r in runs:
        if not usable(r) or "config" not in r["labels"] or M.LOAD_POINT not in r["labels"]:
            continue
        fams.setdefault(family_key(r["labels"]), []).append(r)
    return fams


def configs_in_order(runs: list[dict[str, Any]]) -> list[str]:
    seen: list[str] = []
    for r in runs:
        c = _c(r, "config")
        if c not in seen:
            seen.append(c)
    return seen


def grid(runs: list[dict[str, Any]], metric: str) -> tuple[list[str], list[Any], dict[tuple[str, str], dict[str, Any]]]:
    """Medians of `metric` by (config, concurrency): configs in first-seen order (the first is the
    baseline the ratios divide by), levels sorted as numbers."""
    cells: dict[tuple[str, str], list[float]] = defaultdict(list)
    lv_vals: dict[str, Any] = {}
    configs: list[str] = []
    for r in runs:
        v = r["metrics"].get(metric)
        if v is None:
            continue
        c = _c(r, "config")
        lv = _c(r, M.LOAD_POINT)
        if lv not in lv_vals:
            lv_vals[lv] = r["labels"][M.LOAD_POINT]
        if c not in configs:
            configs.append(c)
        cells[(c, lv)].append(v)
    levels = sorted(lv_vals, key=L.sort_key)
    out = {k: {"median": median(v), "n": len(v)} for k, v in cells.items()}
    return configs, [lv_vals[x] for x in levels], out


def gpu_count(labels: dict[str, Any], default: int | None) -> int | None:
    g = L.as_number(labels.get("gpus"))
    if g:
        return int(g)
    prod = 1
    found = False
    for k in ("tp", "pp", "dp"):
        n = L.as_number(labels.get(k))
        if n:
            prod *= int(n)
            found = True
    return prod if found else default


def serving_rates(m: dict[str, Any], lab: dict[str, Any], gpus: int | None) -> tuple[float, float] | None:
    """(output tok/s per user, output tok/s per GPU) of one serving run, as vLLM's plot_pareto draws
    them: per user 1000 / median TPOT where recorded, else output throughput ÷ concurrency (or the
    measured mean in-flight requests); per GPU output throughput ÷ GPUs. None without the numbers."""
    out_tp = m.get("output_throughput")
    users = m.get("mean_inflight") or L.as_number(lab.get(M.LOAD_POINT))
    gpus = m.get("gpus") or gpus
    if out_tp is None or not users or not gpus:
        return None
    per_user = (1000.0 / m["median_tpot_ms"]) if m.get("median_tpot_ms") else out_tp / users
    return float(per_user), float(m.get("output_throughput_per_gpu") or out_tp / gpus)


def pareto_view(rows: list[dict[str, Any]], default_gpus: int | None = 1) -> dict[str, Any]:
    """The serving runs among `rows` as (per-GPU, per-user) points and the ids of those on the
    Pareto front (no other run is better on both), the front in per-GPU order."""
    pts = []
    for r in rows:
        if r.get("invalidated"):
            continue
        rates = serving_rates(r.get("metrics") or {}, r.get("labels") or {}, gpu_count(r.get("labels") or {}, default_gpus))
        if rates is not None:
            pts.append({"id": r["id"], "per_user": rates[0], "per_gpu": rates[1], "labels": r.get("labels") or {}})
    front = [pts[i] for i in pareto_front([(p["per_gpu"], p["per_user"]) for p in pts], ["maximize", "maximize"])]
    return {"points": pts, "front": sorted(front, key=lambda p: p["per_gpu"])}


def per_user_per_gpu(runs: list[dict[str, Any]], default_gpus: int | None) -> dict[str, list[tuple[float, float, Any]]]:
    """Per config: points (per-user output tok/s, per-GPU output tok/s, concurrency), by concurrency."""
    acc: dict[str, dict[str, list[tuple[float, float]]]] = defaultdict(lambda: defaultdict(list))
    lv_raw: dict[str, Any] = {}
    gcache: dict[tuple[Any, ...], int | None] = {}
    for r in runs:
        m, lab = r["metrics"], r["labels"]
        out_tp = m.get("output_throughput")
        if out_tp is None:
            continue
        gk = (lab.get("gpus"), lab.get("tp"), lab.get("pp"), lab.get("dp"))
        if gk not in gcache:
            gcache[gk] = gpu_count(lab, default_gpus)
        rates = serving_rates(m, lab, gcache[gk])
        if rates is None:
            continue
        per_user, per_gpu = rates
        c = _c(r, "config")
        lv = _c(r, M.LOAD_POINT)
        lv_raw[lv] = lab[M.LOAD_POINT]
        acc[c][lv].append((per_user, per_gpu))
    res: dict[str, list[tuple[float, float, Any]]] = {}
    for c in configs_in_order([r for r in runs if _c(r, "config") in acc]):
        pts = []
        for lv in sorted(acc[c], key=L.sort_key):
            xs = acc[c][lv]
            pts.append((median([x for x, _ in xs]), median([y for _, y in xs]), lv_raw[lv]))
        res[c] = pts
    return res


def prediction_rows(doc: Any, pred: Any, verdict: Any | None) -> list[dict[str, Any]]:
    """The compare rows of one prediction from the latest verdict that judged it."""
    if verdict is None:
        return []
    pid = _get(pred, "id")
    for p in _get(verdict, "predictions") or []:
        if isinstance(p, dict) and p.get("id") == pid:
            return [lv for lv in (p.get("levels") or []) if isinstance(lv, dict)]
    return []


def _headline(name: str) -> str | None:
    """The headline metric a telemetry column is (`gpu_power_w` or its `_mean`), else None."""
    base = name[:-5] if name.endswith("_mean") else name
    return base if base in TELEMETRY_HEADLINE else None


def telemetry_groups(runs: list[dict[str, Any]], dram_scale: float | None = None,
                     link_ceilings: dict[str, float] | None = None
                     ) -> tuple[list[str], list[tuple[dict[str, Any], dict[str, float], int]]]:
    """Runs with telemetry metrics, grouped by their labels (repeats pooled): (metric names, rows).

    Each figure is the one the diagnosis reads (issue 43): over the measured phase (`<field>_steady`)
    where the run has it, the whole point's otherwise; `dram_bw_util` on the calibrated bandwidth
    (× `dram_scale`, GPM's 100 % over the calibrated GB/s) where it is known; on several GPUs with a link
    ceiling (`link_ceilings`), `link_util`: the busiest GPU's link as a % of the link bandwidth
    (`diagnosis.links_view`)."""
    names: list[str] = []
    groups: dict[tuple[tuple[str, str], ...], tuple[dict[str, Any], dict[str, list[float]]]] = {}
    for r in runs:
        if not usable(r):
            continue
        m = r["metrics"]
        tm = {}
        for k, v in m.items():
            if not is_telemetry(k):
                continue
            base = _headline(k)
            if base is not None and isinstance(m.get(base + "_steady"), (int, float)):
                v = m[base + "_steady"]
            if base == "dram_bw_util" and dram_scale:
                v = v * dram_scale
            tm[k] = v
        if tm and link_ceilings:
            lc: dict[str, float] = {}
            links_view(m, link_ceilings, any(k.endswith("_steady") for k in m), lc)
            if "link_util" in lc:
                tm["link_util"] = lc["link_util"]
        if not tm:
            continue
        for k in tm:
            if _headline(k) is not None and k not in names:
                names.append(k)
        key = tuple(sorted((k, v if isinstance(v, str) else L.canonical(v)) for k, v in r["labels"].items() if k != "repeat"))
        lab = {k: v for k, v in r["labels"].items() if k != "repeat"}
        g = groups.setdefault(key, (lab, defaultdict(list)))
        for k, v in tm.items():
            g[1][k].append(v)
        g[1]["__n"].append(1.0)
    names = [n for n in names if not (n.endswith("_mean") and n[:-5] in names)]  # one figure per metric
    names.sort(key=lambda n: TELEMETRY_HEADLINE.index(_headline(n) or ""))
    rows = [(lab, {k: median(v) for k, v in vals.items() if k != "__n"}, len(vals["__n"])) for lab, vals in groups.values()]
    return names, rows


def other_runs(runs: list[dict[str, Any]]) -> dict[tuple[str, ...], list[dict[str, Any]]]:
    """Runs outside the config × concurrency tables, by launch (recorded runs: by their set of label
    names, flags aside: a `loaded` mark does not set a run apart)."""
    out: dict[tuple[str, ...], list[dict[str, Any]]] = {}
    for r in runs:
        if r.get("invalidated"):
            continue  # listed on their own, with the reason
        if "config" in r["labels"] and M.LOAD_POINT in r["labels"] and usable(r):
            continue
        if usable(r) and r["metrics"] and all(is_telemetry(k) for k in r["metrics"]):
            continue  # shown under telemetry
        key = ("launch", str(r["launch_id"])) if r.get("launch_id") is not None else tuple(
            sorted(k for k in r["labels"] if k not in flag_keys() and k != L.CONCURRENT))
        out.setdefault(key, []).append(r)
    return out


def tested_metrics(docs: dict[str, Any]) -> list[str]:
    """The metrics the predictions test (their `--metric` and every `a.NAME`/`b.NAME` they read),
    first seen first: the columns a runs table shows first."""
    out: list[str] = []
    for hid in sorted(docs):
        for p in _get(docs[hid], "predictions") or []:
            names = [_get(p, "metric")] + _REF.findall(str(_get(p, "expect") or ""))
            for m in names:
                if m and m not in out:
                    out.append(m)
    return out


_REF = re.compile(r"\b[ab]\.([A-Za-z_][A-Za-z0-9_.]*)")


def runs_table(runs: list[dict[str, Any]], tested: list[str], max_metrics: int = 8) -> dict[str, Any]:
    """A table of runs a person reads: a column per label that varies (flags are marks, not
    columns: `loaded` in one run does not split the table), the tested metrics first, then the
    other metrics that vary (`raw.*` — a tool's own fields, kept in `run show` — left out); what
    is the same in every run goes in one line (`constants`) instead of a column."""
    label_keys: list[str] = []
    metric_keys: list[str] = []
    for r in runs:
        for k in r["labels"]:
            if k not in label_keys and k not in flag_keys() and k != L.CONCURRENT:
                label_keys.append(k)
        for k in r["metrics"]:
            if k not in metric_keys and not k.startswith("raw."):
                metric_keys.append(k)

    def distinct(get: Any) -> set[str]:
        return {L.canonical(get(r)) if get(r) is not None else "\0" for r in runs}

    const_labels = {k: runs[0]["labels"][k] for k in label_keys
                    if len(runs) > 1 and distinct(lambda r, k=k: r["labels"].get(k)) == {L.canonical(runs[0]["labels"].get(k))}
                    and runs[0]["labels"].get(k) is not None and k != "repeat"}
    const_metrics = {k: runs[0]["metrics"][k] for k in metric_keys
                     if len(runs) > 1 and k not in tested and runs[0]["metrics"].get(k) is not None
                     and len({r["metrics"].get(k) for r in runs}) == 1}
    labels = sorted((k for k in label_keys if k not in const_labels), key=lambda k: (k == "repeat", k))
    rest = [k for k in metric_keys if k not in const_metrics and k not in tested]
    shown_tested = [m for m in tested if any(m in r["metrics"] for r in runs)]
    metrics = shown_tested + rest[: max(0, max_metrics - len(shown_tested))]
    rows = [{"id": r["id"], "status": r["status"], "marks": [f for f in RT.flags(r) if f != "invalidated"],
             "labels": [r["labels"].get(k) for k in labels], "metrics": [r["metrics"].get(m) for m in metrics],
             "note": r.get("note") or ""} for r in runs]
    return {"constants": {**const_labels}, "constant_metrics": const_metrics, "labels": labels, "metrics": metrics,
            "tested": shown_tested, "more_metrics": len(rest) - (len(metrics) - len(shown_tested)), "rows": rows}


# ---------------------------------------------------------------- the measured relation of a prediction


def _latest_record(doc: Any, pred: Any) -> dict[str, Any] | None:
    """The prediction's record in the latest verdict that judged it."""
    for v in reversed(list(_get(doc, "verdicts") or [])):
        rec = next((p for p in (_get(v, "predictions") or []) if isinstance(p, dict)
                    and p.get("id") == _get(pred, "id")), None)
        if rec is not None:
            return rec
    return None


def group_names(a_sel: dict[str, Any], b_sel: dict[str, Any]) -> tuple[str, str]:
    """The two groups as a reader names them: by the labels that tell them apart (`tp4pp2`, `tp8`;
    `parallel=4`, `parallel=1`: a number alone would read as a count). One vocabulary with
    core.plans.selector_name."""
    shared = {k for k in a_sel if k in b_sel and L.canonical(a_sel[k]) == L.canonical(b_sel[k])}
    own_a = {k: v for k, v in a_sel.items() if k not in shared} or a_sel
    own_b = {k: v for k, v in b_sel.items() if k not in shared} or b_sel
    return (selector_name(own_a) if own_a else "a"), (selector_name(own_b) if own_b else "b")


def _varied_label(a_sel: dict[str, Any], b_sel: dict[str, Any]) -> str | None:
    """The one label whose value tells group a from group b (`parallel` in parallel=4 vs 1), if one."""
    diff = [k for k in a_sel if k in b_sel and L.canonical(a_sel[k]) != L.canonical(b_sel[k])]
    return diff[0] if len(diff) == 1 and set(a_sel) == set(b_sel) else None


def _claim_lines(lv: dict[str, Any], b_centre: float | None) -> list[tuple[str, float]]:
    """What one level's claimed region is, on the scale of the plotted metric: `a / b >= 2` is the
    line 2 × b's centre (the centre the estimate uses: its geometric mean when the statistic is a
    ratio of geometric means, else its mean); `a < 500` is the line 500; a band gives two lines.
    (which bound, value); empty where the claim is not on one metric of group a (compound claims)."""
    q = str(lv.get("quantity") or "")
    thr = lv.get("threshold")
    bounds = [("low", thr[0]), ("high", thr[1])] if isinstance(thr, list) and len(thr) == 2 else [("at", thr)]
    out = []
    for which, t in bounds:
        if not isinstance(t, (int, float)) or isinstance(t, bool) or t != t or abs(t) == float("inf"):
            continue
        t = float(t)
        if q == "a" or (q.startswith("a.") and "/" not in q and " " not in q):
            out.append((which, t))
        elif b_centre is None:
            continue
        elif q == "a/b":
            out.append((which, t * b_centre))
        elif q == "b/a" and t:
            out.append((which, b_centre / t))
        elif q in ("a-b", "a - b"):
            out.append((which, b_centre + t))
        elif q in ("b-a", "b - a"):
            out.append((which, b_centre - t))
    return out


def fitted_line(fit: Any, xs: list[float]) -> list[tuple[float, float]] | None:
    """The fitted line of a scaling claim (DESIGN §5: an exponent `k(LABEL)` on log–log axes or a
    `slope(LABEL)` on linear ones) at `xs`, from the fit the verdict recorded at its level
    (`core.scaling.Fit.as_dict()`), drawn by the one place the line is computed (`Fit.curve`).
    None without a fit (every other claim)."""
    if not isinstance(fit, dict):
        return None
    try:
        f = Fit(str(fit.get("kind") or "k"), [], float(fit["k"]), float(fit["intercept"]), None, CONF, 0, 0)
    except (KeyError, TypeError, ValueError):
        return None
    return f.curve([x for x in xs if x > 0] if f.log else xs)


def _num(v: Any) -> float | None:
    """A recorded number, or None where the record has none (a value past the doubles, issue 42)."""
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


_FIT_LABEL = re.compile(r"\b(?:k|slope)\(\s*([A-Za-z_][\w.]*)\s*(?:,\s*[ab]\.(\w+)\s*)?\)")


def _fit_relation(pred: Any, rec: dict[str, Any], lv: dict[str, Any]) -> dict[str, Any] | None:
    """A scaling claim's relation: every run's (x, y) the fit went through, over the fitted label."""
    fit = lv.get("fit")
    m = _FIT_LABEL.search(str(lv.get("quantity") or _get(pred, "expect") or ""))
    if not isinstance(fit, dict) or not m:
        return None
    pts = [(float(x), float(y)) for x, y in fit.get("points") or []]
    if not pts:
        return None
    label, metric = m.group(1), m.group(2) or _get(pred, "metric") or rec.get("metric") or "?"
    xs = sorted({x for x, _ in pts})
    rows = [{"series": metric, "x": x, "median": median([y for xx, y in pts if xx == x]),
             "n": sum(1 for xx, _ in pts if xx == x), "min": min(y for xx, y in pts if xx == x),
             "max": max(y for xx, y in pts if xx == x)} for x in xs]
    ci = fit.get("ci")
    kname = "k" if fit.get("kind", "k") == "k" else "slope"
    k_text = f"{kname} = {fmt_verdict(_num(fit.get('k')))}" + (  # a value past the doubles is recorded as none
        f" [{fmt_verdict(_num(ci[0]))}, {fmt_verdict(_num(ci[1]))}]" if isinstance(ci, list) and len(ci) == 2 else "")
    power = fit.get("kind", "k") == "k"
    # an exponent is the slope of a straight line on log–log axes (DESIGN §5): drawn there, whatever
    # the span; a slope on linear axes
    log = power and all(x > 0 for x in xs)
    expect = str(_get(pred, "expect") or rec.get("expect") or "")
    lo, hi = xs[0], xs[-1]
    dense = ([lo * (hi / lo) ** (i / 24) for i in range(25)] if power and lo > 0 else
             [lo + (hi - lo) * i / 24 for i in range(25)])
    # the claimed region: lines of the claimed exponent (or slope) at each edge, through the fit's
    # centre (the fitted value at the mean of log x, or of x), so the fit's own line lies between them
    region: list[dict[str, Any]] = []
    line = fitted_line(fit, dense) or []
    if line:
        if power and lo > 0:
            x0 = math.exp(statistics.fmean(math.log(x) for x, _ in pts))
        else:
            x0 = statistics.fmean(x for x, _ in pts)
        y0 = (fitted_line(fit, [x0]) or [(x0, 0.0)])[0][1]
        thr = lv.get("threshold")
        for which, t in ([("low", thr[0]), ("high", thr[1])] if isinstance(thr, list) and len(thr) == 2 else [("at", thr)]):
            if isinstance(t, (int, float)) and not isinstance(t, bool) and math.isfinite(t):
                region.append({"which": which, "points": [(x, y0 * (x / x0) ** t if power else y0 + t * (x - x0))
                                                          for x in dense]})
    log_y = log and all(y > 0 for _, y in pts + line) and all(y > 0 for r in region for _, y in r["points"])
    return {"id": _get(pred, "id"), "expect": expect, "status": rec.get("status"), "per": label, "x": xs,
            "numeric": True, "log": log, "log_y": log_y, "metric": metric, "unit": U.unit(metric), "x_unit": U.unit(label),
            "title": f"{_get(pred, 'id')}: {expect} ({rec.get('status')})", "series": {metric: pts}, "rows": rows,
            "region": region, "claim": f"claimed: {expect}", "fit": line, "fit_label": f"fitted: {k_text}",
            "a_name": selector_name_one(dict(_get(pred, "a") or {})), "b_name": None}


def relation(doc: Any, pred: Any) -> dict[str, Any] | None:
    """The relation one prediction tests, as measured, from its latest verdict record: the tested
    metric against the label it varies. x is `--per`'s label, else the one label telling group a
    from group b (`parallel` for parallel=4 vs 1), else the groups by name; numbers go on a numeric
    axis (log2 when all positive and spread 4× or more). Per group and x: every measured value (the
    repeats), and a row of median, n and spread (min–max). The claimed region on the metric's scale
    (`_claim_lines`), and the fitted line of a scaling claim (`fitted_line`; an exponent's plot has a
    log y axis too, `log_y`: log–log, where the fit is straight). None: nothing measured."""
    rec = _latest_record(doc, pred)
    if rec is None:
        return None
    fitted = [lv for lv in rec.get("levels") or [] if isinstance(lv, dict) and isinstance(lv.get("fit"), dict)]
    if fitted:  # a scaling claim: the runs' points over the fitted label, and the fitted line
        return _fit_relation(pred, rec, fitted[0])
    levels = [lv for lv in rec.get("levels") or [] if isinstance(lv, dict) and lv.get("values")]
    if not levels:
        return None
    per = _get(pred, "per") or rec.get("per")
    a_sel, b_sel = dict(_get(pred, "a") or rec.get("a") or {}), dict(_get(pred, "b") or rec.get("b") or {})
    a_name, b_name = group_names(a_sel, b_sel) if b_sel else (selector_name_one(a_sel), "b")
    metric = _get(pred, "metric") or rec.get("metric")
    varied = None if per else _varied_label(a_sel, b_sel)
    x_label = per or varied or "group"
    pts: list[tuple[str, Any, float]] = []  # (series, x, value)
    metrics: list[str] = []
    claims: dict[str, list[tuple[Any, float]]] = {}
    for lv in levels:
        lvx = (lv.get("level") or {}).get(per) if per else None
        if per and lvx is None:
            continue
        for ref, vals in (lv.get("values") or {}).items():
            g, _, m = str(ref).partition(".")
            m = m or metric or "?"
            if m not in metrics:
                metrics.append(m)
            gname = a_name if g == "a" else b_name
            if per:
                x, name = lvx, (gname if b_sel else m)  # one group: the series is its metric
            elif varied:
                x, name = (a_sel if g == "a" else b_sel)[varied], m
            else:
                x, name = gname, m
            if m != metric and per and b_sel:
                name = f"{name} {m}"
            pts.extend((name, x, float(v)) for v in vals if isinstance(v, (int, float)))
        geo: dict[str, Any] = lv["geo"] if isinstance(lv.get("geo"), dict) else {}
        bc = geo.get("b") if geo.get("b") is not None else lv.get("b")
        for which, y in _claim_lines(lv, float(bc) if isinstance(bc, (int, float)) else None):
            claims.setdefault(which, []).append((lvx if per else None, y))
    if not pts:
        return None
    xs_raw: list[Any] = []
    for _, x, _ in pts:
        if x not in xs_raw:
            xs_raw.append(x)
    nums = [L.as_number(x) for x in xs_raw]
    numeric = x_label != "group" and all(n is not None for n in nums)
    if numeric:
        xs_raw = [x for _, x in sorted(zip(nums, xs_raw), key=lambda t: float(t[0] or 0))]
        nums = [L.as_number(x) for x in xs_raw]
    log = numeric and all(n > 0 for n in nums) and max(nums) >= 4 * min(nums)  # type: ignore[operator,type-var]
    series: dict[str, list[tuple[Any, float]]] = {}
    for s, x, v in pts:
        series.setdefault(s, []).append((x, v))
    rows = []
    for s, sp in series.items():
        for x in xs_raw:
            vals = [v for xx, v in sp if xx == x]
            if vals:
                rows.append({"series": s, "x": x, "median": median(vals), "n": len(vals),
                             "min": min(vals), "max": max(vals)})
    expect = str(_get(pred, "expect") or rec.get("expect") or "")
    region = []
    for which, cl in claims.items():
        if per:
            line = [(x, y) for x, y in cl if x is not None]
        else:  # one level: the line across the plot
            line = [(xs_raw[0], cl[0][1]), (xs_raw[-1], cl[0][1])]
        region.append({"which": which, "points": line})
    y_metric = metrics[0] if len(metrics) == 1 else ", ".join(metrics)
    return {"id": _get(pred, "id"), "expect": expect, "status": rec.get("status"), "per": x_label,
            "x": xs_raw, "numeric": numeric, "log": log, "log_y": False, "metric": y_metric,
            "unit": U.unit(metrics[0]) if len(metrics) == 1 else None, "x_unit": U.unit(x_label) if numeric else None,
            "title": f"{_get(pred, 'id')}: {expect} ({rec.get('status')})",
            "series": series, "rows": rows, "region": region, "claim": "claimed: " + (_named(expect, a_name, b_name) if b_sel else _one_group_claim(expect, region)),
            "fit": None, "a_name": a_name, "b_name": b_name if b_sel else None}


def _named(expect: str, a_name: str, b_name: str) -> str:
    """`a / b >= 2` with the groups named: `parallel=4 / parallel=1 >= 2` (a.NAME left as it is)."""
    return re.sub(r"\b([ab])\b(?![.\w])", lambda m: a_name if m.group(1) == "a" else b_name, expect)


def _one_group_claim(expect: str, region: list[dict[str, Any]]) -> str:
    """`a < 0.05 * peak_tflops = 100`: a one-group claim with the value its line is drawn at."""
    ys = sorted({round(y, 6) for r in region for _, y in r["points"]})
    return expect + (f" = {fmt_written(ys[0])}" if len(ys) == 1 and not re.fullmatch(r".*[<>=]=?\s*[-0-9.e]+", expect) else "")


def selector_name_one(sel: dict[str, Any]) -> str:
    return selector_name(sel) if sel else "all runs"


def tune_pareto(study: dict[str, Any]) -> dict[str, Any] | None:
    """A study of two or more objectives as a plot: its feasible completed trials (first readings)
    on the first two objectives, and those on the Pareto front of the study (the same
    `core.tune.pareto_front` as `pareto_view`). None for one objective or fewer than two points."""
    objs = study.get("objectives") or []
    dirs = study.get("directions") or []
    if len(objs) < 2:
        return None
    pts = [t for t in study.get("trials") or [] if t.get("state") == "complete" and t.get("feasible")
           and t.get("values") and "same_as" not in t]
    if len(pts) < 2:
        return None
    front = set(pareto_front([t["values"] for t in pts], dirs))
    return {"x_title": f"{objs[0]} ({dirs[0]})", "y_title": f"{objs[1]} ({dirs[1]})",
            "points": [(t["values"][0], t["values"][1], t["number"]) for i, t in enumerate(pts) if i not in front],
            "front": sorted(((t["values"][0], t["values"][1], t["number"]) for i, t in enumerate(pts) if i in front)),
            "more": len(objs) > 2}


# ---------------------------------------------------------------- what bounds each configuration (issue 43)


def diagnoses(runs: list[dict[str, Any]], ceilings: dict[str, float]) -> list[dict[str, Any]]:
    """Each configuration that has telemetry or work counts (its labels without `repeat`), diagnosed with
    today's ceilings from its latest usable run: `{labels, run, runs, diagnosis (Diagnosis.to_json),
    point}`, where `point` is the roofline dot (intensity FLOP/B, achieved TFLOP/s) where the
    diagnosis has both. Runs that were never diagnosed (no telemetry, no work counts, no model facts)
    are left out."""
    groups: dict[tuple[tuple[str, str], ...], list[dict[str, Any]]] = {}
    for r in runs:
        if not usable(r):
            continue
        m = r.get("metrics") or {}
        if not any(k in m for k in ("telemetry_window_s", "roofline_basis", "flops", "model_active_params")):
            continue
        key = (("", str(r.get("name") or "")),) + tuple(sorted(
            (k, v if isinstance(v, str) else L.canonical(v)) for k, v in r["labels"].items() if k != "repeat"))
        groups.setdefault(key, []).append(r)
    out = []
    for rs in groups.values():
        r = max(rs, key=lambda x: x["id"])
        d = diagnose(diagnosis_inputs(r["metrics"]), ceilings, r["labels"])
        if d.bound is None and d.basis == "none":
            continue
        n = d.numbers
        point = ({"intensity": n["intensity"], "tflops": n["achieved_tflops"]}
                 if n.get("intensity") and n.get("achieved_tflops") else None)
        out.append({"labels": {k: v for k, v in r["labels"].items() if k != "repeat"}, "run": r["id"],
                    "name": str(r.get("name") or ""),
                    "runs": [x["id"] for x in rs], "diagnosis": d.to_json(), "point": point,
                    "hypothesis": r.get("hypothesis")})
    return out


def bound_verdicts(docs: dict[str, Any], rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Hypotheses that name a bound (core.bounds: "prefill is compute-bound") against optlog's own call
    on the runs they own or their verdicts read: `{hypothesis, named, agrees: [run…], disagrees:
    [(run, call)…]}`. A call agrees when it is the bound named or of its family (a pipe-bound point is
    compute-bound, a host-bound one latency-bound), in the whole point or one of its phases."""
    out = []
    for hid, doc in sorted(docs.items()):
        named = B.named_in(f"{hid} {_get(doc, 'title', '')} {_get(doc, 'statement', '')}")
        if not named:
            continue
        used = {i for v in (_get(doc, "verdicts") or []) for p in (_get(v, "predictions") or []) if isinstance(p, dict)
                for lv in p.get("levels") or [] if isinstance(lv, dict) for ids in (lv.get("runs") or {}).values()
                for i in ids}
        mine = [row for row in rows if row.get("hypothesis") == hid or set(row["runs"]) & used]
        if not mine:
            continue
        agrees, disagrees = [], []
        for row in mine:
            d = row["diagnosis"]
            calls = [d] + list(d.get("phases") or [])
            ok = [c for c in calls if c.get("bound") and (c["bound"] == named or B.BY_NAME[c["bound"]].family == named)]
            if ok:
                agrees.append({"run": row["run"], "call": ok[0]["headline"], "phase": ok[0].get("phase", "")})
            else:
                disagrees.append({"run": row["run"], "call": d["headline"]})
        out.append({"hypothesis": hid, "named": named, "agrees": agrees, "disagrees": disagrees})
    return out




def roofline_view(rows: list[dict[str, Any]], ceilings: dict[str, float]) -> dict[str, Any] | None:
    """What the roofline plot draws: the calibrated ceilings (one compute roof per compute type the points
    use, the bandwidth slope) and each configuration's dot. None without a dot."""
    dots = [row for row in rows if row.get("point")]
    varying = sorted({k for row in dots for k in row["labels"]
                      if len({str(r["labels"].get(k)) for r in dots}) > 1})

    def name(row: dict[str, Any]) -> str:
        shape = ", ".join(f"{k}={row['labels'][k]}" for k in varying if k in row["labels"] and k in M.POINT_LABELS)
        text = " ".join(x for x in (row.get("name") or "", shape) if x)
        return (text[:60] + "…" if len(text) > 60 else text) or f"run {row['run']}"

    pts = [(row["point"]["intensity"], row["point"]["tflops"], name(row), row["diagnosis"]["bound"]) for row in dots]
    bw = ceilings.get("measured_mem_bw_gbps") or ceilings.get("mem_bw_gbps")
    peaks = sorted({(row["diagnosis"]["numbers"].get("peak_tflops"),) for row in rows if row.get("point")} - {(None,)})
    if not pts or not bw:
        return None
    return {"points": pts, "mem_bw_gbps": bw, "peaks": [p[0] for p in peaks]}
