"""What the judgement of what is due found of each prediction (`core.due.judge`), and the same
judgement carried forward over runs appended since (`advance`): the first `status` after a run is
recorded (issue 47) reads the new run's labels, not the 10,000 runs before it. Its own module:
`core.due` loads the verdict engine and the expression parser (~40 ms), which `advance` needs
neither of: it matches the new runs against each prediction's selections as the engine selects."""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from typing import Any

from optlog.core import labels as L

CAP = 5  # runs named in a reason before "and N more"
# runs appended since a value derived from the evidence was kept that a read carries over without
# keeping it again (what is due: core.statusdoc.due_carried; the newest evidence:
# store.plainread.newest_evidence): each read after a run pays for the runs since, and one in
# LAZY_RUNS writes the value again (at 10,000 hypotheses each write was ~10 ms of a first `status`)
LAZY_RUNS = 64


def runs_text_of(head: Sequence[int], n: int, cap: int = CAP) -> str:
    """`n` sorted runs named from the first `cap` of them (`head`): `run 7`, `runs 7, 8, 9`,
    `runs 1, 2, 3, 4, 5 and 12 more`."""
    if n == 1:
        return f"run {head[0]}"
    more = f" and {n - cap} more" if n > cap else ""
    return "runs " + ", ".join(map(str, head[:cap])) + more


# What the judgement found of one prediction, kept in the memo of what is due so that runs appended
# later are judged without reading the evidence again (`advance`): [kind, the groups its candidate
# runs are selected by, how many runs its reason counts, the first CAP of them]. Kinds: "n" no
# verdict record (the runs: its candidates), "r=" a record whose evidence fingerprint still holds,
# "r!" one whose fingerprint moved (the runs, for both: its candidates the record does not name).
State = list[Any]
KEPT = "kept"  # a hypothesis's states where its verdict rests on runs the database lacks: kept as it is


def reason(pid: str, st: State) -> str | None:
    """Why a prediction's verdict is due, from its state; None when it is not."""
    kind, _groups, n, head = st
    if kind == "n":
        return f"{pid} has evidence ({runs_text_of(head, n)}) and no verdict yet" if n else None
    if kind == "r!":
        return f"{pid}'s evidence changed since its verdict" + (f": {runs_text_of(head, n)} not in it" if n else "")
    return None


def seen_runs(rec: Mapping[str, Any]) -> set[Any]:
    """The runs a prediction's verdict record names: those it used and those it left out."""
    return set(rec.get("runs") or []) | {x.get("run") for x in rec.get("not_comparable") or []}


def first_unseen(srt: list[int], seen: set[Any]) -> list[int]:
    """The first CAP of the sorted runs `srt` that are not in `seen`."""
    out: list[int] = []
    for i in srt:
        if i not in seen:
            out.append(i)
            if len(out) == CAP:
                break
    return out


def selects(sel: Mapping[str, Any] | None, canon: Mapping[str, str]) -> bool:
    """Whether a group's selection (`core.verdict.Evidence.select`) takes a run with these
    canonical labels: every label it names, with that value (no selection takes every run)."""
    return all(canon.get(k) == L.canonical(v) for k, v in (sel or {}).items())


def advance(preds: Sequence[Mapping[str, Any]], records: Sequence[Mapping[str, Any]] | None,
            states: Sequence[State], added: Sequence[tuple[int, Mapping[str, str]]],
            selected: dict[Any, list[int]] | None = None) -> tuple[str | None, list[State]] | None:
    """`judge` of one hypothesis after counting runs were appended (`added`: each new run's id
    and canonical labels; none of them existed when `states` were found), from its kept states:
    a new run its prediction's groups select is a new candidate, so a prediction without a record
    has evidence, and one with a record has a moved fingerprint. Predictions as JSON dumps
    (`id`, `a`, `b`), in the order `states` were found. None when the states do not fit them.
    `selected`: the new runs each selection takes, shared by the calls over one `added` (1,000
    predictions mostly share a few selections)."""
    if not states or len(states) > len(preds):
        return None
    recs = {r.get("id"): r for r in records} if records is not None else {}
    got: list[State] = []
    for p, st in zip(preds, states):
        if not (isinstance(st, list) and len(st) == 4 and st[0] in ("n", "r=", "r!")):
            return None
        kind, groups, n, head = st
        if (kind == "n") != (p.get("id") not in recs):
            return None
        new = _selected(p, groups, added, selected if selected is not None else {})
        if new and kind != "n":
            seen = seen_runs(recs[p.get("id")])
            kind, new = "r!", [i for i in new if i not in seen]  # a new candidate: the fingerprint moved
        st = [kind, groups, n + len(new), sorted([*head, *new])[:CAP]]
        got.append(st)
        why = reason(str(p.get("id")), st)
        if why:
            return why, got
    return (None, got) if len(got) == len(preds) else None


def _selected(p: Mapping[str, Any], groups: list[str], added: Sequence[tuple[int, Mapping[str, str]]],
              memo: dict[Any, list[int]]) -> list[int]:
    """The runs of `added` that a prediction's groups select (`selects`), in order."""
    sels = [p.get("a") if g == "a" else p.get("b") for g in groups]
    try:
        key: Any = tuple(tuple(s.items()) if isinstance(s, dict) else s for s in sels)
        hash(key)
    except TypeError:
        key = None  # a selection of unhashable values: worked out, not shared
    got = memo.get(key) if key is not None else None
    if got is None:
        got = [rid for rid, canon in added if any(selects(s, canon) for s in sels)]
        if key is not None:
            memo[key] = got
    return got


def journal_since(kept: Any, gen: int | None, journal: Any) -> list[int] | None:
    """The runs appended since the evidence counter was `kept`, where the journal of appends
    (`store.db.Database.appended`) covers every write from then to `gen` (the counter now); else
    None: something else may have changed the evidence since."""
    if gen is None or not isinstance(kept, int) or not isinstance(journal, dict):
        return None
    if journal.get("gen") != gen or not isinstance(journal.get("from"), int) or not journal["from"] <= kept <= gen:
        return None
    try:
        return [int(r) for g, r in journal.get("runs") or [] if g > kept]
    except (TypeError, ValueError):
        return None


# a hypothesis as carrying over reads it: its predictions' JSON dumps, its latest verdict's (or None)
View = tuple[Sequence[Mapping[str, Any]], Mapping[str, Any] | None]


def prediction_view(p: Mapping[str, Any]) -> dict[str, Any]:
    """What carrying over (`advance`, `_selected`) reads of a prediction's JSON dump."""
    return {"id": p.get("id"), "a": p.get("a"), "b": p.get("b")}


def verdict_view(v: Mapping[str, Any]) -> dict[str, Any]:
    """What carrying over reads of a verdict's JSON dump: the runs it names (`named_runs`) and
    each prediction record's runs (`seen_runs`)."""
    return {"runs": v.get("runs"), "run_uids": v.get("run_uids"),
            "predictions": [{"id": r.get("id"), "runs": r.get("runs"),
                             "not_comparable": [{"run": x.get("run")} for x in r.get("not_comparable") or []]}
                            for r in v.get("predictions") or []]}


def carry_over(views: Mapping[str, View], added: Sequence[tuple[int, str, Mapping[str, str]]],
               out: dict[str, str], states: dict[str, Any], work: set[str]) -> list[str]:
    """Carry what is due (`out`: why each hypothesis's verdict is due; `states`: what the
    judgement found of it) over the counting runs appended since they were found (`added`: id,
    uid, canonical labels), for every hypothesis in `views` but those in `work`; returns those it
    cannot carry over: no states kept, or any hypothesis at all where a latest verdict names a new
    run's number or uid (it rested on a run this database lacked: `missing` decides it again)."""
    named = {h: named_runs(v[1]) for h, v in views.items() if v[1] is not None and h not in work}
    want_u, want_n = (set(x) for x in wanted(named))
    if any(rid in want_n or uid in want_u for rid, uid, _canon in added):
        return [h for h in views if h not in work]
    runs = [(rid, canon) for rid, _uid, canon in added]
    selected: dict[Any, list[int]] = {}
    redo: list[str] = []
    for h, (preds, last) in views.items():
        st = states.get(h)
        if h in work or st == KEPT or not runs:
            continue
        got = advance(preds, (last.get("predictions") or []) if last is not None else None,
                      st if isinstance(st, list) else [], runs, selected)
        if got is None:
            redo.append(h)
            continue
        why, states[h] = got
        if why:
            out[h] = why
        else:
            out.pop(h, None)
    return redo


class NotCarried(Exception):
    """A hypothesis's kept states did not fit it when its reason was asked (`Carried`): the
    caller works what is due out as `carry_over` does."""


class Carried(Mapping[str, str]):
    """What is due after runs were appended, as `carry_over` would find it, worked out only as far
    as it is read (`carry_lazily`): which hypotheses are due at once, why only for those asked
    (`status` shows three). Membership and order never work a reason out."""

    def __init__(self, order: list[str], why: Callable[[str], str]) -> None:
        self._order, self._keys, self._why = order, set(order), why
        self._got: dict[str, str] = {}

    def __getitem__(self, h: str) -> str:
        if h not in self._keys:
            raise KeyError(h)
        if h not in self._got:
            self._got[h] = self._why(h)
        return self._got[h]

    def __contains__(self, h: object) -> bool:
        return h in self._keys

    def __iter__(self) -> Iterator[str]:
        return iter(self._order)

    def __len__(self) -> int:
        return len(self._order)


def carry_lazily(hyps: Sequence[str], out: Mapping[str, str], states: Callable[[Collection[str]], Mapping[str, Any]],
                 views: Callable[[Collection[str]], Mapping[str, View]], told: Collection[str],
                 added: Sequence[tuple[int, str, Mapping[str, str]]]) -> Carried | None:
    """`carry_over` of every hypothesis in `hyps` (all held by the memo: `out` why each was due;
    `states` reads what was found of those asked), worked out only as far as it is read: at
    10,000 hypotheses carrying every one over a run and keeping the memo again was ~110 ms of the
    first `status` after it, which shows three reasons.

    A hypothesis due before stays due: a new candidate only adds to a prediction's evidence, or
    moves the fingerprint of one with a record, and judged again from the runs it would be found
    due too (no new run is one its verdict names: checked first). So only those that were not due
    are carried over now; the others' reasons when asked (`Carried`, which raises `NotCarried`
    where a state kept for one does not fit it). `views` reads the hypotheses asked (`told`:
    those with a verdict). None where `carry_over` would work any of those carried over now out
    from the runs: a latest verdict names a new run, a state is missing or does not fit."""
    named = {h: named_runs(v[1]) for h, v in views(told).items() if v[1] is not None}
    want_u, want_n = (set(x) for x in wanted(named))
    if any(rid in want_n or uid in want_u for rid, uid, _canon in added):
        return None
    runs = [(rid, canon) for rid, _uid, canon in added]
    selected: dict[Any, list[int]] = {}

    def step(h: str, view: View, st: Any) -> str | None:
        if st == KEPT or not runs:
            return out.get(h)
        preds, last = view
        got = advance(preds, (last.get("predictions") or []) if last is not None else None,
                      st if isinstance(st, list) else [], runs, selected)
        if got is None:
            raise NotCarried(h)
        return got[0]

    rest = [h for h in hyps if h not in out]
    newly: dict[str, str] = {}
    if rest:
        kept = states(rest)
        try:
            for h, v in views(rest).items():
                why = step(h, v, kept.get(h))
                if why:
                    newly[h] = why
        except NotCarried:
            return None

    def why_of(h: str) -> str:
        if h in newly:
            return newly[h]
        why = step(h, views([h])[h], states([h]).get(h))
        if not why:
            raise NotCarried(h)  # (never: a reason does not go away with new candidates)
        return why

    return Carried([h for h in hyps if h in out or h in newly], why_of)


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
