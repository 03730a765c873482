"""How the CLI shows the documents of `optlog.api.agent`'s verbs to a person (stdout is data)."""

from __future__ import annotations

from typing import Any


def _human(r: dict[str, Any]) -> str:
    return "\n".join(f"{f['action']:>9}  {f['file']}" + (f"  ({'; '.join(f['notes'])})" if f["notes"] else "")
                     for f in r["files"])


def _tools_human(r: dict[str, Any]) -> str:
    if "tools" in r:
        return "\n".join(f"{t['name']:<22} {t['summary']}" for t in r["tools"])
    lines = [f"{r['tool']} (optlog {r['cli']}): {r['description']}", ""]
    for n, p in r["parameters"].items():
        lines.append(f"  {n}{' (required)' if p.get('required') else ''}: {p.get('description', '')}")
    return "\n".join(lines)


HUMAN: dict[str, Any] = {  # the verb's path → its text, or a function of its document
    "agent setup": _human,
    "agent tools": _tools_human,
}
