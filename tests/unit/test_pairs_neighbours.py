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
