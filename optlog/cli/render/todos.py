"""How the CLI shows the documents of `optlog.api.todos`'s verbs to a person (stdout is data)."""

from __future__ import annotations

from typing import Any

from optlog.core.numfmt import plural
from optlog.core.todos import TODO_MARK


def _human(d: dict[str, Any]) -> str:
    if not d["todos"]:
        return "no todos"
    out = []
    for t in d["todos"]:
        pr = f" ({t['priority']})" if t.get("priority") else ""
        hy = f" → {t['hypothesis']}" if t.get("hypothesis") else ""
        out.append(f"{TODO_MARK.get(t['status'], '[?]')} {t['id']:<10} {t['content']}{pr}{hy}")
    return "\n".join(out)


HUMAN: dict[str, Any] = {  # the verb's path → its text, or a function of its document
    "todo add": lambda r: f"added todo {r['id']}",
    "todo set": lambda r: f"{r['id']} is {r['status']}",
    "todo list": _human,
    "todo write": lambda d: _human(d) if "total" not in d else f"{plural(d['total'], 'todo')} written",
}
