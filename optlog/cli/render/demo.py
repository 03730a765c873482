"""How the CLI shows the documents of `optlog.api.demo`'s verbs to a person (stdout is data)."""

from __future__ import annotations

from typing import Any


def _human(r: dict[str, Any]) -> str:
    return f"demo workspace: {r['workspace']}\nreport: {r['report']}"


HUMAN: dict[str, Any] = {  # the verb's path → its text, or a function of its document
    "demo": _human,
}
