"""log (the decision timeline from git) and sync (commit hand edits of hypothesis files)."""

from __future__ import annotations

from typing import Annotated, Any

from optlog.api.params import Detail, Limit, Offset, Order
from optlog.api.verb import AgentDefault, Call, Opt, verb
from optlog.service import documents, history


def _human_log(r: dict[str, Any]) -> str:
    if r.get("notice") and not r["events"]:
        return r["notice"]
    if not r["events"]:
        return "no decisions recorded yet"
    out = []
    for e in r["events"]:
        head = f"{str(e['at'])[:16].replace('T', ' ')}  {e['sha'][:8]}  {e['subject']}"
        out.append(head)
        meta = [f"event {e['event']}"]
        if e.get("hypothesis"):
            meta.append(f"hypothesis {e['hypothesis']}")
        if e.get("runs"):
            meta.append("runs " + ",".join(str(x) for x in e["runs"]))
        if e.get("actor"):
            meta.append(f"by {e['actor']}")
        out.append("    " + " · ".join(meta))
        if e.get("pivot"):
            out.append(f"    ⇒ pivot: {e['pivot']['from']} → {e['pivot']['to']}")
        if e.get("hand_edit"):
            out.append(f"    includes a hand edit of {', '.join(e['hand_edit'])}")
        body = (e.get("body") or "").strip()
        if body:
            for line in body.splitlines():
                out.append(f"    │ {line}" if line.strip() else "    │")
    if r.get("notice"):  # a shallow clone: the timeline above is cut
        out.append(r["notice"])
    return "\n".join(out)


@verb("log", _human_log, read_only=True)
def log(call: Call, *,
        hypothesis: Annotated[str | None, Opt(metavar="ID", help="Only this hypothesis (and pivots from it).")] = None,
        limit: Annotated[Limit, AgentDefault(5), Opt("--limit", "-n", metavar="N", help="Only the last N events.")] = None,
        offset: Annotated[Offset, Opt(help="Skip this many of the newest events first (the previous page's "
                                           "next_offset).")] = 0,
        since: Annotated[str | None, Opt(metavar="TIME", help="Only events at or after TIME (ISO 8601, e.g. "
                                                              "2026-12-01T08:00).")] = None,
        order: Order = "oldest",
        detail: Annotated[Detail, Opt("--detail/--brief", show_default=True,
                                      help="Every event with its commit message body, or one line each.")] = True,
        ) -> documents.LogDoc:
    """The decision timeline from git, oldest first: events, reasons, runs, pivots."""
    return history.log_doc(call.ctx, hypothesis, limit=limit, offset=offset, since=since, order=order, detail=detail)


def _sync_human(r: dict[str, Any]) -> str:
    if r.get("notice"):
        return r["notice"]
    if not r["committed"]:
        return f"{r['hypotheses']} hypothesis files valid; nothing to commit"
    return "\n".join(f"committed {c['sha'][:8]} {c['subject']}" for c in r["committed"])


@verb("sync", _sync_human)
def sync(call: Call) -> dict[str, Any]:
    """Validate hand-edited hypothesis files and commit them as edits."""
    return history.sync_files(call.ctx)
