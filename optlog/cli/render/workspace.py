"""How the CLI shows the documents of `optlog.api.workspace`'s verbs to a person (stdout is data)."""

from __future__ import annotations

from typing import Any

from optlog.cli.statustext import status_human
from optlog.cli.render.text import command_line


def _init_human(r: dict[str, Any]) -> str:
    how = "adopted" if r["adopted"] else "initialised"
    made = ", ".join(r["created"]) or "nothing new"
    return f"{how} optlog workspace in {r['workspace']} (created: {made})"


def _status_human(r: dict[str, Any]) -> str:
    return status_human(r, command_line)  # the registry's spelling of the calls (the front door: CALL_SHAPES)


HUMAN: dict[str, Any] = {  # the verb's path → its text, or a function of its document
    "init": _init_human,
    "status": _status_human,
}
