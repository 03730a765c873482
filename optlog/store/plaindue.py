"""What is due, judged on plain SQL (issue 47): the first `status` after a run is recorded finds
the memo of what is due (`service.verdicts.due`) kept under an older evidence counter, and works it
out as the full path does — `core.due` on the evidence `store.evidencerows` reads — from the
index's JSON documents (`store.plainstatus` keeps the new memo). Its own module: the verdict engine
(~30 ms) loads only where the memo cannot be carried over the runs appended since it was kept
(`core.duestate.advance`): `store.plainstatus` defers it."""

from __future__ import annotations

from typing import Any

from optlog.core import due as DUE
from optlog.core import duestate as DS
from optlog.core import expr as E
from optlog.core import loadshare as LS
from optlog.core.duestate import KEPT
from optlog.store import evidencerows
from optlog.store.evidencerows import Rows
from optlog.store.plainread import CHUNK


class Judged:
    """A prediction as `core.due` and the verdict engine read it (`core.hypothesis.Prediction`'s
    reading attributes), from the index's JSON dump of its model: the dump is the model's
    `model_dump(mode="json")`, so its fingerprint hashes the same spec."""

    def __init__(self, p: dict[str, Any]) -> None:
        self.doc = p
        self.id: str = p["id"]
        self.expect: str = p["expect"]
        self.metric: str | None = p.get("metric")
        self.a: dict[str, Any] = p.get("a") or {}
        self.b: dict[str, Any] = p.get("b") or {}
        self.where: str | None = p.get("where")
        self.per: str | None = p.get("per")
        self.expr = E.parse_expect(self.expect, None)
        self.groups: set[str] = E.groups(self.expr)

    def model_dump(self, mode: str = "json", exclude: set[str] | frozenset[str] = frozenset()) -> dict[str, Any]:
        return {k: v for k, v in self.doc.items() if k not in exclude}


def judged(work: dict[str, Any], ceil: dict[str, float], rows: Rows, is_sqlite: bool,
           states: dict[str, Any]) -> dict[str, str]:
    """`service.verdicts._due` on plain SQL for `work` (`store.plainstatus.IndexedDoc`s): the same
    evidence, the same missing runs, the same judge, the same states kept (`states`)."""
    preds = {h: [Judged(p) for p in d.doc.get("predictions") or []] for h, d in work.items()}
    ev = evidencerows.counting_evidence(rows, is_sqlite, DUE.metric_names([p for ps in preds.values() for p in ps])
                                        | set(LS.COMPARED))
    named = {h: DS.named_runs(d.verdicts[-1]) for h, d in work.items() if d.verdicts}
    want_u, want_n = DS.wanted(named)
    mark = "?" if is_sqlite else "%s"
    kept = DS.missing(named, {str(u) for u in _present(rows, "uid", want_u, mark)},
                       {int(n) for n in _present(rows, "id", want_n, mark)})
    states.update({h: KEPT for h in kept})
    return DUE.judge({h: (preds[h], (d.verdicts[-1].get("predictions") or []) if d.verdicts else None)
                      for h, d in work.items() if h not in kept}, ev, ceil, states)


def _present(rows: Rows, column: str, values: list[Any], mark: str) -> list[Any]:
    """Which of `values` the run table has in `column` (`uid` or `id`: store.runsync's
    uids_present and ids_present, on a plain cursor), asked in chunks of bound parameters."""
    out: list[Any] = []
    for i in range(0, len(values), CHUNK):
        part = values[i:i + CHUNK]
        out += [v for (v,) in rows(f"SELECT {column} FROM run WHERE {column} IN ({', '.join([mark] * len(part))})",
                                   tuple(part))]
    return out
