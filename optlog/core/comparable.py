"""Which keys make runs not comparable: the one rule `compare`, `verdict` and `run diff` share.

A run names everything it was rendered with: its labels, and (for a launched run) the values and
command templates its server and bench commands were rendered from that are not labels (a
`--set itl_ms=10` constant over its launch, an edited `bench.cmd`). Two runs whose names differ in a
key that no selector or `--per` names measured different things: they are listed with the
differing keys, never pooled.

Pure: takes plain mappings of canonical text, returns plain data.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from optlog.core import metrics as M



def ignored_keys() -> frozenset[str]:
    """Keys that tell repeats apart by design (`repeat`, `seed`; `block`: the user's measurement
    block, which verdicts pair on, core.labels.BLOCK): the registry's `ignored` labels. They never
    make runs incomparable."""
    return M.labels_with("ignored")


def flag_keys() -> frozenset[str]:
    """Labels that say how a run was measured, not what it ran (`loaded`): the registry's `flag`
    labels. Shown beside its numbers (a `loaded` cell in compare, a note in verdict reasons), never a
    reason to split a table or set runs apart (on a busy CI machine some repeats are loaded and some
    not: that is noise the statistics see)."""
    return M.labels_with("flag")


def effective(labels: Mapping[str, str], config: Mapping[str, str] | None) -> dict[str, str]:
    """A run's names: its rendered values and templates (`config`), with its labels over them (a
    value that is a label on one run and a constant of another launch compares as one key)."""
    return {**(config or {}), **labels}


def differing_keys(runs: Sequence[Mapping[str, str]], named: Iterable[str] = ()) -> dict[str, list[str]]:
    """Keys whose value differs between the runs (a missing key counts as a value), except the
    named ones and the ignored and flag labels; each with its distinct values ("" for missing), sorted."""
    skip = set(named) | ignored_keys() | flag_keys()
    keys = sorted({k for r in runs for k in r} - skip)
    out: dict[str, list[str]] = {}
    for k in keys:
        vals = {r.get(k, "") for r in runs}
        if len(vals) > 1:
            out[k] = sorted(vals)
    return out


def partition(items: Sequence[Any], names: Sequence[Mapping[str, str]], keys: Iterable[str]) -> list[tuple[dict[str, str], list[Any]]]:
    """Split `items` (with their `names`, same order) by their values of `keys`, in order of first
    appearance: each part is one comparable variant."""
    ks = sorted(keys)
    parts: dict[tuple[str, ...], tuple[dict[str, str], list[Any]]] = {}
    for it, nm in zip(items, names):
        sig = tuple(nm.get(k, "") for k in ks)
        parts.setdefault(sig, ({k: nm.get(k, "") for k in ks}, []))[1].append(it)
    return list(parts.values())


def describe(diff: Mapping[str, list[str]]) -> str:
    """`itl_ms differs (10, 5); bench.cmd differs (…)` for messages."""
    return "; ".join(f"{k} differs ({', '.join(v or '(none)' for v in vals)})" for k, vals in diff.items())
