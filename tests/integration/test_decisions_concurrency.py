"""Decisions under concurrency (issue 37): a verdict is judged and committed on the evidence as it
is at the commit, and two verdicts at once commit once.

Each pair races in-process, on threads that each hold their own context (own database engine, own
file-lock handle), so the locks they meet are the real ones: the workspace's file lock (flock on
separate open files) and the database's write lock (SQLite's, PostgreSQL's advisory lock), with
git committing in subprocesses. Two busy-looping processes keep the CPUs contended meanwhile. After
each round: no hypothesis file holds the same verdict twice in a row, the log has no repeated
verdict event, and a fresh re-judge changes nothing (the last verdict is what the evidence says).
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests._face import use_env

ROUNDS = 3


@pytest.fixture(scope="module")
def hogs() -> Iterator[None]:
    """Two CPU hogs: busy loops, ended by pid when the module's tests end."""
    procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]
    try:
        yield
    finally:
        for p in procs:
            p.kill()
            p.wait()


@pytest.fixture(scope="module")
def ws(tmp_path_factory: Any, db_env_module: dict[str, str]) -> Any:
    """One workspace for the module (each round uses hypotheses of its own): one `init`, not four."""
    from tests.conftest import Workspace, _ws_env

    tmp = tmp_path_factory.mktemp("races")
    w = Workspace(tmp / "ws", _ws_env(tmp, db_env_module))
    w.cli("init", str(w.root), cwd=tmp)
    return w


@pytest.fixture
def ctxs(ws: Any, monkeypatch: Any) -> Iterator[Callable[[str], Any]]:
    """`ctx(actor)`: a fresh service context on the test workspace (closed at the end)."""
    use_env(ws, monkeypatch)
    from optlog.service.context import Ctx

    made: list[Any] = []

    def make(actor: str = "tester") -> Any:
        c = Ctx.find(ws.root, actor=actor)
        made.append(c)
        return c

    yield make
    for c in made:
        c.close()


def _race(*jobs: Callable[[], Any]) -> list[Any]:
    """Run the jobs at the same moment, each on its own thread; re-raise the first failure."""
    start = threading.Barrier(len(jobs))
    out: list[Any] = [None] * len(jobs)
    errors: list[BaseException] = []

    def run(i: int, job: Callable[[], Any]) -> None:
        try:
            start.wait()
            out[i] = job()
        except BaseException as e:  # noqa: BLE001 - handed to the test thread
            errors.append(e)

    threads = [threading.Thread(target=run, args=(i, j)) for i, j in enumerate(jobs)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    if errors:
        raise errors[0]
    return out


def _setup(ctx: Any, hid: str) -> list[int]:
    """A hypothesis whose prediction `a > b` the runs confirm; returns the a-group's run ids."""
    from optlog.service import evidence, hypotheses, predictions

    hypotheses.add(ctx, f"Round {hid}", hid=hid)
    predictions.add(ctx, hid, "a > b", metric="m", a={"c": f"{hid}-a"}, b={"c": f"{hid}-b"})
    a_runs = []
    for i in range(3):
        a_runs.append(evidence.record(ctx, {"c": f"{hid}-a"}, {"m": 30 + i})["id"])
        evidence.record(ctx, {"c": f"{hid}-b"}, {"m": 10 + i})
    return a_runs


def _check(ctx: Any, hid: str) -> None:
    """No verdict of the round's hypothesis repeats (file and log); a fresh re-judge commits nothing."""
    from optlog.service import hypotheses, verdicts
    from optlog.service.history import log

    strip = verdicts._strip
    for doc in [hypotheses.get(ctx, hid)]:
        vs = [strip(v.model_dump(mode="json")) for v in doc.verdicts]
        assert all(a != b for a, b in zip(vs, vs[1:])), f"{hid}: the same verdict twice in a row: {vs}"
        events = [e for e in reversed(log(ctx, hid)["events"]) if e.get("status")]
        seen = [(e.get("status"), tuple(e.get("runs") or ()), e.get("body")) for e in events]
        assert all(a != b for a, b in zip(seen, seen[1:])), f"{hid}: a verdict event repeats in the log: {seen}"
    fresh = verdicts.evaluate(ctx, hid)
    stale = [r["hypothesis"] for r in fresh["results"] if r["changed"]]
    assert fresh["committed"] == 0 and not stale, f"the last verdict of {stale} is not what the evidence says"


def test_verdict_racing_invalidate_never_rests_on_the_invalidated_runs(ws, ctxs, hogs):
    from optlog.service import verdicts

    setup = ctxs("setup")
    for i in range(ROUNDS):
        hid = f"inv{i}"
        a_runs = _setup(setup, hid)
        judge, inval = ctxs("judge"), ctxs("inval")
        _race(lambda: verdicts.evaluate(judge, all=True),
              lambda: verdicts.invalidate_many(inval, [str(r) for r in a_runs], "machine was busy"))
        _check(setup, hid)
        last = verdicts.evaluate(setup, hid)["results"][0]
        assert last["auto_status"] != "confirmed", "the invalidated runs still confirm it"


def test_two_verdicts_at_once_commit_once(ws, ctxs, hogs):
    from optlog.service import hypotheses, verdicts

    setup = ctxs("setup")
    for i in range(ROUNDS):
        hid = f"twice{i}"
        _setup(setup, hid)
        one, two = ctxs("one"), ctxs("two")
        a, b = _race(lambda: verdicts.evaluate(one, all=True), lambda: verdicts.evaluate(two, all=True))
        assert a["committed"] + b["committed"] == 1, (a["committed"], b["committed"])
        assert len(hypotheses.get(setup, hid).verdicts) == 1
        subjects = ws.git("log", "--format=%s", f"--grep=Optlog-Hypothesis: {hid}$").splitlines()
        assert subjects.count(f"optlog: {hid} → confirmed") == 1, subjects
        _check(setup, hid)


def test_verdict_racing_run_record_and_import(ws, ctxs, hogs, tmp_path):
    """The other side records (or imports) runs that overturn the verdict, then judges: whichever
    order the locks give, the last verdict rests on all of them."""
    from optlog.service import evidence, imports, verdicts

    setup = ctxs("setup")
    for i in range(ROUNDS):
        hid = f"rec{i}"
        _setup(setup, hid)
        judge, writer = ctxs("judge"), ctxs("writer")

        def record(i: int = i, hid: str = hid, writer: Any = writer) -> Any:
            if i % 2:
                f = tmp_path / f"{hid}.jsonl"
                f.write_text("".join(f'{{"m": {500 + k}, "c": "{hid}-b"}}\n' for k in range(4)))
                imports.import_files(writer, [str(f)], fmt="json", key_map={"m": "m"}, labels={"c": f"{hid}-b"})
            else:
                for k in range(4):
                    evidence.record(writer, {"c": f"{hid}-b"}, {"m": 500 + k})
            return verdicts.evaluate(writer, hid)

        _race(lambda: verdicts.evaluate(judge, all=True), record)
        _check(setup, hid)


def test_verdict_racing_prediction_edit(ws, ctxs, hogs):
    from optlog.service import hypotheses, predictions, verdicts

    setup = ctxs("setup")
    for i in range(ROUNDS):
        hid = f"edit{i}"
        _setup(setup, hid)
        judge, editor = ctxs("judge"), ctxs("editor")

        def edit(hid: str = hid, editor: Any = editor) -> Any:
            predictions.edit(editor, f"{hid}.p1", expect="a < b")
            return verdicts.evaluate(editor, hid)

        _race(lambda: verdicts.evaluate(judge, all=True), edit)
        _check(setup, hid)
        assert hypotheses.get(setup, hid).auto_status == "falsified"


def test_a_verdict_with_nothing_to_commit_does_not_wait_for_the_decision_lock(ws, ctxs):
    """A verdict first judges without the lock and takes it only to commit something (re-judging
    under it): while a decision holds the lock, a verdict with nothing new answers at once, and one
    with something to commit waits for the lock, then commits on the evidence as it is then."""
    from optlog.service import evidence, verdicts
    from optlog.store.db import decision_lock

    setup = ctxs("setup")
    for hid in ("quiet", "moved"):
        _setup(setup, hid)
        assert verdicts.evaluate(setup, hid)["committed"] == 1
    for k in range(4):  # moved's b group now outruns a: its verdict changes
        evidence.record(setup, {"c": "moved-b"}, {"m": 500 + k})
    holder = ctxs("holder")
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with decision_lock(holder.ws, holder.db):
            held.set()
            release.wait(60)

    def judge(ctx: Any, hid: str, out: list[Any]) -> threading.Thread:
        t = threading.Thread(target=lambda: out.append(verdicts.evaluate(ctx, hid)))
        t.start()
        return t

    h = threading.Thread(target=hold)
    h.start()
    try:
        assert held.wait(30)
        steady: list[Any] = []
        judge(ctxs("reader"), "quiet", steady).join(timeout=20)
        assert steady and steady[0]["committed"] == 0, "a verdict with nothing to commit waited for the lock"
        t0 = time.monotonic()
        changed: list[Any] = []
        t = judge(ctxs("writer"), "moved", changed)
        t.join(timeout=0.5)
        assert t.is_alive() and not changed, "a verdict committed while another decision held the lock"
    finally:
        release.set()
        h.join(timeout=30)
    t.join(timeout=60)
    assert changed and changed[0]["committed"] == 1 and time.monotonic() - t0 >= 0.5
    assert changed[0]["results"][0]["auto_status"] != "confirmed"  # judged on the new runs
    _check(setup, "moved")
    _check(setup, "quiet")
