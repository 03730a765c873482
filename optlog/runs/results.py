"""Several results in one point's result file: one run each, or a clear refusal — never one of them.

A launched point's bench may write several results: `optlog bench --concurrency 1,2` writes a line
per level, a JSONL file gains a line per benchmark, a GuideLLM file holds a benchmark per rate.
The launcher used to keep the last one and say nothing. Now every result is its own run, told apart
by the labels that differ between the results (`concurrency` from the result itself), each with
the point's labels. Refused, with the file and the results named (exit status `failed`, cause
`ambiguous_result`), where the runs could not be told apart:

- two results carry the same labels (a repeat inside the file, or a stale line appended earlier:
  optlog cannot tell which), so they would be pseudo-replicates of one label set;
- the results differ in a label the point itself sets (the point says `concurrency=1`, the file
  holds 1 and 2): every run would be stored as `concurrency=1`.

Pure: labels in, keys or an error out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from optlog.core import labels as L

AMBIGUOUS = "ambiguous_result"
"""The failure cause of a point whose results cannot be told apart."""


class Ambiguous(Exception):
    """The results of one point cannot become runs that say what each measured."""


def _value(labels: Mapping[str, Any], key: str) -> str:
    return L.canonical(labels[key]) if key in labels else "(none)"


def _where(sources: Sequence[str], i: int) -> str:
    return sources[i] if i < len(sources) else f"result {i + 1}"


def distinguishing_keys(point: Mapping[str, Any], results: Sequence[Mapping[str, Any]],
                        sources: Sequence[str], files: str) -> list[str]:
    """The label keys that tell `results` (each one's labels) apart; [] for a single result.

    `sources` names each result ("file:line 2", "file#benchmark 1"), `files` the file(s) for the
    message. Raises Ambiguous when two results would be runs with the same labels."""
    if len(results) < 2:
        return []
    n = len(results)
    keys = sorted(k for k in {k for r in results for k in r} if len({_value(r, k) for r in results}) > 1)
    clash = [k for k in keys if k in point]
    if clash:
        k = clash[0]
        vals = ", ".join(dict.fromkeys(_value(r, k) for r in results))
        raise Ambiguous(f"{files}: {n} results that differ in {k} ({vals}), but the point sets "
                        f"{k}={L.canonical(point[k])}: every one would be stored as {k}={L.canonical(point[k])}. "
                        f"Let the bench measure the point's {k} only, or drop {k} from the point "
                        "(matrix, include or labels) so each result keeps its own")
    seen: dict[tuple[str, ...], int] = {}
    for i, r in enumerate(results):
        sig = tuple(_value(r, k) for k in keys)
        if sig in seen:
            j = seen[sig]
            same = ", ".join(f"{k}={v}" for k, v in sorted(r.items())
                             if k not in point and L.KEY_RE.match(str(k))) or "no labels"
            what = (f"lines {_line(sources[j])} and {_line(sources[i])}" if _line(sources[j]) and _line(sources[i])
                    else f"results {j + 1} and {i + 1}")
            raise Ambiguous(f"{files}: {n} results, and optlog cannot tell them apart: {what} "
                            f"({_where(sources, j)}, {_where(sources, i)}) carry the same labels ({same}). "
                            "A repeat or a stale result left in the file would be stored as a second run of one "
                            "measurement; write one result per label set (a fresh file per point)")
        seen[sig] = i
    return keys


def _line(source: str) -> str | None:
    """The line number in a "path:N" source, else None."""
    head, _, tail = source.rpartition(":")
    return tail if head and tail.isdigit() else None
