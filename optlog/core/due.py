"""Which verdicts are due, judged from the evidence (issue 42's rule, `service.verdicts.due`): the
one place that decides it, run by the full path on the hypothesis models and by the first
`status` after a run is recorded on plain SQL (`store.plainstatus`, issue 47) on the index's JSON
documents. Pure: a prediction is anything with the model's reading attributes (`id`, `expect`,
`metric`, `a`, `b`, `expr`, `groups`, `model_dump`); the evidence is `core.verdict.Evidence`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from optlog.core import expr as E
from optlog.core import verdict as V


def metric_names(preds: Sequence[Any]) -> set[str]:
    """The metrics the predictions read (their groups' references and their own metric)."""
    out: set[str] = set()
    for p in preds:
        for r in E.refs(p.expr, groups_only=True):
            m = r.metric or p.metric
            if m:
                out.add(m)
        if p.metric:
            out.add(p.metric)
    return out


def runs_text(ids: list[int], cap: int = 5) -> str:
    """`run 7`, `runs 7, 8, 9`, `runs 1, 2, 3, 4, 5 and 12 more`."""
    if len(ids) == 1:
        return f"run {ids[0]}"
    more = f" and {len(ids) - cap} more" if len(ids) > cap else ""
    return "runs " + ", ".join(map(str, ids[:cap])) + more


def judge(hs: Mapping[str, tuple[Sequence[Any], Sequence[dict[str, Any]] | None]], ev: V.Evidence,
          ceilings: dict[str, float]) -> dict[str, str]:
    """For each hypothesis (its predictions, and its latest verdict's prediction records or None
    when it has no verdict), why its verdict is due, if it is: a prediction with evidence and no
    record, or one whose evidence fingerprint moved since its record."""
    out: dict[str, str] = {}
    texts: dict[frozenset[int], str] = {}  # predictions share selections: each text once
    for h, (preds, records) in hs.items():
        recs = {r.get("id"): r for r in records} if records is not None else {}
        for p in preds:
            ids = V.candidate_set(p, ev)
            rec = recs.get(p.id)
            if rec is None:
                if ids:
                    if ids not in texts:
                        texts[ids] = runs_text(sorted(ids))
                    out[h] = f"{p.id} has evidence ({texts[ids]}) and no verdict yet"
                    break
                continue
            if rec.get("evidence") != V.fingerprint(p, ev, ceilings):
                seen = set(rec.get("runs") or []) | {x.get("run") for x in rec.get("not_comparable") or []}
                new = sorted(ids - seen)
                out[h] = (f"{p.id}'s evidence changed since its verdict"
                          + (f": {runs_text(new)} not in it" if new else ""))
                break
    return out


def named_runs(extra: Mapping[str, Any]) -> tuple[list[int], list[str]]:
    """The runs a verdict record names: its `runs` numbers, and their `run_uids` where it names one
    for every run (then a run is looked up by uid; else by number, and the uids are empty)."""
    nums = [n for n in extra.get("runs") or [] if isinstance(n, int)]
    uids = [u for u in extra.get("run_uids") or [] if isinstance(u, str) and u]
    return nums, uids if uids and len(uids) == len(nums) else []


def missing(named: Mapping[str, tuple[list[int], list[str]]], have_uids: set[str],
            have_ids: set[int]) -> dict[str, list[Any]]:
    """For each hypothesis's latest verdict (`named_runs`), the runs it used that the database does
    not have (by uid where it has them, else by number); only those with some."""
    out: dict[str, list[Any]] = {}
    for h, (nums, uids) in named.items():
        if uids:
            gone = [n for n, u in zip(nums, uids) if u not in have_uids]
        else:
            gone = [n for n in nums if n not in have_ids]
        if gone:
            out[h] = gone
    return out


def wanted(named: Mapping[str, tuple[list[int], list[str]]]) -> tuple[list[str], list[int]]:
    """The uids and the numbers `missing` asks the database about."""
    u: set[str] = set()
    n: set[int] = set()
    for nums, uids in named.values():
        if uids:
            u.update(uids)
        else:
            n.update(nums)
    return sorted(u), sorted(n)
