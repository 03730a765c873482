"""Improvement plans: parsing their numbers, ranking them by what has been learned, calibration.

Pure: no I/O. The service hands in plan records (dicts) and the hypothesis documents they need; the
ranking is computed at read time every time, so a verdict or an invalidation shows on the next
`plan list` or `plan render` without any cache to refresh.

The ranking is lexicographic: the tier first, then the score.
- Tier: a plan is *contradicted* when a hypothesis it needs was decided the other way, or when optlog
  measured the plan's own change and the whole interval fell short of the claimed gain. A
  contradicted plan ranks below every plan whose needs hold or are open, whatever its score (a
  factor on the score alone let a large claimed gain outrank the verdict that ruled it out), and its
  reason says why.
- score = counted gain (percent) × confidence ÷ effort weight (S 1, M 3, L 8)
          × weight of the needed hypotheses: every one decided the way the plan needs → 1; any
            open, testing, inconclusive, superseded or missing → 0.5; any decided the other way → 0.1.
- The gain counted is the *measured* one where optlog measured the plan's change (its `change`:
  a label moved from one value to another, `parallel 1→4`, found as the a/b of a judged
  prediction whose groups differ in that label alone, on a higher-is-better metric): the
  estimate's 95 % interval replaces the claimed range, and the claimed range is shown beside it.
  Otherwise the claimed range counts (`gain_basis`: measured or claimed).
A need is `HYP` (the plan rests on HYP being confirmed) or `HYP=falsified` (it follows from HYP
being falsified: "batch decode GEMMs to M ≥ 16" follows from "decode GEMMs are memory-bound" being
falsified). Gains are a range within −100 % … +1,000 % (beyond: a typo, not an estimate);
confidence is in [0, 1]. The counted gain is cautious: the point a quarter of the way up the range
on a ratio scale (speedups multiply), so a wide range counts for less than its midpoint: `20–60%`
counts as +29 %, `10–900%` (an estimate spanning 9×) as +91 %, not +455 %. Only proposed and
in-progress plans get a rank; ties are broken by id (the older plan first). Every plan's
`score_reason` spells the product out.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any, Literal, get_args

from optlog.core import posthoc as PH
from optlog.core.numfmt import (fmt_count, fmt_gain, fmt_ratio, fmt_score, fmt_share,
                                 fmt_sig, fmt_signed, fmt_whole, fmt_written)
from optlog.core.statuses import reader_text
from optlog.core.units import higher_is_better
from optlog.errors import BadInput

EFFORT_WEIGHT: dict[str, int] = {"S": 1, "M": 3, "L": 8}
# The plan statuses, written once (tests/unit/test_vocabularies.py keeps them here): the ones a person
# sets (`plan update --status`, a plan file's `status:`), and `removed`, which only `plan rm` writes: the
# row stays (its number is never reused), the file goes (git keeps it). The lists are computed from it.
PlanStatus = Literal["proposed", "in_progress", "done", "dropped"]
PLAN_STATUSES: tuple[str, ...] = get_args(PlanStatus)
PROPOSED, IN_PROGRESS, DONE, DROPPED = PLAN_STATUSES
REMOVED = "removed"
PLAN_ROW_STATUSES: tuple[str, ...] = (*PLAN_STATUSES, REMOVED)  # what a plan row may hold, in listing order
ACTIVE: tuple[str, ...] = (PROPOSED, IN_PROGRESS)  # the ranked ones
W_CONFIRMED, W_OPEN, W_FALSIFIED = 1.0, 0.5, 0.1

_NUM = r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)"
_GAIN_RE = re.compile(rf"^\s*({_NUM})\s*%?\s*(?:(?:-|–|—|\.\.|to)\s*({_NUM})\s*%?)?\s*$")
GAIN_MIN, GAIN_MAX = -100.0, 1000.0  # percent: nothing loses more than all of it; 11× is beyond an estimate
NEED_EXPECTS: tuple[str, ...] = ("confirmed", "falsified")


# ---------------------------------------------------------------- parsing input


def parse_gain(text: str, field: str = "gain") -> tuple[float, float]:
    """`10-30%`, `10–30`, `10..30%`, `15%` (a point), `-5-10%` → (low, high) in percent."""
    m = _GAIN_RE.match(str(text))
    if not m:
        raise BadInput(f"expected a gain range like 10-30% (percent), got {text!r}", field=field)
    lo = float(m.group(1))
    hi = float(m.group(2)) if m.group(2) is not None else lo
    for v in (lo, hi):
        _check_gain(v, text, field)
    if lo > hi:
        raise BadInput(f"the low end of the gain range ({fmt_written(lo)}%) is above the high end ({fmt_written(hi)}%)", field=field)
    return lo, hi


def _check_gain(v: float, text: Any, field: str) -> None:
    if not math.isfinite(v) or not GAIN_MIN <= v <= GAIN_MAX:
        raise BadInput(f"gain {fmt_written(v)}% in {text!r} is outside {fmt_written(GAIN_MIN)}% … +{fmt_count(GAIN_MAX)}% "
                       "(a plan cannot lose more than everything, and 11× is not an estimate)", field=field)


def parse_percent(text: Any, field: str = "measured") -> float:
    s = str(text).strip().rstrip("%").strip()
    try:
        v = float(s)
    except ValueError:
        raise BadInput(f"expected a percentage like 28 or -12.5%, got {text!r}", field=field) from None
    _check_gain(v, text, field)
    return v


def parse_need(text: str, field: str = "needs") -> tuple[str, str]:
    """`HYP` → (HYP, confirmed); `HYP=falsified` / `HYP=confirmed` → as written."""
    hid, sep, want = str(text).strip().partition("=")
    hid, want = hid.strip(), (want.strip().lower() if sep else "confirmed")
    if not hid:
        raise BadInput(f"expected HYP or HYP=falsified, got {text!r}", field=field)
    if want not in NEED_EXPECTS:
        raise BadInput(f"a plan needs a hypothesis confirmed or falsified: {hid}=confirmed or {hid}=falsified, "
                       f"got {text!r}", field=field)
    return hid, want


def need_text(hid: str, expects: str) -> str:
    """The stored form of a need: `HYP` (confirmed) or `HYP=falsified`."""
    return hid if expects == "confirmed" else f"{hid}={expects}"


_CHANGE_RE = re.compile(r"^\s*([A-Za-z_][\w.-]*)\s*[=:]\s*([^\s>→-][^>→]*?)\s*(?:->|→)\s*(\S.*?)\s*$")


def parse_change(text: Any, field: str = "change") -> dict[str, str]:
    """`parallel=1->4` (or `parallel=1→4`) → {label: parallel, from: "1", to: "4"}: the one label the
    plan moves, so optlog can find where it measured exactly that change."""
    if isinstance(text, dict):
        try:
            text = f"{text['label']}={text['from']}->{text['to']}"
        except KeyError:
            raise BadInput("a change is {label: L, from: A, to: B}", field=field) from None
    m = _CHANGE_RE.match(str(text))
    if not m or m.group(2) == m.group(3):
        raise BadInput(f"expected a change like parallel=1->4 (a label, its value now, the value the plan "
                       f"sets), got {text!r}", field=field)
    return {"label": m.group(1), "from": m.group(2), "to": m.group(3)}


def change_text(change: dict[str, Any] | None) -> str:
    """`parallel 1→4` (what a person reads); empty for none."""
    return f"{change['label']} {change['from']}→{change['to']}" if change else ""


def title_key(title: str) -> str:
    """Two titles that differ only in case or spacing are the same plan."""
    return " ".join(str(title).split()).casefold()


def parse_effort(text: str, field: str = "effort") -> str:
    e = str(text).strip().upper()
    if e not in EFFORT_WEIGHT:
        raise BadInput(f"unknown effort {text!r}; one of S, M, L", field=field)
    return e


def parse_confidence(text: Any, field: str = "confidence") -> float:
    s = str(text).strip()
    pct = s.endswith("%")
    try:
        v = float(s.rstrip("%"))
    except ValueError:
        raise BadInput(f"expected a confidence between 0 and 1, got {text!r}", field=field) from None
    if pct:
        v /= 100.0
    if not math.isfinite(v) or not 0.0 <= v <= 1.0:
        raise BadInput(f"confidence must be between 0 and 1, got {text!r}", field=field)
    return v


def check_status(s: str, field: str = "status") -> str:
    if s not in PLAN_STATUSES:
        raise BadInput(f"unknown plan status {s!r}; one of {', '.join(PLAN_STATUSES)}", field=field)
    return s


def _day(at: Any) -> str:
    return str(at or "")[:10] or "undated"


def selector_name(sel: Any) -> str:
    """A group selector as a reader names it: `{config: tp4pp2}` → `tp4pp2`; a number keeps its
    label (`{parallel: 4}` → `parallel=4`: "4 1.35× 1" would read as arithmetic)."""
    if isinstance(sel, dict):
        if len(sel) == 1:
            k, v = next(iter(sel.items()))
            return f"{k}={v}" if _num(v) is not None else str(v)
        return ",".join(f"{k}={v}" for k, v in sel.items())
    return str(sel) if sel not in (None, "") else "?"


# ---------------------------------------------------------------- reading hypothesis docs


def _get(obj: Any, key: str, default: Any = None) -> Any:
    if isinstance(obj, dict):
        return obj.get(key, default)
    v = getattr(obj, key, default)
    if v is default and hasattr(obj, "model_extra") and isinstance(getattr(obj, "model_extra", None), dict):
        return obj.model_extra.get(key, default)
    return v


def _num(v: Any) -> float | None:
    if isinstance(v, bool) or v is None:
        return None
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def _level_ratio(lv: dict[str, Any]) -> float | None:
    """The a/b ratio of one verdict level as the verdict states it: its estimate where the tested
    quantity is a/b (a ratio of geometric means from 3 repeats a side), so a plan's reason quotes
    the number the verdict decided on; the ratio of means for other claims."""
    if lv.get("quantity") == "a/b" and _num(lv.get("estimate")) is not None:
        return _num(lv.get("estimate"))
    return _num(lv.get("ratio"))


def verdict_ratio_phrase(doc: Any, verdict: Any) -> str | None:
    """`tp4pp2 0.30–0.47× tp8` from a verdict's per-level ratios (the failing predictions first)."""
    preds = _get(verdict, "predictions") or []
    if not isinstance(preds, list):
        return None
    chosen = [p for p in preds if isinstance(p, dict) and p.get("status") in ("falsified", "confirmed")]
    chosen = chosen or [p for p in preds if isinstance(p, dict)]
    fals = [p for p in chosen if p.get("status") == "falsified"]
    for p in (fals or chosen):
        ratios = [r for r in (_level_ratio(lv) for lv in (p.get("levels") or []) if isinstance(lv, dict)) if r is not None]
        if not ratios:
            continue
        a_sel, b_sel = p.get("a"), p.get("b")
        if (a_sel is None or b_sel is None) and doc is not None:
            for dp in _get(doc, "predictions") or []:
                if _get(dp, "id") == p.get("id"):
                    a_sel = a_sel if a_sel is not None else _get(dp, "a")
                    b_sel = b_sel if b_sel is not None else _get(dp, "b")
        lo, hi = min(ratios), max(ratios)
        span = fmt_ratio(lo, 2) if fmt_ratio(lo, 2) == fmt_ratio(hi, 2) else f"{fmt_ratio(lo, 2)}–{fmt_ratio(hi, 2)}"
        if isinstance(a_sel, dict) and isinstance(b_sel, dict):
            # name the groups by what tells them apart (`tp4pp2 … tp8`, not `bench=serving,config=…`)
            shared = {k for k in a_sel if k in b_sel and a_sel[k] == b_sel[k]}
            a_sel = {k: v for k, v in a_sel.items() if k not in shared} or a_sel
            b_sel = {k: v for k, v in b_sel.items() if k not in shared} or b_sel
        return f"{selector_name(a_sel)} {span}× {selector_name(b_sel)}"
    return None


def need_info(need: str, doc: Any | None) -> dict[str, Any]:
    """Status of one needed hypothesis (`HYP` or `HYP=falsified`), its weight, and a one-line reason
    citing what decided it."""
    hid, expects = parse_need(need, field="needs")
    info = _need_status(hid, doc, expects)
    info["expects"] = expects
    return info


def _need_status(hid: str, doc: Any | None, expects: str) -> dict[str, Any]:
    if doc is None:
        return {"id": hid, "title": None, "status": "missing", "weight": W_OPEN,
                "reason": f"waits on {hid} (missing: no hypothesis file)", "decided_at": None}
    status = doc.effective_status() if hasattr(doc, "effective_status") else str(_get(doc, "status") or "open")
    title = _get(doc, "title")
    override = _get(doc, "override")
    verdicts = list(_get(doc, "verdicts") or [])
    at: str | None = None
    why = ""
    if override is not None and _get(override, "status") == status:
        at, why = _get(override, "at"), str(_get(override, "why") or "")
        last = verdicts[-1] if verdicts else None
        phrase = verdict_ratio_phrase(doc, last) if last is not None and _get(last, "status") == status else None
    else:
        same = [v for v in verdicts if _get(v, "status") == status]
        last = same[-1] if same else (verdicts[-1] if verdicts else None)
        phrase = None
        if last is not None:
            at, why = _get(last, "at"), str(_get(last, "summary") or "")
            phrase = verdict_ratio_phrase(doc, last)
    # a status that rests on predictions written after their runs says so (core.posthoc)
    post_hoc = PH.verdict_words(last) if last is not None and _get(last, "status") == status else ""
    why = PH.without_lead(why, status, post_hoc) if post_hoc else why
    why = reader_text(why, status)
    if phrase and why and phrase not in why:
        detail = f"{phrase}; {why}"
    else:
        detail = why or phrase or ""
    said = f": {detail}" if detail else ""
    day = _day(at) + (f" ({post_hoc})" if post_hoc else "")
    if status in NEED_EXPECTS and status == expects:
        weight = W_CONFIRMED
        reason = (f"rests on {hid}, confirmed {day}{said}" if expects == "confirmed"
                  else f"follows from {hid} being falsified {day}{said}")
    elif status in NEED_EXPECTS:
        weight = W_FALSIFIED
        reason = (f"rests on {hid}, falsified {day}: {detail or 'no reason recorded'}" if expects == "confirmed"
                  else f"needs {hid} falsified, but it was confirmed {day}{said}")
    else:
        weight = W_OPEN
        reason = f"waits on {hid} ({status}; needs it {expects})" if expects != "confirmed" else f"waits on {hid} ({status})"
    out = {"id": hid, "title": title, "status": status, "weight": weight, "reason": reason, "decided_at": at}
    if post_hoc:
        out["post_hoc"] = post_hoc
    return out


def needs_weight(infos: list[dict[str, Any]]) -> tuple[float, str]:
    """The weight of a plan's needs and the reason a reader is shown."""
    if not infos:
        return W_CONFIRMED, "needs no hypothesis"
    fals = [i for i in infos if i["weight"] == W_FALSIFIED]
    if fals:
        return W_FALSIFIED, "; ".join(i["reason"] for i in fals)
    pending = [i for i in infos if i["weight"] != W_CONFIRMED]
    if pending:
        return W_OPEN, "waits on " + ", ".join(f"{i['id']} ({i['status']})" for i in pending)
    return W_CONFIRMED, "; ".join(i["reason"] for i in infos)


# ---------------------------------------------------------------- ranking


COUNTED_QUANTILE = 0.25  # where on the (log-ratio) range the counted gain sits
_RATIO_FLOOR = 0.01  # −100 % (nothing left) counted as −99 % on the ratio scale


def counted_gain(low: float, high: float) -> float:
    """The gain (percent) a range is ranked by: a quarter of the way up it in log-ratio terms."""
    a, b = max(1 + low / 100.0, _RATIO_FLOOR), max(1 + high / 100.0, _RATIO_FLOOR)
    return (a * (b / a) ** COUNTED_QUANTILE - 1) * 100.0


def wide_range(low: float, high: float) -> str | None:
    """A warning for a range so wide it is hardly an estimate (more than 4× from end to end)."""
    a, b = max(1 + low / 100.0, _RATIO_FLOOR), max(1 + high / 100.0, _RATIO_FLOOR)
    if b / a <= 4:
        return None
    return (f"the gain range {fmt_gain(low, high)} spans {fmt_ratio(b / a, 1)}× from end to end: it is ranked as "
            f"{fmt_whole(counted_gain(low, high), signed=True)}%; narrow it when you know more")


def base_score(low: float, high: float, confidence: float, effort: str) -> float:
    return counted_gain(low, high) * confidence / EFFORT_WEIGHT[effort]


TIER_STANDS, TIER_CONTRADICTED = 0, 1


def evaluate(plans: list[dict[str, Any]], docs: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Score and rank plan records against the hypotheses they need (and the measurements of
    their change): the tier first, then the score, then the id.

    Returns new dicts (the input is not changed) in display order: ranked active plans first, then
    done, then dropped, each by id."""
    out: list[dict[str, Any]] = []
    for p in plans:
        infos = [need_info(h, docs.get(parse_need(h, field="needs")[0])) for h in p.get("needs") or []]
        weight, reason = needs_weight(infos)
        effect = measured_effect(p.get("change"), docs, prefer={i["id"] for i in infos})
        lo, hi = (effect["gain_ci"] if effect else (p["gain_low"], p["gain_high"]))
        score = round(base_score(lo, hi, p["confidence"], p["effort"]) * weight, 6)
        short = effect is not None and effect["gain_ci"][1] < p["gain_low"]
        tier = TIER_CONTRADICTED if (weight == W_FALSIFIED or short) else TIER_STANDS
        if effect is not None:
            effect = {**effect, "short": short, "claimed": [p["gain_low"], p["gain_high"]],
                      "text": effect_text(effect, p["gain_low"], p["gain_high"])}
        if tier == TIER_CONTRADICTED:
            why = [x for x in (effect["text"] if short and effect else "",
                               reason if weight == W_FALSIFIED else "") if x]
            reason = "ranked below every plan whose needs hold or are open: " + "; ".join(why)
        elif effect is not None:
            reason = f"{effect['text']}; {reason}"
        v = dict(p)
        v.update(needs_info=infos, weight=weight, score=score, reason=reason, rank=None, tier=tier,
                 gain_basis="measured" if effect else "claimed", measured_effect=effect,
                 score_reason=score_reason(p, weight, score, effect), measured=measured_vs_predicted(p))
        out.append(v)
    active = sorted((v for v in out if v["status"] in ACTIVE), key=lambda v: (v["tier"], -v["score"], v["id"]))
    for i, v in enumerate(active, 1):
        v["rank"] = i
    order = {s: i for i, s in enumerate(PLAN_ROW_STATUSES)}  # done, dropped, then removed
    rest = sorted((v for v in out if v["status"] not in ACTIVE),
                  key=lambda v: (order.get(v["status"], len(order)), v["id"]))
    return active + rest


def measured_effect(change: dict[str, Any] | None, docs: Mapping[str, Any],
                    prefer: set[str] | frozenset[str] = frozenset()) -> dict[str, Any] | None:
    """Where optlog measured a plan's change: the judged prediction (latest verdict of any
    hypothesis) whose groups differ in the change's label alone, one at `from` and one at `to`, on a
    higher-is-better metric, tested as a/b. Its estimate and 95 % interval as a gain in percent
    (`gain`, `gain_ci`), the most cautious level where there are several; the one with the most
    runs where several predictions measured it (of a hypothesis in `prefer`, the plan's needs, on a
    tie). None when nothing did."""
    if not change:
        return None
    label, frm, to = str(change["label"]), str(change["from"]), str(change["to"])
    best: dict[str, Any] | None = None
    for hid in sorted(docs):
        doc = docs[hid]
        verdicts = list(_get(doc, "verdicts") or [])
        if not verdicts:
            continue
        for p in _get(verdicts[-1], "predictions") or []:
            if not isinstance(p, dict) or not higher_is_better(p.get("metric")):
                continue
            a, b = p.get("a"), p.get("b")
            if not (isinstance(a, dict) and isinstance(b, dict)):
                continue
            differ = {k for k in set(a) | set(b) if str(a.get(k)) != str(b.get(k))}
            if differ != {label}:
                continue
            sa, sb = str(a.get(label)), str(b.get(label))
            if (sa, sb) == (to, frm):
                flip = False
            elif (sa, sb) == (frm, to):
                flip = True
            else:
                continue
            found = _effect_of(p, flip)
            if found is None:
                continue
            found.update(hypothesis=hid, prediction=p.get("id"), metric=p.get("metric"), change=change_text(change))
            if best is None or (found["n"], hid in prefer) > (best["n"], best["hypothesis"] in prefer):
                best = found
    return best


def _effect_of(p: dict[str, Any], flip: bool) -> dict[str, Any] | None:
    """The most cautious level's a/b estimate and interval of a prediction record, as a gain in percent."""
    rows = []
    for lv in p.get("levels") or []:
        if not isinstance(lv, dict) or lv.get("quantity") != "a/b":
            continue
        est = _num(lv.get("estimate"))
        if est is None or est <= 0:
            continue
        ci = lv.get("ci")
        lo, hi = ((_num(ci[0]), _num(ci[1])) if isinstance(ci, list) and len(ci) == 2 else (est, est))
        if lo is None or hi is None or lo <= 0:
            lo, hi = est, est
        if flip:
            est, lo, hi = 1 / est, 1 / hi, 1 / lo
        n = lv.get("n")
        runs = sum(int(x) for x in n.values()) if isinstance(n, dict) else 0
        rows.append((est, lo, hi, runs, str(lv.get("statistic") or ""), lv.get("level")))
    if not rows:
        return None
    est, lo, hi, runs, stat, level = min(rows, key=lambda r: r[0])

    def pct(r: float) -> float:
        return round(min(max((r - 1) * 100.0, GAIN_MIN), GAIN_MAX), 6)

    return {"ratio": est, "ratio_ci": [lo, hi], "gain": pct(est), "gain_ci": [pct(lo), pct(hi)], "n": runs,
            "statistic": stat, "level": level, "interval": lo != hi}


def gain_cell(effect: dict[str, Any] | None, low: float, high: float) -> str:
    """A plan's gain in a table, measured and claimed told apart: `+5% measured (claimed 100–300%)`
    or `20–60% claimed`."""
    if effect:
        return f"{fmt_whole(effect['gain'], signed=True)}% measured (claimed {fmt_gain(low, high)})"
    return f"{fmt_gain(low, high)} claimed"


def effect_text(e: dict[str, Any], claimed_lo: float, claimed_hi: float) -> str:
    """`measured +5% (95% CI −23% to +45%) for parallel 1→4 (memory-bound.p1, ratio of geometric
    means), short of the claimed 100–300%`."""
    lo, hi = e["gain_ci"]
    ci = f" (95% CI {fmt_whole(lo, signed=True)}% to {fmt_whole(hi, signed=True)}%)" if e.get("interval") else " (no interval)"
    stat = f", {e['statistic']}" if e.get("statistic") else ""
    short = hi < claimed_lo
    verdict = "short of" if short else ("inside" if claimed_lo <= e["gain"] <= claimed_hi else
                                        "below" if e["gain"] < claimed_lo else "above")
    return (f"measured {fmt_whole(e['gain'], signed=True)}%{ci} for {e['change']} ({e['prediction']}{stat}), "
            f"{verdict} the claimed {fmt_gain(claimed_lo, claimed_hi)}")


def score_reason(p: dict[str, Any], weight: float, score: float, effect: dict[str, Any] | None = None) -> str:
    """`score 4.83 = 29% (counted from 20–60%) × 0.5 confidence ÷ 3 (effort M) × 1 (needs)`; with a
    measured change, the measured interval is what is counted and the claimed range stands beside it."""
    if effect is not None:
        lo, hi = effect["gain_ci"]
        g = counted_gain(lo, hi)
        src = (f"counted from the measured {fmt_gain(round(lo), round(hi))}, claimed {fmt_gain(p['gain_low'], p['gain_high'])}")
    else:
        g = counted_gain(p["gain_low"], p["gain_high"])
        src = f"counted from the claimed {fmt_gain(p['gain_low'], p['gain_high'])}"
    return (f"score {fmt_score(score)} = {fmt_sig(g, 3)}% ({src}) × "
            f"{fmt_written(p['confidence'])} confidence ÷ {EFFORT_WEIGHT[p['effort']]} (effort {p['effort']}) × "
            f"{fmt_written(weight)} (needs)")


def measured_vs_predicted(p: dict[str, Any]) -> str | None:
    """`measured +28%, inside the predicted 10–30%` (None before a gain is measured)."""
    m = p.get("measured_gain")
    if m is None:
        return None
    lo, hi = p["gain_low"], p["gain_high"]
    where = "inside" if lo <= m <= hi else ("below" if m < lo else "above")
    return f"measured {fmt_signed(m)}%, {where} the predicted {fmt_gain(lo, hi)}"


def calibration(plans: list[dict[str, Any]]) -> dict[str, Any]:
    """How well past predictions held: plans with a measured gain (done, or tried and dropped)."""
    rows = []
    for p in sorted(plans, key=lambda p: p["id"]):
        m = p.get("measured_gain")
        if m is None:
            continue
        lo, hi = p["gain_low"], p["gain_high"]
        mid = (lo + hi) / 2.0
        rows.append({"id": p["id"], "title": p.get("title"), "status": p["status"], "predicted": [lo, hi],
                     "measured": m, "inside": lo <= m <= hi, "error": m - mid,
                     "where": "inside" if lo <= m <= hi else ("below" if m < lo else "above"),
                     "ratio": (m / mid) if mid else None})
    n = len(rows)
    inside = sum(1 for r in rows if r["inside"])
    ratios = [r["ratio"] for r in rows if r["ratio"] is not None]
    errs = [r["error"] for r in rows]
    return {
        "n": n,
        "inside": inside,
        "below": sum(1 for r in rows if r["where"] == "below"),
        "above": sum(1 for r in rows if r["where"] == "above"),
        "fraction_inside": (inside / n) if n else None,
        "mean_ratio": (sum(ratios) / len(ratios)) if ratios else None,
        "mean_error": (sum(errs) / n) if n else None,  # measured − predicted midpoint, percentage points
        "plans": rows,
    }


def calibration_line(cal: dict[str, Any]) -> str:
    if not cal["n"]:
        return "calibration: no plan has a measured gain yet"
    mr = cal["mean_ratio"]
    mr_s = fmt_ratio(mr, 2) if mr is not None else "–"
    me = cal.get("mean_error")
    me_s = f"; measured − predicted midpoint {fmt_signed(me, 3)} points on average" if me is not None else ""
    return (f"calibration: {cal['inside']} of {cal['n']} measured plans fell inside the predicted range "
            f"({fmt_share(cal['fraction_inside'])}; {cal.get('below', 0)} below, {cal.get('above', 0)} above); "
            f"mean measured ÷ predicted midpoint {mr_s}{me_s}")


def calibration_rows(cal: dict[str, Any]) -> list[str]:
    """One line per measured plan: `01 Server tuning: predicted 10–30%, measured +28% (inside)`."""
    return [f"{r['id']:02d} {r.get('title') or ''}: predicted {fmt_gain(*r['predicted'])}, measured "
            f"{fmt_signed(r['measured'])}% ({r['where']})" for r in cal["plans"]]
