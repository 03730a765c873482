"""How the CLI shows the documents of `optlog.api.launches`'s verbs to a person (stdout is data)."""

from __future__ import annotations

import shlex
from typing import Any

from optlog.cli.render.text import fmt_num, kv, table
from optlog.core import metrics as M
from optlog.core.numfmt import fmt_count


def _dry_human(d: dict[str, Any]) -> str:
    lines = [f"dry run of {d['spec']}: {fmt_count(d['runs'])} run{'s' if d['runs'] != 1 else ''}"
             + (f", {fmt_count(d['servers'])} server command{'s' if d['servers'] != 1 else ''}" if d["servers"] else "")
             + "; nothing launched, nothing written"]
    if d.get("cost"):
        lines.append(f"  cost: {d['cost']['text']}")
    for i, p in enumerate(d["points"], 1):
        lines.append(f"{i:>4}  {kv(p['labels'])}")
        if p.get("server"):
            lines.append(f"      server: {shlex.join(p['server'])}")
        lines.append(f"      bench:  {shlex.join(p['bench'] or [])}")
    return "\n".join(lines)


def _launch_human(d: dict[str, Any]) -> str:
    if d.get("dry_run"):
        return _dry_human(d)
    if d.get("detached"):
        runs = d["runs"]
        span = f"{runs[0]}–{runs[-1]}" if len(runs) > 1 else (str(runs[0]) if runs else "none")
        return (f"launch {d['ref']} started in the background: runs {span}\n"
                f"  optlog run wait {d['ref']}   ·   optlog run logs {d['ref']} --follow   ·   optlog run cancel {d['ref']}")
    rows = []
    keys: list[str] = []
    for r in d["runs"]:
        for k in M.HEADLINE_THROUGHPUT:
            if k in r["metrics"] and k not in keys:
                keys.append(k)
    for r in d["runs"]:
        err = (r.get("error") or "").splitlines()[0][:70] if r.get("error") else ""
        if r.get("cause"):
            err = f"[{r['cause']}] {err}"
        rows.append([r["id"], r["status"], kv(r["labels"])] + [fmt_num(r["metrics"].get(k)) for k in keys[:2]] + [err])
    head = f"launch L{d['launch']} ({d.get('name')}): {d['status']}"
    return head + "\n" + table(rows, ["run", "status", "labels", *keys[:2], "error"])


def _wait_human(d: dict[str, Any]) -> str:
    what = f"launch L{d['launch']}" if "runs" in d else f"run {d['run']}"
    return (f"{what}: {d['status']}" + (" (still running: timed out waiting)" if d.get("timed_out") else "")
            + (f" — {d['error'].splitlines()[0]}" if d.get("error") else ""))


HUMAN: dict[str, Any] = {  # the verb's path → its text, or a function of its document
    "run launch": _launch_human,
    "run wait": _wait_human,
    "run cancel": lambda d: d.get("message") or f"launch L{d['launch']}: {d['status']}",
}
