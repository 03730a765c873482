"""Every CLI command as a tool: one declaration (the click command tree), two faces.

The MCP face does not declare tools of its own. It walks the command tree; each leaf command
becomes a tool named by its path (`run wait` → `run_wait`) whose JSON schema comes from the
command's parameters (help → description, `click.Choice` → enum, `multiple` → array), and whose
call runs that very command in-process with `--json`, taking the document `emit` would print. So
the tool's structured result *is* the CLI's `--json` document for the same arguments, and a new
command or option is a new tool or parameter with nothing else to write.

What differs between the faces is declared beside the command with `@agent(...)`
(`optlog.cli.main.agent`): the defaults an agent gets when it passes nothing (the small-by-default
options), descriptions of positional arguments, output schemas, and the few commands that are
not tools (the TUI, the MCP server itself, a sample stream).
"""

from __future__ import annotations

import contextlib
import io
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import click

from optlog.cli.main import State, check_argv, cli, close_contexts, internal_error
from optlog.cli.schemas import SCHEMAS
from optlog.errors import BadInput, OptlogError, close_matches

# the root's global options: every tool has them implicitly (the server is the workspace, JSON always)
_GLOBAL = {"json_", "chdir", "help", "version"}
# argument metavars whose tool name reads better than the code's variable name
_ARG_NAMES = {"HYP": "hypothesis", "[HYP]": "hypothesis"}
_GENERIC_ARG_HELP = {
    "hypothesis": "The hypothesis id.",
    "spec": "A run spec: a file under runs/ (name or path).",
    "files": "Result files to import (paths in the workspace).",
    "path": "A folder (default: the server's workspace).",
    "title": "A short title.",
    "text": "The text.",
    "url": "The server's base URL, e.g. http://127.0.0.1:8000.",
}

# the largest result an agent gets unless it asks for more (`detail`, `limit`, `fields`…)
MAX_RESULT_BYTES = 4096


@dataclass
class Param:
    name: str                 # the tool parameter
    click: click.Parameter
    schema: dict[str, Any]
    required: bool
    agent_default: Any = None
    has_agent_default: bool = False
    json: bool = False  # passed as one JSON text


@dataclass
class Tool:
    name: str
    path: tuple[str, ...]
    command: click.Command
    description: str
    params: dict[str, Param]
    output_schema: dict[str, Any] | None = None
    read_only: bool = False
    field_names: dict[str, str] = field(default_factory=dict)  # CLI spelling (--expect, ID) → tool param

    def param_for(self, spelling: str | None) -> str | None:
        """The tool parameter an error's `field` means (a CLI flag, a metavar, a service's word for
        the command's one argument); other fields (`todos[1].status`) are kept as they are."""
        if spelling is None or spelling in self.params:
            return spelling
        if spelling in self.field_names:
            return self.field_names[spelling]
        args = [n for n, p in self.params.items() if isinstance(p.click, click.Argument)]
        if len(args) == 1 and re.fullmatch(r"[A-Za-z_]+", spelling):
            return args[0]
        return spelling

    def input_schema(self) -> dict[str, Any]:
        props = {n: p.schema for n, p in self.params.items()}
        req = [n for n, p in self.params.items() if p.required]
        out: dict[str, Any] = {"type": "object", "properties": props, "additionalProperties": False}
        if req:
            out["required"] = req
        return out


def _meta(cmd: click.Command) -> dict[str, Any]:
    return getattr(cmd.callback, "__optlog_agent__", {}) if cmd.callback else {}


def walk(group: click.Group | None = None, ctx: click.Context | None = None,
         prefix: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], click.Command]]:
    """Every leaf command under `group` (default: the root), by path; aliases are not repeated."""
    group = group or cli
    ctx = ctx or click.Context(group, info_name="optlog")
    out: list[tuple[tuple[str, ...], click.Command]] = []
    for name in group.list_commands(ctx):
        cmd = group.get_command(ctx, name)
        if cmd is None:
            continue
        if isinstance(cmd, click.Group):
            out += walk(cmd, click.Context(cmd, info_name=name, parent=ctx), prefix + (name,))
        else:
            out.append((prefix + (name,), cmd))
    return out


def skipped(cmd: click.Command) -> str | None:
    """Why a command is not a tool, or None."""
    return _meta(cmd).get("skip")


def _option_tool_name(p: click.Option) -> str:
    longs = [o for o in p.opts if o.startswith("--")] or p.opts
    opt = longs[0].lstrip("-").replace("-", "_")
    if p.name and (p.name in (opt, opt + "s") or (p.name.startswith(opt + "_") and not p.name.endswith("_"))):
        return p.name  # labels for --label, timeout_s for --timeout
    return opt


def _json_type(t: click.ParamType) -> dict[str, Any]:
    if isinstance(t, click.Choice):
        return {"type": "string", "enum": [str(c) for c in t.choices]}
    if isinstance(t, click.types.IntParamType):
        return {"type": "integer"}
    if isinstance(t, click.types.FloatParamType):
        return {"type": "number"}
    if isinstance(t, click.types.BoolParamType):
        return {"type": "boolean"}
    return {"type": "string"}


def _param(tool: str, p: click.Parameter, meta: dict[str, Any], taken: set[str]) -> Param:
    defaults = meta.get("defaults", {})
    if p.name in meta.get("json", {}):  # a JSON-valued option: the agent passes the value itself
        name = _option_tool_name(p) if isinstance(p, click.Option) else p.name
        schema = dict(meta["json"][p.name])
        return Param(name, p, schema, False, None, False, True)
    if isinstance(p, click.Argument):
        mv = p.metavar or p.name or ""
        name = _ARG_NAMES.get(mv) or (mv.strip("[]…").lower() if re.fullmatch(r"\[?[A-Z]+\]?", mv) else p.name)
        if name in taken or not name:
            name = p.name or "arg"
        desc = meta.get("args", {}).get(p.name) or _GENERIC_ARG_HELP.get(name) or _GENERIC_ARG_HELP.get(p.name or "")
        item = _json_type(p.type)
        schema = {"type": "array", "items": item} if p.nargs == -1 else dict(item)
        required = p.required and p.name not in defaults
    else:
        assert isinstance(p, click.Option)
        name = _option_tool_name(p)
        desc = p.help
        if p.is_flag and not p.count:
            schema = {"type": "boolean"}
        else:
            item = _json_type(p.type)
            schema = {"type": "array", "items": item} if p.multiple else dict(item)
        required = bool(p.required) and p.name not in defaults
    if desc:
        schema["description"] = " ".join(desc.split())
    has = p.name in defaults
    if has:
        schema["default"] = defaults[p.name]
    elif isinstance(p, click.Option) and isinstance(p.default, (str, int, float, tuple)) \
            and p.default not in ((), False) and not isinstance(p.default, bool):
        schema["default"] = list(p.default) if isinstance(p.default, tuple) else p.default
    return Param(name, p, schema, required, defaults.get(p.name), has)


def build(path: tuple[str, ...], cmd: click.Command) -> Tool:
    meta = _meta(cmd)
    name = "_".join(path).replace("-", "_")
    params: dict[str, Param] = {}
    fields: dict[str, str] = {}
    for p in cmd.params:
        if p.name in _GLOBAL or not p.expose_value:
            continue
        tp = _param(name, p, meta, set(params))
        params[tp.name] = tp
        for spelling in (*getattr(p, "opts", ()), *getattr(p, "secondary_opts", ()), p.metavar, p.name):
            if spelling:
                fields.setdefault(spelling, tp.name)
    args = [p for p in cmd.params if isinstance(p, click.Argument)]
    if len(args) == 1:
        fields.setdefault("ID", next(n for n, tp in params.items() if tp.click is args[0]))
    doc = (cmd.help or cmd.short_help or "").strip()
    doc = doc.split("\n\n")[0] if not meta.get("long_help") else doc
    description = " ".join(doc.split())
    if meta.get("description"):
        description += "\n\n" + meta["description"]
    output = meta.get("output")
    if isinstance(output, str):
        output = SCHEMAS[output]
    return Tool(name, path, cmd, description, params, output, bool(meta.get("read_only")), fields)


def tools() -> dict[str, Tool]:
    """Every tool, by name (the commands marked `skip` are left out)."""
    return {t.name: t for t in (build(p, c) for p, c in walk() if not skipped(c))}


# ---------------------------------------------------------------- a call: arguments → argv → document


def usage(message: str, param: str | None, choices: list[str] | None = None, given: str | None = None) -> BadInput:
    extra = {}
    if choices and given is not None:
        close = close_matches(given, choices, cutoff=0.5)
        if close:
            extra["did_you_mean"] = close
            message += f" (did you mean {', '.join(repr(c) for c in close)}?)"
    return BadInput(message, field=param, code="usage", extra=extra)


def _scalar(tool: Tool, name: str, v: Any, schema: dict[str, Any]) -> str:
    t = schema.get("type")
    if t == "boolean":
        if not isinstance(v, bool):
            raise usage(f"{name} must be true or false, got {json.dumps(v)}", name)
        return "true" if v else "false"
    if isinstance(v, bool) or not isinstance(v, (str, int, float)):
        raise usage(f"{name} must be a {t or 'string'}, got {json.dumps(v)[:60]}", name)
    if t == "integer" and not isinstance(v, int):
        try:
            v = int(str(v))
        except ValueError:
            raise usage(f"{name} must be an integer, got {json.dumps(v)}", name) from None
    if t == "number" and isinstance(v, str):
        try:
            float(v)
        except ValueError:
            raise usage(f"{name} must be a number, got {json.dumps(v)}", name) from None
    if "enum" in schema and str(v) not in schema["enum"]:
        low = {e.lower(): e for e in schema["enum"]}
        if str(v).lower() in low:
            return low[str(v).lower()]
        raise usage(f"{name} must be one of {', '.join(schema['enum'])}, got {v!r}", name, schema["enum"], str(v))
    return str(v)


def argv(tool: Tool, args: dict[str, Any] | None) -> list[str]:
    """The command line that makes the same call (raises `usage` errors naming tool parameters)."""
    args = dict(args or {})
    for k in args:
        if k not in tool.params:
            raise usage(f"{tool.name} has no parameter {k!r}; its parameters: {', '.join(tool.params) or 'none'}",
                        k, list(tool.params), k)
    opts: list[str] = []
    pos: list[str] = []
    for name, p in tool.params.items():
        if name in args and args[name] is not None:
            v = args[name]
        elif p.has_agent_default:
            v = p.agent_default
        elif p.required:
            raise usage(f"{tool.name} needs {name}", name)
        else:
            continue
        if v is None:
            continue
        cp = p.click
        if p.json:
            opts.append(f"{cp.opts[0]}={json.dumps(v)}")
            continue
        if isinstance(cp, click.Argument):
            if p.schema.get("type") == "array":
                vals = v if isinstance(v, list) else [v]
                pos += [_scalar(tool, name, x, p.schema["items"]) for x in vals]
            else:
                pos.append(_scalar(tool, name, v, p.schema))
            continue
        assert isinstance(cp, click.Option)
        if p.schema.get("type") == "boolean":
            b = _scalar(tool, name, v, p.schema) == "true"
            if b:
                opts.append(cp.opts[0])
            elif cp.secondary_opts:
                opts.append(cp.secondary_opts[0])
            continue
        if p.schema.get("type") == "array":
            if isinstance(v, dict):  # {"config": "tp8"} for K=V options
                v = [f"{k}={x}" for k, x in v.items()]
            vals = v if isinstance(v, list) else [v]
            for x in vals:
                opts.append(f"{cp.opts[0]}={_scalar(tool, name, x, p.schema['items'])}")
        else:
            opts.append(f"{cp.opts[0]}={_scalar(tool, name, v, p.schema)}")
    return [*tool.path, *opts, *(["--", *pos] if pos else [])]


@dataclass
class Outcome:
    doc: Any                  # the document (an error document when `error`)
    exit_code: int
    error: OptlogError | None = None
    stray: str = ""           # anything a command printed on stdout outside `emit`


def run(args: list[str], *, chdir: str | None, shared_ctx: Callable[[], Any] | None = None,
        tool: Tool | None = None) -> Outcome:
    """Run one command line in-process under `--json`, returning the document it emitted."""
    st = State()
    st.json = True
    st.chdir = chdir
    st.shared_ctx = shared_ctx
    got: list[Any] = []
    st.sink = got.append
    buf = io.StringIO()
    code = 0
    err: OptlogError | None = None
    try:
        check_argv(args)  # an MCP call is input like any other: the same text rule as the CLI's
        with contextlib.redirect_stdout(buf):
            rv = cli.main(args=args, prog_name="optlog", standalone_mode=False, obj=st)
        if isinstance(rv, int):
            code = rv
    except click.exceptions.Exit as e:
        code = e.exit_code
    except click.UsageError as e:
        f = None
        if isinstance(e, click.BadParameter) and e.param is not None:
            f = (e.param.opts[0] if getattr(e.param, "opts", None) else e.param.name)
        err = BadInput(e.format_message(), field=f, code="usage")
    except OptlogError as e:
        err = e
    except Exception as e:  # noqa: BLE001  (no traceback ever: the error document instead)
        err = internal_error(e)
    finally:
        if shared_ctx is None:
            close_contexts()
    if err is not None:
        if tool is not None:
            err.field = tool.param_for(err.field)
        return Outcome(err.to_json(), err.exit_code, err, buf.getvalue())
    doc = json.loads(json.dumps(got[-1], default=str)) if got else {}
    return Outcome(doc, code, None, buf.getvalue())
