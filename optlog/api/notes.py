"""note add|list: evidence that is not a number (observations, bug reports, links)."""

from __future__ import annotations

from typing import Annotated, cast

from optlog.api.params import Limit, Offset, Order
from optlog.api.verb import Arg, Call, Opt, group, verb
from optlog.core.timeutil import since_time
from optlog.service import documents, evidence
from optlog.service.envelope import listing

group("note", "Evidence that is not a number: observations, bug reports, links.")


@verb("note add")
def note_add(call: Call, *,
             text: Annotated[str, Arg(help="The observation, in a sentence or two.")],
             hypothesis: Annotated[str | None, Opt(metavar="ID", help="The hypothesis this is evidence for.")] = None,
             link: Annotated[str | None, Opt(metavar="URL", help="A link (bug report, issue, dashboard).")] = None,
             run_id: Annotated[int | None, Opt("--run", metavar="ID", help="The run this note is about.")] = None,
             ) -> documents.Note:
    """Record a note."""
    return evidence.add_note(call.ctx, text, hypothesis, link, run_id)


@verb("note list", read_only=True)
def note_list(call: Call, *,
              hypothesis: Annotated[str | None, Opt(metavar="ID", help="Only notes on this hypothesis.")] = None,
              since: Annotated[str | None, Opt(metavar="TIME", help="Only notes at or after TIME (ISO 8601, e.g. "
                                                                    "2026-12-01T08:00).")] = None,
              limit: Limit = None,
              offset: Offset = 0,
              order: Order = "oldest",
              ) -> documents.NoteList:
    """List notes."""
    return cast(documents.NoteList,
                listing("notes", evidence.list_notes(call.ctx, hypothesis, since_time(since)), limit, offset, order))
