"""core.discriminate.pairs reads each hypothesis's neighbours only (issue 47: `status` asked it of
every hypothesis, and each call read all of them: cubic, minutes at 1,000 hypotheses). The pairs
are the ones the whole-list reading gives, checked against it on random families."""

from __future__ import annotations

import random

from optlog.core import discriminate as D
from optlog.core import family as F
from optlog.core import statusdoc as SD
from optlog.core.statuses import told_apart


def _reference(hyps: dict[str, D.Hyp], only: str | None = None) -> list[tuple[str, str, str]]:
    """pairs as it read every hypothesis for every one (before issue 47's change)."""
    out = []
    seen: set[frozenset[str]] = set()
    decided = ("confirmed", "falsified")
    for h in sorted(hyps.values(), key=lambda x: x.id):
        others = [(r, "rival") for r in h.rivals] + ([(h.parent, "parent")] if h.parent else [])
        others += [(x.id, "rival") for x in sorted(hyps.values(), key=lambda x: x.id) if h.id in x.rivals]
        for oid, rel in others:
            o = hyps.get(oid)
            key = frozenset((h.id, oid))
            if o is None or key in seen or (only is not None and only not in key):
                continue
            if rel == "parent" and o.judged_status() != "falsified" or rel == "rival" and D.refines(hyps, h, o):
                continue
            seen.add(key)
            if only is None and told_apart(h.judged_status(), o.judged_status()):
                continue
            if h.judged_status() in decided and o.judged_status() not in decided or (only == o.id and only != h.id):
                out.append((o.id, h.id, {"parent": "child", "child": "parent"}.get(rel, rel)))
            else:
                out.append((h.id, o.id, rel))
    return out


def test_pairs_are_the_whole_lists_on_random_families() -> None:
    rng = random.Random(47)
    for _ in range(300):
        n = rng.randint(1, 12)
        ids = [f"h{i}" for i in range(n)]
        hyps = {}
        for i, hid in enumerate(ids):
            parent = rng.choice(ids[:i]) if i and rng.random() < 0.5 else None
            rivals = rng.sample(ids + ["gone"], k=rng.randint(0, min(3, n)))
            hyps[hid] = D.Hyp(hid, parent=parent, rivals=rivals,
                              status=rng.choice(["open", "confirmed", "falsified", "testing", "superseded"]))
        rel = D.relations(hyps)
        got = lambda only: [(h.id, o.id, r) for h, o, r in D.pairs(hyps, only, rel)]  # noqa: E731
        assert got(None) == _reference(hyps), hyps
        for only in [*ids, "gone"]:
            assert got(only) == _reference(hyps, only), (only, hyps)
            assert [(h.id, o.id, r) for h, o, r in D.pairs(hyps, only)] == _reference(hyps, only)


class _P:
    def __init__(self, pid: str) -> None:
        self.id, self.status, self.post_hoc = pid, "untested", None


class _Doc:
    def __init__(self, i: int) -> None:
        self.id, self.created = f"h{i:04d}", "2026-01-01T00:00:00.000Z"
        self.parent = f"h{i - 1:04d}" if i % 10 else None
        self.rivals: list[str] = []
        self.predictions = [_P(f"{self.id}-p1")]

    def effective_status(self) -> str:
        return "open"


def test_statuss_next_reads_each_hypothesiss_neighbours_once(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The bench's family (chains of ten): counted, not timed — the hypotheses `pairs` orders for
    the whole of `status`'s `next` stay linear in the hypotheses (they were cubic: 8 million at 200)."""
    docs = {d.id: d for d in (_Doc(i) for i in range(200))}
    seen = []

    def counting(items, **k):  # type: ignore[no-untyped-def]
        items = list(items)
        seen.append(len(items))
        return sorted(items, **k)

    monkeypatch.setattr(F, "sorted", counting, raising=False)
    assert SD._undecided_rival(docs) is None
    assert sum(seen) <= 20 * len(docs), sum(seen)


class _Rand:
    def __init__(self, hid: str, created: str, parent: str | None, rivals: list[str], status: str, preds: int) -> None:
        self.id, self.created, self.parent, self.rivals, self._status = hid, created, parent, rivals, status
        self.predictions = [_P(f"{hid}-p{i}") for i in range(preds)]

    def effective_status(self) -> str:
        return self._status


def _undecided_reference(docs: dict[str, _Rand]) -> tuple[str, str] | None:
    """`_undecided_rival` as it read every hypothesis (before it looked only at those with a rival
    or a falsified parent)."""
    hyps = {x.id: F.Kin(x.id, parent=x.parent, rivals=list(x.rivals), status=x.effective_status())
            for x in docs.values()}
    rel = F.relations(hyps)
    for d in sorted(docs.values(), key=lambda d: (d.created or "", d.id), reverse=True):
        st = d.effective_status()
        if not d.predictions or st == "falsified":
            continue
        for h, o, _rel in F.pairs(hyps, d.id, rel):
            other = docs[o.id if h.id == d.id else h.id]
            if other.predictions and not told_apart(st, other.effective_status()):
                return d.id, other.id
    return None


def test_the_undecided_pair_status_proposes_is_the_whole_families_on_random_families() -> None:
    """`status`'s `next` asks of the hypotheses with a rival or a falsified parent only: the pair it
    names is the one reading every hypothesis names, on random families (rivals named one way or
    both, to hypotheses gone, parents falsified, ties in creation time, no prediction)."""
    rng = random.Random(4747)
    named = 0
    for _ in range(2000):
        n = rng.randint(1, 14)
        ids = [f"h{i}" for i in range(n)]
        docs = {}
        for i, hid in enumerate(ids):
            parent = rng.choice(ids[:i] + ["gone"]) if i and rng.random() < 0.6 else None
            rivals = rng.sample(ids + ["gone"], k=rng.randint(0, 2)) if rng.random() < 0.3 else []
            docs[hid] = _Rand(hid, rng.choice(["", "2026-01-01", "2026-01-02", "2026-01-03"]), parent, rivals,
                              rng.choice(["open", "confirmed", "falsified", "testing", "superseded"]),
                              rng.choice([0, 1, 1, 2]))
        want = _undecided_reference(docs)
        assert SD._undecided_rival(docs) == want, docs
        named += want is not None
    assert named > 300  # (the families name a pair often enough to say something)
