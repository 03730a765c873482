"""How the CLI shows the documents of `optlog.api.imports`'s verbs to a person (stdout is data)."""

from __future__ import annotations

from typing import Any

from optlog.cli.render.text import runs_table


def _human(d: dict[str, Any]) -> str:
    n = len(d["runs"])
    head = f"imported {n} run{'s' if n != 1 else ''}"
    for a in d.get("already_imported", []):
        head += f"\n{a['file']}: already run{'s' if len(a['runs']) != 1 else ''} {', '.join(map(str, a['runs']))} ({a['why']})"
    return head + "\n" + runs_table(d) if n else head


HUMAN: dict[str, Any] = {  # the verb's path → its text, or a function of its document
    "run import": _human,
}
