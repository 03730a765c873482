"""Issue 47: `status` works out "verdict due" for every prediction over every counting run, and
1,000 predictions mostly share a few selections, so `core.verdict` works each distinct selection
(and the candidate runs' part of the fingerprint) out once per `Evidence`. The shared answers must
equal what each prediction gets alone, on a fresh `Evidence`: selections written differently that
mean the same runs (order, a number as text), different expectations over the same groups, and an
expectation that names one group only."""

from __future__ import annotations

from optlog.core import verdict as V
from optlog.core.hypothesis import Prediction


def _runs() -> list[V.RunRow]:
    return [V.RunRow(i, {"config": "tp8" if i % 2 else "tp4", "concurrency": 2 ** (i % 4), "model": "m"},
                     {"tput": float(i), "ttft": float(100 - i)}) for i in range(1, 41)]


PREDS = [
    Prediction(id="p1", expect="a > b", metric="tput", a={"config": "tp8"}, b={"config": "tp4"}, per="concurrency"),
    Prediction(id="p2", expect="a > b", metric="ttft", a={"config": "tp8"}, b={"config": "tp4"}),
    Prediction(id="p3", expect="a > b", metric="tput", a={"config": "tp8", "concurrency": "4"}, b={"config": "tp4"}),
    Prediction(id="p4", expect="a > b", metric="tput", a={"concurrency": 4, "config": "tp8"}, b={"config": "tp4"}),
    Prediction(id="p5", expect="a.tput > 3", metric="tput", a={"config": "tp4"}, b={"config": "tp8"}),
    Prediction(id="p6", expect="a.tput > 3", metric="tput", a={"config": "tp8"}, b={"config": "tp4"}),
    Prediction(id="p7", expect="a > b", metric="tput", a={}, b={"model": "m"}),
]


def test_shared_selections_answer_as_each_prediction_alone():
    shared = V.Evidence(_runs())
    ceil = {"x": 1.0}
    got = [(sorted(V.candidate_runs(p, shared)), V.fingerprint(p, shared, ceil)) for p in PREDS * 2]
    alone = [(sorted(V.candidate_runs(p, V.Evidence(_runs()))), V.fingerprint(p, V.Evidence(_runs()), ceil))
             for p in PREDS * 2]
    assert got == alone
    # the memo did share: p3 and p4 are one selection; p5 and p6 select different runs
    assert got[2] == (got[3][0], got[2][1]) and got[2][1] != got[3][1]  # same runs, own spec in the hash
    assert got[4][0] != got[5][0]
    assert len(shared._selected) < len(PREDS)


def test_the_candidate_set_given_out_is_a_copy():
    ev = V.Evidence(_runs())
    s = V.candidate_runs(PREDS[0], ev)
    s.clear()
    assert V.candidate_runs(PREDS[0], ev)
