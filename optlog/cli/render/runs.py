"""How the CLI shows the documents of `optlog.api.runs`'s verbs to a person (stdout is data)."""

from __future__ import annotations

from typing import Any

from optlog.cli.render.text import fmt_num, kv, runs_table
from optlog.core import views as VW


def _show_human(r: dict[str, Any]) -> str:
    out = [f"run {r.get('id')}: {r.get('status')}" + (f" — INVALIDATED: {r.get('invalid_reason')}" if r.get("invalidated") else "")]
    if r.get("name"):
        out.append(f"name: {r['name']}")
    out.append(f"labels: {kv(r.get('labels') or {}) or '-'}")
    if r.get("hypothesis"):
        out.append(f"hypothesis: {r['hypothesis']}")
    if r.get("exit_code") is not None:
        out.append(f"exit code: {r['exit_code']}")
    if r.get("error"):
        out.append(VW.run_error(r))
    if r.get("metrics"):
        out.append("metrics:")
        w = max(len(k) for k in r["metrics"])
        for k, v in sorted(r["metrics"].items()):
            out.append(f"  {k:<{w}}  {fmt_num(v)}")
    tel = r.get("telemetry") or {}
    if tel.get("text"):
        out.append(tel["text"])
    if r.get("note"):
        out.append(f"note: {r['note']}")
    if r.get("artifacts"):
        out.append("artifacts:")
        out += [f"  {a['path']} ({a['bytes']} B)" for a in r["artifacts"]]
    return "\n".join(out)


HUMAN: dict[str, Any] = {  # the verb's path → its text, or a function of its document
    "run record": lambda r: f"recorded run {r['id']}",
    "run list": runs_table,
    "run show": _show_human,
}
