"""Opening a workspace is an explicit call (issue 35): `open_workspace` runs settings, identity,
recovery and committed evidence in that order and returns what it did; reading a context's
attributes opens nothing."""

from __future__ import annotations

from typing import Any

from tests._face import use_env


def test_reading_attributes_opens_nothing_and_open_says_what_it_did(ws: Any, monkeypatch: Any) -> None:
    from optlog.service.context import Ctx

    use_env(ws, monkeypatch)
    ws.cli("run", "record", "--label", "m=64", "--metric", "x=1")
    (ws.root / "runs" / "evidence").mkdir(parents=True, exist_ok=True)
    ctx = Ctx.find(ws.root)
    try:
        assert (ctx.ws, ctx.actor, ctx.config.name) and ctx.opened is None  # nothing opened on access
        opened = ctx.open()
        assert ctx.opened is opened and ctx.open() is opened and ctx.db is opened.db  # once per context
        assert opened.identity_given is None and opened.recovered == () and opened.imported == 0
    finally:
        ctx.close()


def test_open_imports_runs_committed_in_another_clone(ws: Any, make_ws: Any, monkeypatch: Any) -> None:
    """Step 4 on a real clone: the runs committed in the evidence directory arrive in a database
    that has not read them, and the record counts them."""
    from optlog.service.context import Ctx

    for cfg, v in (("a", 2), ("b", 1)):
        ws.cli("run", "record", "--label", f"config={cfg}", "--metric", f"x={v}")
    ws.cli("hyp", "add", "A is faster", "--id", "a-faster")
    ws.cli("predict", "add", "a-faster", "--expect", "a > b", "--metric", "x", "--a", "config=a", "--b", "config=b")
    ws.cli("verdict", "--all")
    files = sorted((ws.root / "runs" / "evidence").glob("*.yaml"))
    assert len(files) == 2, "the verdict commits the evidence of the runs it used"
    other = make_ws("other")
    use_env(other, monkeypatch)
    (other.root / "runs" / "evidence").mkdir(parents=True, exist_ok=True)
    for f in files:
        (other.root / "runs" / "evidence" / f.name).write_bytes(f.read_bytes())
    ctx = Ctx.find(other.root)
    try:
        opened = ctx.open()
        assert opened.imported == len(files) and opened.recovered == ()
        assert ctx.open().imported == len(files)  # the record, not a second import
    finally:
        ctx.close()


def _leave_intent(ws: Any, hid: str) -> None:
    """A hypothesis file written and its intent recorded, as an optlog killed before its commit
    leaves them (the kill itself: tests/integration/test_write_races.py)."""
    import json

    from optlog.store.hypfiles import current_hash

    path = ws.root / "hypotheses" / f"{hid}.yaml"
    before = current_hash(path)
    path.write_text(path.read_text() + "auto_status: falsified\n")
    (ws.root / ".optlog" / "pending").mkdir(exist_ok=True)
    (ws.root / ".optlog" / "pending" / f"999999-{hid}.json").write_text(json.dumps(
        {"pid": 999999, "changes": [[f"hypotheses/{hid}.yaml", before, current_hash(path)]],
         "subject": f"optlog: {hid} → falsified", "body": "", "trailers": {"Optlog-Event": "verdict"}}))


def test_the_journal_is_a_step_of_opening_and_a_read_commits_nothing(ws: Any, monkeypatch: Any) -> None:
    """Issue 46: completing an interrupted write-and-commit is opening's journal step (named in
    `Opened.journal`), never a side effect of reading the hypotheses (`hypotheses.sync`)."""
    from optlog.service import hypotheses
    from optlog.service.context import open_session

    use_env(ws, monkeypatch)
    for h in ("a", "b"):
        ws.cli("hyp", "add", h.upper(), "--id", h)
    _leave_intent(ws, "a")
    before = ws.commits()
    ctx = open_session(ws.root)
    try:
        opened = ctx.open()
        assert len(opened.journal) == 1 and ws.commits() == before + 1
        _leave_intent(ws, "b")  # left while this session is open: reading does not commit it
        assert set(hypotheses.sync(ctx)) == {"a", "b"} and ws.commits() == before + 1
        assert len(ctx.recover_journal()) == 1 and ws.commits() == before + 2  # the step, asked for
    finally:
        ctx.close()


def test_a_read_command_commits_nothing_and_the_next_write_completes_the_journal(ws: Any, monkeypatch: Any) -> None:
    """Issue 46, "nothing commits as a side effect of a read": a read verb's session opens without
    the journal step (the CLI per command, the MCP server per call), so an interrupted writer's
    leftovers stay pending through reads; the next verb that may write completes them first."""
    from optlog.mcp.face import Face

    use_env(ws, monkeypatch)
    for h in ("a", "b"):
        ws.cli("hyp", "add", h.upper(), "--id", h)
    _leave_intent(ws, "a")
    pending = ws.root / ".optlog" / "pending" / "999999-a.json"
    before = ws.commits()
    for words in (("hypothesis", "list"), ("hypothesis", "show", "a"), ("prediction", "list"), ("log",),
                  ("status",), ("run", "list")):
        r = ws.cli(*words)
        assert ws.commits() == before and pending.exists() and "outside optlog" not in r.err, words
    face = Face(str(ws.root))
    try:
        for tool in ("hypothesis_list", "hypothesis_show", "status"):
            _doc, bad, _code = face.call(tool, {"id": "a"} if tool == "hypothesis_show" else {})
            assert not bad and ws.commits() == before and pending.exists(), tool
        _doc, bad, _code = face.call("hypothesis_edit", {"id": "b", "title": "B, edited"})
        assert not bad and not pending.exists() and ws.commits() == before + 2  # the leftover, then the edit
    finally:
        face.close()
    assert "optlog: a → falsified" in ws.git("log", "-2", "--format=%s")
