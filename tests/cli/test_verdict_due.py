"""Issue 42, item 6: "verdict due" follows the evidence, not the clock.

A verdict committed while the clock was a day ahead, then runs that change its outcome: `status`
used to compare the newest run's time with the verdict's and said nothing was due (while
`verdict --all` did re-judge). And a verdict written with the clock a day behind made runs
it had already judged look newer than it: due forever. Now a hypothesis's verdict is due when the
evidence its predictions would use differs from what its latest verdict used (the engine's
evidence fingerprint per prediction: runs, labels, values, the prediction as written), whatever the
timestamps say. The clock is moved with `OPTLOG_NOW` (every timestamp optlog writes) and git's
commit dates; the dashboard's overview reads the same definition (`service.dashboard`)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from optlog.paths import Workspace as Paths
from optlog.service.context import Ctx
from optlog.service.dashboard import overview
from tests._verdicts import repeats, seed_runs


def _clock(days: float) -> dict[str, str]:
    t = (datetime.now(timezone.utc) + timedelta(days=days)).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {"OPTLOG_NOW": t, "GIT_COMMITTER_DATE": t, "GIT_AUTHOR_DATE": t}


def _setup(ws) -> None:
    ws.cli("hyp", "add", "X beats Y", "--id", "h")
    ws.cli("predict", "h", "--expect", "a > b", "--metric", "t", "--a", "cfg=x", "--b", "cfg=y")
    ws.cli("hyp", "add", "Unrelated", "--id", "u")
    ws.cli("predict", "u", "--expect", "a > b", "--metric", "t", "--a", "cfg=p", "--b", "cfg=q")
    seed_runs(ws, repeats({"cfg": "x"}, "t", [10, 11, 12]) + repeats({"cfg": "y"}, "t", [5, 6, 7]))


def _due(ws) -> list[str]:
    return [d["id"] for d in ws.j("status").get("verdict_due", [])]


def test_a_verdict_dated_ahead_is_due_when_runs_change_it(ws, monkeypatch):
    _setup(ws)
    assert _due(ws) == ["h"]  # evidence and no verdict yet
    r = ws.cli("verdict", "--all", "--json", env=_clock(1))
    assert {x["hypothesis"]: x["auto_status"] for x in r.json["results"]}["h"] == "confirmed"
    assert _due(ws) == []
    # runs that change the outcome, recorded (and linked) now: a day before the verdict's date
    for v in (100, 110, 120):
        ws.cli("run", "record", "--label", "cfg=y", "--metric", f"t={v}", "--hypothesis", "h")
    st = ws.j("status")
    assert [d["id"] for d in st.get("verdict_due", [])] == ["h"], st
    assert st["next"][0] == {"call": "verdict", "arguments": {"id": "h"}, "why": st["next"][0]["why"]}
    assert "h" in st["verdict_due"][0]["why"] and "7" in st["verdict_due"][0]["why"], st["verdict_due"]
    assert "verdict due: h" in ws.cli("status").out
    for k, v in ws.env.items():  # the workspace's database, in this process
        monkeypatch.setenv(k, v)
    ctx = Ctx(Paths(ws.root), actor="tester")
    try:
        assert [d["id"] for d in overview(ctx, [])["due"]] == ["h"]  # the TUI's overview pane
    finally:
        ctx.close()
    # an unlinked run its groups select counts too: judged, then another one arrives
    ws.cli("verdict", "--all")
    assert _due(ws) == []
    seed_runs(ws, repeats({"cfg": "x"}, "t", [1]))
    assert _due(ws) == ["h"]
    ws.cli("verdict", "h", env=_clock(2))
    assert _due(ws) == []


def test_a_verdict_dated_behind_is_not_due_forever(ws):
    """The other way round: a verdict written with the clock a day behind has judged every run;
    runs that look newer than it are no reason to judge again (`verdict` would commit nothing)."""
    _setup(ws)
    for v in (8, 9):
        ws.cli("run", "record", "--label", "cfg=y", "--metric", f"t={v}", "--hypothesis", "h")
    ws.cli("verdict", "--all", env=_clock(-1))
    assert _due(ws) == []
    before = ws.commits()
    ws.cli("verdict", "--all")
    assert ws.commits() == before  # nothing to judge again, as status said


def _failed_launch(ws) -> int:
    """A launch that ended badly now (its row, as a launch that failed leaves it)."""
    from optlog.paths import Workspace as OWs
    from optlog.store.db import Database
    from optlog.store.launchrows import add_launch

    now = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.000Z")
    db = Database(OWs(ws.root), url=ws.env.get("OPTLOG_DB_URL"))
    try:
        with db.write() as s:
            return int(add_launch(s, status="failed", created_at=now, finished_at=now, error="server died").id)
    finally:
        db.dispose()


def test_a_launch_that_failed_after_a_verdict_dated_ahead_is_shown(ws):
    """status lists the launches that ended badly since the last verdict: by launch ids the verdict
    had seen, not by comparing the launch's end with the verdict's date."""
    _setup(ws)
    before = _failed_launch(ws)
    ws.cli("verdict", "--all", env=_clock(1))
    after = _failed_launch(ws)
    shown = [la["ref"] for la in ws.j("status").get("launches", [])]
    assert shown == [f"L{after}"], shown  # L{before} the verdict had seen
    assert f"L{before}" not in shown
