"""The MCP server over stdio: the protocol's wiring around the face (`optlog.mcp.face.Face`).

Kept apart from the face so that `optlog mcp` answers `initialize` after importing only the MCP
SDK: the face (the tools made from every verb, the workspace, SQLAlchemy) is made on
the first call that needs it (`tools/list`, `tools/call`, a resource). `initialize` took 1.8-5.8 s
when the face came first (issue 31).
"""

from __future__ import annotations

import io
import os
import threading
import time
from pathlib import Path
from typing import Any

from optlog import __version__
from optlog.core import jsondoc
from optlog.core.numfmt import fmt_seconds
from optlog.errors import OptlogError

PROGRESS_S = 10.0  # a long call's progress notifications, this often
EOF_CALL_S = 10.0  # at end of input, the call in progress gets this long to finish
EOF_FLUSH_S = 1.0  # and the answers this long to be written, then the server leaves
MAX_LINE = 16 * 1024 * 1024  # characters of one message from the client

INSTRUCTIONS = """\
optlog is the lab notebook of an inference-performance session. The loop:
1. `status` first (also after losing context): live and failed launches, verdicts due, todos, next calls.
2. Before measuring: `hypothesis_add`, then `prediction_add` (machine-checkable; pre-registered).
3. Keep your todo list here (`todo_write` takes your TodoWrite/todowrite list unchanged).
4. Measure: `run_launch` (detached) then `run_wait` and `run_logs`; or `run_record`/`run_import`.
5. `verdict` judges the predictions against comparable runs and commits the decision to git.
6. Falsified? Pivot: `hypothesis_add` with `parent`. Rank what to do next with `plan_add`; `plan_render`.
7. `report` writes the session report; `log` is the decision timeline.
Results are small by default: pass `detail`, `limit`/`offset` (follow `next_offset`), `fields` for
more (at most 16 KB a result). Tool listings are short: `agent_tools` with `name` gives one whole."""


def build_server(chdir: str | None = None) -> Any:
    """The low-level MCP Server with every tool and resource (separate from `serve` for tests)."""
    import anyio  # deferred: the MCP SDK's async runtime (tests build the server without serving)
    import mcp_types as types  # deferred: the MCP SDK
    from mcp.server.lowlevel import Server  # deferred: the MCP SDK

    box: dict[str, Any] = {}

    def the_face() -> Any:
        """The face, made on first use: `initialize` answers before the tools and the
        workspace (SQLAlchemy) are loaded (issue 31)."""
        if "face" not in box:
            from optlog.mcp.face import Face  # deferred: the tools, the workspace and SQLAlchemy; initialize needs none

            box["face"] = Face(chdir)
        return box["face"]

    def tool_def(t: Any) -> Any:
        # shortened (optlog.mcp.tools.shortened): the list is paid before any work; `agent_tools` has the rest.
        # No output schema: the structured result is the CLI's --json document (docs/json.md).
        desc, schema = t.listing()
        return types.Tool(name=t.name, description=desc, input_schema=schema,
                          annotations=types.ToolAnnotations(read_only_hint=True) if t.read_only else None)

    async def list_tools(ctx: Any, params: Any) -> Any:
        return types.ListToolsResult(tools=[tool_def(t) for t in the_face().tools.values()])

    async def call_tool(ctx: Any, params: Any) -> Any:
        face = the_face()
        done = anyio.Event()

        async def beat() -> None:
            """A long call (a bench, a run_wait) says it is alive: a progress notification every
            PROGRESS_S seconds, to a client that sent a progressToken."""
            n = 0
            while not done.is_set():
                with anyio.move_on_after(PROGRESS_S):
                    await done.wait()
                if done.is_set():
                    return
                n += 1
                try:
                    await _progress(ctx, n, f"{params.name}: still running after {fmt_seconds(n * PROGRESS_S)}")
                except Exception:  # noqa: BLE001  (a client gone or without progress: the answer still comes)
                    return

        async with anyio.create_task_group() as tg:
            tg.start_soon(beat)
            try:
                doc, is_error, code = await anyio.to_thread.run_sync(face.call, params.name, params.arguments)
            finally:
                done.set()
        from optlog.mcp.face import one_line  # deferred: loaded with the face

        text = one_line(doc, params.name)
        meta = {"optlog/exit_code": code} if code else None
        return types.CallToolResult(content=[types.TextContent(text=text)], structured_content=doc,
                                    is_error=is_error, _meta=meta)

    def _hyp_dir() -> Path | None:
        try:
            return the_face().ctx().ws.hypotheses_dir
        except OptlogError:
            return None

    def _latest_report() -> Path | None:
        try:
            d = the_face().ctx().ws.reports_dir
        except OptlogError:
            return None
        files = sorted(d.glob("*.md"), key=lambda p: p.stat().st_mtime) if d.is_dir() else []
        return files[-1] if files else None

    async def list_resources(ctx: Any, params: Any) -> Any:
        out = []
        d = _hyp_dir()
        if d is not None and d.is_dir():
            for f in sorted(d.glob("*.yaml")):
                out.append(types.Resource(uri=f"optlog://hypotheses/{f.stem}", name=f"hypothesis {f.stem}",
                                          mime_type="application/yaml", size=f.stat().st_size))
        r = _latest_report()
        if r is not None:
            out.append(types.Resource(uri="optlog://report/latest", name=f"latest report ({r.name})",
                                      mime_type="text/markdown", size=r.stat().st_size))
        return types.ListResourcesResult(resources=out)

    async def list_templates(ctx: Any, params: Any) -> Any:
        return types.ListResourceTemplatesResult(resource_templates=[
            types.ResourceTemplate(uri_template="optlog://hypotheses/{id}", name="hypothesis file",
                                   description="The hypothesis YAML file: the truth for what a person writes.",
                                   mime_type="application/yaml")])

    async def read_resource(ctx: Any, params: Any) -> Any:
        uri = str(params.uri)
        path: Path | None = None
        mime = "text/plain"
        if uri.startswith("optlog://hypotheses/"):
            d = _hyp_dir()
            hid = uri.rsplit("/", 1)[-1]
            if d is not None and "/" not in hid and (d / f"{hid}.yaml").is_file():
                path, mime = d / f"{hid}.yaml", "application/yaml"
        elif uri == "optlog://report/latest":
            path, mime = _latest_report(), "text/markdown"
        if path is None:
            from mcp.shared.exceptions import MCPError  # deferred: the MCP SDK

            raise MCPError(code=-32002, message=f"no resource {uri}")
        return types.ReadResourceResult(contents=[types.TextResourceContents(
            uri=uri, mime_type=mime, text=path.read_text(encoding="utf-8"))])

    server = Server("optlog", version=__version__, instructions=INSTRUCTIONS,
                    on_list_tools=list_tools, on_call_tool=call_tool, on_list_resources=list_resources,
                    on_list_resource_templates=list_templates, on_read_resource=read_resource)
    server.optlog_face = box  # type: ignore[attr-defined]

    async def refuse_duplicate(ctx: Any, call_next: Any) -> Any:
        """A request whose JSON said a key twice (the wire made it `jsondoc.DUPLICATE`, `_Wire`):
        answered with a JSON-RPC error naming the key, before any handler or the handshake's gate."""
        if ctx.method == jsondoc.DUPLICATE:
            from mcp.shared.exceptions import MCPError  # deferred: the MCP SDK

            said = ctx.params if isinstance(ctx.params, dict) else {}
            err = jsondoc.DuplicateKey(str(said.get("key")), str(said.get("path")))
            raise MCPError(code=-32602, message=f"{said.get('method')}: {err.message}", data=err.to_json())
        return await call_next(ctx)

    server.middleware.append(refuse_duplicate)
    return server


async def _progress(ctx: Any, n: int, message: str) -> None:
    """One progress notification for the request of `ctx` (nothing when it carried no token)."""
    report = getattr(ctx, "report_progress", None) or getattr(getattr(ctx, "session", None), "report_progress", None)
    if report is not None:
        await report(n, None, message)
        return
    token = getattr(getattr(ctx, "meta", None), "progress_token", None)
    if token is not None:
        await ctx.session.send_progress_notification(token, n, None, message)


class _Wire(io.TextIOWrapper):
    """The client's end of stdin: its end of input is the end of the session (`_leave`)."""

    def __init__(self, raw: Any, on_eof: Any) -> None:
        super().__init__(raw, encoding="utf-8", errors="replace")
        self._on_eof = on_eof

    def readline(self, size: int | None = -1) -> str:  # type: ignore[override]
        # a line is one message: past MAX_LINE it is cut (the pieces are refused as JSON), so a
        # client that never sends a newline cannot fill memory
        line = super().readline(MAX_LINE if size is None or size < 0 else min(size, MAX_LINE))
        if not line:
            self._on_eof()
        return jsondoc.in_call(line)  # a key said twice in a call's arguments is refused, naming it


def _stdin_wire(on_eof: Any) -> Any:
    """The protocol's stdin, read through `_Wire`; fd 0 itself then points at the null device, as
    the SDK's own claim does, so nothing a verb starts reads the protocol's bytes."""
    fd = os.dup(0)
    os.set_inheritable(fd, False)
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        os.dup2(null, 0)
    finally:
        os.close(null)
    return _Wire(os.fdopen(fd, "rb", buffering=0), on_eof)


def _leave(box: dict[str, Any]) -> None:
    """At the end of input the client is gone: the server leaves even when an answer cannot be
    written (a client that stopped reading: the answer's write blocks) or a call still runs. The
    call in progress gets up to EOF_CALL_S to finish and the answers EOF_FLUSH_S to be written;
    then the process ends (os._exit): the kernel releases its locks (flocks), its database
    connections end (an open transaction is rolled back), nothing waits on the pipe."""

    def watch() -> None:
        deadline = time.monotonic() + EOF_CALL_S
        face = box.get("face")
        while face is not None and face.busy() and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(EOF_FLUSH_S)
        face = box.get("face")
        if face is not None and not face.busy():
            try:
                face.close()
            except Exception:  # noqa: BLE001  (leaving: nothing to say it to)
                pass
        os._exit(0)

    threading.Thread(target=watch, name="optlog-mcp-eof", daemon=True).start()


def serve(chdir: str | None = None) -> None:
    import anyio  # deferred: the MCP SDK's async runtime
    from mcp.server.stdio import stdio_server  # deferred: the MCP SDK

    server = build_server(chdir)
    once = threading.Lock()

    def on_eof() -> None:
        if once.acquire(blocking=False):
            _leave(server.optlog_face)

    async def main() -> None:
        async with stdio_server(stdin=anyio.wrap_file(_stdin_wire(on_eof))) as (read, write):
            await server.run(read, write, server.create_initialization_options())

    try:
        anyio.run(main)
    finally:
        if "face" in server.optlog_face:
            server.optlog_face["face"].close()
