"""`optlog compare`: the seed's side-by-side table — a row per level, a column per group, ratios
against the baseline group (the first in label order, or `--baseline VALUE`).

Values are means over the counting runs (succeeded, not invalidated) of each cell; `n` says how
many. A cell whose runs disagree on workload, model or software labels is flagged in `warnings`.
A cell whose runs differ in anything else they name (a label, a rendered value such as a `--set`
constant, a command template: `core.comparable`) that neither `--by` nor `--per` names is not
pooled: it has no value, and `not_comparable` lists each variant with its own mean and runs.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from optlog.core import labels as L
from optlog.errors import BadInput
from optlog.service.context import Ctx


def compare(ctx: Ctx, metric: str, by: str, per: str | None = None, where: str | None = None,
            baseline: str | None = None) -> dict[str, Any]:
    from optlog.core import comparable as C
    from optlog.core import expr as E
    from optlog.core.stats import mean, sig
    from optlog.core.verdict import must_agree_across_groups
    from optlog.service.verdicts import load_evidence

    L.check_key(metric, "--metric")
    L.check_key(by, "--by")
    if per is not None:
        L.check_key(per, "--per")
        if per == by:
            raise BadInput("--per and --by name the same label", field="--per")
    cond = None
    if where:
        try:
            cond = E.parse_where(where)
        except E.ExprError as e:
            raise BadInput(e.pretty(), column=e.column, field="--where", code="bad_expression") from None
    ev = load_evidence(ctx, {metric})
    cells: dict[str, dict[str, list[Any]]] = defaultdict(lambda: defaultdict(list))
    level_val: dict[str, Any] = {}
    group_val: dict[str, Any] = {}
    for r in ev.runs.values():
        if by not in r.labels or metric not in r.metrics or (per and per not in r.labels):
            continue
        if cond is not None and not E.where_match(cond, r.labels):
            continue
        lk = L.canonical(r.labels[per]) if per else ""
        gk = L.canonical(r.labels[by])
        level_val[lk] = L.typed(r.labels[per]) if per else None
        group_val[gk] = L.typed(r.labels[by])
        cells[lk][gk].append(r)
    groups = sorted(group_val, key=lambda g: L.sort_key(group_val[g]))
    if baseline is not None:
        b = L.canonical(baseline)
        if groups and b not in group_val:
            raise BadInput(f"no run has {by}={baseline} (groups: {', '.join(groups)})", field="--baseline")
        groups = [b] + [g for g in groups if g != b]
    base = groups[0] if groups else None
    rows = []
    warnings = []
    for lk in sorted(cells, key=lambda k: L.sort_key(level_val[k]) if per else (0, 0.0, "")):
        row = cells[lk]
        values = {}
        n = {}
        runs = {}
        apart = []
        loaded: dict[str, list[int]] = {}
        for g in groups:
            rs = row.get(g, [])
            if not rs:
                continue
            names = [r.names() for r in rs]
            diff = C.differing_keys(names, named={by, *([per] if per else [])})
            if diff:  # runs that differ in what they ran are never pooled: each variant on its own
                variants = [{"names": nm, "runs": sorted(r.id for r in part), "n": len(part),
                             "value": sig(mean([r.metrics[metric] for r in part]), 6)}
                            for nm, part in C.partition(rs, names, diff)]
                apart.append({"group": str(group_val[g]), "keys": sorted(diff), "variants": variants})
                warnings.append((f"{per}={level_val[lk]}, " if per else "") + f"{by}={group_val[g]}: "
                                + C.describe(diff))
                continue
            values[str(group_val[g])] = sig(mean([r.metrics[metric] for r in rs]), 6)
            n[str(group_val[g])] = len(rs)
            runs[str(group_val[g])] = sorted(r.id for r in rs)
            if any(r.canon.get("loaded") == "true" for r in rs):  # measured under load (runs.hostload)
                loaded[str(group_val[g])] = sorted(r.id for r in rs if r.canon.get("loaded") == "true")
        bv = values.get(str(group_val[base])) if base is not None else None
        ratios = {k: (sig(v / bv, 4) if bv and v is not None else None) for k, v in values.items()}
        level = {per: level_val[lk]} if per else {}
        diffs = []
        for k in sorted({k for g in groups for r in row.get(g, []) for k in r.labels if must_agree_across_groups(k)}):
            vals = sorted({L.canonical(r.labels.get(k, "")) for g in groups for r in row.get(g, [])})
            if len(vals) > 1:
                diffs.append(f"{k} differs ({', '.join(v or '(none)' for v in vals)})")
        if diffs:
            warnings.append((f"{per}={level_val[lk]}: " if per else "") + "; ".join(diffs))
        rows.append({"level": level, "values": values, "ratios": ratios, "n": n, "runs": runs, "not_comparable": apart,
                     **({"loaded": loaded} if loaded else {})})
    out = {"metric": metric, "by": by, "per": per, "where": where, "baseline": str(group_val[base]) if base else None,
           "groups": [str(group_val[g]) for g in groups], "rows": rows, "warnings": warnings}
    for w in warnings:
        ctx.notice(f"not comparable: {w}")
    return out
