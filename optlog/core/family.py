"""A family of hypotheses as `next` and `status` read it: parents, children and rivals, and the
pairs the evidence has not told apart. Standard library only (a hypothesis is read by attribute:
`id`, `parent`, `rivals`, `judged_status()`), so `status`'s first read after a change
(`core.statusdoc`, issue 47) reads it without the verdict engine that `core.discriminate` loads."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from optlog.core import jsondoc
from optlog.core.statuses import told_apart


@dataclass
class Kin:
    """A hypothesis as a family reads it (`core.discriminate.Hyp` is one with its evidence)."""

    id: str
    parent: str | None = None
    rivals: list[str] = field(default_factory=list)
    status: str = "open"

    def judged_status(self) -> str:
        return self.status


def ancestors(hyps: dict[str, Any], hid: str) -> set[str]:
    """The ids of `hid`'s parent, its parent's parent, … (a cycle ends the walk)."""
    out: set[str] = set()
    cur = hyps.get(hid)
    while cur is not None and cur.parent and cur.parent not in out and cur.parent != hid:
        out.add(cur.parent)
        cur = hyps.get(cur.parent)
    return out


def refines(hyps: dict[str, Any], h: Any, o: Any) -> bool:
    """Whether one of the two descends from the other (or they are one): a refinement, no rival."""
    return h.id == o.id or o.id in ancestors(hyps, h.id) or h.id in ancestors(hyps, o.id)


def relations(hyps: dict[str, Any]) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """(for each hypothesis, the hypotheses that name it a rival; its children), each in id order:
    worked out once, so `pairs` of one hypothesis reads its neighbours only (`status` asks it of
    every hypothesis: reading all of them each time made `status` cubic in the hypotheses)."""
    named_by: dict[str, list[str]] = {}
    children: dict[str, list[str]] = {}
    for x in sorted(hyps.values(), key=lambda x: x.id):
        for r in dict.fromkeys(x.rivals):
            named_by.setdefault(r, []).append(x.id)
        if x.parent:
            children.setdefault(x.parent, []).append(x.id)
    return named_by, children


def rival_ids(column: Any) -> list[str]:
    """A hypothesis's `rivals` as its index's link column holds it (JSON text on SQLite, the list
    on PostgreSQL, NULL): the ids, for `links`. Most hypotheses name no rival, so the empty list
    and NULL are not parsed (at 10,000 hypotheses parsing every row's column was ~15 ms of a first
    read after a hand edit)."""
    if column is None or column in ("[]", "null"):
        return []
    return list((jsondoc.loads(column) if isinstance(column, str) else column) or ())


def links(items: Iterable[tuple[str, str | None, Iterable[str]]]) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """Each hypothesis's children and its rivals either way (named by it or naming it), sorted, from
    (id, parent, rivals) of each, in one pass: `hypothesis list`'s `children` and `rivals`, on
    either path (`service.hypotheses`, `store.plainread` from the index's link columns)."""
    children: dict[str, list[str]] = {}
    rivals: dict[str, set[str]] = {}
    for hid, parent, rv in items:
        if parent:
            children.setdefault(parent, []).append(hid)
        for r in rv:
            if r != hid:
                rivals.setdefault(hid, set()).add(r)
                rivals.setdefault(r, set()).add(hid)
    return {k: sorted(v) for k, v in children.items()}, {k: sorted(v) for k, v in rivals.items()}


def pairs(hyps: dict[str, Any], only: str | None = None,
          index: tuple[dict[str, list[str]], dict[str, list[str]]] | None = None) -> list[tuple[Any, Any, str]]:
    """(hypothesis, other, relation) for each hypothesis with a rival or a pivot parent that the
    evidence has not told apart (`told_apart`), or every pair of `only`. The undecided one comes
    first; relation is what the other is to it: rival, parent or child.

    A hypothesis is never paired with itself or its own ancestors as rivals (issue 44): a child
    refines a parent that stands, so there is nothing to tell apart. The parent is a pair only when
    it is falsified: the child pivoted away from it, an alternative explanation of the same numbers."""
    out: list[tuple[Any, Any, str]] = []
    seen: set[frozenset[str]] = set()
    decided = ("confirmed", "falsified")
    named_by, children = index if index is not None else relations(hyps)
    if only is None:
        order = sorted(hyps.values(), key=lambda x: x.id)
    else:  # the hypotheses a pair of `only` can come from: itself and its neighbours (the others make none)
        me = hyps.get(only)
        if me is not None and not (me.rivals or named_by.get(only) or (
                children.get(only) and me.judged_status() == "falsified") or (
                me.parent and me.parent in hyps and hyps[me.parent].judged_status() == "falsified")):
            return out  # no rival either way, no falsified parent, no child it pivoted from: no pair (at
            # 10,000 hypotheses `status` asks this of each one in turn)
        near = {only, *named_by.get(only, ()), *children.get(only, ())}
        if only in hyps:
            near.update(hyps[only].rivals)
        order = sorted((hyps[i] for i in near if i in hyps), key=lambda x: x.id)
    for h in order:
        others = [(r, "rival") for r in h.rivals] + ([(h.parent, "parent")] if h.parent else [])
        others += [(x, "rival") for x in named_by.get(h.id, ())]
        for oid, rel in others:
            o = hyps.get(oid)
            key = frozenset((h.id, oid))
            if o is None or key in seen or (only is not None and only not in key):
                continue
            if rel == "parent" and o.judged_status() != "falsified" or rel == "rival" and refines(hyps, h, o):
                continue
            seen.add(key)
            if only is None and told_apart(h.judged_status(), o.judged_status()):
                continue
            if h.judged_status() in decided and o.judged_status() not in decided or (only == o.id and only != h.id):
                h2, o2, rel = o, h, {"parent": "child", "child": "parent"}.get(rel, rel)
                out.append((h2, o2, rel))
            else:
                out.append((h, o, rel))
    return out
