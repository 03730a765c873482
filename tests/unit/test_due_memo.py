"""The memo of what is due (`core.statusdoc.due_memo_doc` / `due_from_memo`, issue 47): its
prediction states are kept as one JSON text and parsed only where they are needed; a memo an
earlier optlog kept (the states inline) still reads."""

from __future__ import annotations

import json

import pytest

from optlog.core import duestate as DS
from optlog.core import statusdoc as SD

DIGESTS = {"a": "da", "b": "db", "c": "dc"}
STATES = {"a": [["n", ["a", "b"], 7, [1, 2]]], "b": "kept"}  # c: judged without states


def _kept(gen: int = 4) -> dict:
    """The memo as the database hands it back (kept as JSON)."""
    return json.loads(json.dumps(SD.due_memo_doc(gen, "ceil", DIGESTS, {"a": "a is due"}, dict(STATES))))


def test_a_current_memo_answers_without_its_states() -> None:
    memo = _kept()
    memo["states"] = "not JSON at all"  # never parsed: every digest is as kept
    assert SD.due_from_memo(DIGESTS, 4, memo, "ceil", states_too=False) == ({"a": "a is due"}, [], {})


def test_the_states_come_back_where_asked_or_where_one_is_to_work_out() -> None:
    assert SD.due_from_memo(DIGESTS, 4, _kept(), "ceil") == ({"a": "a is due"}, [], STATES)
    moved = {**DIGESTS, "c": "dc2"}  # c's file changed: the memo is kept again, states and all
    assert SD.due_from_memo(moved, 4, _kept(), "ceil", states_too=False) == ({"a": "a is due"}, ["c"], STATES)


def test_another_counter_or_ceilings_hold_nothing() -> None:
    assert SD.due_from_memo(DIGESTS, 5, _kept(), "ceil") == ({}, ["a", "b", "c"], {})
    assert SD.due_from_memo(DIGESTS, 4, _kept(), "other") == ({}, ["a", "b", "c"], {})


def test_a_memo_with_the_states_inline_still_reads() -> None:
    old = {"gen": 4, "ceilings": "ceil", "hyps": {"a": ["da", "a is due", STATES["a"]], "b": ["db", None, "kept"],
                                                   "c": ["dc", None]}}
    assert SD.due_from_memo(DIGESTS, 4, old, "ceil") == ({"a": "a is due"}, [], STATES)


def test_broken_states_text_reads_as_none_kept() -> None:
    for broken in ("[1, 2", '{"a": 1, "a": 2}', "[1, 2]"):  # not JSON, a key said twice, not a mapping
        memo = _kept()
        memo["states"] = broken
        assert SD.due_from_memo(DIGESTS, 4, memo, "ceil") == ({"a": "a is due"}, [], {})


def test_what_is_due_is_carried_over_as_read_only_over_a_few_appended_runs() -> None:
    """`due_carried`: only where the memo holds every hypothesis as it is, the journal says only
    runs were appended since, and no more than `core.duestate.LAZY_RUNS` of them; else `due_known` carries over
    and the memo is kept again (so it never falls more than LAZY_RUNS runs behind)."""
    digests = {"a": "da", "b": "db"}
    states = {"a": [["n", ["a"], 2, [1, 2]]], "b": [["n", ["a"], 0, []]]}
    memo = json.loads(json.dumps(SD.due_memo_doc(4, "ceil", digests, {"a": "p has evidence (runs 1, 2) and no verdict yet"},
                                                 states)))
    pred = {"id": "p", "a": {"cfg": "x"}, "b": None}
    views = lambda ids: {h: ([pred], None) for h in ids}  # noqa: E731
    new_runs = lambda ids: [(i, f"u{i}", {"cfg": "x" if i % 2 else "y"}) for i in ids]  # noqa: E731

    def journal(n: int) -> dict:
        return {"from": 4, "gen": 4 + n, "runs": [[4 + k + 1, 100 + k] for k in range(n)]}

    got = SD.due_carried(digests, 5, memo, journal(1), "ceil", views, [], new_runs)
    assert got is not None and dict(got) == {"a": "p has evidence (runs 1, 2) and no verdict yet"}  # run 100: cfg y
    got = SD.due_carried(digests, 6, memo, journal(2), "ceil", views, [], new_runs)
    assert got is not None and dict(got) == {"a": "p has evidence (runs 1, 2, 101) and no verdict yet",
                                             "b": "p has evidence (run 101) and no verdict yet"}
    n = DS.LAZY_RUNS
    assert SD.due_carried(digests, 4 + n, memo, journal(n), "ceil", views, [], new_runs) is not None
    assert SD.due_carried(digests, 5 + n, memo, journal(n + 1), "ceil", views, [], new_runs) is None
    assert SD.due_carried(digests, 4, memo, journal(0), "ceil", views, [], new_runs) is None  # current
    assert SD.due_carried({**digests, "b": "db2"}, 5, memo, journal(1), "ceil", views, [], new_runs) is None
    assert SD.due_carried(digests, 5, memo, {"from": 5, "gen": 5, "runs": [[5, 100]]}, "ceil", views, [],
                          new_runs) is None  # the journal began after the memo: something else moved the evidence
    assert SD.due_carried(digests, 5, memo, journal(1), "other", views, [], new_runs) is None


def test_a_memo_states_member_is_read_without_the_rest() -> None:
    """`jsondoc.member` (what `due_carried` reads of the states of the few it shows) gives what
    parsing the whole text gives, for every hypothesis, and nothing for one not kept."""
    from optlog.core import jsondoc

    states = {f"h{i}": [["n", ["a", "b"], i, list(range(min(i, 5)))]] for i in range(30)}
    states.update({"h1-x": "kept", "x": [["r=", ["a"], 0, []]]})  # ("x" inside no other id's text counts)
    text = SD.due_memo_doc(4, "ceil", {h: "d" for h in states}, {}, states)["states"]
    for h, st in states.items():
        assert jsondoc.member(text, h) == st == jsondoc.loads(text)[h]
    for absent in ("h30", "h", "1"):
        try:
            jsondoc.member(text, absent)
        except KeyError:
            continue
        raise AssertionError(absent)


def test_carried_over_as_read_is_what_due_known_carries_over() -> None:
    """`due_carried` against `due_known` (which carries every hypothesis over) on one memo, with
    few and with many hypotheses not due at the memo (their states looked up one by one, or the
    states text read whole), one of them without kept states."""
    for n in (3, 3 * SD.FEW_STATES):
        digests = {f"h{i}": f"d{i}" for i in range(n)}
        states = {h: [["n", ["a"], i % 2 * 2, [1, 2][:i % 2 * 2]]] for i, h in enumerate(digests)}
        del states["h2"]  # h2 was due (no verdict yet, with evidence), kept without states
        due = {h: "p has evidence (runs 1, 2) and no verdict yet" for i, h in enumerate(digests) if i % 2 or h == "h2"}
        memo = json.loads(json.dumps(SD.due_memo_doc(4, "ceil", digests, due, states)))
        views = lambda ids: {h: ([{"id": "p", "a": {"cfg": "x"}, "b": None}], None) for h in ids}  # noqa: E731
        journal = {"from": 4, "gen": 6, "runs": [[5, 10], [6, 11]]}
        new_runs = lambda ids: [(i, f"u{i}", {"cfg": "x" if i == 11 else "y"}) for i in ids]  # noqa: E731
        got = SD.due_carried(digests, 6, memo, journal, "ceil", views, [], new_runs)
        want, work, _st, current = SD.due_known(digests, 6, memo, journal, "ceil", lambda: views(digests), new_runs)
        assert work == ["h2"] and not current  # carry_over works h2 out from the runs again
        assert got is not None and list(got) == list(digests)  # every one due now (run 11 has cfg x)
        for h in digests:
            if h != "h2":
                assert got[h] == want[h], h
        with pytest.raises(DS.NotCarried):  # its reason is not claimed from the memo's: the full path's
            got["h2"]
