"""`optlog agent setup claude-code|opencode`: wire a coding agent to the notebook.

Writes three things into a project folder, merging into what is there and never overwriting a
user's value: the MCP server entry (Claude Code: `.mcp.json` → `mcpServers`; OpenCode:
`opencode.json` → `mcp`, type `local`, command as a list), an instructions file teaching the loop
(Claude Code imports it from CLAUDE.md with `@path`; OpenCode lists it in `instructions`), and a
hook mirroring the agent's todo list into optlog with no extra call (Claude Code: a PostToolUse
hook matched on TodoWrite in `.claude/settings.json`, whose stdin payload `optlog todo write -`
takes as it is; OpenCode: a plugin on the `todo.updated` event).
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

from optlog.errors import BadInput
from optlog.paths import program
from optlog.yamlio import parse_json, read_text

AGENTS = ("claude-code", "opencode")
SERVER = "optlog"

LOOP = """\
# Working with optlog (the lab notebook of this performance work)

optlog is connected as the MCP server `optlog`: every CLI command is a tool named by its path
(`run wait` → `run_wait`). Results are small by default; ask for more with `detail`, `limit`,
`offset` or `fields`. Errors come back as `{"error": {"code", "message", "field", ...}}`, with
`field` naming the parameter to fix and `did_you_mean` when a name was close.

Each tool's listing is short; `agent_tools` with `name` gives a tool's whole description and
parameters.

The loop:
1. **Status first.** Call `status` at the start and whenever you lose context: live and failed
   launches, hypotheses whose verdict is due, your todos in progress, and up to three next calls.
2. **Hypotheses and predictions before measuring.** `hypothesis_add` says what you believe;
   `prediction_add` pre-registers a machine-checkable claim (`expect="a > b"`, groups `a`/`b` by
   label, `per="concurrency"`). Predict before you look at the numbers.
3. **Todos.** Your todo list is mirrored into optlog by a hook (a failure shows as the hook's
   error); link a todo to a hypothesis with `todo_set`.
4. **Measure detached, then wait.** `run_launch` (detached) returns a launch ref `L<n>`; then
   `run_wait(ref, timeout_s)` blocks until it ends and `run_logs(ref, tail)` shows the last lines.
   Runs done elsewhere: `run_record` or `run_import`. A wrong run: `run_invalidate` with the reason.
5. **Verdict.** `verdict` judges every prediction against comparable runs and commits the decision.
6. **Pivot, then discriminate.** A falsified hypothesis is a finding: `hypothesis_add` with `parent`
   set to it. While a hypothesis and its rival (or parent) are undecided, `next` names the experiment
   that would tell them apart and writes it as `runs/next-<hyp>.yaml`: review it, then `run_launch` it.
7. **Plans.** `plan_add` ranks what to do next (gain, effort S|M|L, confidence, the hypotheses it
   needs); the ranking follows the verdicts. `plan_render` writes the plan files.
8. **Report.** `report` writes the session report; `log` is the decision timeline.
"""

OPENCODE_PLUGIN = """\
// Written by `optlog agent setup opencode`: mirrors the agent's todo list into optlog.
const OPTLOG = @PROGRAM@  // the MCP server's program, by path (it need not be on PATH)
export const OptlogTodos = async ({ $, directory }) => ({
  event: async ({ event }) => {
    if (event.type !== "todo.updated") return
    const todos = JSON.stringify({ todos: event.properties.todos })
    await $`${OPTLOG} -C ${directory} todo write --todos ${todos}`.quiet().nothrow()
  },
})
"""


OLD_HOOKS = ("optlog todo write - >/dev/null",)  # what earlier versions wrote: bare, so not found off PATH


def _command() -> list[str]:
    """The optlog program by absolute path (the MCP server and the hook run the same one): never a
    bare `python -m optlog`, which the project folder's `optlog/` would shadow (see paths.program)."""
    return [*program(), "mcp"]


def hook_command(program: list[str]) -> str:
    """The TodoWrite hook: the MCP server's program, and exit 2 when the mirror fails, because
    Claude Code shows a hook's stderr to the agent only on exit 2 (exit 127 or 1 is silent).
    `--queue`: the list is validated and queued without opening the database (store.todoinbox),
    so the hook costs a fraction of a second on every TodoWrite."""
    return " ".join(shlex.quote(a) for a in program) + " todo write --queue - >/dev/null || exit 2"


def _check_runs(program: list[str], root: Path) -> None:
    """Refuse to write a server and hook that cannot start (exit 2, with the cause and the fix). Run
    in the project folder, where the agent will start them."""
    try:
        p = subprocess.run([*program, "--version"], capture_output=True, text=True, timeout=60,
                           stdin=subprocess.DEVNULL, cwd=root)
        why = None if p.returncode == 0 else f"exit {p.returncode}: {(p.stderr or p.stdout).strip()[-300:]}"
    except (OSError, subprocess.TimeoutExpired) as e:
        why = str(e)
    if why is None:
        return
    if "-m" in program and (root / "optlog").is_dir():
        cause = (f"Cause: {root} holds a folder named optlog/, which `python -m optlog` started there imports "
                 "instead of the installed optlog. Fix: install optlog's console script (pip install optlog "
                 "puts `optlog` beside the Python) or put it first on PATH, then run agent setup again")
    else:
        cause = (f"Fix: put a working optlog first on PATH (the one found was {program[0]}), or run "
                 f"`{sys.executable} -P -m optlog agent setup` with the Python that has optlog installed")
    raise BadInput(f"{' '.join(program)} does not run in {root} ({why}); nothing was written. {cause}",
                   field="which", extra={"command": program})


def _read_json(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}

    try:  # the guarded reader: invalid UTF-8 or deep nesting is bad input too, never a traceback
        data = parse_json(read_text(path, str(path)) or "{}", str(path))
    except BadInput as e:
        e.message += "; fix it or move it aside (nothing was written)"
        raise
    if not isinstance(data, dict):
        raise BadInput("expected a JSON object", file=str(path))
    return data


class _Plan:
    """The writes, decided before any is made (a malformed file writes nothing)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.files: dict[Path, str] = {}
        self.report: list[dict[str, Any]] = []

    def json_merge(self, rel: str, merge: Any) -> None:
        path = self.root / rel
        data = _read_json(path)
        before = json.dumps(data, sort_keys=True)
        notes = merge(data)
        if json.dumps(data, sort_keys=True) != before:
            self.files[path] = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
            self.report.append({"file": rel, "action": "created" if not path.exists() else "merged", "notes": notes})
        else:
            self.report.append({"file": rel, "action": "unchanged", "notes": notes})

    def text(self, rel: str, body: str) -> None:
        path = self.root / rel
        if path.exists() and path.read_text(encoding="utf-8") == body:
            self.report.append({"file": rel, "action": "unchanged", "notes": []})
            return
        if path.exists():
            self.report.append({"file": rel, "action": "kept", "notes": ["exists with other content; left as it is"]})
            return
        self.files[path] = body
        self.report.append({"file": rel, "action": "created", "notes": []})

    def append_line(self, rel: str, line: str) -> None:
        path = self.root / rel
        old = path.read_text(encoding="utf-8") if path.exists() else ""
        if line in old.splitlines():
            self.report.append({"file": rel, "action": "unchanged", "notes": []})
            return
        self.files[path] = old + ("" if not old or old.endswith("\n") else "\n") + line + "\n"
        self.report.append({"file": rel, "action": "merged" if old else "created", "notes": [f"added {line}"]})

    def apply(self) -> None:
        for path, body in self.files.items():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(body, encoding="utf-8")


def _put(table: dict[str, Any], key: str, value: Any) -> list[str]:
    """Set table[key] unless the user has another value there (then keep theirs and say so)."""
    if key in table and table[key] != value:
        return [f"kept your existing {key!r} entry"]
    table[key] = value
    return []


def setup(agent: str, folder: str | None) -> dict[str, Any]:
    if agent not in AGENTS:
        raise BadInput(f"unknown agent {agent!r}; one of {', '.join(AGENTS)}", field="which", code="usage")
    root = Path(folder or ".").resolve()
    if not root.is_dir():
        raise BadInput(f"no such folder: {root}", field="folder")
    plan = _Plan(root)
    cmd = _command()
    _check_runs(cmd[:-1], root)
    hook_cmd = hook_command(cmd[:-1])
    if agent == "claude-code":
        def mcp(d: dict[str, Any]) -> list[str]:
            servers = d.setdefault("mcpServers", {})
            return _put(servers, SERVER, {"type": "stdio", "command": cmd[0], "args": cmd[1:],
                                          "env": {"OPTLOG_ACTOR": "agent:claude-code"}})

        def hooks(d: dict[str, Any]) -> list[str]:
            post = d.setdefault("hooks", {}).setdefault("PostToolUse", [])
            for m in post:
                for h in m.get("hooks", []):
                    if h.get("command") in OLD_HOOKS:  # ours, from before: the program by path now
                        h["command"] = hook_cmd
                        return ["the hook now runs optlog by its path"]
                    if "todo write" in str(h.get("command", "")):
                        return []
            post.append({"matcher": "TodoWrite", "hooks": [{"type": "command", "command": hook_cmd}]})
            return []

        plan.json_merge(".mcp.json", mcp)
        plan.json_merge(".claude/settings.json", hooks)
        plan.text(".claude/optlog.md", LOOP)
        plan.append_line("CLAUDE.md", "@.claude/optlog.md")
    else:
        def config(d: dict[str, Any]) -> list[str]:
            d.setdefault("$schema", "https://opencode.ai/config.json")
            notes = _put(d.setdefault("mcp", {}), SERVER, {"type": "local", "command": cmd, "enabled": True,
                                                          "environment": {"OPTLOG_ACTOR": "agent:opencode"}})
            ins = d.setdefault("instructions", [])
            if ".opencode/optlog.md" not in ins:
                ins.append(".opencode/optlog.md")
            return notes

        plan.json_merge("opencode.json", config)
        plan.text(".opencode/optlog.md", LOOP)
        # OpenCode loads project plugins from .opencode/plugins/ (https://opencode.ai/docs/plugins/)
        plan.text(".opencode/plugins/optlog-todos.js", OPENCODE_PLUGIN.replace("@PROGRAM@", json.dumps(cmd[:-1])))
    plan.apply()
    return {"agent": agent, "dir": str(root), "files": plan.report}
