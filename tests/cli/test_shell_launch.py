"""Issue 42.2 through a real launch: a `--set` or matrix value (what an agent passes as `sets`)
substituted into a bench's `sh -c` script reaches it as text and never runs; where optlog cannot
quote it (backquotes), the launch is refused before anything is written: exit 2, file, line,
field, and the fix."""

from __future__ import annotations

from _launch import spec

HOSTILE = ["a; touch {S}", "$(touch {S})", "`touch {S}`", "'; touch {S}; '", "\"; touch {S}; \""]


def test_hostile_values_reach_a_shell_script_as_text(ws, tmp_path):
    sentinel = tmp_path / "PWNED"
    vals = [h.replace("{S}", str(sentinel)) for h in HOSTILE]
    script = ("printf '{\"completed\": 1}' > {{ out }}/result.json; printf '%s' {{ x }} > {{ out }}/x1; "
              "printf '%s' \"{{ x }}\" > {{ out }}/x2; printf '%s' '{{ y }}' > {{ out }}/y")
    rel = spec(ws, "sh", server=False, matrix={"x": vals}, params={"y": "p"},
               bench={"cmd": ["sh", "-c", script], "parser": "json", "results": ["result.json"]})
    r = ws.cli("run", "launch", rel, "--set", f"y={vals[0]}", "--json", check=False)
    assert r.code == 0, r.err
    assert not sentinel.exists()
    runs = r.json["runs"]
    assert len(runs) == len(vals)
    for run in runs:
        x = run["labels"]["x"]
        out = ws.root / ".optlog" / "runs" / str(run["id"])
        assert (out / "x1").read_text() == x and (out / "x2").read_text() == x
        assert (out / "y").read_text() == vals[0]


def test_a_value_optlog_cannot_quote_is_refused_before_running(ws, tmp_path):
    sentinel = tmp_path / "PWNED"
    rel = spec(ws, "bq", server=False, params={"x": "plain"},
               bench={"cmd": ["sh", "-c", "echo `echo {{ x }}` > {{ out }}/result.json"], "parser": "json"})
    before = ws.git("rev-parse", "HEAD")
    r = ws.cli("run", "launch", rel, "--set", f"x=$(touch {sentinel})", "--json", check=False)
    assert r.code == 2, r.out + r.err
    err = r.json["error"]
    assert err["file"] == rel and err["field"] == "bench.cmd" and err["line"]
    assert "backquotes" in err["message"] and "\"$1\"" in err["message"]
    assert not sentinel.exists() and ws.git("rev-parse", "HEAD") == before
    assert ws.cli("run", "list", "--json").json["runs"] == []


def test_an_agents_sets_through_mcp_never_run(ws, tmp_path):
    """The same through the MCP face: an agent's `sets` reach the script as text, or are refused."""
    import anyio

    from test_mcp import _data, _session

    sentinel = tmp_path / "PWNED"
    rel = spec(ws, "mcpsh", server=False, params={"x": "plain"},
               bench={"cmd": ["sh", "-c", "printf '{\"completed\": 1}' > {{ out }}/result.json; printf '%s' {{ x }} > {{ out }}/x"],
                      "parser": "json", "results": ["result.json"]})
    bq = spec(ws, "mcpbq", server=False, params={"x": "plain"},
              bench={"cmd": ["sh", "-c", "echo `echo {{ x }}` > {{ out }}/result.json"], "parser": "json"})
    hostile = f"a; touch {sentinel}; $(touch {sentinel})"

    async def calls(s):
        ok = _data(await s.call_tool("run_launch", {"spec": rel, "sets": {"x": hostile}, "detach": False}))
        bad = await s.call_tool("run_launch", {"spec": bq, "sets": {"x": hostile}, "detach": False})
        return ok, bad

    ok, bad = anyio.run(_session, ws, calls)
    assert not sentinel.exists()
    (run,) = ok["runs"]
    assert (ws.root / run["artifacts_dir"] / "x").read_text() == hostile
    assert bad.is_error and "backquotes" in bad.content[0].text
