"""How the CLI shows the documents of `optlog.api.notes`'s verbs to a person (stdout is data)."""

from __future__ import annotations

from typing import Any


def _notes_human(d: dict[str, Any]) -> str:
    return "\n".join(
        f"{n['id']:>4} {n['created_at'][:16]} {n['hypothesis'] or '-':<20} {n['text']}" + (f" <{n['link']}>" if n["link"] else "")
        for n in d["notes"]
    ) or "no notes"


HUMAN: dict[str, Any] = {  # the verb's path → its text, or a function of its document
    "note add": lambda r: f"note {r['id']} recorded",
    "note list": _notes_human,
}
