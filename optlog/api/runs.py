"""run record|list|show: the runs themselves. The group's other verbs live in modules of their own
(`parts`), imported only when used: `run list`, a hot read, loads no launch, import or judging code."""

from __future__ import annotations

from typing import Annotated, Any, cast

from optlog.api.params import Detail, Fields, Limit, Offset, Order, pairs
from optlog.api.verb import AgentDefault, Arg, Call, Opt, Pairs, group, verb
from optlog.core.limits import LIMITS
from optlog.core.numfmt import fmt_count
from optlog.core.statuses import RUN_STATUSES
from optlog.core.timeutil import since_time
from optlog.errors import param
from optlog.service import documents, evidence
from optlog.service.envelope import select

group("run", "Benchmark runs: recorded, imported or launched; the evidence verdicts read.",
      parts={"launch": "optlog.api.launches", "wait": "optlog.api.launches", "logs": "optlog.api.launches",
             "cancel": "optlog.api.launches", "import": "optlog.api.imports",
             "diff": "optlog.api.judging", "invalidate": "optlog.api.judging"})

Labels = Annotated[tuple[tuple[str, Any], ...], Pairs()]


@verb("run record",
      description='Labels and metrics may also be objects: labels={"config": "tp8", "concurrency": 256}, '
                  'metrics={"total_token_throughput": 1867}.')
def run_record(call: Call, *,
               labels: Annotated[Labels, Opt("--label", metavar="K=V",
                                             help="A label (repeatable): config=tp8, concurrency=256 …")] = (),
               metrics: Annotated[Labels, Opt("--metric", metavar="NAME=VALUE", help="A metric (repeatable).")] = (),
               hypothesis: Annotated[str | None, Opt(metavar="ID", help="Attach as evidence to this hypothesis.")] = None,
               note: Annotated[str | None, Opt(metavar="T", help="A note kept with the run (how it was measured).")] = None,
               ) -> dict[str, Any]:
    """Store a run done elsewhere."""
    return evidence.record(call.ctx, pairs(labels, "labels"), pairs(metrics, "metrics"), hypothesis, note)


@verb("run list", read_only=True)
def run_list(call: Call, *,
             status: Annotated[str | None, Opt(choices=RUN_STATUSES, help="Only runs with this status.")] = None,
             hypothesis: Annotated[str | None, Opt(metavar="ID", help="Only runs attached to this hypothesis.")] = None,
             launch: Annotated[int | None, Opt(metavar="N", help="Only the runs of launch N (L<N>).")] = None,
             labels: Annotated[Labels, Opt("--label", metavar="K=V", help="Only runs with this label (repeatable).")] = (),
             since: Annotated[str | None, Opt(metavar="TIME", help="Only runs created at or after TIME "
                                                                   "(ISO 8601, e.g. 2026-12-01T08:00).")] = None,
             limit: Annotated[Limit, AgentDefault(10)] = None,
             offset: Offset = 0,
             order: Order = "oldest",
             fields: Annotated[Fields, AgentDefault("id,status,hypothesis,invalidated,labels,metrics")] = None,
             ) -> documents.RunList:
    """List runs with their labels and metrics."""
    # the page facts come with a page (`limit` or `offset`); without a limit, the first LIMITS.list_page
    # runs: a longer list comes with its page facts and a notice of how to get the rest
    ctx, page, selectors = call.ctx, limit is None, pairs(labels, "labels")
    since = since_time(since)
    doc = evidence.runs_page(ctx, status=status, hypothesis=hypothesis, labels=selectors,
                             limit=LIMITS.list_page + 1 if page else limit, offset=offset, newest=order == "newest",
                             since=since, launch=launch, count=not page or bool(offset))
    if page and len(doc["runs"]) > LIMITS.list_page:  # more than a page: count them, say how to page
        doc = evidence.runs_page(ctx, status=status, hypothesis=hypothesis, labels=selectors, limit=LIMITS.list_page,
                                 offset=offset, newest=order == "newest", since=since, launch=launch, count=True)
        ctx.notice(f"showing {fmt_count(len(doc['runs']))} of {fmt_count(doc['total'])} runs ({order} first, from "
                   f"{offset}): {param('offset', str(doc['next_offset']))} for the next page, {param('limit', 'N')} for more at once")
    doc["runs"] = select(doc["runs"], fields)
    return cast(documents.RunList, doc)


@verb("run show", read_only=True)
def run_show(call: Call, *,
             run_id: Annotated[str, Arg(metavar="ID", help="The run id (a number).")],
             detail: Annotated[Detail, Opt("--detail/--brief", show_default=True,
                                           help="Everything, or without the environment, raw result and "
                                                "artifact list (counted instead).")] = True,
             fields: Fields = None,
             ) -> documents.RunShow:
    """Show one run: labels, metrics, telemetry, environment, artifacts."""
    doc = evidence.show_run(call.ctx, run_id)
    return cast(documents.RunShow, select([doc if detail else evidence.brief_run(doc)], fields)[0])
