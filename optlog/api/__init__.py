"""The product's API: every verb, typed, declared once (`optlog.api.verb`), by noun.

`NOUNS` is the catalogue's index: a top-level command name → the module that declares its verbs.
A face imports a noun's module only when it is used (as the CLI's lazy command table does), so
`optlog todo list` loads the todo verbs and nothing else. The faces are generated from what the
modules declare: the click commands (`optlog.cli.commands`), the MCP tools (`optlog.mcp.tools`),
and the TUI's actions call the verb functions themselves.
"""

from __future__ import annotations

NOUNS: dict[str, str] = {
    "todo": "optlog.api.todos",
    "agent": "optlog.api.agent",
    "hypothesis": "optlog.api.hypotheses",
    "prediction": "optlog.api.predictions",
    "verdict": "optlog.api.predictions",
    "compare": "optlog.api.predictions",
    "next": "optlog.api.nextexp",
    "plan": "optlog.api.plans",
    "report": "optlog.api.plans",
    "log": "optlog.api.history",
    "sync": "optlog.api.history",
    "init": "optlog.api.workspace",
    "status": "optlog.api.workspace",
    "note": "optlog.api.notes",
    "demo": "optlog.api.demo",
    "run": "optlog.api.runs",
    "bench": "optlog.api.bench",
    "tune": "optlog.api.tune",
    "calibrate": "optlog.api.calibrate",
}
# second names of a noun that the root does not list (help and the MCP tools do not repeat them)
ALIAS_NOUNS: dict[str, str] = {
    "predict": "optlog.api.predictions",
}
