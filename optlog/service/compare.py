"""`optlog compare`: the seed's side-by-side table — a row per level, a column per group, ratios
against the baseline group (the first in label order, or `--baseline VALUE`).

Each cell is the median over its counting runs (succeeded, not invalidated), with `n` and, from 3
runs, the interquartile range (`spread`), so a reader sees how much the repeats disagree. The table
never pools runs that differ in a label it does not show: such labels (`core.comparable.differing_keys`,
e.g. the M of a GEMM sweep compared `--by kernel`) become part of each row's level, and the split is
said on stderr and in `split_by`. A cell whose runs disagree on workload, model or software labels
across groups is flagged in `warnings`. An unknown metric or label (`--by`, `--per`, or one
`--where` names) is an error (exit 2) with the nearest known name, never an empty table.
A cell whose runs differ in anything else they name (a rendered value such as a `--set` constant, a
command template: `core.comparable`) is not pooled either: it has no value, and `not_comparable`
lists each variant with its own median and runs.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from typing import Any

from optlog.core import comparable as C
from optlog.core import expr as E
from optlog.core import labels as L
from optlog.core.scaling import KINDS as FIT_KINDS
from optlog.core.scaling import fit as fit_line
from optlog.core.stats import sig
from optlog.core.verdict import must_agree_across_groups
from optlog.errors import BadInput, not_found, param
from optlog.needs import Index, Reads
from optlog.service.verdicts import load_evidence
from optlog.store.runrows import metric_names

MIN_SPREAD_N = 3  # from this many runs a cell shows its interquartile range


def _known_metrics(ctx: Index) -> list[str]:
    with ctx.db.connect() as c:
        return sorted(metric_names(c))


def _cell(values: list[float]) -> dict[str, Any]:
    med = statistics.median(values)
    out: dict[str, Any] = {"median": sig(med, 6), "n": len(values), "iqr": None}
    if len(values) >= MIN_SPREAD_N:
        q1, _, q3 = statistics.quantiles(values, n=4, method="inclusive")
        out["iqr"] = [sig(q1, 6), sig(q3, 6)]
    return out


def compare(ctx: Reads, metric: str, by: str, per: str | None = None, where: str | None = None,
            baseline: str | None = None, fit: str | None = None) -> dict[str, Any]:
    """The table; with `fit` (`k` or `slope`), each row also carries the line fitted through its
    runs against the numeric `by` label (core.scaling.fit: what a scaling claim judges)."""
    L.check_key(metric, "metric")
    L.check_key(by, "by")
    if per is not None:
        L.check_key(per, "per")
        if per == by:
            raise BadInput(f"{param('per')} and {param('by')} name the same label", field="per")
    cond = None
    if where:
        try:
            cond = E.parse_where(where)
        except E.ExprError as e:
            raise BadInput(e.pretty(), column=e.column, field="where", code="bad_expression") from None
    ev = load_evidence(ctx, {metric})
    if metric not in ev.metric_names:
        raise not_found("metric (in a counting run)", metric, _known_metrics(ctx), field="metric")
    for key, field in ((by, "by"), (per, "per"), *((k, "where") for k in (E.where_labels(cond) if cond else ()))):
        if key is not None and key not in ev.index:  # a label no run has: a typo (`confg == tp8`), never a filter
            raise not_found("label (on a counting run)", key, ev.index, field=field)
    picked = []
    for r in ev.runs.values():
        if by not in r.labels or metric not in r.metrics or (per and per not in r.labels):
            continue
        if cond is not None and not E.where_match(cond, r.labels):
            continue
        picked.append(r)
    if not picked:
        raise BadInput(f"no counting run has both metric {metric!r} and label {by!r}"
                       + (f" and label {per!r}" if per else "") + (f" where {where}" if where else ""), field="by")

    # labels that differ inside a (level, group) cell: split the rows by them, never pool
    shown = {by, *([per] if per else [])}
    first: dict[tuple[str, str], list[Any]] = defaultdict(list)
    for r in picked:
        first[(L.canonical(r.labels[per]) if per else "", L.canonical(r.labels[by]))].append(r)
    split = sorted({k for rs in first.values()
                    for k in C.differing_keys([{k: L.canonical(v) for k, v in r.labels.items()} for r in rs],
                                               named=shown)})
    row_keys = ([per] if per else []) + split

    cells: dict[tuple[str, ...], dict[str, list[Any]]] = defaultdict(lambda: defaultdict(list))
    level_val: dict[tuple[str, ...], dict[str, Any]] = {}
    group_val: dict[str, Any] = {}
    for r in picked:
        lk = tuple(L.canonical(r.labels[k]) if k in r.labels else "" for k in row_keys)
        gk = L.canonical(r.labels[by])
        level_val[lk] = {k: (L.typed(r.labels[k]) if k in r.labels else None) for k in row_keys}
        group_val[gk] = L.typed(r.labels[by])
        cells[lk][gk].append(r)
    groups = sorted(group_val, key=lambda g: L.sort_key(group_val[g]))
    if fit is not None:
        if fit not in FIT_KINDS:
            raise BadInput(f"{param('fit')} is one of {', '.join(FIT_KINDS)}", field="fit")
        text = sorted(str(v) for v in group_val.values() if L.as_number(v) is None)
        if text:
            raise BadInput(f"{param('fit')} needs a numeric {param('by')} label: {by} has {', '.join(text[:3])}", field="fit")
    if baseline is not None:
        b = L.canonical(baseline)
        if b not in group_val:
            raise BadInput(f"no run has {by}={baseline} (groups: {', '.join(groups)})", field="baseline")
        groups = [b] + [g for g in groups if g != b]
    base = groups[0]

    def order(lk: tuple[str, ...]) -> tuple[Any, ...]:
        return tuple(L.sort_key(v) if v is not None else (2, 0.0, "") for v in level_val[lk].values())

    rows = []
    warnings = []
    for lk in sorted(cells, key=order):
        row = cells[lk]
        values, n, runs, spread = {}, {}, {}, {}
        apart = []
        loaded: dict[str, list[int]] = {}
        for g in groups:
            rs = row.get(g, [])
            if not rs:
                continue
            name = str(group_val[g])
            names = [r.names() for r in rs]
            diff = C.differing_keys(names, named=shown | set(split))
            if diff:  # runs that differ in what they ran are never pooled: each variant on its own
                variants = [{"names": nm, "runs": sorted(r.id for r in part), "n": len(part),
                             "value": _cell([r.metrics[metric] for r in part])["median"],
                             **({"loaded": ids} if (ids := sorted(r.id for r in part if r.canon.get("loaded") == "true"))
                                else {})}
                            for nm, part in C.partition(rs, names, diff)]
                apart.append({"group": name, "keys": sorted(diff), "variants": variants})
                where_txt = ", ".join(f"{k}={v}" for k, v in level_val[lk].items())
                warnings.append((f"{where_txt}, " if where_txt else "") + f"{by}={group_val[g]}: " + C.describe(diff))
                continue
            c = _cell([r.metrics[metric] for r in rs])
            values[name], n[name], spread[name] = c["median"], c["n"], c["iqr"]
            runs[name] = sorted(r.id for r in rs)
            if any(r.canon.get("loaded") == "true" for r in rs):  # measured under load (runs.hostload)
                loaded[name] = sorted(r.id for r in rs if r.canon.get("loaded") == "true")
        bv = values.get(str(group_val[base]))
        ratios = {k: (sig(v / bv, 4) if bv and v is not None else None) for k, v in values.items()}
        level = level_val[lk]
        diffs = []
        # workload and software labels must agree across the groups, except the one that makes
        # them: `--by input_len` compares input lengths (issue 31)
        for k in sorted({k for g in groups for r in row.get(g, []) for k in r.labels
                         if k != by and must_agree_across_groups(k)}):
            vals = sorted({L.canonical(r.labels.get(k, "")) for g in groups for r in row.get(g, [])})
            if len(vals) > 1:
                diffs.append(f"{k} differs ({', '.join(v or '(none)' for v in vals)})")
        if diffs:
            where_txt = ", ".join(f"{k}={v}" for k, v in level.items())
            warnings.append((f"{where_txt}: " if where_txt else "") + "; ".join(diffs))
        entry: dict[str, Any] = {"level": level, "values": values, "ratios": ratios, "n": n, "spread": spread,
                                 "runs": runs, "not_comparable": apart, **({"loaded": loaded} if loaded else {})}
        if fit is not None:
            pooled = [r for g in groups if str(group_val[g]) in values for r in row.get(g, [])]
            line = fit_line([float(L.as_number(r.labels[by]) or 0) for r in pooled],
                            [r.metrics[metric] for r in pooled], fit)
            entry["fit"] = {k: v for k, v in line.as_dict().items() if k != "points"} if line else None
        rows.append(entry)
    out = {"metric": metric, "by": by, "per": per, "where": where, "baseline": str(group_val[base]),
           **({"fit": fit} if fit else {}),
           "statistic": "median", "spread": f"interquartile range from {MIN_SPREAD_N} runs",
           "groups": [str(group_val[g]) for g in groups], "split_by": split, "rows": rows, "warnings": warnings}
    if split:
        ctx.notice(f"rows split by {', '.join(split)}: it differs between runs the table would otherwise pool")
    for w in warnings:
        ctx.notice(f"not comparable: {w}")
    return out
