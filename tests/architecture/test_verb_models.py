"""One signature, one argument model (issue 46, the first part of "one signature drives all three
faces"): each verb's keyword-only signature makes one pydantic model (`optlog.api.verb.model`), and
every MCP tool agrees with it: the same parameters under the same names, the same required ones,
the same JSON types and choices. Today the MCP face still derives its schema through click
(`optlog.cli.tools`); this holds the two equal until the face takes the model's."""

from __future__ import annotations

from typing import Any

from optlog.api import verb as V


def _kind(s: dict[str, Any]) -> Any:
    """A JSON schema's type, normalised: (type, enum) with `null` and descriptions dropped."""
    if "anyOf" in s:
        alts = [a for a in s["anyOf"] if a.get("type") != "null"]
        s = alts[0] if len(alts) == 1 else {"type": "any"}
    t = s.get("type", "any")
    if isinstance(t, list):
        t = "object" if "object" in t else next(x for x in t if x != "null")
    if t == "array":
        return ("array", _kind(s.get("items", {})))
    if "enum" in s or "const" in s:
        return ("string", tuple(sorted(map(str, s.get("enum", [s.get("const")])))))
    return (t, None)


def differences(tool: Any, model: Any) -> list[str]:
    schema = model.model_json_schema(by_alias=True)
    props, req = schema.get("properties", {}), set(schema.get("required", []))
    out = []
    if set(props) != set(tool.params):
        out.append(f"names: model {sorted(props)} vs tool {sorted(tool.params)}")
    if req != {n for n, p in tool.params.items() if p.required}:
        out.append(f"required: model {sorted(req)} vs tool {sorted(n for n, p in tool.params.items() if p.required)}")
    for n, p in tool.params.items():
        if n in props and not p.json and _kind(props[n]) != _kind(p.schema):
            out.append(f"{n}: model {_kind(props[n])} vs tool {_kind(p.schema)}")
    return out


def test_every_tool_agrees_with_its_verbs_model() -> None:
    from optlog.cli.tools import tools

    bad = {}
    for name, t in tools().items():
        v = getattr(t.command.callback, "__optlog_binding__", None)  # the verb behind the command
        assert v is not None, name
        d = differences(t, V.model(v))
        if d:
            bad[name] = d
    assert not bad, "\n".join(f"{k}: {'; '.join(v)}" for k, v in bad.items())


def test_the_check_can_fail() -> None:
    from optlog.cli.tools import tools

    t = tools()["todo_add"]
    other = next(v for p, v in V.verbs_under(("todo",)).items() if p == ("todo", "list"))
    assert differences(t, V.model(other))
    good = V.model(next(v for p, v in V.verbs_under(("todo",)).items() if p == ("todo", "add")))
    assert good.model_validate({k: "x" for k in good.model_json_schema().get("required", [])})
