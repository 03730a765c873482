"""hypothesis add|list|show|set|edit (alias: hyp): what you believe, each committed to git."""

from __future__ import annotations

from typing import Annotated, cast

from optlog.api.params import Detail, Fields, Limit, Offset, Order
from optlog.api.verb import AgentDefault, Arg, Call, Opt, group, verb
from optlog.core.statuses import HYP_STATUSES
from optlog.service import documents, hypotheses
from optlog.service.envelope import listing

group("hypothesis", "Hypotheses: what you believe, with predictions that can prove it wrong.")

# what --brief keeps of a written hypothesis
Ack = Annotated[Detail, Opt("--detail/--brief", show_default=True,
                            help="The whole document, or only the id, status, title and parent.")]
HypId = Annotated[str, Arg(metavar="ID", help="The hypothesis id.")]


@verb("hypothesis add")
def hyp_add(call: Call, *,
            title: Annotated[str, Arg(help="A short title: what you believe, e.g. 'Decode is communication-bound at TP8'.")],
            hid: Annotated[str | None, Opt("--id", metavar="ID", help="Id (default: from the title).")] = None,
            statement: Annotated[str, Opt(help="What is claimed, precisely.")] = "",
            rationale: Annotated[str, Opt(help="Why you believe it.")] = "",
            parent: Annotated[str | None, Opt(metavar="ID", help="The hypothesis this one pivots from.")] = None,
            rivals: Annotated[tuple[str, ...], Opt("--rival", metavar="ID",
                                                   help="A competing explanation (repeatable).")] = (),
            detail: Ack = True,
            ) -> documents.HypothesisShow | documents.HypothesisAck:
    """Add a hypothesis (committed to git)."""
    doc = hypotheses.add(call.ctx, title, hid=hid, statement=statement, rationale=rationale, parent=parent,
                         rivals=rivals)
    return hypotheses.written(call.ctx, doc.id, detail)


@verb("hypothesis list", read_only=True)
def hyp_list(call: Call, *,
             status: Annotated[str | None, Opt(choices=HYP_STATUSES, help="Only hypotheses with this status.")] = None,
             limit: Limit = None,
             offset: Offset = 0,
             order: Order = "oldest",
             fields: Annotated[Fields, AgentDefault("id,title,status,parent")] = None,
             ) -> documents.HypothesisList:
    """List hypotheses."""
    return cast(documents.HypothesisList,
                listing("hypotheses", hypotheses.list_(call.ctx, status), limit, offset, order, fields))


@verb("hypothesis show", read_only=True)
def hyp_show(call: Call, *,
             hid: HypId,
             detail: Annotated[Detail, Opt("--detail/--brief", show_default=True,
                                           help="Everything (evidence values, history, notes, runs), or the statement, "
                                                "predictions and the last three verdicts.")] = True,
             ) -> documents.HypothesisShow | documents.HypothesisBrief:
    """Show a hypothesis with its predictions and verdict history."""
    h = cast(documents.HypothesisShow, hypotheses.show(call.ctx, hid))
    return h if detail else hypotheses.brief(h)


@verb("hypothesis set")
def hyp_set(call: Call, *,
            hid: HypId,
            status: Annotated[str, Opt(choices=HYP_STATUSES, help="The status to set.")],
            why: Annotated[str | None, Opt(metavar="T", help="The reason (required).")] = None,
            detail: Ack = True,
            ) -> documents.HypothesisShow | documents.HypothesisAck:
    """Set a status by hand (an override, kept beside the automatic verdict)."""
    hypotheses.set_status(call.ctx, hid, status, why or "")
    return hypotheses.written(call.ctx, hid, detail)


@verb("hypothesis edit")
def hyp_edit(call: Call, *,
             hid: HypId,
             title: Annotated[str | None, Opt(help="A new title.")] = None,
             statement: Annotated[str | None, Opt(help="A new statement: what is claimed, precisely.")] = None,
             rationale: Annotated[str | None, Opt(help="A new rationale: why you believe it.")] = None,
             rivals: Annotated[tuple[str, ...], Opt("--rival", metavar="ID", help="Add a rival (repeatable).")] = (),
             detail: Ack = True,
             ) -> documents.HypothesisShow | documents.HypothesisAck:
    """Edit title, statement, rationale or rivals (committed as an edit)."""
    hypotheses.edit(call.ctx, hid, title=title, statement=statement, rationale=rationale, add_rivals=rivals)
    return hypotheses.written(call.ctx, hid, detail)
