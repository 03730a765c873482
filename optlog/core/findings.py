"""The findings a report opens with, computed from the workspace's data (no hand-written text): the
questions (the hypotheses under test), what was measured (a line per launch: what varied, how many
repeats, on what machine), what was decided (a sentence per verdict with its key number and
interval), what changed course (pivots) and what to do next (the top plans).

One statistic per comparison: a verdict's key number is the estimate the verdict engine decided
on, named by its statistic (`ratio of geometric means`, `ratio of means`), the same figure the
dashboard, `optlog verdict` and the demo's narration quote (`verdict_number`). Pure: plain data in,
plain data out.
"""

from __future__ import annotations

from collections import Counter
from statistics import median
from typing import Any

from optlog.core import labels as L
from optlog.core import posthoc as PH
from optlog.core import runtable as RT
from optlog.core import metrics as M
from optlog.core.comparable import flag_keys, ignored_keys
from optlog.core.numfmt import fmt_interval, fmt_num, fmt_score, fmt_verdict
from optlog.core.plans import gain_cell
from optlog.core.report import LOAD_POINT_LABELS, RUN_GROUP_GAP_S, gap_s, group_names, selector_name_one
from optlog.core.statuses import reader_text
from optlog.core.units import unit
from optlog.core.verdict import quantity_unit

TOP_PLANS = 3
VALUES_SHOWN = 5
# labels that say what was measured when they are the same across a launch (the model, the server)
IDENTITY_LABELS = ("model", "server", "backend", "dataset")


def _get(obj: Any, key: str, default: Any = None) -> Any:
    return obj.get(key, default) if isinstance(obj, dict) else getattr(obj, key, default)


# ---------------------------------------------------------------- one number per verdict


def quantity_name(quantity: str | None, a_name: str, b_name: str, metric: str | None) -> str:
    """The tested quantity as a reader names it: `a/b` → `tp4pp2/tp8 output_throughput`."""
    q = (quantity or "").replace(" ", "")
    m = f" {metric}" if metric else ""
    if q == "a/b":
        return f"{a_name}/{b_name}{m}"
    if q == "b/a":
        return f"{b_name}/{a_name}{m}"
    if q == "a-b":
        return f"{a_name} − {b_name}{m}"
    if q == "b-a":
        return f"{b_name} − {a_name}{m}"
    if q == "a":
        return f"{metric or 'a'} of {a_name}" if a_name not in ("a", "all runs") else (metric or "a")
    if q.startswith("a."):
        return f"{q[2:]} of {a_name}" if a_name not in ("a", "all runs") else q[2:]
    return quantity or "the tested quantity"


def verdict_number(rec: dict[str, Any]) -> dict[str, Any] | None:
    """The key number of one prediction's verdict record: the estimate at each level (a range when
    several), the statistic it is of, the 95 % interval (the hull of the levels' intervals), and
    the text `0.49–0.50 (ratio of means; n=1 a side, no interval: the margin rule decided)`. None
    where no level has a single estimate (a compound claim)."""
    levels = [lv for lv in rec.get("levels") or [] if isinstance(lv, dict) and isinstance(lv.get("estimate"), (int, float))]
    if not levels:
        return None
    ests = [float(lv["estimate"]) for lv in levels]
    lo, hi = min(ests), max(ests)
    # the tested quantity's unit (a value or a difference of one metric: the metric's; a ratio none)
    u = quantity_unit(levels[0].get("quantity"), rec.get("metric"))
    est = fmt_verdict(lo) if fmt_verdict(lo) == fmt_verdict(hi) else f"{fmt_verdict(lo)}–{fmt_verdict(hi)}"
    est += f" {u}" if u else ""
    stat = str(levels[0].get("statistic") or "estimate")
    cis = [lv["ci"] for lv in levels if isinstance(lv.get("ci"), list) and len(lv["ci"]) == 2
           and all(isinstance(c, (int, float)) for c in lv["ci"])]
    ns: list[dict[str, Any]] = [lv["n"] for lv in levels if isinstance(lv.get("n"), dict)]
    nmin = min((min(n.values()) for n in ns if n), default=None)
    if cis and len(cis) == len(levels):
        clo, chi = min(float(c[0]) for c in cis), max(float(c[1]) for c in cis)
        ci_text = (f"95% CI {fmt_interval(clo, chi, u)}" if len(levels) == 1
                   else f"95% CIs within {fmt_interval(clo, chi, u)}")
        ci: list[float] | None = [clo, chi]
    else:
        ci = None
        side = " a side" if any(len(n) > 1 for n in ns) else ""
        ci_text = (f"n={nmin}{side}, no interval: the margin rule decided" if nmin is not None and nmin < 3
                   else "no interval")
    return {"estimate": [lo, hi], "statistic": stat, "ci": ci, "quantity": levels[0].get("quantity"),
            "text": f"{est} ({stat}; {ci_text})"}


def prediction_clause(rec: dict[str, Any], said: str | None = None) -> str:
    """One judged prediction in words: `tp4pp2/tp8 output_throughput = 0.49–0.50 (ratio of means;
    …) at concurrency 4, 16, 64; expected a > b (falsified)`: the sentence the report's findings,
    the demo's narration and the dashboard share. `said`: the status the sentence around it has
    already given (`comm-bound is falsified: …`); the clause repeats it only where this prediction's
    own status differs (issue 44: "falsified: … (falsified)" said it twice)."""
    a_sel, b_sel = dict(rec.get("a") or {}), dict(rec.get("b") or {})
    a_name, b_name = group_names(a_sel, b_sel) if b_sel else (selector_name_one(a_sel), "b")
    num = verdict_number(rec)
    per = rec.get("per")
    lvs = [lv for lv in rec.get("levels") or [] if isinstance(lv, dict)]
    where = ""
    if per and lvs:
        vals = [str((lv.get("level") or {}).get(per)) for lv in lvs]
        where = f" at {per} " + (", ".join(vals) if len(vals) <= VALUES_SHOWN else f"{vals[0]}–{vals[-1]}")
    if num is not None:
        body = f"{quantity_name(num['quantity'], a_name, b_name, rec.get('metric'))} = {num['text']}{where}"
    elif rec.get("status") == "untested":
        body = "no evidence yet"
    else:
        outs = Counter(str(lv.get("outcome")) for lv in lvs)
        body = ", ".join(f"{k} at {n} level{'s' if n > 1 else ''}" for k, n in sorted(outs.items()))
    mark = PH.words(rec["post_hoc"]) if rec.get("post_hoc") else ""  # written after its runs: said
    status = "" if said is not None and rec.get("status") == said else str(rec.get("status"))
    paren = ", ".join(x for x in (status, mark) if x)
    return f"{body}; expected {rec.get('expect')}" + (f" ({paren})" if paren else "")


def verdict_sentence(hid: str, doc: Any) -> str | None:
    """What was decided about `hid`, in one sentence: its status and, per judged prediction, the
    tested quantity = its key number where it was measured, and what was expected."""
    verdicts = list(_get(doc, "verdicts") or [])
    if not verdicts:
        return None
    v = verdicts[-1]
    status = doc.effective_status() if hasattr(doc, "effective_status") else _get(v, "status")
    clauses = [prediction_clause(rec, status) for rec in _get(v, "predictions") or [] if isinstance(rec, dict)]
    text = f"{hid} is {status}"
    override = _get(doc, "override")
    if override is not None and _get(override, "status") == status:
        text += f" (set by hand: {reader_text(str(_get(override, 'why') or ''))})"
    if clauses:
        text += ": " + " | ".join(clauses)
    elif _get(v, "summary"):
        text += ": " + reader_text(str(_get(v, "summary")), status)
    return text + "."


# ---------------------------------------------------------------- what was measured


def _launch_groups(runs: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """Runs by launch (a launched run's launch id), else by the timeline's blocks of recorded runs."""
    groups: dict[Any, list[dict[str, Any]]] = {}
    block: list[dict[str, Any]] | None = None
    last: Any = None
    for r in sorted(runs, key=lambda r: (str(r.get("created_at") or ""), r["id"])):
        lid = r.get("launch_id")
        if lid is not None:
            groups.setdefault(("launch", lid), []).append(r)
            continue
        if block is None or gap_s(last, r.get("created_at")) > RUN_GROUP_GAP_S:
            block = groups.setdefault(("block", r["id"]), [])
        block.append(r)
        last = r.get("created_at")
    return list(groups.values())


# the figure a line of "What was measured" gives when no prediction on its runs names one
KEY_METRICS = (*M.HEADLINE_THROUGHPUT, "median_ttft_ms")


def _key_metric(runs: list[dict[str, Any]], wanted: list[str]) -> str | None:
    have = {m for r in runs if r.get("status") == "succeeded" for m in (r.get("metrics") or {})}
    return next((m for m in [*wanted, *KEY_METRICS] if m in have), None)


def _levels(runs: list[dict[str, Any]], keys: list[str], metric: str) -> str:
    """`output_throughput (median): 13,200 tok/s at parallel=1, 13,900 tok/s at parallel=4`: the
    absolute numbers of each level (the median of its succeeded, valid runs), with the unit."""
    u = unit(metric)
    by: dict[tuple[str, ...], list[float]] = {}
    for r in runs:
        v = (r.get("metrics") or {}).get(metric)
        if r.get("status") == "succeeded" and not r.get("invalidated") and isinstance(v, (int, float)):
            by.setdefault(tuple(L.canonical(r["labels"].get(k)) for k in keys), []).append(float(v))
    if not by:
        return ""
    order = sorted(by, key=lambda t: tuple(L.sort_key(x) for x in t))
    said = [fmt_num(median(by[t])) + (f" {u}" if u else "")
            + (" at " + ", ".join(f"{k}={x}" for k, x in zip(keys, t)) if keys else "") for t in order[:VALUES_SHOWN]]
    more = f", … ({len(order)} levels)" if len(order) > VALUES_SHOWN else ""
    return f"; {metric} (median): {', '.join(said)}{more}"


def measured_line(runs: list[dict[str, Any]], machines: dict[str, str], specs: dict[int, str],
                  status: dict[str, str] | None = None, metrics: dict[str, list[str]] | None = None) -> str:
    """One launch (or block of recorded runs) in a line: what varied, how many repeats, where, the
    absolute numbers of its levels (the key metric's median at each, with its unit) and the
    hypotheses it was run for with their status now (`status`; `metrics`: the metrics each
    hypothesis's predictions read, the first measured is the key one). Never "evidence for" a
    hypothesis: the runs may have falsified it (issue 44)."""
    first = runs[0]
    lid = first.get("launch_id")
    head = f"launch {lid}" + (f" ({specs[lid]})" if lid in specs else "") if lid is not None else (
        f"run {first['id']}" if len(runs) == 1 else f"runs {first['id']}–{runs[-1]['id']}")
    vals: dict[str, list[str]] = {}
    for r in runs:
        for k, v in r["labels"].items():
            if k in ignored_keys() or k in flag_keys() or k == L.CONCURRENT or k in LOAD_POINT_LABELS:
                continue
            c = v if isinstance(v, str) else L.canonical(v)
            lst = vals.setdefault(k, [])
            if c not in lst:
                lst.append(c)
    keys = [k for k in vals if len(vals[k]) > 1 or any(k not in r["labels"] for r in runs)]
    varied = []
    for k in keys:
        vs = sorted(vals[k], key=L.sort_key)
        shown = ", ".join(vs[:VALUES_SHOWN]) + (f", … ({len(vs)} values)" if len(vs) > VALUES_SHOWN else "")
        varied.append(f"{k} ({shown})")
    combos = Counter(tuple(str(r["labels"].get(k)) for k in keys) for r in runs)
    reps = sorted(set(combos.values()))
    rep = (f"{reps[0]} run{'s' if reps[0] > 1 else ''} each" if len(reps) == 1
           else f"{reps[0]}–{reps[-1]} runs each")
    bad = sum(1 for r in runs if r.get("status") != "succeeded")
    inval = sum(1 for r in runs if r.get("invalidated"))
    n = f"{len(runs)} run{'s' if len(runs) > 1 else ''}" + (f" ({bad} not succeeded)" if bad else "") + (
        f" ({inval} invalidated)" if inval else "")
    what = f" varying {' × '.join(varied)}" if varied else ""
    if len(combos) == 1:  # nothing varied: what the runs were, by their labels
        rep = ", ".join(f"{k}={v[0]}" for k, v in list(vals.items())[:VALUES_SHOWN])
    ident = [f"{k}={vals[k][0]}" for k in IDENTITY_LABELS if k in vals and k not in keys and len(combos) > 1]
    hosts = sorted({str(r.get("host")) for r in runs if r.get("host")})
    where = (" on " + ", ".join(machines.get(h, h) for h in hosts)) if hosts else ""
    marks = Counter(m for r in runs for m in RT.flags(r) if m != "invalidated")
    mark = "".join(f"; {c} of them overlapped another launch" if m == "concurrent" else f"; {c} of them measured under load"
                   for m, c in sorted(marks.items()))
    hyps = sorted({r["hypothesis"] for r in runs if r.get("hypothesis")})
    st = status or {}
    ev = (" → run for " + ", ".join(f"{h} (now {st[h]})" if h in st else h for h in hyps)) if hyps else ""
    key = _key_metric(runs, [m for h in hyps for m in (metrics or {}).get(h, [])])
    nums = _levels(runs, keys, key) if key else ""
    return (f"{head}: {n}{what}" + (f", {rep}" if rep else "") + (f" ({', '.join(ident)})" if ident else "")
            + f"{where}{nums}{mark}{ev}")


# ---------------------------------------------------------------- the whole section


def _claim(p: Any) -> str:
    """A prediction as a question states it: `a / b >= 2 on output_throughput (a: parallel=4, b:
    parallel=1), per concurrency`."""
    a_sel, b_sel = dict(_get(p, "a") or {}), dict(_get(p, "b") or {})
    a_name, b_name = group_names(a_sel, b_sel) if b_sel else (selector_name_one(a_sel), "b")
    groups = f"a: {a_name}" + (f", b: {b_name}" if b_sel else "") if a_sel else ""
    return (f"{_get(p, 'expect')}" + (f" on {_get(p, 'metric')}" if _get(p, "metric") else "")
            + (f" ({groups})" if groups else "") + (f", per {_get(p, 'per')}" if _get(p, "per") else ""))


def _need(n: dict[str, Any]) -> str:
    """A plan's need as its rank reads: decided its way, decided against it, or waited on."""
    st, want = n.get("status"), n.get("expects") or "confirmed"
    if st == want:
        return f"{n['id']} {st}, as it needs"
    if st in ("confirmed", "falsified"):
        return f"needs {n['id']} {want}, but it was {st}"
    return f"waits on {n['id']} ({st})"


def findings(docs: dict[str, Any], runs: list[dict[str, Any]], plans: list[dict[str, Any]],
             machines: dict[str, str] | None = None, specs: dict[int, str] | None = None) -> dict[str, Any]:
    """The opening section of a report as lists of sentences: questions, measured, decided, pivots,
    next. `machines`: a host's description (`vm (Linux x86_64, 2 CPUs)`); `specs`: a launch's spec file."""
    order = sorted(docs, key=lambda h: (str(_get(docs[h], "created") or ""), h))
    questions = []
    for hid in order:
        d = docs[hid]
        preds = [p for p in _get(d, "predictions") or []]
        expects = "; ".join(_claim(p) for p in preds)
        par = _get(d, "parent")
        q = f"{hid}: {_get(d, 'title')}" + (f" (pivot from {par})" if par else "")
        q += f", predicting {expects}" if expects else ", no prediction yet"
        questions.append(q)
    status = {h: str(docs[h].effective_status() if hasattr(docs[h], "effective_status") else _get(docs[h], "status"))
              for h in docs}
    reads = {h: [m for p in _get(docs[h], "predictions") or [] for m in [_get(p, "metric")] if m] for h in docs}
    measured = [measured_line(g, machines or {}, specs or {}, status, reads) for g in _launch_groups(runs)]
    decided = [s for s in (verdict_sentence(h, docs[h]) for h in order) if s]
    for a, b in sorted({tuple(sorted((h, r))) for h in order for r in _get(docs[h], "rivals") or [] if r in docs}):
        sa, sb = docs[a].effective_status(), docs[b].effective_status()
        if sa == sb == "confirmed":
            decided.append(f"{a} and its rival {b} are both confirmed: this experiment does not tell them apart.")
    pivots = []
    for hid in order:
        par = _get(docs[hid], "parent")
        if par:
            ps = docs[par].effective_status() if par in docs and hasattr(docs[par], "effective_status") else "missing"
            cs = docs[hid].effective_status() if hasattr(docs[hid], "effective_status") else "?"
            pivots.append(f"{par} ({ps}) → {hid} ({cs}): {_get(docs[hid], 'title')}")
    ranked = sorted((p for p in plans if p.get("rank") is not None), key=lambda p: p["rank"])[:TOP_PLANS]
    nxt = []
    for p in ranked:
        gain = p.get("gain") or [p.get("gain_low"), p.get("gain_high")]
        needs = "; ".join(_need(n) for n in p.get("needs_info") or p.get("needs_status") or [])
        line = (f"{p['title']}: {gain_cell(p.get('measured_effect'), gain[0], gain[1])}, effort {p['effort']}, "
                f"score {fmt_score(p['score'])}" + (f" ({needs})" if needs else ""))
        if p.get("tier"):  # contradicted: it still ranks, below every plan not contradicted, and says why
            line += f"; {p.get('reason')}"
        nxt.append(line)
    return {"questions": questions, "measured": measured, "decided": decided, "pivots": pivots, "next": nxt}
