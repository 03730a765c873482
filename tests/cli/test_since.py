"""Every `since` reads a time the same way (issue 42): `run list`, `note list`, `log` and `report`
(and their MCP tools) refuse a text that is no time with a clear message naming `since` (exit 2;
an MCP error whose field is `since`); `run list --since yesterdayish` returned no runs without a
word while `report --since` refused it. A date, a time without a zone (UTC) and one with an offset
all read as the moment they name."""

from __future__ import annotations

from tests._face import face
from tests._verdicts import seed_runs

VERBS = (("run", "list"), ("note", "list"), ("log",), ("report",))
TOOLS = ("run_list", "note_list", "log", "report")


def test_a_since_that_is_no_time_is_refused_everywhere(ws, monkeypatch):
    seed_runs(ws, [({"g": "a"}, {"m": 1.0})])
    for args in VERBS:
        before = ws.commits()
        r = ws.cli(*args, "--since", "yesterdayish", "--json", check=2)
        err = r.json["error"]
        assert err["field"] == "--since" and "yesterdayish" in err["message"] and "ISO 8601" in err["message"], (args, err)
        assert ws.commits() == before
        r = ws.cli(*args, "--since", "yesterdayish", check=2)
        assert "--since" in r.err and "Traceback" not in r.err, (args, r.err)
    with face(ws, monkeypatch) as call:
        for name in TOOLS:
            doc, is_error, code = call(name, {"since": "yesterdayish"})
            assert is_error and code == 2, (name, doc)
            assert doc["error"]["field"] == "since" and "yesterdayish" in doc["error"]["message"], (name, doc)


def test_a_since_reads_as_the_moment_it_names(ws, monkeypatch):
    seed_runs(ws, [({"g": "a"}, {"m": 1.0})], created_at="2026-03-01T10:00:00.000Z")
    runs = lambda since: [r["id"] for r in ws.j("run", "list", "--since", since)["runs"]]  # noqa: E731
    assert runs("2026-03-01") == runs("2026-03-01T09:59") == runs("2026-03-01T11:59+02:00") == [1]
    assert runs("2026-03-02") == runs("2026-03-01T10:01") == runs("2026-03-01T12:01+02:00") == []
