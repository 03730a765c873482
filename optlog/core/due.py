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
from optlog.core.duestate import CAP, State, first_unseen, reason, seen_runs


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


def judge(hs: Mapping[str, tuple[Sequence[Any], Sequence[dict[str, Any]] | None]], ev: V.Evidence,
          ceilings: dict[str, float], states: dict[str, list[State]] | None = None) -> dict[str, str]:
    """For each hypothesis (its predictions, and its latest verdict's prediction records or None
    when it has no verdict), why its verdict is due, if it is: a prediction with evidence and no
    record, or one whose evidence fingerprint moved since its record. `states`: filled with each
    hypothesis's prediction states (`State`) in order, up to the first that is due."""
    out: dict[str, str] = {}
    ordered: dict[frozenset[int], list[int]] = {}  # predictions share selections: each sorted once
    for h, (preds, records) in hs.items():
        recs = {r.get("id"): r for r in records} if records is not None else {}
        got: list[State] = []
        for p in preds:
            ids = V.candidate_set(p, ev)
            srt = ordered.get(ids)
            if srt is None:
                srt = ordered[ids] = sorted(ids)
            rec = recs.get(p.id)
            groups = sorted(p.groups)
            if rec is None:
                st: State = ["n", groups, len(srt), srt[:CAP]]
            else:
                seen = seen_runs(rec)
                moved = rec.get("evidence") != V.fingerprint(p, ev, ceilings)
                n = len(ids) - len(ids & seen)
                head = first_unseen(srt, seen) if n else []
                st = ["r!" if moved else "r=", groups, n, head]
            got.append(st)
            why = reason(p.id, st)
            if why:
                out[h] = why
                break
        if states is not None:
            states[h] = got
    return out
