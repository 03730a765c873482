"""One signature, one argument model, and the MCP face made from it (issue 46, "one signature drives
all three faces"): each verb's keyword-only signature makes one pydantic model
(`optlog.api.verb.model`, on the MCP SDK's `ArgModelBase` for the MCP face), and what an MCP client
is told of a tool is that model's: `tools/list` (as a client gets it from the real server,
in-process) gives every tool the input schema made from its verb's model, `agent_tools` every
parameter's whole schema as the model has it, and a call is validated by the model. The MCP face
lives in `optlog.mcp` and loads no click of its own and no module of the CLI."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from typing import Any

import anyio

from optlog.api import verb as V


def listed() -> dict[str, dict[str, Any]]:
    """`tools/list` as an MCP client gets it from the real server (in-process, the SDK's client)."""
    from mcp import Client

    from optlog.mcp.server import build_server

    async def go() -> dict[str, dict[str, Any]]:
        async with Client(build_server(None)) as c:
            r = await c.list_tools()
            return {t.name: t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in r.tools}

    return anyio.run(go)


def from_model(v: V.Verb) -> dict[str, Any]:
    """The input schema the verb's argument model makes, as tools/list shortens it (the model's JSON
    schema by alias, without pydantic's titles, cut by `shortened`): made here from the verb alone,
    not from the face's tool objects."""
    from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase

    from optlog.mcp.tools import schema_of, shortened

    return shortened("", schema_of(V.model(v, ArgModelBase)))[1]


def differences(tools_list: dict[str, dict[str, Any]], verbs: dict[str, V.Verb]) -> list[str]:
    """Where tools/list and the verbs' models disagree: a tool without a verb or a verb without a
    tool, or a tool whose input schema is not the one its verb's model makes (each parameter named)."""
    out = [f"{n}: listed, but no verb" for n in sorted(set(tools_list) - set(verbs))]
    out += [f"{n}: a verb, but not listed" for n in sorted(set(verbs) - set(tools_list))]
    for n in sorted(set(tools_list) & set(verbs)):
        got, want = tools_list[n]["inputSchema"], from_model(verbs[n])
        if got == want:
            continue
        names = sorted(set(got.get("properties", {})) | set(want.get("properties", {})))
        bad = [p for p in names if got.get("properties", {}).get(p) != want.get("properties", {}).get(p)]
        if got.get("required") != want.get("required"):
            bad.append(f"required {got.get('required')} vs {want.get('required')}")
        out.append(f"{n}: {', '.join(bad) or 'the schema differs'}")
    return out


def _verbs() -> dict[str, V.Verb]:
    from optlog.mcp.tools import tool_name

    return {tool_name(p): v for p, v in V.catalogue().items() if not v.agent.get("skip")}


def test_every_listed_input_schema_is_made_from_its_verbs_model() -> None:
    tools_list = listed()
    assert len(tools_list) >= 45
    assert differences(tools_list, _verbs()) == []


def test_the_check_can_fail() -> None:
    """A tool listed with another verb's schema, a parameter of the wrong type, a tool with no verb:
    each is named."""
    tools_list = listed()
    verbs = _verbs()
    swapped = {**tools_list, "todo_add": {**tools_list["todo_add"], "inputSchema": tools_list["todo_list"]["inputSchema"]}}
    assert [d.split(":")[0] for d in differences(swapped, verbs)] == ["todo_add"]
    mismatched = {k: v for k, v in tools_list.items()}
    schema = mismatched["run_list"]["inputSchema"]
    props = {**schema["properties"], "launch": {"type": "string"}}  # the model says integer
    mismatched["run_list"] = {**mismatched["run_list"], "inputSchema": {**schema, "properties": props}}
    assert differences(mismatched, verbs) == ["run_list: launch"]
    extra = {**tools_list, "no_such_verb": tools_list["status"]}
    assert differences(extra, verbs) == ["no_such_verb: listed, but no verb"]


def test_every_parameter_described_in_full_is_the_models() -> None:
    """`agent_tools NAME` (what tools/list leaves out) gives each parameter the model's own schema."""
    from optlog.api.agent import describe
    from optlog.mcp.tools import tools

    ts = tools()
    for name, v in _verbs().items():
        model = V.model(v).model_json_schema(by_alias=True)
        want = {n: {k: x for k, x in s.items() if k not in ("title", "additionalProperties")}
                for n, s in model.get("properties", {}).items()}
        for n in model.get("required", []):
            want[n]["required"] = True
        assert describe(ts, name)["parameters"] == want, name


def test_a_call_is_validated_by_the_model() -> None:
    """The typed values a call gets are the model's; a refusal names the tool's parameter."""
    import pytest

    from optlog.errors import BadInput
    from optlog.mcp.tools import arguments, tools

    t = tools()["run_list"]
    got = arguments(t, {"limit": 3.0, "labels": {"config": "tp8"}, "order": "Oldest"})
    assert (got["limit"], got["labels"], got["order"]) == (3, (("config", "tp8"),), "oldest")
    for args, field, words in (({"limit": "3"}, "limit", "must be an integer"), ({"launch": True}, "launch", "an integer"),
                               ({"order": "sideways"}, "order", "must be one of oldest, newest"),
                               ({"labels": {"config": {"x": 1}}}, "labels", "must be a string or a number"),
                               ({"limt": 3}, "limt", "did you mean 'limit'")):
        with pytest.raises(BadInput) as e:
            arguments(t, args)
        assert e.value.field == field and words in e.value.message, (args, e.value)


def test_the_mcp_face_loads_no_click_and_no_cli() -> None:
    """Making every tool, validating a call and making the face load no module of `optlog.cli`, and
    no optlog module imports click (the MCP SDK's server does, through uvicorn: not ours)."""
    code = textwrap.dedent("""
        import sys, traceback
        ours = []
        class Watch:
            def find_spec(self, name, path=None, target=None):
                if name == "click":
                    frames = [f for f in traceback.extract_stack() if not f.filename.startswith("<")]
                    importer = frames[-1].filename if frames else "?"
                    if "/optlog/" in importer and "site-packages" not in importer:
                        ours.append(importer)
                return None
        sys.meta_path.insert(0, Watch())
        from optlog.mcp.tools import tools, arguments
        from optlog.mcp.face import Face
        from optlog.mcp.server import build_server
        ts = tools()
        arguments(ts["run_list"], {"limit": 3})
        build_server(None)
        cli = sorted(m for m in sys.modules if m == "optlog.cli" or m.startswith("optlog.cli."))
        print(repr((ours, cli)))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "([], [])", out
