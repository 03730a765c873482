"""The first read after a change on plain SQL (issue 47, optlog.api.firstread): the same bytes as
the full path, for each read and each kind of change, and no SQLAlchemy, SQLModel or pydantic
imported by the process that answers it. Counted and compared, never timed."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from typing import Any

import pytest

from tests.cli.test_first_read import CHANGES, _change, _populate, _toggle

READS = {"status": ("status",), "todo list": ("todo", "list"), "hypothesis list": ("hypothesis", "list"),
         "run list": ("run", "list", "--limit", "20")}
FULL = {"OPTLOG_READ_CACHE": "0"}  # the full path: no read cache, no first read on plain SQL
# (change, read) that the plain path answers: the reads whose document the change moves
# (store.readcache.reads_of). `status` after every change (after a run is recorded it carries what
# is due over the new run: core.duestate.carry_over); `hypothesis list` after a change of the
# hypothesis files (a file changed since it was indexed, by hand or by a pull, is re-indexed on
# plain SQL: read and validated by the full path's own loader, store.hypfiles: pydantic and YAML,
# never SQLAlchemy); the todo and run lists after a run is recorded, the todo list after the hook
# queued one (applied on plain SQL: store.plaintodos). The others are the read cache's: a run
# recorded or a todo list written leaves `hypothesis list` alone, a hypothesis file leaves the
# todo and run lists alone, a todo list leaves `run list` alone. On SQLite and on PostgreSQL.
FILE_CHANGES = ("hypothesis edited by hand", "hypothesis added by optlog", "git pull of 10 hypothesis files")
PLAIN = ({(c, "status") for c in CHANGES} | {(c, "hypothesis list") for c in FILE_CHANGES}
         | {("run recorded", "todo list"), ("run recorded", "run list"), ("todo written (hook)", "todo list")})
# the verdict engine too: after a run is recorded what is due is carried over the new run
# (core.duestate.advance on the journal of appends), not judged again from every run
HEAVY = ("sqlalchemy", "sqlmodel", "pydantic", "click", "yaml", "optlog.core.verdict")
ORM = ("sqlalchemy", "sqlmodel", "click")  # never imported by a first read, even one that re-indexes a file

PROBE = """
import json, sys
from optlog.cli import fast
ok = fast.serve(sys.argv[1:])
sys.stdout.flush()
print(json.dumps([ok, sorted(m for m in {heavy!r} if m in sys.modules)]), file=sys.stderr)
"""


def _probe(ws: Any, args: tuple[str, ...], json_: bool = True) -> tuple[bool, list[str], str]:
    """A real process's front door (optlog.cli.fast.serve) on this read: whether it answered,
    which heavy packages it imported, what it printed."""
    p = subprocess.run([sys.executable, "-c", PROBE.format(heavy=HEAVY), *args, *(["--json"] if json_ else [])],
                       cwd=ws.root,
                       env={**ws.env, "OPTLOG_READ_CACHE": "1"}, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    ok, heavy = json.loads(p.stderr.strip().splitlines()[-1])
    return ok, heavy, p.stdout


def _status_reading_briefs(ws: Any) -> tuple[bool, list[str], str, bool]:
    """`_probe` of `status`, with the briefs it keeps by file hash (`store.plainstatus.BRIEFS`)
    removed first, and whether it read every hypothesis's brief: a read that reads them keeps them
    again (none is kept, so each is worked out and the file written whole)."""
    from optlog.store import plainstatus, readcache

    kept = ws.root / ".optlog" / readcache.CACHE_DIR
    for f in kept.glob(plainstatus.BRIEFS + "*"):
        f.unlink()
    ok, heavy, out = _probe(ws, ("status",))
    return ok, heavy, out, any(kept.glob(plainstatus.BRIEFS + "*"))


@pytest.fixture
def settled(monkeypatch: pytest.MonkeyPatch) -> None:
    from optlog.store import readcache

    monkeypatch.setattr(readcache, "RACY_S", 0.0)  # the test changes files within a second


def _prime(ws: Any) -> None:
    """Every read once through the full path and once more (the read cache holds each)."""
    for a in READS.values():
        ws.cli(*a, "--json")
        ws.cli(*a, "--json")


def test_the_first_read_on_plain_sql_prints_the_full_paths_bytes(ws: Any, settled: None, backend: str,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    from optlog.api import firstread

    _populate(ws, 12)
    # more than the bench's shapes: a parent, rivals, a manual status, todos linked and with extra keys
    ws.cli("hyp", "add", "Child", "--id", "kid", "--parent", "h0010", "--rival", "h0011")
    for a in ("x", "y"):  # (the newest open one shows its first three predictions)
        ws.cli("prediction", "add", "kid", "--expect", "a > b", "--metric", "tput", "--a", f"config={a}", "--b", "config=z")
    # (a line separator in the reason: printed escaped, `core.text.json_shown`, by every path)
    ws.cli("hyp", "set", "h0011", "--status", "falsified", "--why", "by hand\u2028second line")
    ws.cli("todo", "write", "-", input=json.dumps([
        {"content": "one", "status": "pending", "priority": "low", "activeForm": "x", "hypothesis": "kid"},
        {"content": "two ünï", "status": "in_progress"}]))
    answered: list[tuple[str, bool]] = []
    real = firstread.answer

    def spy(*a: Any, **k: Any) -> Any:
        r = real(*a, **k)
        answered.append((json.loads(a[1])[0], r is not None))
        return r

    monkeypatch.setattr(firstread, "answer", spy)
    seen = set()
    n = 0
    for kind in CHANGES:
        for name, args in READS.items():
            if kind.startswith("git pull"):
                ws.git("checkout", "--", "hypotheses")  # a pull needs a clean tree
            _prime(ws)
            n += 1
            _change(ws, kind, n)
            answered.clear()
            first = ws.cli(*args, "--json")
            if any(ok for _w, ok in answered):
                seen.add((kind, name))
            full = ws.cli(*args, "--json", env=FULL)
            assert first.out == full.out, (kind, name)
            assert ws.cli(*args, "--json").out == full.out, (kind, name)  # and the read cache's, after it
            assert "\u2028" not in full.out and ("\\u2028" in full.out or name != "hypothesis list")
    assert seen == PLAIN


def test_a_verdict_due_and_a_decided_family_on_plain_sql(ws: Any, settled: None, backend: str) -> None:
    """`status`'s every section on plain SQL, with the full path's bytes: a verdict due (from the
    memo), latest verdicts (auto and manual), a falsified parent and its rival, a plan, todos in
    progress, an invalidation, a failed launch."""
    from tests._verdicts import repeats, seed_runs

    ws.cli("hyp", "add", "X beats Y", "--id", "h")
    ws.cli("predict", "h", "--expect", "a > b", "--metric", "t", "--a", "cfg=x", "--b", "cfg=y")
    ws.cli("hyp", "add", "Rival", "--id", "r", "--rival", "h")
    ws.cli("predict", "r", "--expect", "a < b", "--metric", "t", "--a", "cfg=x", "--b", "cfg=y")
    ws.cli("hyp", "add", "Wrong", "--id", "w")
    ws.cli("hyp", "set", "w", "--status", "falsified", "--why", "by hand")
    seed_runs(ws, repeats({"cfg": "x"}, "t", [10, 11, 12]) + repeats({"cfg": "y"}, "t", [5, 6, 7]))
    ws.cli("verdict", "h")
    ws.cli("run", "record", "--label", "cfg=y", "--metric", "t=100")
    ws.cli("run", "invalidate", "1", "--why", "bad node")
    ws.cli("todo", "write", "-", input=json.dumps([{"content": "going", "status": "in_progress", "activeForm": "g"}]))
    ws.git("add", "-A")
    ws.git("commit", "-qm", "setup", "--allow-empty")
    for _ in range(2):
        ws.cli("status", "--json")  # the full path keeps what is due; the second read is the cache's
    for kind, n in (("hypothesis added by optlog", 1), ("hypothesis edited by hand", 2)):
        if kind == "hypothesis edited by hand":
            f = ws.root / "hypotheses" / "w.yaml"
            f.write_text(f.read_text().replace("title: Wrong", "title: Wrong by hand"))
        else:
            _change(ws, kind, n)
        ok, heavy, out = _probe(ws, ("status",))
        assert ok and not set(heavy) & set(ORM), (kind, heavy)
        full = ws.cli("status", "--json", env=FULL).out
        assert out == full, kind
        doc = json.loads(out)
        assert doc.get("verdict_due") and doc["latest_verdicts"] and doc["todos"] and len(doc["next"]) == 3, doc
        # the text a person reads: the same document, its next calls spelt without the verb registry
        _change(ws, "hypothesis added by optlog", 10 + n)
        ok, heavy, out = _probe(ws, ("status",), json_=False)
        assert ok and not set(heavy) & set(ORM), (kind, heavy)
        assert out == ws.cli("status", env=FULL).out, kind
    # a run recorded that both predictions select: what is due is carried over it on plain SQL (h's
    # evidence changed since its verdict, r has evidence and no verdict), the memo kept as the full
    # path keeps it, and no ORM, SQLModel, pydantic or verdict engine imported
    for label in ("cfg=x", "cfg=z", "cfg=y"):
        if label == "cfg=z":  # judged first: each fingerprint on plain SQL must match its verdict's
            ws.cli("verdict", "--all")
        ws.cli("status", "--json")
        ws.cli("status", "--json")
        rid = ws.j("run", "record", "--label", label, "--metric", "t=9")["id"]
        ok, heavy, out = _probe(ws, ("status",))
        assert ok and heavy == [], heavy
        assert out == ws.cli("status", "--json", env=FULL).out, label
        due = {d["id"]: d["why"] for d in json.loads(out).get("verdict_due") or []}
        if label == "cfg=z":  # a run neither prediction selects: nothing is due
            assert due == {}, due
        else:
            assert str(rid) in due["h"] and "r" in due, due
        ok, heavy, again = _probe(ws, ("status",))
        assert ok and again == out


def _in_ctx(ws: Any, monkeypatch: pytest.MonkeyPatch, fn: Any) -> Any:
    """`fn(ctx)` on the workspace's real database (OPTLOG_DB_URL on PostgreSQL), in this process."""
    from optlog.service.context import Ctx

    with monkeypatch.context() as m:
        for k, v in ws.env.items():
            m.setenv(k, v)
        ctx = Ctx.find(ws.root, actor="test")
        try:
            return fn(ctx)
        finally:
            ctx.close()


def _memo_since(ws: Any, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, list[int] | None]:
    """The evidence counter the memo of what is due was kept under, and the runs the journal
    says were appended since."""
    from optlog.core import statusdoc as SD
    from optlog.store import statusrows

    def read(ctx: Any) -> Any:
        with ctx.db.connect() as c:
            return statusrows.due_memo(c)
    gen, memo, journal = _in_ctx(ws, monkeypatch, read)
    return (memo or {}).get("gen"), SD.appended_since(gen, memo, journal, (memo or {}).get("ceilings", ""))


def test_what_is_due_is_carried_over_appended_runs_and_judged_again_after_any_other_evidence_write(
        ws: Any, settled: None, backend: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The journal of appends (`store.db.Database.appended`): runs recorded one after another are
    carried over (no verdict engine imported); a run invalidated among them breaks the chain and
    the plain path judges again from every run; the memo it keeps is carried over the next run.
    Each time the full path's bytes, and what is due moves."""
    _populate(ws, 6)
    _prime(ws)

    def due() -> tuple[list[str], str]:
        ok, heavy, out = _probe(ws, ("status",))
        assert ok and out == ws.cli("status", "--json", env=FULL).out
        return heavy, json.dumps(json.loads(out).get("verdict_due"))

    def db(fn: Any) -> Any:
        return _in_ctx(ws, monkeypatch, fn)

    def since() -> list[int] | None:
        """The runs the journal says were appended since the memo was kept."""
        return _memo_since(ws, monkeypatch)[1]

    def from_scratch() -> str:
        """What is due judged again from every run: the memo dropped first (the full path keeps a new one)."""
        def drop(ctx: Any) -> None:
            from sqlalchemy import text

            with ctx.db.write_core(touches="derived") as c:
                c.execute(text("DELETE FROM sync_stamp WHERE key = 'verdict_due'"))
        db(drop)
        return json.dumps(ws.j("status", env=FULL).get("verdict_due"))

    before = json.dumps(ws.j("status", env=FULL).get("verdict_due"))
    ids = [ws.j("run", "record", "--label", "config=tp8", "--label", f"conc={i}", "--metric", f"tput={i}")["id"]
           for i in range(3)]
    assert since() == ids
    heavy, after = due()
    assert heavy == [] and after != before and str(ids[-1]) not in before
    assert after == from_scratch()  # (both paths carry the memo over: this is the engine's own answer)
    ids += [ws.j("run", "record", "--label", "config=tp4", "--label", "conc=7", "--metric", "tput=3")["id"]]
    assert since() == ids[-1:]
    heavy, after = due()
    assert heavy == [] and after == from_scratch()
    # another write that may change the evidence breaks the chain: judged again from every run
    ws.cli("run", "invalidate", str(ids[0]), "--why", "bad node")
    assert since() is None
    again = json.dumps(ws.j("status").get("verdict_due"))  # (the full path: the evidence folder moved)
    assert again != after and since() is None  # (the journal begins again at the next append)
    rid = ws.j("run", "record", "--label", "config=tp4", "--label", "conc=8", "--metric", "tput=2")["id"]
    assert since() == [rid]
    heavy, last = due()
    assert heavy == [] and last != again and last == from_scratch()
    # the full path (the MCP face's, a read with the cache off) carries the memo over too
    rid = ws.j("run", "record", "--label", "config=tp8", "--label", "conc=6", "--metric", "tput=4")["id"]
    assert since() == [rid]
    from optlog.service import verdicts

    with monkeypatch.context() as m:  # in this process: judged from the runs, it would fail
        m.setattr(verdicts, "_due", lambda *a: pytest.fail("judged again from every run"))
        carried = json.dumps(ws.j("status", env=FULL, subprocess=False).get("verdict_due"))
    assert since() == [] and carried != last and carried == from_scratch()


def test_status_after_runs_carries_what_is_due_over_as_far_as_it_shows_it(
        ws: Any, settled: None, backend: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The first `status` after each of a few runs (issue 47, `core.statusdoc.due_carried`):
    the full path's bytes each time, with no verdict engine imported, while the memo of what is
    due stays where the last read that kept it left it (the runs since it pile up in the
    journal, each read carries them all over); a hypothesis that was not due becomes due. After
    the first, no read reads every hypothesis's brief (`store.plainstatus`'s side, kept by the
    index's file hashes): the one that becomes due is read from its index document."""
    _populate(ws, 6)
    ws.cli("hypothesis", "add", "Quiet one", "--id", "quiet")
    ws.cli("prediction", "add", "quiet", "--expect", "a > b", "--metric", "tput",
           "--a", "config=tp2", "--b", "config=tp1")
    _prime(ws)

    def memo_state() -> tuple[Any, list[int] | None]:
        return _memo_since(ws, monkeypatch)

    kept_at, since = memo_state()
    assert kept_at is not None and not since  # (kept by the full path's reads: none appended since)
    before = ws.j("status", env=FULL)
    assert "quiet" not in [d["id"] for d in before.get("verdict_due", [])]

    def record(*labels: str) -> int:
        return int(ws.j("run", "record", *[x for lb in labels for x in ("--label", lb)], "--metric", "tput=5")["id"])

    def plain(briefs: bool = False) -> str:
        ok, heavy, out, read = _status_reading_briefs(ws)
        assert ok and heavy == []  # (no verdict engine: carried over, not judged again)
        assert read == briefs
        return out

    ids = [record("config=tp8", "conc=1"), record("config=tp4", "conc=2")]
    out = plain(briefs=True)  # (every brief read once: what `status` reads of the hypotheses is kept by their hashes)
    assert memo_state() == (kept_at, ids)  # left where it was: the runs since it still in the journal
    ids.append(record("config=tp2", "conc=1"))  # quiet's first evidence
    out = plain()  # quiet's reason worked out from its index document alone (no brief read)
    assert memo_state() == (kept_at, ids)  # every run since the memo carried over again
    assert out == ws.cli("status", "--json", env=FULL).out  # (the full path keeps the memo again)
    assert memo_state()[1] == []
    doc = json.loads(out)
    assert doc["verdict_due_total"] == before.get("verdict_due_total", 0) + 1
    rid = record("config=tp1", "conc=2")
    out = plain()
    assert memo_state()[1] == [rid] and out == ws.cli("status", "--json", env=FULL).out

def test_status_after_a_todo_list_alone_is_assembled_from_its_kept_parts(ws: Any, settled: None, backend: str) -> None:
    """A todo list written (by the agent's hook, or `todo write`) changes nothing of `status` but
    its todo list: the first status after it assembles the parts kept beside the last one worked
    out on plain SQL (core.statusdoc.parts) with the list as it is, reading no hypothesis (the
    probe sees whether it read every hypothesis's brief), and prints the full path's bytes; after any other
    change the parts are not used: after a run they are worked out from what `status` read of the
    hypotheses (kept by their file hashes: still no brief read), after a hypothesis added from
    every brief."""
    _populate(ws, 6)
    t = time.time() - 60  # every file the stamp stats older than the racy window: the probes keep what they work out
    for f in [ws.root / "optlog.yaml", ws.root / "runs" / "evidence", *(ws.root / "hypotheses").glob("*.yaml")]:
        if f.exists():
            os.utime(f, (t, t))
    _prime(ws)

    def probe() -> tuple[bool, str]:
        ok, _heavy, out, read = _status_reading_briefs(ws)
        return ok and not read, out

    ws.cli("run", "record", "--label", "config=tp8", "--label", "conc=2", "--metric", "tput=1")
    ok, _heavy, _out = _probe(ws, ("status",))  # worked out on plain SQL: its parts kept
    assert ok and probe()[0]  # (and the same stamp: the document itself is the cache's)
    for n, status in enumerate(("in_progress", "pending", "in_progress")):
        todos = [{"content": f"step {n}", "status": status, "activeForm": "doing it"}]
        if n == 1:
            ws.j("todo", "write", "-", input=json.dumps(todos))  # by a command
        else:
            ws.cli("todo", "write", "--queue", "-", input=json.dumps(todos))  # by the hook
        ok, out = probe()
        assert ok and out == ws.cli("status", "--json", env=FULL).out, n
        doc = json.loads(out)
        assert doc["todos"][0]["content"] == f"step {n}" and doc["todos"][0]["status"] == status
    ws.cli("run", "record", "--label", "config=tp4", "--label", "conc=2", "--metric", "tput=2")
    ok, out = probe()  # a run recorded: the parts worked out again, from the hypotheses' side kept
    assert ok and out == ws.cli("status", "--json", env=FULL).out  # (by their file hashes: no brief read)
    assert json.loads(out)["runs_total"] == doc["runs_total"] + 1
    ws.j("hypothesis", "add", "One more", "--id", "h-more")
    ok, _heavy, out, read = _status_reading_briefs(ws)
    assert ok and read and out == ws.cli("status", "--json", env=FULL).out  # a hypothesis added: every brief read again


def test_the_first_status_text_after_each_change_is_the_full_paths(ws: Any, settled: None, backend: str) -> None:
    """`optlog status` (text, for a person) after each kind of change: the full path's bytes, on
    stdout and stderr; answered at the front door wherever its `--json` is."""
    from optlog.api import firstread

    _populate(ws, 12)
    ws.cli("hyp", "set", "h0011", "--status", "falsified", "--why", "by hand")
    ws.cli("todo", "write", "-", input=json.dumps([{"content": "two", "status": "in_progress", "activeForm": "t"}]))
    n = 0
    for kind in CHANGES:
        if kind.startswith("git pull"):
            ws.git("checkout", "--", "hypotheses")
        _prime(ws)
        n += 1
        _change(ws, kind, n)
        answered = []
        real = firstread.answer

        def spy(*a: Any, **k: Any) -> Any:
            r = real(*a, **k)
            answered.append(r is not None)
            return r

        firstread.answer = spy  # type: ignore[assignment]
        try:
            first = ws.cli("status")
        finally:
            firstread.answer = real  # type: ignore[assignment]
        full = ws.cli("status", env=FULL)
        assert first.out == full.out, kind
        assert any(answered) == ((kind, "status") in PLAIN), kind
    assert "next:" in full.out and "optlog " in full.out


def test_status_spells_its_next_calls_as_the_registry_does() -> None:
    """CALL_SHAPES (the front door's spelling of `status`'s next calls) is the verbs' own, and holds
    every call core.statusdoc can suggest."""
    import ast
    import inspect

    from optlog.cli import statustext
    from optlog.cli.render import text
    from optlog.core import statusdoc

    src = "\n".join(inspect.getsource(f) for f in (statusdoc._loop_calls, statusdoc.todo_calls))  # next_calls' two halves
    made: dict[str, set[str]] = {}
    for node in ast.walk(ast.parse(src)):
        if isinstance(node, ast.Dict):
            keys = [k.value for k in node.keys if isinstance(k, ast.Constant)]
            if "call" in keys and "arguments" in keys:
                call = node.values[keys.index("call")]
                args = node.values[keys.index("arguments")]
                assert isinstance(call, ast.Constant) and isinstance(args, ast.Dict)
                made[call.value] = {k.value for k in args.keys if isinstance(k, ast.Constant)}
    assert made and set(made) == set(statustext.CALL_SHAPES)
    for call, keys in made.items():
        assert keys <= set(statustext.CALL_SHAPES[call]), call
        assert text.call_shape(call, list(statustext.CALL_SHAPES[call])) == statustext.CALL_SHAPES[call], call
    # and the text of a next call is command_line's
    args = {"title": "…", "gain": "10-30%", "effort": "M", "confidence": 0.5, "needs": ["h=falsified"]}
    assert statustext.known_call("plan_add", args) == text.command_line("plan_add", args)


def test_a_first_read_imports_no_orm(ws: Any, settled: None, backend: str) -> None:
    """A regression to the full path fails here: after a run is recorded (and after a hypothesis
    added by optlog) each read is answered by a process that imported none of SQLAlchemy,
    SQLModel, pydantic or click, with the full path's bytes."""
    _populate(ws, 5)
    n = 0
    for kind in ("run recorded", "hypothesis added by optlog", "todo written (hook)"):
        for name, args in READS.items():
            if (kind, name) not in PLAIN:
                continue
            _prime(ws)
            n += 1
            _change(ws, kind, n)
            ok, heavy, out = _probe(ws, args)
            assert ok and heavy == [], (kind, name, heavy)
            assert out == ws.cli(*args, "--json", env=FULL).out, (kind, name)


def test_a_first_read_after_a_hand_edit_or_a_pull_imports_no_orm(ws: Any, settled: None, backend: str) -> None:
    """The changed files are re-indexed by the full path's loader (pydantic, YAML) on plain SQL:
    no SQLAlchemy, SQLModel or click; the same bytes on stdout, and on stderr the notice the full
    path gives of a hand edit."""
    _populate(ws, 12)
    n = 0
    for kind in ("hypothesis edited by hand", "git pull of 10 hypothesis files"):
        for name in ("status", "hypothesis list"):
            args = READS[name]
            if kind.startswith("git pull"):
                ws.git("checkout", "--", "hypotheses")
            _prime(ws)
            n += 1
            _change(ws, kind, n)
            ok, heavy, out = _probe(ws, args)
            assert ok and not set(heavy) & set(ORM), (kind, name, heavy)
            assert out == ws.cli(*args, "--json", env=FULL).out, (kind, name)


def test_a_hand_edit_is_noticed_once_as_the_full_path_does(ws: Any, settled: None, backend: str) -> None:
    _populate(ws, 3)
    f = ws.root / "hypotheses" / "h0001.yaml"
    _prime(ws)
    _toggle(f, "s")
    full = ws.cli("hypothesis", "list", "--json", env=FULL)
    _prime(ws)
    _toggle(f, "s")
    first = ws.cli("hypothesis", "list", "--json")
    assert first.err == full.err and "picked up an edit of hypotheses/h0001.yaml" in first.err
    assert ws.cli("status", "--json").err == ""  # noticed once


def test_an_invalid_hand_edit_is_refused_by_the_full_path(ws: Any, settled: None) -> None:
    _populate(ws, 3)
    _prime(ws)
    f = ws.root / "hypotheses" / "h0001.yaml"
    f.write_text(f.read_text().replace("expect: a > b", "expect: a >>> b"))
    for args in (("status",), ("hypothesis", "list")):
        bad = ws.cli(*args, "--json", check=2)
        assert bad.out == ws.cli(*args, "--json", env=FULL, check=2).out
    f.write_text(f.read_text().replace("parent: null\n", "").replace("title:", "parent: nobody\ntitle:", 1))
    for args in (("status",), ("hypothesis", "list")):
        assert ws.cli(*args, "--json", check=2).out == ws.cli(*args, "--json", env=FULL, check=2).out



WRITER = """
import json, re, subprocess, sys
from pathlib import Path
f = Path("hypotheses/h0001.yaml")
out = []
for i in range(int(sys.argv[1])):
    f.write_text(re.sub(r"title: .*", f"title: Other {i}", f.read_text(), count=1))
    p = subprocess.run([sys.executable, "-m", "optlog", "hypothesis", "list", "--json"], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    out.append({h["id"]: h["title"] for h in json.loads(p.stdout)["hypotheses"]})
print(json.dumps(out))
"""


def test_a_file_deleted_by_hand_that_another_names_is_refused_as_the_full_path_refuses(ws: Any, settled: None,
                                                                                     backend: str) -> None:
    """The links the plain re-index checks come from the index's parent and rivals columns (not
    every document parsed again): a file deleted by hand that another hypothesis names as its rival
    or parent is the full path's error, for `status` and `hypothesis list` alike."""
    ws.cli("hyp", "add", "A", "--id", "a")
    ws.cli("hyp", "add", "B", "--id", "b", "--rival", "a")
    ws.cli("hyp", "add", "C", "--id", "c", "--parent", "b")
    for gone in ("a", "b"):
        _prime(ws)
        (ws.root / "hypotheses" / f"{gone}.yaml").unlink()
        for args in (READS["status"], READS["hypothesis list"]):
            got = ws.cli(*args, "--json", check=False, subprocess=True)
            full = ws.cli(*args, "--json", check=False, env=FULL, subprocess=True)
            assert got.code == full.code == 2 and got.out == full.out and f"no hypothesis {gone!r}" in got.err, got
        ws.git("checkout", "--", "hypotheses")


def test_two_processes_editing_and_reading_at_once_never_read_stale(ws: Any, settled: None, backend: str) -> None:
    """Two real processes, each editing a hypothesis by hand and reading at once (so each re-indexes
    on plain SQL while the other may): each read shows its own edit, never an older edit of the other
    than one it had shown already, and at the end the plain path and the full path agree."""
    _populate(ws, 6)
    _prime(ws)
    n = 6
    other = subprocess.Popen([sys.executable, "-c", WRITER, str(n)], cwd=ws.root, env={**ws.env, "OPTLOG_READ_CACHE": "1"},
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    mine: list[dict[str, str]] = []
    f = ws.root / "hypotheses" / "h0002.yaml"
    for i in range(n):
        f.write_text(re.sub(r"title: .*", f"title: Mine {i}", f.read_text(), count=1))
        for args in (("hypothesis", "list"), ("status",)):
            doc = ws.j(*args, subprocess=True)
            titles = ({h["id"]: h["title"] for h in doc["hypotheses"]} if args[0] == "hypothesis"
                      else {h["id"]: h["title"] for h in doc["hypotheses"]["open"]})
            if "h0002" in titles:
                assert titles["h0002"] == f"Mine {i}", (args, titles)
            mine.append(titles)
    out, err = other.communicate(timeout=300)
    assert other.returncode == 0, err
    theirs = json.loads(out)
    for i, titles in enumerate(theirs):
        assert titles["h0001"] == f"Other {i}", titles
    seen = [int(t["h0001"].split()[-1]) for t in mine if t.get("h0001", "").startswith("Other")]
    assert seen == sorted(seen)  # never an older edit after a newer one
    for args in READS.values():
        assert ws.cli(*args, "--json", subprocess=True).out == ws.cli(*args, "--json", env=FULL).out, args
    final = {h["id"]: h["title"] for h in ws.j("hypothesis", "list", subprocess=True)["hypotheses"]}
    assert final["h0001"] == f"Other {n - 1}" and final["h0002"] == f"Mine {n - 1}"


def test_queued_todo_lists_are_applied_on_plain_sql_as_the_full_path_applies_them(make_ws: Any, settled: None,
                                                                                 backend: str) -> None:
    """Two lists queued by the hook (a hook payload, then a plain document), applied oldest first:
    the todo list, its owner and `status` as the full path leaves them; a list that links a
    hypothesis, or a hand-made file the guards refuse, is left to the full path."""
    a, b = make_ws("plain"), make_ws("full")
    for ws in (a, b):
        _populate(ws, 3)
        ws.cli("todo", "write", "-", input=json.dumps([{"id": "keep", "content": "kept", "status": "in_progress"},
                                                        {"content": "dropped", "status": "pending"}]))
        _prime(ws)
        ws.cli("todo", "write", "--queue", "-", input=json.dumps(
            {"tool_name": "TodoWrite", "tool_input": {"todos": [{"content": "first", "status": "pending", "activeForm": "f"}]}}))
        ws.cli("todo", "write", "--queue", "-", input=json.dumps({"todos": [
            {"id": "keep", "content": "kept, edited", "status": "in_progress", "priority": "high", "note": "x"},
            {"content": "first", "status": "completed", "activeForm": "f"}, {"content": "new ünï", "status": "pending"}]}))
    ok, heavy, out = _probe(a, ("todo", "list"))
    assert ok and heavy == [] and not list((a.root / ".optlog" / "todo-inbox").glob("*.json"))
    full = b.cli("todo", "list", "--json", env=FULL).out
    strip = lambda t: [{k: v for k, v in d.items() if k != "id" or v == "keep"} for d in json.loads(t)["todos"]]  # noqa: E731
    assert strip(out) == strip(full)  # new todos get fresh ids: the rest byte for byte
    assert out == a.cli("todo", "list", "--json", env=FULL).out
    assert a.cli("status", "--json").out == a.cli("status", "--json", env=FULL).out
    assert json.loads(a.cli("status", "--json").out)["next"] == json.loads(b.cli("status", "--json", env=FULL).out)["next"]
    # a list that links a hypothesis: the full path applies it
    a.cli("todo", "write", "--queue", "-", input=json.dumps([{"content": "linked", "status": "pending", "hypothesis": "h0001"}]))
    ok, heavy, out = _probe(a, ("todo", "list"))
    assert not ok and len(list((a.root / ".optlog" / "todo-inbox").glob("*.json"))) == 1  # handed back, untouched
    assert json.loads(a.cli("todo", "list", "--json").out)["todos"][0]["hypothesis"] == "h0001"
    # a hand-made file the guards refuse (NaN): handed back, the full path keeps it aside and says so
    _prime(a)
    inbox = a.root / ".optlog" / "todo-inbox"
    (inbox / "00000000000000000001-1.json").write_text('{"todos": [{"content": "x", "status": "pending", "n": NaN}]}')
    r = a.cli("todo", "list", "--json")
    assert "was not applied" in r.err and list(inbox.glob("*.bad"))


def test_a_file_edited_after_the_stamp_lists_it_is_never_served_stale(ws: Any, settled: None, backend: str,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """The stamp after a read on plain SQL reuses the listing taken before it (`readcache.stamp`'s
    `like`): the document must be the one for the files as *that* listing saw them, so a hand edit
    made between the listing and the read is shown by the next read, never hidden by what this
    read kept."""
    from optlog.api import firstread
    from optlog.paths import find_workspace
    from optlog.store import readcache

    _populate(ws, 4)
    _prime(ws)
    ws.cli("run", "record", "--label", "config=tp8", "--metric", "tput=1")  # so both reads are worked out on plain SQL
    for k, v in ws.env.items():
        monkeypatch.setenv(k, v)  # the workspace's database (OPTLOG_DB_URL on PostgreSQL), in this process
    for words in (["status"], ["hypothesis", "list"]):
        w = find_workspace(ws.root)
        pg = firstread.pg_connection(w)
        reads = readcache.reads_of(words)
        st = readcache.stamp(w, firstread.facts(pg), reads=reads)
        assert st is not None and st.files is not None
        f = ws.root / "hypotheses" / "h0002.yaml"
        f.write_text(re.sub(r"title: .*", f"title: Edited for {words[0]}", f.read_text(), count=1))
        text = firstread.answer(w, json.dumps(words), st, reads=reads, pg=pg)
        if pg is not None:
            pg.close()
        assert text is not None and f"Edited for {words[0]}" not in text  # the files as listed
        after = ws.j(*words, subprocess=True)
        rows = after["hypotheses"] if words[0] == "hypothesis" else after["hypotheses"]["open"]
        assert {h["id"]: h["title"] for h in rows}["h0002"] == f"Edited for {words[0]}"
        assert ws.cli(*words, "--json", subprocess=True).out == ws.cli(*words, "--json", env=FULL).out


def test_the_newest_evidence_is_kept_under_the_evidence_counter_and_grown_by_appends(
        ws: Any, settled: None, backend: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """`plainread.newest_evidence`, on the workspace's real database: the value it keeps is read
    back while the evidence counter stands (a marker planted in it shows), grown by the runs a
    `run record` appended (the marker stays beside the new run's time), and read from every run
    again after any other evidence write (an invalidation: the marker is gone). Each time equal to
    reading every run, and `status`'s bytes the full path's."""
    from optlog.api import firstread
    from optlog.paths import find_workspace
    from optlog.store import plainread, plainstatus

    _populate(ws, 4)
    _prime(ws)
    for k, v in ws.env.items():
        monkeypatch.setenv(k, v)  # the workspace's database (OPTLOG_DB_URL on PostgreSQL), in this process
    w = find_workspace(ws.root)

    def newest(plant: dict[str, str] | None = None) -> tuple[dict[str, str], dict[str, str]]:
        pg = firstread.pg_connection(w)
        con = pg if pg is not None else plainread.connect(w.sqlite_file)
        try:
            q = plainread.query(con)
            kept: dict[str, Any] = {}
            got = plainread.newest_evidence(q, kept.__setitem__)
            wrote.append(bool(kept))
            if kept:
                plainstatus._keep(w, con, kept)
            if plant is not None:
                gen = int(q(plainread.EVIDENCE_COUNTER_SQL, {})[0][0])
                plainstatus._keep(w, con, {plainread.NEWEST_KEY: {"gen": gen, "map": {**got, **plant}}})
            return got, plainread.newest_evidence(q)  # (without `keep`: every run read)
        finally:
            con.close()

    wrote: list[bool] = []
    got, scratch = newest()
    assert got == scratch and set(scratch) >= {"h0000", "h0001"}
    newest(plant={"zz-marker": "2099-01-01T00:00:00.000Z"})
    got, scratch = newest()
    assert got == {**scratch, "zz-marker": "2099-01-01T00:00:00.000Z"}  # read back, not worked out
    before = scratch["h0001"]
    rid = ws.j("run", "record", "--label", "config=tp8", "--metric", "tput=1", "--hypothesis", "h0001")["id"]
    got, scratch = newest()
    assert got == {**scratch, "zz-marker": "2099-01-01T00:00:00.000Z"}  # grown by the appended run
    assert scratch["h0001"] > before  # (the new run is h0001's newest)
    assert wrote[-1] is False  # carried over, not kept again (one read in core.duestate.LAZY_RUNS runs keeps it)
    rid2 = ws.j("run", "record", "--label", "config=tp4", "--metric", "tput=1", "--hypothesis", "h0000")["id"]
    got, scratch = newest()
    assert got == {**scratch, "zz-marker": "2099-01-01T00:00:00.000Z"} and wrote[-1] is False  # both runs since
    ws.cli("run", "invalidate", str(rid2), "--why", "bad node")
    ws.cli("run", "invalidate", str(rid), "--why", "bad node")
    got, scratch = newest()
    assert got == scratch and "zz-marker" not in got and got["h0001"] == before  # read from every run again
    _prime(ws)
    ws.cli("run", "record", "--label", "config=tp8", "--metric", "tput=2", "--hypothesis", "h0002")
    ok, _heavy, out = _probe(ws, ("status",))
    assert ok and out == ws.cli("status", "--json", env=FULL).out


def test_the_hypothesis_list_joins_kept_entries_around_the_links_as_they_are(ws: Any, settled: None,
                                                                            backend: str) -> None:
    """`plainread.hypothesis_list_text` keeps each entry's text by file hash and joins the kept
    texts around the children and rivals the index's link columns give now: a text planted in the
    kept entry of a file nobody changed shows (so it was not worked out again), while the links a
    new hypothesis makes to it show beside it; a file changed by hand is worked out again (the
    planted text gone). Every other read is byte for byte the full path's, after adds with links, a
    manual status, a hand edit, a file deleted by hand and a pull."""
    from optlog.store import plainread, readcache

    _populate(ws, 10)
    _prime(ws)
    ws.cli("hyp", "add", "First", "--id", "first", "--parent", "h0001")
    ok, _heavy, out = _probe(ws, ("hypothesis", "list"))
    assert ok and out == ws.cli("hypothesis", "list", "--json", env=FULL).out
    path = ws.root / ".optlog" / readcache.CACHE_DIR / plainread.LIST_ENTRIES
    version, _, kept = path.read_text(encoding="utf-8").partition("\n")
    newer = path.with_name(path.name + readcache.NEWER)  # (the rows worked out since it was written whole)
    assert kept.count("\n") + (newer.read_text(encoding="utf-8").count("\n") - 1 if newer.exists() else 0) == 11
    assert '"title": "Hypothesis 3"' in kept
    path.write_text(f"{version}\n" + kept.replace('"title": "Hypothesis 3"', '"title": "Planted 3"'), encoding="utf-8")
    ws.cli("hyp", "add", "Second", "--id", "second", "--parent", "h0003", "--rival", "h0004")
    ok, _heavy, out = _probe(ws, ("hypothesis", "list"))
    got = {h["id"]: h for h in json.loads(out)["hypotheses"]}
    assert ok and got["h0003"]["title"] == "Planted 3"  # kept, not worked out again
    assert got["h0003"]["children"] == ["second"] and got["h0004"]["rivals"] == ["second"]  # the links as they are
    assert got["h0001"]["children"] == ["first"] and got["second"]["rivals"] == ["h0004"]
    _toggle(ws.root / "hypotheses" / "h0003.yaml", "s")  # by hand: its hash moves
    ok, _heavy, out = _probe(ws, ("hypothesis", "list"))
    assert ok and out == ws.cli("hypothesis", "list", "--json", env=FULL).out and "Planted" not in out
    for change in (lambda: (ws.git("checkout", "--", "hypotheses"), _change(ws, "git pull of 10 hypothesis files", 1)),
                   lambda: ws.cli("hyp", "set", "h0002", "--status", "falsified", "--why", "by hand"),
                   lambda: ws.cli("hyp", "add", "Third", "--id", "third", "--rival", "second"),
                   lambda: (ws.root / "hypotheses" / "third.yaml").unlink()):
        _prime(ws)
        change()
        first = ws.cli("hypothesis", "list", "--json", subprocess=True)
        assert first.out == ws.cli("hypothesis", "list", "--json", env=FULL).out


def test_status_reads_the_briefs_kept_by_file_hash_and_works_out_a_changed_files(ws: Any, settled: None,
                                                                              backend: str) -> None:
    """`plainstatus.briefs` keeps what `status` reads of each hypothesis by file hash: a title planted
    in the kept brief of a file nobody changed shows in the first status after another file was
    added (so it was not read again), and a file changed by hand is read again (the planted title
    gone, the edit shown, the full path's bytes)."""
    from optlog.store import plainstatus, readcache

    _populate(ws, 4)
    _prime(ws)
    ws.cli("hyp", "add", "First", "--id", "first")
    ok, _heavy, out = _probe(ws, ("status",))
    assert ok and out == ws.cli("status", "--json", env=FULL).out
    path = ws.root / ".optlog" / readcache.CACHE_DIR / plainstatus.BRIEFS
    version, _, kept = path.read_text(encoding="utf-8").partition("\n")
    assert kept.count("\n") == 5 and '"title":"Hypothesis 2"' in kept
    path.write_text(f"{version}\n" + kept.replace('"title":"Hypothesis 2"', '"title":"Planted 2"'), encoding="utf-8")
    ws.cli("hyp", "add", "Second", "--id", "second")
    ok, _heavy, out = _probe(ws, ("status",))
    titles = {h["id"]: h["title"] for h in json.loads(out)["hypotheses"]["open"]}
    assert ok and titles["h0002"] == "Planted 2" and titles["second"] == "Second"  # kept, not read again
    f = ws.root / "hypotheses" / "h0002.yaml"
    f.write_text(re.sub(r"title: .*", "title: Edited 2", f.read_text(), count=1))
    ok, _heavy, out = _probe(ws, ("status",))
    assert ok and out == ws.cli("status", "--json", env=FULL).out
    assert {h["id"]: h["title"] for h in json.loads(out)["hypotheses"]["open"]}["h0002"] == "Edited 2"


def test_status_reads_the_hypotheses_in_the_full_paths_order(ws: Any, settled: None, backend: str) -> None:
    """What `status` proposes first among equals follows the order the full path reads the
    hypotheses in (their files by name), not the order the index rows were written in: `zeta`
    added before `alpha` and `alpha-b`, none with a prediction, the first status after another
    change proposes the same `prediction_add` as the full path (`alpha-b.yaml` sorts before
    `alpha.yaml`)."""
    for hid in ("zeta", "alpha", "alpha-b"):
        ws.cli("hyp", "add", f"Title {hid}", "--id", hid)
    _prime(ws)
    ws.cli("hyp", "add", "Later", "--id", "later")
    ok, _heavy, out = _probe(ws, ("status",))
    full = ws.cli("status", "--json", env=FULL).out
    assert json.loads(full)["next"][0]["arguments"] == {"hypothesis": "alpha-b", "expect": "a > b"}
    assert ok and out == full


def test_what_is_due_is_carried_over_the_runs_a_launch_made(ws: Any, settled: None, backend: str) -> None:
    """A launch's bookkeeping (its row, queued and running runs, process records, progress, failed
    points) moves no evidence counter, and the write that makes a run succeed journals it as an
    append (`touches="launch"` / `"append"`): the first `status` after a real launch of the GEMM
    probe carries what is due over the runs it made, without the verdict engine, and says what
    the full path says; a prediction whose groups those runs fill has evidence naming them."""
    import yaml

    ws.cli("hyp", "add", "Bigger GEMMs run faster", "--id", "gemm")
    ws.cli("prediction", "add", "gemm", "--expect", "a < b", "--metric", "flops", "--a", "m=8", "--b", "m=32")
    ws.cli("hyp", "add", "Untouched", "--id", "other")
    ws.cli("prediction", "add", "other", "--expect", "a > b", "--metric", "tput", "--a", "config=x", "--b",
           "config=y", "--new-metric")
    ws.cli("run", "record", "--label", "config=x", "--metric", "tput=1")  # a run, so status judges what is due
    _prime(ws)
    cmd = (f"{sys.executable} -m optlog.probes.gemm --m {{{{ m }}}} --k 32 --n 32 --dtype fp32 --device cpu "
           "--repeats 1 --output {{ out }}/result.json")
    (ws.root / "runs" / "shapes.yaml").write_text(yaml.safe_dump(
        {"name": "shapes", "bench": {"cmd": cmd, "parser": "probe"}, "matrix": {"m": [8, 32]}, "repeats": 2},
        sort_keys=False))
    launched = ws.j("run", "launch", "runs/shapes.yaml")
    ids = sorted(r["id"] for r in launched["runs"])
    assert len(ids) == 4 and all(r["status"] == "succeeded" for r in launched["runs"]), launched
    ok, heavy, out = _probe(ws, ("status",))
    assert ok and "optlog.core.verdict" not in heavy, heavy  # carried over, not judged from every run
    assert out == ws.cli("status", "--json", env=FULL).out
    due = {d["id"]: d["why"] for d in json.loads(out)["verdict_due"]}
    assert due["gemm"] == f"gemm.p1 has evidence (runs {', '.join(map(str, ids))}) and no verdict yet", due


def test_only_a_write_that_moves_the_evidence_counter_may_make_a_run_evidence(ws: Any, monkeypatch: pytest.MonkeyPatch
                                                                             ) -> None:
    """`Database.moves_evidence`, which the launcher asks before it marks a run succeeded: false in
    a launch's bookkeeping write (alone), true in an append, in any other write, and in a launch
    write nested in one that moves it."""
    from optlog.service.context import Ctx

    for k, v in ws.env.items():
        monkeypatch.setenv(k, v)
    ctx = Ctx.find(ws.root, actor="test")
    try:
        db = ctx.db
        assert not db.moves_evidence()  # no write open
        with db.write(touches="launch"):
            assert not db.moves_evidence()
        for kind in ("append", "all"):
            with db.write(touches=kind):
                assert db.moves_evidence()
                with db.write(touches="launch"):
                    assert db.moves_evidence()
    finally:
        ctx.close()


def test_a_first_read_runs_without_the_cyclic_collector_and_leaves_it_as_it_was(ws: Any, settled: None,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """The first read builds tens of thousands of objects and no cycle: the collector is off while
    `firstread.answer` works it out (at 10,000 hypotheses its passes were ~2/3 of reading the
    briefs), and on again after, whether the read answered or fell back."""
    import gc

    from optlog.store import plainread

    _populate(ws, 3)
    _prime(ws)
    seen: list[bool] = []
    real = plainread.document

    def spy(*a: Any, **k: Any) -> Any:
        seen.append(gc.isenabled())
        return real(*a, **k)

    monkeypatch.setattr(plainread, "document", spy)
    ws.cli("hyp", "add", "X", "--id", "x")
    assert gc.isenabled()
    first = ws.cli("status", "--json")
    assert seen == [False] and gc.isenabled()
    assert first.out == ws.cli("status", "--json", env=FULL).out
    (ws.root / "hypotheses" / "x.yaml").write_text("not: [valid")  # the plain path declines: the full path says why
    ws.cli("status", "--json", check=False)
    assert seen == [False, False] and gc.isenabled()


def test_a_first_read_is_one_moment_whatever_commits_between_its_statements(ws, monkeypatch):
    """`run list` on plain SQL counts the runs, then reads the page: another process recording a run
    between the two statements gave a page of 2 runs that said "total": 1 (each statement saw the
    latest commit). A first read's document is read as of one moment (a read transaction: SQLite's
    snapshot, PostgreSQL's REPEATABLE READ), as the full path's is (store.db.Database.read)."""
    from optlog.paths import find_workspace
    from optlog.store import plainread

    ws.cli("run", "record", "--label", "n=1", "--metric", "x=1")
    for k, v in ws.env.items():
        monkeypatch.setenv(k, v)
    w = find_workspace(ws.root)
    recorded = []

    def between(sql):  # just before the page is read: the count has been read
        if sql.lstrip().startswith("SELECT id, uid") and not recorded:
            recorded.append(ws.cli("run", "record", "--label", "n=2", "--metric", "x=2", subprocess=True).code)

    pg = plainread.pg_connect(w.db_url, w.identity) if w.sqlite_file is None else None
    if pg is None:
        assert w.sqlite_file is not None
        connect = plainread.connect

        def traced(f):
            con = connect(f)
            con.set_trace_callback(between)
            return con

        monkeypatch.setattr(plainread, "connect", traced)
        doc = plainread.document(w, ["run", "list", "--limit", "20"])
    else:
        class Traced:  # psycopg has no statement hook: the connection's execute, seen first
            def __init__(self, con):
                self.con = con

            def execute(self, sql, *a, **k):
                between(sql)
                return self.con.execute(sql, *a, **k)

            def __getattr__(self, name):
                return getattr(self.con, name)

        try:
            doc = plainread.document(w, ["run", "list", "--limit", "20"], Traced(pg))
        finally:
            pg.close()
    assert recorded == [0]  # the other process did commit in between
    assert doc is not None and doc["total"] == len(doc["runs"]) == 1, doc
    assert len(ws.j("run", "list", "--limit", "20")["runs"]) == 2  # and the next read shows it
