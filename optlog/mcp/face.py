"""The MCP face: every verb as an MCP tool, called with one long-lived session.

Nothing here declares a tool. `optlog.mcp.tools` makes them from the verb catalogue (names, schemas
and validation from each verb's argument model) and calls the verb with typed values, so a tool's
structured result is the CLI's `--json` document for the same arguments. This module adds only what belongs to the protocol:
errors as `isError` results carrying the error document (`code`, `message`, `file`, `line`,
`field` naming the tool's parameter) with a one-line text; a byte bound on every result unless
the caller asked for more; resources for the hypothesis files and the latest report; and one
long-lived workspace context, so a call costs a command's work and not a process start.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
import queue
import threading
import time
from pathlib import Path
from typing import Any

from optlog import settings
from optlog.api.verb import Call
from optlog.mcp import tools as T
from optlog.mcp.tools import tools
from optlog.core import jsondoc
from optlog.core import text as TX
from optlog.core.shape import fit
from optlog.core.numfmt import fmt_seconds
from optlog.errors import BadInput, Failed, OptlogError, close_matches, spell_doc, tool_given
from optlog.api.cache import READS, readcache
from optlog.api.session import Ctx, internal_error, open_session


# results of these sizes need no `truncated` note; `detail`/`limit`… lift the bound
_LIFTS = ("detail", "limit", "fields", "tail", "all")


class Face:
    """One workspace context for the server's life (re-found after `init`; its settings re-read
    when optlog.yaml changes), and the calls, one at a time."""

    def __init__(self, chdir: str | None) -> None:
        self.chdir = chdir
        self._tools: dict[str, Any] | None = None
        self.lock = threading.Lock()
        self.running: tuple[str, float] | None = None  # the tool call in progress, since (time.monotonic)
        self.wait_s = settings.load().mcp_wait_s
        self._ctx: Any = None
        self._stamp: str | None = None
        # the hot reads' results by tool and arguments, with the workspace stamp they were made
        # under (optlog.store.readcache): served again only while the stamp is unchanged
        self._reads: dict[str, tuple[str, str, int]] = {}
        self.read_hits = 0
        self._upgrade_said = False  # the first answer after opening upgraded the database says so

    @property
    def tools(self) -> dict[str, Any]:
        """Built on first use (every verb's module and argument model, ~1-3 s): `initialize`
        answers before it, in about the time the MCP SDK takes to import (issue 31)."""
        if self._tools is None:
            self._tools = tools()
        return self._tools

    def ctx(self, writes: bool = True) -> Ctx:
        """The server's one session (`open_session`, once; again after `init`), its settings re-read
        when optlog.yaml changed, and opening's journal step repeated before each call that may write
        (a writer that died since completes here, as it would at the next command); a read commits
        nothing (`Ctx.writes`)."""
        if self._ctx is None:
            self._ctx = open_session(self.chdir, check_settings=False)
        c = self._ctx
        try:
            st = os.stat(c.ws.config_file)
            stamp = f"{st.st_mtime_ns} {st.st_size}"
        except FileNotFoundError:
            stamp = None
        if stamp != self._stamp:
            c.__dict__.pop("config", None)
            c.check_config()
            self._stamp = stamp
        c.notices.clear()
        c.writes = writes
        if c.opened is not None and writes:
            c.recover_journal()
        return c

    def _read_stamp(self) -> Any:
        """The workspace stamp now, or None when this call may not use the read cache (no
        database yet: opening one would change what `status` says; something live; …)."""
        try:
            c = self.ctx(writes=False)
            if not c.db_exists():
                return None
            return readcache.stamp(c.ws, facts=lambda: readcache.db_facts(c.open().db))
        except Exception:  # noqa: BLE001  (a broken database: the command itself says what is wrong)
            return None

    def close(self) -> None:
        if self._ctx is not None:
            self._ctx.close()

    def busy(self) -> bool:
        """A tool call is running."""
        return self.running is not None

    def call(self, name: str, args: dict[str, Any] | None) -> tuple[Any, bool, int]:
        """(document, is_error, exit_code) of one tool call. Calls run one at a time; a call that
        finds another running waits at most `wait_s` (OPTLOG_MCP_WAIT_S) and is then answered `busy` (exit 1, nothing
        done), so every request gets an answer within a bound even behind a long `bench`."""
        if not self.lock.acquire(timeout=self.wait_s):
            running, since = self.running or ("another call", time.monotonic())
            took = time.monotonic() - since
            err = Failed(f"busy: {running} has been running for {fmt_seconds(took)}; this call was not run "
                         f"(calls run one at a time): call it again once that one has answered",
                         code="busy", extra={"running": running, "running_s": round(took, 1)})
            return err.to_json(), True, err.exit_code
        try:
            self.running = (name, time.monotonic())
            return self._call(name, args)
        finally:
            self.running = None
            self.lock.release()

    def _call(self, name: str, args: dict[str, Any] | None) -> tuple[Any, bool, int]:
        tool = self.tools.get(name)
        if tool is None:
            close = close_matches(name, self.tools, cutoff=0.5)
            err = BadInput(f"no tool {name!r}" + (f" (did you mean {', '.join(close)}?)" if close else ""),
                           code="usage", extra={"did_you_mean": close} if close else {})
            return err.to_json(), True, 2
        if isinstance(args, dict) and jsondoc.DUPLICATE in args:  # the wire found a key said twice (mcp/server)
            dup = args[jsondoc.DUPLICATE]
            err = jsondoc.DuplicateKey(str(dup.get("key")), str(dup.get("path")))
            return err.to_json(), True, err.exit_code
        try:
            kwargs = T.arguments(tool, args)  # its errors name the tool's parameters already
        except OptlogError as e:
            return e.to_json(), True, e.exit_code
        try:
            if tool.path != ("init",):
                self.ctx(writes=not tool.read_only).settle()  # no workspace → no_workspace, before anything runs; a dead launch recovered
        except OptlogError as e:
            if e.code == "no_workspace":
                e.message = (f"no optlog workspace at {self.chdir or os.getcwd()}: call the `init` tool "
                             f"(or start the server with -C PATH)")
                e.extra.setdefault("fix", {"tool": "init", "arguments": {}})
            tool.spell(e)
            return e.to_json(), True, e.exit_code
        key = json.dumps([name, kwargs], default=str, sort_keys=True) if tool.path in READS else None
        before = self._read_stamp() if key else None
        if before is not None and key in self._reads and self._reads[key][0] == before.key:
            self.read_hits += 1
            _k, text, code = self._reads[key]
            return json.loads(text), False, code
        writes = not tool.read_only
        call = Call(chdir=self.chdir, ctx=lambda: self.ctx(writes), narrate=False, say=NARRATION.say, tools=lambda: self.tools)
        stray = io.StringIO()
        try:
            with contextlib.redirect_stdout(stray):  # stdout is the protocol's: nothing else may reach it
                doc, code = T.invoke(tool, call, kwargs)
            doc = spell_doc(doc, tool.spelling, tool_given)  # its warnings name parameters as the tool does
        except OptlogError as e:
            tool.spell(e)
            return e.to_json(), True, e.exit_code
        except Exception as e:  # noqa: BLE001  (no traceback ever: the error document instead)
            ws = self._ctx.ws if self._ctx is not None else None
            ierr = internal_error(e, ws.db_url if ws else None, str(ws.sqlite_file or ws.db_url) if ws else None)
            return ierr.to_json(), True, ierr.exit_code
        if tool.path == ("init",):
            self._ctx = None  # the workspace may be new
        lifted = any((args or {}).get(k) for k in _LIFTS)
        hint = "ask for less or page: " + ", ".join(
            k for k in ("limit", "offset", "fields", "detail", "tail") if k in tool.params) \
            if any(k in tool.params for k in ("limit", "fields", "detail", "tail")) else \
            "the full document: the CLI's --json"
        # small by default; asked for more, still at most MAX_LIFTED_BYTES (a 92 KB
        # hypothesis_show {"detail": true} was ~23 k tokens in one call: issue 31)
        doc = fit(doc, T.MAX_LIFTED_BYTES if lifted else T.MAX_RESULT_BYTES, hint)
        if before is not None and key is not None and not self._ctx.notices and not stray.getvalue():
            after = self._read_stamp()  # nothing changed while it ran: keep it
            if after is not None and after.key == before.key and after.settled:
                if len(self._reads) >= 64:
                    self._reads.clear()
                self._reads[key] = (after.key, json.dumps(doc, default=str), code)
        opened = getattr(self._ctx, "opened", None)
        if opened is not None and opened.upgraded and not self._upgrade_said and isinstance(doc, dict):
            doc = {**doc, "upgraded": {"from": opened.upgraded[0], "to": opened.upgraded[1]}}  # said once,
            self._upgrade_said = True  # in this answer only (not in the read cache's copy)
        return doc, False, code


class Narration:
    """The MCP server's narration on stderr, written by a thread of its own through a bounded
    queue: a client that never reads the server's stderr pipe used to block a verb in the middle of
    its work (holding the workspace lock: a CLI `verdict --all` then failed `locked`). Lines that
    find the queue full are dropped and counted, never waited for."""

    def __init__(self, size: int = 1000) -> None:
        self.q: queue.Queue[str] = queue.Queue(maxsize=size)
        self.dropped = 0
        self._thread: threading.Thread | None = None
        self._start = threading.Lock()

    def say(self, text: str) -> None:
        try:
            self.q.put_nowait(f"optlog: {text}\n")
        except queue.Full:
            self.dropped += 1
            return
        with self._start:
            if self._thread is None:
                self._thread = threading.Thread(target=self._write, name="optlog-mcp-stderr", daemon=True)
                self._thread.start()

    def _write(self) -> None:
        while True:
            line = self.q.get()
            try:
                sys.stderr.write(line)
                sys.stderr.flush()
            except (OSError, ValueError):
                pass


NARRATION = Narration()


def one_line(doc: Any, name: str) -> str:
    """The text content beside a structured result: an error's one line, else compact JSON."""
    if isinstance(doc, dict) and isinstance(doc.get("error"), dict):
        e = doc["error"]
        where = ":".join(str(x) for x in (e.get("file"), e.get("line")) if x is not None)
        fld = f"{e['field']}: " if e.get("field") else ""
        return TX.shown(f"{e['code']}: {where + ': ' if where else ''}{fld}{e['message']}".splitlines()[0])
    return TX.json_shown(json.dumps(doc, default=str, ensure_ascii=False, separators=(",", ":")))
