"""The agent's face: every CLI command is an MCP tool (one declaration), small results, structured
errors, status as the way back in, setup for Claude Code and OpenCode, hook payloads as they come."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio
import click
import pytest

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "agents"
LIMIT = 4096


async def _session(root, env, calls):
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(command=sys.executable, args=["-m", "optlog", "mcp", "-C", str(root)], env=env)
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            return await calls(session)


def _size(doc) -> int:
    return len(json.dumps(doc, ensure_ascii=False, separators=(",", ":")).encode())


def _ok(result, limit=LIMIT):
    assert not result.is_error, result.content[0].text
    doc = result.structured_content
    assert _size(doc) <= limit, (_size(doc), doc)
    return doc


def _err(result, code, field=None):
    assert result.is_error
    e = result.structured_content["error"]
    assert set(e) >= {"code", "message", "file", "line", "field"}
    assert e["code"] == code, e
    if field is not None:
        assert e["field"] == field, e
    text = result.content[0].text
    assert "\n" not in text and text.startswith(f"{code}: ")
    return e


def test_every_command_is_a_tool_with_described_parameters():
    import jsonschema

    from optlog.cli.binding import of
    from optlog.cli.commands import skipped, walk
    from optlog.mcp.tools import build
    from optlog.core.statuses import HYP_STATUSES, RUN_STATUSES

    cmds = walk()
    paths = {p for p, _ in cmds}
    assert {("run", "wait"), ("run", "logs"), ("run", "cancel"), ("plan", "render"), ("plan", "set"), ("plan", "show"),
            ("prediction", "list"), ("prediction", "show"), ("prediction", "edit"), ("hypothesis", "edit"), ("init",),
            ("calibrate",), ("run", "import"), ("run", "diff"), ("note", "list"), ("sync",), ("verdict",),
            ("agent", "setup")} <= paths
    tools = {}
    for path, cmd in cmds:
        why = skipped(cmd)
        if why:
            assert path in {("tui",), ("mcp",), ("telemetry", "sample")}, (path, why)
            continue
        t = build(of(cmd.callback))
        assert t.name == "_".join(path).replace("-", "_")
        assert t.description, t.name
        for name, p in t.params.items():
            assert p.schema.get("description"), f"{t.name}.{name} has no description"
        jsonschema.Draft202012Validator.check_schema(t.input_schema())
        if t.output_schema:
            jsonschema.Draft202012Validator.check_schema(t.output_schema)
        tools[t.name] = t
    assert tools["hypothesis_set"].params["status"].schema["enum"] == list(HYP_STATUSES)
    assert tools["run_list"].params["status"].schema["enum"] == list(RUN_STATUSES)
    assert set(tools["plan_add"].params["effort"].schema["enum"]) == {"S", "M", "L"}
    assert list(tools["run_wait"].params) [:2] == ["ref", "timeout_s"] and "tail" in tools["run_logs"].params
    assert "a / b in [0.3, 0.6]" in tools["prediction_add"].description
    for name in ("status", "verdict", "run_list", "hypothesis_show", "run_wait", "todo_list", "hypothesis_add",
                 "prediction_add", "plan_list", "next", "note_list", "log"):  # every typed document's verb
        assert tools[name].output_schema, name


def _command_line(tool, args: dict) -> list[str]:
    """The CLI call a person would type for these tool arguments (the agent's defaults written out):
    the test's own spelling, so the two faces are compared and not one face with itself."""
    from optlog.cli.commands import parameter

    opts, pos = [], []
    for name, p in tool.params.items():
        v = args.get(name, p.agent_default if p.has_agent_default else None)
        if v is None:
            continue
        cp = parameter(p.param)  # the verb parameter as the CLI declares it
        if isinstance(cp, click.Argument):
            pos += [str(x) for x in (v if isinstance(v, list) else [v])]
        elif cp.is_flag:
            opts += [cp.opts[0]] if v else list(cp.secondary_opts[:1])
        else:
            for x in (v if isinstance(v, list) else [v]):
                opts += [cp.opts[0], str(x)]
    return [*tool.path, *opts, *pos]


def test_cli_json_equals_the_tool_result(ws):
    from optlog.mcp.tools import tools

    ws.cli("hypothesis", "add", "Comm-bound", "--id", "comm-bound", "--statement", "TP8 decode waits on allreduce")
    for cfg, v in (("tp8", 700), ("tp4pp2", 213)):
        ws.cli("run", "record", "--label", f"config={cfg}", "--label", "m=64", "--metric", f"total_token_throughput={v}")
    ws.cli("prediction", "add", "comm-bound", "--expect", "a > b", "--metric", "total_token_throughput",
           "--a", "config=tp4pp2", "--b", "config=tp8")
    ws.cli("verdict")
    ws.cli("todo", "add", "Look at NCCL logs", "--hypothesis", "comm-bound")
    calls = [("status", {}), ("hypothesis_list", {}), ("hypothesis_show", {"id": "comm-bound"}),
             ("hypothesis_show", {"id": "comm-bound", "detail": True}), ("run_list", {}),
             ("run_list", {"labels": ["m=64"], "limit": 1, "fields": "id,labels"}), ("todo_list", {}),
             ("verdict", {}), ("verdict", {"detail": True}), ("log", {}), ("prediction_list", {}),
             ("note_list", {}), ("plan_list", {}), ("run_show", {"id": 1})]
    ts = tools()

    async def run(s):
        return [(await s.call_tool(n, a)) for n, a in calls]

    results = anyio.run(_session, ws.root, ws.env, run)
    for (name, args), res in zip(calls, results):
        doc = _ok(res, limit=2048 if name == "status" else LIMIT)
        cli = ws.cli("--json", *_command_line(ts[name], args)).json
        assert cli == doc, name
    st = results[0].structured_content
    assert [h["id"] for h in st["hypotheses"]["open"]] == [] and st["latest_verdicts"][0]["status"] == "falsified"
    brief = results[7].structured_content["results"][0]["predictions"][0]
    # the prediction was written after its runs: the brief line keeps the post-hoc mark (issue 28)
    assert set(brief) == {"id", "status", "line", "post_hoc"} and brief["post_hoc"]
    # the CLI's default documents are as they were (DESIGN §7): full verdict, every run, oldest first
    v = ws.j("verdict")["results"][0]["predictions"][0]
    assert {"levels", "not_comparable"} <= set(v) and v["levels"][0]["outcome"] == "fails"
    assert [r["id"] for r in ws.j("run", "list")["runs"]] == [1, 2]
    assert [r["id"] for r in results[4].structured_content["runs"]] == [2, 1]  # an agent's list: newest first
    assert results[4].structured_content["total"] == 2


def test_errors_are_structured_with_the_tool_parameter(ws, tmp_path):
    ws.cli("hypothesis", "add", "Comm-bound", "--id", "comm-bound")
    ws.cli("run", "record", "--label", "m=64", "--metric", "x=1")

    async def run(s):
        return [
            await s.call_tool("hypothesis_show", {"id": "comm-bund"}),
            await s.call_tool("hypothesis_show", {"idd": "comm-bound"}),
            await s.call_tool("hypothesis_set", {"id": "comm-bound", "status": "done", "why": "x"}),
            await s.call_tool("run_list", {"limit": "many"}),
            await s.call_tool("run_list", {"labels": ["M=64"]}),
            await s.call_tool("prediction_add", {"hypothesis": "comm-bound", "expect": "a >> b"}),
            await s.call_tool("run_wait", {"ref": "Lx"}),
            await s.call_tool("hypothesis_add", {}),
            await s.call_tool("stauts", {}),
        ]

    r = anyio.run(_session, ws.root, ws.env, run)
    assert _err(r[0], "not_found", "id")["did_you_mean"] == ["comm-bound"]
    assert _err(r[1], "usage", "idd")["did_you_mean"] == ["id"]
    assert "must be one of" in _err(r[2], "usage", "status")["message"]
    _err(r[3], "usage", "limit")
    assert _err(r[4], "not_found", "labels")["did_you_mean"] == ["m"]
    assert _err(r[5], "bad_expression", "expect")["column"] == 3
    _err(r[6], "bad_input", "ref")
    _err(r[7], "usage", "title")
    assert _err(r[8], "usage")["did_you_mean"] == ["status"]

    # outside a workspace: no_workspace, pointing at the init tool; then init makes one
    empty = tmp_path / "empty"
    empty.mkdir()

    async def fresh(s):
        return [await s.call_tool("status", {}), await s.call_tool("init", {}), await s.call_tool("status", {})]

    st, init, st2 = anyio.run(_session, empty, ws.env, fresh)
    e = _err(st, "no_workspace")
    assert e["fix"]["tool"] == "init" and "init" in e["message"]
    assert _ok(init)["workspace"] == str(empty) and _ok(st2, 2048)["hypotheses"]["total"] == 0


def test_todo_write_takes_hook_payloads_as_they_come(ws):
    claude = (FIXTURES / "claude-code-posttooluse-todowrite.json").read_text()
    out = ws.j("todo", "write", "-", input=claude)["todos"]
    assert [t["content"] for t in out] == ["Launch the TP8 vs TP4+PP2 sweep", "Investigate FP4 GEMM zeros"]
    assert out[0]["activeForm"] == "Launching the TP8 vs TP4+PP2 sweep"
    ws.cli("todo", "write", str(FIXTURES / "opencode-todo-updated-event.json"))
    assert [(t["id"], t["status"]) for t in ws.j("todo", "list")["todos"]] == [("1", "completed"), ("2", "in_progress")]
    ws.cli("todo", "write", "--todos", (FIXTURES / "opencode-todowrite-args.json").read_text())
    assert ws.j("todo", "list")["todos"][1]["status"] == "cancelled"
    bash = json.dumps({"hook_event_name": "PostToolUse", "tool_name": "Bash", "tool_input": {"command": "ls"}})
    r = ws.cli("todo", "write", "-", "--json", input=bash, check=2)
    assert r.json["error"]["field"] == "tool_name"
    assert len(ws.j("todo", "list")["todos"]) == 2  # nothing written


def test_agent_setup_merges_and_never_clobbers(ws, tmp_path):
    proj = tmp_path / "proj"
    (proj / ".claude").mkdir(parents=True)
    (proj / ".mcp.json").write_text(json.dumps({"mcpServers": {"other": {"command": "x"}}}))
    (proj / ".claude" / "settings.json").write_text(json.dumps({"permissions": {"allow": ["Bash(ls)"]}}))
    (proj / "CLAUDE.md").write_text("# My project\n")
    r = ws.j("agent", "setup", "claude-code", "--dir", str(proj))
    mcp = json.loads((proj / ".mcp.json").read_text())
    assert set(mcp["mcpServers"]) == {"other", "optlog"} and mcp["mcpServers"]["optlog"]["args"][-1] == "mcp"
    settings = json.loads((proj / ".claude" / "settings.json").read_text())
    assert settings["permissions"] == {"allow": ["Bash(ls)"]}
    hook = settings["hooks"]["PostToolUse"][0]
    assert hook["matcher"] == "TodoWrite" and "optlog todo write -" in hook["hooks"][0]["command"]
    assert (proj / "CLAUDE.md").read_text() == "# My project\n@.claude/optlog.md\n"
    loop = (proj / ".claude" / "optlog.md").read_text()
    for step in ("status", "prediction_add", "run_wait", "verdict", "parent", "plan_add", "report"):
        assert step in loop
    assert {f["action"] for f in r["files"]} <= {"created", "merged"}
    again = ws.j("agent", "setup", "claude-code", "--dir", str(proj))
    assert {f["action"] for f in again["files"]} == {"unchanged"}
    # a user's own optlog entry is kept
    mcp["mcpServers"]["optlog"] = {"command": "/opt/optlog", "args": ["mcp"]}
    (proj / ".mcp.json").write_text(json.dumps(mcp))
    kept = ws.j("agent", "setup", "claude-code", "--dir", str(proj))
    assert json.loads((proj / ".mcp.json").read_text())["mcpServers"]["optlog"]["command"] == "/opt/optlog"
    assert any("kept" in n for f in kept["files"] for n in f["notes"])
    # OpenCode: opencode.json's mcp entry (local, command list) and instructions; a todo.updated plugin
    (proj / "opencode.json").write_text(json.dumps({"model": "anthropic/claude-sonnet-4-5", "instructions": ["A.md"]}))
    ws.j("agent", "setup", "opencode", "--dir", str(proj))
    oc = json.loads((proj / "opencode.json").read_text())
    assert oc["model"] == "anthropic/claude-sonnet-4-5" and oc["instructions"] == ["A.md", ".opencode/optlog.md"]
    assert oc["mcp"]["optlog"]["type"] == "local" and oc["mcp"]["optlog"]["command"][-1] == "mcp"
    assert "todo.updated" in (proj / ".opencode" / "plugins" / "optlog-todos.js").read_text()
    (proj / "opencode.json").write_text("{broken")
    bad = ws.cli("agent", "setup", "opencode", "--dir", str(proj), "--json", check=2)
    assert bad.json["error"]["code"] == "malformed_json" and bad.json["error"]["line"] == 1


def test_status_is_the_way_back_into_a_session(ws):
    ws.cli("hypothesis", "add", "Comm-bound", "--id", "comm-bound")
    ws.cli("prediction", "add", "comm-bound", "--expect", "a > b", "--metric", "tput", "--a", "config=x",
           "--b", "config=y")
    for c, v in (("x", 1), ("y", 2)):
        ws.cli("run", "record", "--label", f"config={c}", "--metric", f"tput={v}", "--hypothesis", "comm-bound")
    ws.cli("hypothesis", "add", "Another", "--id", "another")
    ws.j("todo", "write", "-", input='{"todos": [{"content": "Sweep", "status": "in_progress"}]}')
    st = ws.j("status")
    assert [d["id"] for d in st["verdict_due"]] == ["comm-bound"]
    calls = [n["call"] for n in st["next"]]
    assert calls[0] == "verdict" and len(calls) <= 3 and "prediction_add" in calls
    ws.cli("verdict")
    st = ws.j("status")
    assert "verdict_due" not in st and st["latest_verdicts"][0]["hypothesis"] == "comm-bound"
    ws.cli("run", "invalidate", "1", "--why", "wrong GPU clocks")
    assert ws.j("status")["invalidations"]["latest"] == [{"run": 1, "reason": "wrong GPU clocks"}]


@pytest.mark.slow
def _conforms(name, doc):
    """A tool's result is valid under its output schema, the one its verb's return type makes (issue 46)."""
    import jsonschema

    from optlog.mcp.tools import tools

    schema = tools()[name].output_schema
    if schema is not None:
        jsonschema.validate(doc, schema)


def test_a_whole_session_over_stdio_stays_small(ws):
    """The proof: a session through the MCP SDK's stdio client, every result within its bound."""
    from _launch import spec

    rel = spec(ws, "sweep", matrix={"concurrency": [1, 2]})
    claude = json.loads((FIXTURES / "claude-code-posttooluse-todowrite.json").read_text())
    sizes: dict[str, int] = {}

    async def run(s):
        async def ok(name, args, limit=LIMIT):
            doc = _ok(await s.call_tool(name, args), limit)
            sizes[name] = sizes.get(name, 0) + _size(doc)
            _conforms(name, doc)
            return doc

        st = await ok("status", {}, 2048)
        assert st["next"][0]["call"] == "hypothesis_add"
        h = await ok("hypothesis_add", {"title": "Decode is latency-bound", "id": "latency-bound"})
        assert set(h) == {"id", "status", "title", "parent", "predictions"}
        await ok("prediction_add", {"hypothesis": "latency-bound", "expect": "a > b", "metric": "output_throughput",
                                    "a": ["concurrency=2"], "b": ["concurrency=1"]})
        _err(await s.call_tool("prediction_add", {"hypothesis": "latency-bound", "expect": "a >"}), "bad_expression", "expect")
        return st

    anyio.run(_session, ws.root, ws.env, run)
    # todos through the hook, as Claude Code runs it
    ws.cli("todo", "write", "-", input=json.dumps(claude))

    async def run2(s):
        async def ok(name, args, limit=LIMIT):
            doc = _ok(await s.call_tool(name, args), limit)
            sizes[name] = sizes.get(name, 0) + _size(doc)
            _conforms(name, doc)
            return doc

        todos = await ok("todo_list", {})
        assert todos["todos"][0]["status"] == "in_progress"
        la = await ok("run_launch", {"spec": rel, "hypothesis": "latency-bound"})
        assert la["detached"]
        w = await ok("run_wait", {"ref": la["ref"], "timeout_s": 120})
        assert w["status"] == "succeeded" and w["runs"] == {"succeeded": 2}
        logs = await ok("run_logs", {"ref": la["ref"], "tail": 5})
        assert len(logs["text"].splitlines()) <= 5
        await ok("status", {}, 2048)
        v = await ok("verdict", {"id": "latency-bound"})
        assert v["results"][0]["predictions"][0]["status"] in ("confirmed", "falsified", "inconclusive")
        await ok("hypothesis_add", {"title": "Decode is bandwidth-bound", "id": "bw-bound", "parent": "latency-bound"})
        await ok("plan_add", {"title": "Raise concurrency", "gain": "10-30%", "effort": "S", "confidence": 0.5,
                              "needs": ["latency-bound"]})
        await ok("plan_list", {})
        await ok("plan_render", {})
        rep = await ok("report", {})
        await ok("log", {})
        await ok("hypothesis_show", {"id": "latency-bound"})
        await ok("run_list", {})
        await ok("todo_write", {"todos": [{"content": "Write it up", "status": "completed"}]})
        res = await s.list_resources()
        uris = {str(r.uri) for r in res.resources}
        assert {"optlog://hypotheses/latency-bound", "optlog://report/latest"} <= uris
        text = (await s.read_resource("optlog://report/latest")).contents[0].text
        return rep, text

    rep, text = anyio.run(_session, ws.root, ws.env, run2)
    assert rep["file"].startswith("reports/") and text.startswith("#")
    assert sum(sizes.values()) < 40_000, sizes


def test_fit_bounds_any_document_and_says_what_it_cut():
    from optlog.core.shape import fit, size

    doc = {"hypotheses": {"total": 5000, "open": [{"id": f"h{i}", "title": "t" * 70} for i in range(5000)]},
           "todos": [{"id": str(i), "content": "c" * 200} for i in range(300)], "note": "x" * 5000}
    out = fit(doc, 2048, "page with limit/offset")
    assert size(out) <= 2048 and out["hypotheses"]["total"] == 5000
    assert out["truncated"]["hint"] == "page with limit/offset" and out["truncated"]["cut"]
    assert fit({"a": 1}, 2048, "x") == {"a": 1}


def test_status_shows_a_failed_launch_and_hypotheses_testing_while_runs_run(ws):
    from _launch import bench_cmd, spec, wait_for

    ws.cli("hypothesis", "add", "Comm-bound", "--id", "comm-bound")
    # a bench that runs until it is cancelled (a 30 s sleep ended first on a busy machine)
    rel = spec(ws, "slow", bench={"cmd": bench_cmd(f"--until {ws.root.parent / 'never'}")})
    d = ws.j("run", "launch", rel, "--detach", "--hypothesis", "comm-bound")
    wait_for(lambda: ws.j("run", "show", str(d["runs"][0]))["status"] == "running", 60, "the run to start")
    st = ws.j("status")
    assert st["hypotheses"]["open"][0]["status"] == "testing"  # DESIGN §5: testing while its runs run
    assert ws.j("hypothesis", "list")["hypotheses"][0]["status"] == "testing"
    assert st["launches"][0]["ref"] == d["ref"] and st["next"][0] == {
        "call": "run_wait", "arguments": {"ref": d["ref"]}, "why": f"launch {d['ref']} is running"}
    ws.j("run", "cancel", d["ref"])
    st = ws.j("status")
    assert st["launches"][0]["status"] == "cancelled" and st["launches"][0]["runs"] == {"cancelled": 1}
    assert st["next"][0]["call"] == "run_logs" and st["hypotheses"]["open"][0]["status"] == "open"
