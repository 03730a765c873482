"""The runs table a person reads (the way `dvc exp show` lays out experiments): a column for each
label that varies among the shown runs and for chosen metrics, sorted by any column, filtered with
the CLI's own selector syntax, grouped by launch or hypothesis.

Pure: rows are plain dicts `{"id", "status", "invalidated", "launch", "hypothesis", "labels",
"metrics"}` (and optionally "canon", the labels' canonical text, when the caller has it); nothing here reads a database or draws. The filter reuses the selector parsers the
CLI uses (`--a K=V`: `core.labels.parse_pairs`; `--where COND`: `core.expr.parse_where`), so a
filter typed in the dashboard means what it means on the command line.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from optlog.core import comparable as C
from optlog.core import expr as E
from optlog.core import labels as L

Row = dict[str, Any]

FIELD = "/"  # what a filter error names (the key that opened it)
# columns every table has, before the label and metric columns (their keys)
FIXED = ("id", "flags", "status")
GROUPS = ("launch", "hypothesis")
# what the flags column shows, and the legend under the table (text glyphs: readable with NO_COLOR)
FLAG_GLYPHS = (("invalidated", "✘"), ("concurrent", "⇄"), ("loaded", "≈"))
# names a filter may use besides the run's labels (a label of the same name wins)
PSEUDO = ("id", "status", "launch", "hypothesis", "invalidated")

# `K=V` items as `--a` takes them: one '=' that is not part of ==, !=, <=, >=
_PAIR_RE = re.compile(r"^[^=<>!\s]+=[^=]*$")


def label_key(k: str) -> str:
    return f"l:{k}"


def metric_key(m: str) -> str:
    return f"m:{m}"


def flags(row: Row) -> list[str]:
    """The names of the row's marks: invalidated, concurrent (overlapped another launch on its
    target), loaded (the host was busy while it ran)."""
    lab = row["labels"]
    out = []
    if row.get("invalidated"):
        out.append("invalidated")
    if L.canonical(lab.get(L.CONCURRENT, "")) == "true":
        out.append("concurrent")
    if any(L.canonical(lab.get(k, "")) == "true" for k in C.flag_keys()):
        out.append("loaded")
    return out


def flag_text(row: Row) -> str:
    on = set(flags(row))
    return "".join(g for name, g in FLAG_GLYPHS if name in on)


def names(row: Row) -> dict[str, Any]:
    """What a filter can name: the run's labels over its id, status, launch and hypothesis."""
    return {"id": row["id"], "status": row["status"], "launch": row.get("launch"),
            "hypothesis": row.get("hypothesis"), "invalidated": bool(row.get("invalidated")), **row["labels"]}


def parse_filter(text: str) -> Callable[[Row], bool] | None:
    """A predicate over rows from `text`: `K=V K=V` (or comma-separated: the `--a` selector, every
    pair must hold) or a `--where` condition (`concurrency >= 64 and config != tp8`). Empty text is
    no filter (None). Bad text raises the parser's own error (BadInput or ExprError, with the column)."""
    text = text.strip()
    if not text:
        return None
    items = [t for t in re.split(r"[,\s]+", text) if t]
    if items and all(_PAIR_RE.match(t) for t in items):
        sel = L.parse_pairs(items, FIELD)

        def pairs(row: Row) -> bool:
            n = names(row)
            return all(k in n and L.canonical(n[k]) == L.canonical(v) for k, v in sel.items())

        return pairs
    cond = E.parse_where(text)
    return lambda row: E.where_match(cond, names(row))


def varying_labels(rows: Sequence[Row]) -> list[str]:
    """Label keys whose value differs among `rows` (`core.comparable.differing_keys`: repeats,
    seeds and the flag labels are not columns; `concurrent` is a mark, not a column)."""
    canon = [r.get("canon") or {k: L.canonical(v) for k, v in r["labels"].items()} for r in rows]
    keys = list(C.differing_keys(canon, named=(L.CONCURRENT,)))
    # the labels every row has first (what the runs were varied over), then those some rows lack
    # (a cancelled run without the result file's labels): these vary only by being missing
    return sorted(keys, key=lambda k: not all(k in c for c in canon))


def columns(rows: Sequence[Row], metrics: Iterable[str]) -> list[str]:
    """Column keys in order: the fixed ones, a metric column per chosen metric whose value differs
    among `rows`, a label column per varying label, then the chosen metrics that are the same in
    every row (metrics first, as `dvc exp show` puts them: the numbers stay on screen when the
    labels are many; but never a constant column before a label that varies: at 80 columns an
    all-0 `cached_prompt_fraction` pushed `parallel`, the label the comparison was about, off the
    edge, issue 48)."""
    ms = list(metrics)
    # the same value in every row that has one (a failed run without the metric does not make it vary)
    constant = [m for m in ms if len({repr(v) for r in rows if (v := r["metrics"].get(m)) is not None}) <= 1] \
        if len(rows) > 1 else []
    return [*FIXED, *(metric_key(m) for m in ms if m not in constant), *(label_key(k) for k in varying_labels(rows)),
            *(metric_key(m) for m in constant)]


def cell_value(row: Row, col: str) -> Any:
    if col == "flags":
        return flag_text(row)
    if col in ("id", "status"):
        return row[col]
    if col.startswith("l:"):
        return row["labels"].get(col[2:])
    if col.startswith("m:"):
        return row["metrics"].get(col[2:])
    raise KeyError(col)


def sort_rows(rows: Sequence[Row], col: str = "id", desc: bool = False) -> list[Row]:
    """Rows ordered by column `col` (numbers by value, then text; `core.labels.sort_key`); rows
    without a value come last in either direction, ties in id order."""
    vals = [(cell_value(r, col), r) for r in rows]
    have = sorted(((v, r) for v, r in vals if v not in (None, "")), key=lambda vr: vr[1]["id"])
    have.sort(key=lambda vr: L.sort_key(vr[0]), reverse=desc)  # stable: ties stay in id order
    missing = sorted((r for v, r in vals if v in (None, "")), key=lambda r: r["id"])
    return [r for _, r in have] + missing


def group_name(row: Row, by: str) -> str:
    if by == "launch":
        return f"L{row['launch']}" if row.get("launch") is not None else "no launch"
    return row.get("hypothesis") or "no hypothesis"


def group_rows(rows: Sequence[Row], by: str | None) -> list[tuple[str | None, list[Row]]]:
    """[(group name, its rows in the given order)]: launches by number (newest first), hypotheses by
    name, the runs without one last. `by` None is one unnamed group."""
    if not by:
        return [(None, list(rows))]
    if by not in GROUPS:
        raise ValueError(f"group by one of {', '.join(GROUPS)}")
    out: dict[str, list[Row]] = {}
    for r in rows:
        out.setdefault(group_name(r, by), []).append(r)

    def order(name: str) -> tuple[int, Any]:
        if name.startswith("no "):
            return (2, 0)
        if by == "launch":
            return (0, -int(name[1:]))
        return (1, name)

    return [(g, out[g]) for g in sorted(out, key=order)]
