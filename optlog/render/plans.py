"""Plan files (`<prefix>/<prefix>-NN.md`) and their index (`<prefix>/README.md`).

Everything here is a function of the plan records and the hypothesis files: no clock, no database
reads, so the same data renders to the same bytes, and a fresh clone renders what was committed.
The front matter holds the whole plan record, so a clone without `.optlog/` can rebuild it
(`optlog plan import`, or automatically when the plan table is empty).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from optlog.core import posthoc as PH
from optlog.core.numfmt import fmt_gain, fmt_pct, fmt_ratio, fmt_score, fmt_share, fmt_value, fmt_written
from optlog.core.plans import EFFORT_WEIGHT, calibration_line, calibration_rows, change_text, gain_cell
from optlog.core.statuses import reader_text
from optlog.render import md

EVIDENCE_LEVELS_MAX = 200  # rows per verdict table; more are summarised


def plan_filename(prefix: str, pid: int) -> str:
    return f"{prefix}-{pid:02d}.md"


def _get(obj: Any, key: str, default: Any = None) -> Any:
    if isinstance(obj, dict):
        return obj.get(key, default)
    return getattr(obj, key, default)


# ---------------------------------------------------------------- front matter (the record)


def record_of(view: dict[str, Any]) -> dict[str, Any]:
    """The front matter: what a reader scans first, then the full record for rebuilding."""
    return {
        "id": view["id"],
        "rank": view["rank"],
        "score": view["score"],
        "title": view["title"],
        "gain": {"low": _num(view["gain_low"]), "high": _num(view["gain_high"])},
        "effort": view["effort"],
        "confidence": view["confidence"],
        "needs": [{"id": n["id"], "expects": n["expects"], "status": n["status"],
                   **({"post_hoc": n["post_hoc"]} if n.get("post_hoc") else {})} for n in view["needs_info"]],
        "weight": view["weight"],
        "tier": view["tier"],
        "gain_basis": view["gain_basis"],
        **({"change": dict(view["change"])} if view.get("change") else {}),
        **({"measured_effect": _effect_record(view["measured_effect"])} if view.get("measured_effect") else {}),
        "reason": view["reason"],
        "status": view["status"],
        "measured_gain": _num(view.get("measured_gain")),
        "why": view.get("why"),
        "rationale": view.get("rationale"),
        "steps": list(view.get("steps") or []),
        "risks": list(view.get("risks") or []),
        "validation": view.get("validation"),
        "created": view.get("created_at"),
        "updated": view.get("updated_at"),
        "history": list(view.get("history") or []),
    }


def _effect_record(e: dict[str, Any]) -> dict[str, Any]:
    """The measured effect as the front matter shows it (derived, for a reader: rebuilt at read time)."""
    return {"gain": round(e["gain"], 1), "ci": [round(x, 1) for x in e["gain_ci"]], "prediction": e["prediction"],
            "short_of_claim": e["short"]}


def _num(v: Any) -> Any:
    if isinstance(v, float) and v.is_integer() and abs(v) < 1e15:
        return int(v)
    return v


# ---------------------------------------------------------------- evidence


def _prediction_rows(doc: Any) -> list[list[str]]:
    rows = []
    for p in _get(doc, "predictions") or []:
        rows.append([
            md.code(_get(p, "id")),
            md.text(f"v{_get(p, 'version', 1)}"),
            md.code(_get(p, "expect")),
            md.text(_get(p, "metric") or "–"),
            md.text(fmt_value(_get(p, "a") or {}) or "–"),
            md.text(fmt_value(_get(p, "b") or {}) or "–"),
            md.text(_get(p, "per") or "–"),
            md.text(PH.status_text(_get(p, "status"), _get(p, "post_hoc"))),
        ])
    return rows


def verdict_tables(verdict: Any, heading_level: int = 4) -> list[str]:
    """The per-level tables of one verdict: level, a, b, ratio, outcome (the compare rows)."""
    out: list[str] = []
    preds = _get(verdict, "predictions") or []
    if not isinstance(preds, list):
        return out
    for p in preds:
        if not isinstance(p, dict):
            continue
        pid = p.get("id") or "?"
        head = f"Prediction {pid}: {PH.status_text(p.get('status') or '?', p.get('post_hoc'))}"
        bits = []
        if p.get("expect"):
            bits.append(md.code(p["expect"]))
        if p.get("metric"):
            bits.append(f"on {md.text(p['metric'])}")
        levels = [lv for lv in (p.get("levels") or []) if isinstance(lv, dict)]
        out.append(md.heading(heading_level, head))
        if bits:
            out.append(" ".join(bits))
        if levels:
            rows = []
            for lv in levels[:EVIDENCE_LEVELS_MAX]:
                ci = lv.get("ci")
                stat = str(lv.get("statistic") or "")
                geo: dict[str, Any] = got if isinstance(got := lv.get("geo"), dict) else {}
                rows.append([
                    fmt_value(lv.get("level") or {}) or "all",
                    *(f"{fmt_value(geo[g])} (geometric)" if g in geo else fmt_value(lv.get(g)) for g in ("a", "b")),
                    str(lv.get("quantity") or "–") + (" (geometric)" if "geometric" in stat else ""),
                    fmt_value(lv.get("estimate")),
                    (f"[{fmt_value(ci[0])}, {fmt_value(ci[1])}]" + _conf_note(lv.get("confidence")))
                    if isinstance(ci, list) and len(ci) == 2 else "–",
                    lv.get("outcome") or "–",
                    fmt_value(lv.get("n")) if lv.get("n") else "–",
                    lv.get("reason") or "",
                ])
            out.append(md.table(["level", "a", "b", "tested", "estimate", "CI", "outcome", "n", "reason"], rows,
                                ["l", "r", "r", "l", "r", "r", "l", "l", "l"]))
            if len(levels) > EVIDENCE_LEVELS_MAX:
                out.append(md.inline(f"… and {len(levels) - EVIDENCE_LEVELS_MAX} more levels"))
        nc = p.get("not_comparable") or []
        if nc:
            out.append(md.inline(f"Not comparable (left out): {fmt_value(nc)}"))
    return out


def evidence_section(hid: str, doc: Any | None, info: dict[str, Any]) -> list[str]:
    out: list[str] = []
    title = _get(doc, "title") if doc is not None else None
    out.append(md.heading(3, f"{hid}: {title}" if title else hid))
    out.append(f"Status: **{md.text(info['status'])}**. {md.text(info['reason'])}")
    if doc is None:
        out.append(md.inline("No hypothesis file for this id: the plan waits on it as if it were open."))
        return out
    stmt = _get(doc, "statement") or ""
    if stmt.strip():
        out.append(md.paragraphs(stmt))
    rows = _prediction_rows(doc)
    if rows:
        out.append(md.raw_table(["prediction", "version", "expect", "metric", "a", "b", "per", "status"], rows))
    override = _get(doc, "override")
    if override is not None:
        out.append(
            f"Set by hand to **{md.text(_get(override, 'status'))}** by {md.text(_get(override, 'by'))} "
            f"at {md.text(_get(override, 'at'))}: {md.text(_get(override, 'why'))}"
        )
    verdicts = list(_get(doc, "verdicts") or [])
    if verdicts:
        v = verdicts[-1]
        out.append(
            f"Latest verdict ({md.text(_get(v, 'at'))}, by {md.text(_get(v, 'by'))}): "
            f"**{md.text(_get(v, 'status'))}**"
            + (f": {md.text(reader_text(_get(v, 'summary'), _get(v, 'status')))}" if _get(v, "summary") else "")
        )
        out.extend(verdict_tables(v))
        if len(verdicts) > 1:
            rows2 = [[_get(x, "at"), _get(x, "by"), _get(x, "status"), reader_text(_get(x, "summary") or "", _get(x, "status"))]
                     for x in verdicts]
            out.append(md.heading(4, "Verdict history"))
            out.append(md.table(["at", "by", "status", "summary"], rows2))
    elif override is None:
        out.append(md.inline("No verdict yet."))
    return out


# ---------------------------------------------------------------- one plan


def render_plan(view: dict[str, Any], docs: Mapping[str, Any], total_ranked: int) -> str:
    parts: list[str] = [md.front_matter(record_of(view)).rstrip("\n")]
    parts.append(md.heading(1, view["title"]))
    rank = f"{view['rank']} of {total_ranked}" if view["rank"] is not None else "not ranked"
    parts.append(md.table(
        ["rank", "score", "gain", "effort", "confidence", "status", "measured gain (done)"],
        [[rank, fmt_score(view['score']), gain_cell(view.get("measured_effect"), view["gain_low"], view["gain_high"]),
          f"{view['effort']} (÷{EFFORT_WEIGHT[view['effort']]})", fmt_written(view['confidence']), view["status"],
          fmt_pct(view.get("measured_gain"))]],
    ))
    parts.append(
        f"{md.text(view['score_reason'][0].upper() + view['score_reason'][1:])}: {md.text(view['reason'])}"
    )
    if view.get("measured"):
        parts.append(md.inline(view["measured"][0].upper() + view["measured"][1:] + "."))
    if view.get("change"):
        parts.append(md.inline(f"The change: {change_text(view['change'])}."))
    if view.get("why"):
        parts.append(f"Last status change: {md.text(view['why'])}")
    parts.append(md.heading(2, "Rationale"))
    parts.append(md.paragraphs(view.get("rationale") or "") or md.inline("None given."))
    parts.append(md.heading(2, "Evidence"))
    if view["needs_info"]:
        parts.append(md.inline("The hypotheses this plan rests on, with the verdicts and comparisons recorded in their files."))
        for info in view["needs_info"]:
            parts.extend(evidence_section(info["id"], docs.get(info["id"]), info))
    else:
        parts.append(md.inline("This plan rests on no recorded hypothesis."))
    parts.append(md.heading(2, "Steps"))
    steps = [md.inline(s) for s in view.get("steps") or [] if str(s).strip()]
    parts.append(md.bullets(steps, ordered=True) if steps else md.inline("None given."))
    parts.append(md.heading(2, "Risks"))
    risks = [md.inline(s) for s in view.get("risks") or [] if str(s).strip()]
    parts.append(md.bullets(risks) if risks else md.inline("None given."))
    parts.append(md.heading(2, "Validation"))
    parts.append(md.paragraphs(view.get("validation") or "") or md.inline("None given."))
    hist = view.get("history") or []
    if hist:
        parts.append(md.heading(2, "History"))
        rows = [[h.get("at"), h.get("by"), f"{h.get('from') or '–'} → {h.get('to') or '–'}",
                 fmt_pct(h.get("measured_gain")) if h.get("measured_gain") is not None else "", h.get("why") or ""]
                for h in hist]
        parts.append(md.table(["at", "by", "status", "measured gain", "why"], rows))
    return "\n\n".join(p for p in parts if p) + "\n"


# ---------------------------------------------------------------- the index


def render_index(views: list[dict[str, Any]], cal: dict[str, Any], prefix: str, name: str) -> str:
    parts = [md.heading(1, f"Improvement plans: {name}")]
    parts.append(
        "Ranked first by standing: a plan a verdict contradicts (a hypothesis it needs decided the other "
        "way, or its own change measured and short of the claimed gain) ranks below every plan whose needs "
        "hold or are open. Then by score = counted gain × confidence ÷ effort (S 1, M 3, L 8), where the "
        "counted gain is the measured effect's 95% interval where optlog measured the plan's change, else the "
        "claimed range, taken a quarter of the way up on a ratio scale (a wide range counts for less than its "
        "midpoint), "
        "× 1 when every hypothesis a plan needs is decided the way it needs (confirmed, or falsified "
        "where it says so), × 0.5 while any is open, testing or inconclusive, × 0.1 when any is decided "
        "the other way. Ties go to the older plan. Written by "
        "`optlog plan render` from the plan records and the hypothesis files."
    )
    parts.append(md.inline(calibration_line(cal)))
    if cal["plans"]:
        parts.append(md.bullets(md.inline(x) for x in calibration_rows(cal)))
    active = [v for v in views if v["rank"] is not None]
    parts.append(md.heading(2, "Ranked"))
    if active:
        rows = []
        for v in active:
            needs = ", ".join(f"{n['id']}{'=falsified' if n['expects'] == 'falsified' else ''} ({n['status']}"
                              + (", post-hoc)" if n.get("post_hoc") else ")")
                              for n in v["needs_info"]) or "–"
            rows.append([
                str(v["rank"]),
                md.link(f"{v['id']:02d} {v['title']}", plan_filename(prefix, v["id"])),
                fmt_score(v['score']),
                md.text(gain_cell(v.get("measured_effect"), v["gain_low"], v["gain_high"])),
                v["effort"],
                fmt_written(v['confidence']),
                md.text(v["status"]),
                md.text(needs),
                md.text(v["reason"]),
            ])
        parts.append(md.raw_table(["rank", "plan", "score", "gain", "effort", "confidence", "status", "needs", "why"],
                                  rows, ["r", "l", "r", "r", "l", "r", "l", "l", "l"]))
    else:
        parts.append(md.inline("No proposed or in-progress plans."))
    rest = [v for v in views if v["rank"] is None]
    if rest:
        parts.append(md.heading(2, "Done and dropped"))
        rows = []
        for v in rest:
            rows.append([
                md.link(f"{v['id']:02d} {v['title']}", plan_filename(prefix, v["id"])),
                md.text(v["status"]),
                md.text(fmt_gain(v["gain_low"], v["gain_high"])),
                md.text(fmt_pct(v.get("measured_gain"))),
                md.text(v.get("why") or ""),
            ])
        parts.append(md.raw_table(["plan", "status", "predicted gain", "measured gain", "why"], rows))
    return "\n\n".join(parts) + "\n"


def _conf_note(conf: Any) -> str:
    """An interval's confidence where it is not 95 % (widened for the number of levels)."""
    return f" ({fmt_share(conf, places=1)})" if isinstance(conf, (int, float)) and abs(conf - 0.95) > 1e-9 else ""
