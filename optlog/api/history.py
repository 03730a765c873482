"""log (the decision timeline from git) and sync (commit hand edits of hypothesis files)."""

from __future__ import annotations

from typing import Annotated, Any, cast

from optlog.api.params import Detail, Limit, Offset, Order
from optlog.api.verb import AgentDefault, Call, Opt, verb
from optlog.core.timeutil import at_or_after, since_time
from optlog.service import documents, history
from optlog.service.envelope import check_limit, paged


@verb("log", read_only=True)
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
    # pages count back from the newest event (`offset` skips the newest ones); `order` is the order
    # of the page's events
    check_limit(limit, 1)
    since = since_time(since)
    res = history.log(call.ctx, hypothesis, None)
    events = [e for e in res["events"] if at_or_after(e["at"], since)] if since else res["events"]
    rows, facts = paged(events, limit, offset, "newest")
    if order == "oldest":
        rows = rows[::-1]
    res["events"] = rows if detail else [history.brief_event(e) for e in rows]
    if limit is not None or offset:
        res.update(facts)
    return cast(documents.LogDoc, res)


@verb("sync")
def sync(call: Call) -> dict[str, Any]:
    """Validate hand-edited hypothesis files and commit them as edits."""
    return history.sync_files(call.ctx)
