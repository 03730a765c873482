"""`core.statusdoc` at scale (issue 47): `parts` works out each hypothesis's effective status
once and shows the newest OPEN_CAP undecided ones, and `latest_verdicts` of the hypotheses with a
verdict or a status change alone is that of all of them (`store.plainstatus` hands it only
those). Both checked on random workspaces against a plain reading of the rule; and `side`, kept as
JSON by the plain path, gives the same parts as the hypotheses it was worked out from."""

from __future__ import annotations

import random
from typing import Any

from optlog.core import statusdoc as SD

STATUSES = ("open", "open", "testing", "confirmed", "falsified", "superseded", "inconclusive")


class _P:
    def __init__(self, pid: str) -> None:
        self.id, self.status, self.post_hoc = pid, "open", None


class _Doc:
    """A hypothesis as `core.statusdoc` reads it."""

    def __init__(self, rng: random.Random, hid: str) -> None:
        self.id, self.title = hid, f"Hypothesis {hid}"
        self.created = rng.choice([None, "2026-01-01T00:00:00Z", "2026-01-02T00:00:00Z", f"2026-02-{rng.randint(10, 28)}"])
        self.parent, self.rivals, self.override, self.auto_status = None, [], None, None
        self.status = rng.choice(STATUSES)
        self.predictions = [_P(f"{hid}-p{i}") for i in range(rng.randint(0, 4))]
        at = lambda: f"2026-03-{rng.randint(10, 12)}"  # noqa: E731  (ties on purpose)
        self.verdicts = [{"status": "confirmed", "at": at(), "by": "x", "summary": "s"} for _ in range(rng.randint(0, 2))] \
            if rng.random() < 0.3 else []
        self.history = [{"kind": "manual", "to": "open", "at": at(), "by": "x", "why": "w"}] if rng.random() < 0.2 else []

    def effective_status(self) -> str:
        return self.status


def _open_before(docs: dict[str, Any], live: set[str]) -> tuple[list[tuple[str, str]], int]:
    """The open list by the rule: every hypothesis, newest first, the undecided ones counted and the
    first OPEN_CAP shown (an open one whose runs are live reads `testing`)."""
    shown, n = [], 0
    for d in sorted(docs.values(), key=lambda d: (d.created or "", d.id), reverse=True):
        st = "testing" if d.effective_status() == "open" and d.id in live else d.effective_status()
        if st not in ("confirmed", "falsified", "superseded"):
            n += 1
            if len(shown) < SD.OPEN_CAP:
                shown.append((d.id, st))
    return shown, n


def test_the_open_hypotheses_shown_are_the_newest_of_all_on_random_workspaces() -> None:
    rng = random.Random(47)
    for _ in range(300):
        ids = [f"h{rng.randint(0, 60):02d}" + rng.choice(["", "-b", "a"]) for _ in range(rng.randint(0, 40))]
        docs = {h: _Doc(rng, h) for h in dict.fromkeys(ids)}
        live = {h for h in docs if rng.random() < 0.2}
        runs = SD.runs_section(type("F", (), {"total": 0, "made_here": True})(), set())
        runs["live_hyps"] = live
        latest, last_at = SD.latest_verdicts(docs)
        got = SD.parts("/ws", docs, latest, last_at, runs, {}, set())["hypotheses"]
        shown, n = _open_before(docs, live)
        assert [(x["id"], x["status"]) for x in got["open"]] == shown and got["open_total"] == n


def test_latest_verdicts_of_those_with_one_is_that_of_all() -> None:
    rng = random.Random(4747)
    for _ in range(300):
        docs = {f"h{i}": _Doc(rng, f"h{i}") for i in range(rng.randint(0, 30))}
        told = {h: d for h, d in docs.items() if d.verdicts or d.history}
        assert SD.latest_verdicts(told) == SD.latest_verdicts(docs)


def test_the_side_kept_as_json_gives_the_parts_of_the_hypotheses_it_was_worked_out_from() -> None:
    """`store.plainstatus` keeps `core.statusdoc.side` as JSON text by the index's file hashes and
    builds the parts from it after a run, a launch or a plan: on random workspaces (parents,
    rivals, decided ones, marks, verdicts, manual changes) and random runs, reasons due and plans,
    the side read back from its JSON gives the parts the hypotheses themselves give, byte for
    byte as the document prints them."""
    import json

    rng = random.Random(4748)
    decided = 0
    for _ in range(300):
        docs: dict[str, Any] = {}
        for i in range(rng.randint(0, 25)):
            d = _Doc(rng, f"h{i}")
            earlier = list(docs)
            d.status = rng.choice(STATUSES + ("falsified", "confirmed"))
            d.parent = rng.choice(earlier) if earlier and rng.random() < 0.3 else None
            d.rivals = rng.sample(earlier, min(len(earlier), rng.randint(0, 2))) if rng.random() < 0.3 else []
            for p in d.predictions:
                p.status = rng.choice(("untested", "confirmed", "falsified"))
                p.post_hoc = rng.choice([None, {"at": "2026-03-01", "runs": [1]}, {"state": "baseline-known"}])
            if rng.random() < 0.2:
                d.title = "T" * rng.randint(55, 70) + " é"  # (clipped, not ASCII)
            docs[d.id] = d
        decided += sum(d.status in ("confirmed", "falsified") for d in docs.values())
        ids = list(docs)
        live = {h for h in ids if rng.random() < 0.2}
        runs = SD.runs_section(type("F", (), {"total": 0, "made_here": rng.random() < 0.5})(), set())
        runs.update(total=rng.randint(0, 5), live_hyps=live,
                    newest={h: f"2026-04-0{rng.randint(1, 9)}" for h in ids if rng.random() < 0.5},
                    launches=[{"ref": "L1", "status": rng.choice(("running", "succeeded"))}] if rng.random() < 0.2 else [])
        why = {h: f"new evidence for {h}" for h in ids if rng.random() < 0.3}
        planned = {h for h in ids if rng.random() < 0.3}
        latest, last_at = SD.latest_verdicts(docs)
        kept = json.loads(json.dumps(SD.side(docs, latest, last_at), separators=(",", ":"), ensure_ascii=False))
        want = SD.parts("/ws", docs, latest, last_at, runs, why, planned)
        got = SD.parts_of("/ws", kept, runs, why, planned)
        assert json.dumps(got, ensure_ascii=False) == json.dumps(want, ensure_ascii=False)
    assert decided > 300  # (the loop's pivots and plans were exercised)
