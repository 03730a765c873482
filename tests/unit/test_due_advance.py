"""What is due, carried over appended runs (`core.duestate.advance`, issue 47) against the judgement
worked out again from every run (`core.due.judge`): for random workspaces — predictions selecting
by one or two groups, some without a verdict, some whose verdict still holds, some whose evidence
moved, verdicts that name some candidates and leave others out — every reason and every kept
state must be the same, over several appends in a row."""

from __future__ import annotations

import random
from typing import Any

import pytest

from optlog.core import due as DUE
from optlog.core import duestate as DS
from optlog.core import statusdoc as SD
from optlog.core import verdict as V
from optlog.core.hypothesis import Prediction

CEIL = {"gpu_tflops": 989.0}
VALUES = {"cfg": ["x", "y", "z"], "c": ["1", "2", "4"], "gpu": ["h100", "h200"]}


def _run(rng: random.Random, rid: int) -> V.RunRow:
    labels = {k: rng.choice(v) for k, v in VALUES.items() if rng.random() < 0.9}
    return V.RunRow(rid, dict(labels), {"t": rng.uniform(1, 100)})


def _pred(rng: random.Random, pid: str) -> Prediction:
    def sel() -> dict[str, Any]:
        keys = rng.sample(sorted(VALUES), rng.choice([0, 1, 2, 2, 3]))
        return {k: rng.choice(VALUES[k]) for k in keys}
    expect = rng.choice(["a > b", "a < b", "a > 50", "b < 20"])
    return Prediction(id=pid, expect=expect, metric="t", a=sel(), b=sel())


def _workspace(rng: random.Random, ev: V.Evidence) -> dict[str, tuple[list[Prediction], list[dict[str, Any]] | None]]:
    hs: dict[str, tuple[list[Prediction], list[dict[str, Any]] | None]] = {}
    for i in range(40):
        preds = [_pred(rng, f"h{i}-p{j}") for j in range(rng.choice([1, 1, 2, 3]))]
        if rng.random() < 0.3:
            hs[f"h{i}"] = (preds, None)
            continue
        recs = []
        for p in preds:
            if rng.random() < 0.2:
                continue  # a prediction added after the verdict: no record
            ids = sorted(V.candidate_set(p, ev))
            used = [r for r in ids if rng.random() < 0.8]
            left = [{"run": r, "reason": "x"} for r in ids if r not in used and rng.random() < 0.5]
            if rng.random() < 0.3:  # a run it left out that this database no longer has: a new run may reuse its number
                left.append({"run": len(ev.runs) + rng.choice([1, 2]), "reason": "gone"})
            fp = V.fingerprint(p, ev, CEIL) if rng.random() < 0.6 else "0" * 16  # holds, or moved
            recs.append({"id": p.id, "evidence": fp, "runs": used, "not_comparable": left})
        hs[f"h{i}"] = (preds, recs)
    return hs


@pytest.mark.parametrize("seed", range(12))
def test_advance_over_appended_runs_is_judging_again(seed: int) -> None:
    _compare(seed)


def _judged(seed: int) -> tuple[random.Random, list[V.RunRow], dict[str, Any], dict[str, Any], dict[str, str]]:
    """A random workspace judged from its runs: the generator, the runs, the hypotheses, the
    states the judgement found, and why each is due."""
    rng = random.Random(seed)
    runs = [_run(rng, i) for i in range(1, rng.choice([3, 30, 120]))]
    ev = V.Evidence(runs)
    hs = _workspace(rng, ev)
    states: dict[str, Any] = {}
    return rng, runs, hs, states, DUE.judge(hs, ev, CEIL, states)


def _compare(seed: int) -> tuple[int, int]:
    """Judge, then append runs four times: advance must give judging again's reasons and states;
    returns how many hypotheses became due, and how many stayed not due, over the appends."""
    rng, runs, hs, states, due = _judged(seed)
    top = len(runs)
    checked, became, stayed = 0, 0, 0
    for _step in range(4):
        new = [_run(rng, top + k + 1) for k in range(rng.choice([1, 1, 3]))]
        top += len(new)
        runs += new
        ev = V.Evidence(runs)
        want_states: dict[str, Any] = {}
        want = DUE.judge(hs, ev, CEIL, want_states)
        added = [(r.id, r.canon) for r in new]
        shared: dict[Any, list[int]] = {}  # the selections' new runs, shared by every hypothesis of the step
        shared_brief: dict[Any, list[int]] = {}
        for h, (preds, recs) in hs.items():
            dumps = [p.model_dump(mode="json") for p in preds]
            got = DS.advance(dumps, recs, states[h], added, shared)
            assert got is not None, h
            why, st = got
            assert why == want.get(h), (h, why, want.get(h))
            assert st == want_states[h], h
            # what a first status on plain SQL carries over: the briefs it keeps (core.statusdoc.brief)
            b = SD.brief({"id": h, "title": "t", "status": "open", "predictions": [{**d, "status": "open"} for d in dumps],
                          "verdicts": [{"status": "open", "at": "x", "predictions": recs}] if recs is not None else []})
            last = b["verdicts"][-1] if b["verdicts"] else None
            assert DS.advance(b["predictions"], last["predictions"] if last else None, states[h], added,
                              shared_brief) == got, h
            states[h] = st
            checked += 1
            became += h in want and h not in due
            stayed += h not in want
        due = want
    assert checked == 4 * len(hs)
    return became, stayed


def test_the_random_workspaces_exercise_every_case() -> None:
    """Not an empty comparison: over the seeds, appends made hypotheses due that were not, and
    left others not due (a verdict that still holds, a selection the new runs miss)."""
    became = stayed = 0
    for seed in range(12):
        b, s = _compare(seed)
        became, stayed = became + b, stayed + s
    print(became, stayed)
    assert became >= 10 and stayed >= 10, (became, stayed)


def test_advance_refuses_states_that_do_not_fit() -> None:
    p = Prediction(id="p", expect="a > b", metric="t", a={"cfg": "x"}, b={"cfg": "y"}).model_dump(mode="json")
    run = [(9, {"cfg": "x"})]
    assert DS.advance([p], None, [], run) is None  # no states kept
    assert DS.advance([p], None, [["r=", ["a", "b"], 0, []]], run) is None  # a record the verdict no longer has
    assert DS.advance([p], None, [["?", ["a", "b"], 0, []]], run) is None
    assert DS.advance([p], None, [["n", ["a", "b"], 0, []]], run) == (
        "p has evidence (run 9) and no verdict yet", [["n", ["a", "b"], 1, [9]]])


@pytest.mark.parametrize("seed", range(12))
def test_carrying_over_as_far_as_it_is_read_is_carrying_over_every_hypothesis(seed: int) -> None:
    """`core.duestate.carry_lazily` (the first `status` after a run, issue 47) against
    `carry_over`: over one to four appends since the memo was kept, the same hypotheses due, in
    the memo's order, each with the same reason; None exactly where `carry_over` works some out
    from the runs again (a verdict naming a new run's number); membership and order read no
    hypothesis, and a reason reads that hypothesis alone."""
    _compare_lazily(seed)


def test_the_lazy_comparisons_exercise_every_case() -> None:
    """Not an empty comparison: over the seeds, hypotheses not due at the memo became due, some
    steps were carried over lazily, and some were refused (a verdict naming a new run)."""
    totals = [sum(x) for x in zip(*(_compare_lazily(seed) for seed in range(12)))]
    print(totals)
    assert totals[0] >= 10 and totals[1] >= 10 and totals[2] >= 1, totals


def _compare_lazily(seed: int) -> tuple[int, int, int]:
    """Returns how many hypotheses became due since the memo, steps carried over lazily, refused."""
    rng, runs, hs, states, memo = _judged(1000 + seed)
    top = len(runs)
    views: dict[str, DS.View] = {}
    lacks = rng.choice([h for h, (_p, recs) in hs.items() if recs is not None]) if rng.random() < 0.3 else None
    for h, (preds, recs) in hs.items():
        named = sorted({r for rec in recs or [] for r in rec["runs"]})
        if h == lacks:  # a verdict that rests on a run this database lacks (a new run may take its number)
            named.append(top + rng.choice([1, 2, 3]))
        views[h] = ([p.model_dump(mode="json") for p in preds],
                    {"runs": named, "predictions": recs} if recs is not None else None)
    told = [h for h, v in views.items() if v[1] is not None]
    added: list[tuple[int, str, dict[str, str]]] = []
    lazy_seen = eager_redo = became = 0
    for _step in range(rng.choice([1, 2, 4])):
        new = [_run(rng, top + k + 1) for k in range(rng.choice([1, 1, 3]))]
        top += len(new)
        added += [(r.id, f"uid-{r.id}", r.canon) for r in new]
        want, want_states = dict(memo), {h: list(st) for h, st in states.items()}
        redo = DS.carry_over(views, added, want, want_states, set())
        asked: list[list[str]] = []

        def read(ids: Any) -> dict[str, DS.View]:
            asked.append(list(ids))
            return {h: views[h] for h in ids}

        got = DS.carry_lazily(list(hs), memo, lambda ids: {h: states[h] for h in ids if h in states}, read, told,
                              list(added))
        if redo:
            assert got is None
            eager_redo += 1
            continue
        assert got is not None
        lazy_seen += 1
        before = len(asked)
        assert list(got) == [h for h in hs if h in want] and len(got) == len(want)
        assert all(h in got for h in want) and not any(h in got for h in hs if h not in want)
        assert len(asked) == before  # membership and order worked no reason out
        for h in want:
            assert got[h] == want[h], (h, got[h], want[h])
        assert all(len(ids) == 1 for ids in asked[before:])  # a reason read its hypothesis alone
        became += sum(h not in memo for h in want)
    assert lazy_seen + eager_redo >= 1
    return became, lazy_seen, eager_redo


def test_the_kept_states_that_carrying_over_as_read_refuses() -> None:
    """A state missing or malformed for a hypothesis carried over now (not due before) is
    carried over as `carry_over` does it (None here); for one due before, its reason is not
    claimed from its old one but refused when asked (`NotCarried`: the full path works it out)."""
    p = Prediction(id="p", expect="a > b", metric="t", a={"cfg": "x"}, b={"cfg": "y"}).model_dump(mode="json")
    views = {"h": ([p], None), "k": ([p], None)}
    read = lambda ids: {h: views[h] for h in ids}  # noqa: E731
    run = [(9, "u9", {"cfg": "x"})]
    memo = {"h": "p has evidence (runs 1, 2) and no verdict yet"}
    ok = {"h": [["n", ["a", "b"], 2, [1, 2]]], "k": [["n", ["a"], 0, []]]}

    def lazily(st: dict[str, Any]) -> Any:
        return DS.carry_lazily(["h", "k"], memo, lambda ids: {h: st[h] for h in ids if h in st}, read, [], run)

    got = lazily(ok)
    assert got is not None and dict(got) == {"h": "p has evidence (runs 1, 2, 9) and no verdict yet",
                                             "k": "p has evidence (run 9) and no verdict yet"}
    for bad in ({"h": ok["h"]}, {**ok, "k": "x"}, {**ok, "k": [["?", ["a"], 0, []]]}):
        assert lazily(bad) is None, bad
    for bad in ({"k": ok["k"]}, {**ok, "h": []}, {**ok, "h": [["?", ["a"], 0, []]]}):
        got = lazily(bad)
        assert got is not None and list(got) == ["h", "k"] and "h" in got
        with pytest.raises(DS.NotCarried):
            got["h"]
    assert lazily({**ok, "k": DS.KEPT}) == {"h": "p has evidence (runs 1, 2, 9) and no verdict yet"}
