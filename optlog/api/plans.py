"""plan add|list|show|set|edit|rm|render|import, and report: ranked improvement plans and the
session report that ranks them beside the verdicts."""

from __future__ import annotations

from typing import Annotated, Any, cast

from optlog.api.params import Detail, Fields
from optlog.api.verb import AgentDefault, Arg, Call, Opt, group, verb
from optlog.core.plans import EFFORT_WEIGHT, PLAN_STATUSES
from optlog.errors import BadInput, param
from optlog.service import documents, plans, report as reports
from optlog.service.envelope import select

group("plan", "Ranked improvement plans; the ranking follows the verdicts.")

_NEEDS_HELP = ("A hypothesis the plan rests on (repeatable): HYP needs it confirmed, HYP=falsified needs it "
               "falsified.")
_CHANGE_HELP = ("The one label the plan moves, LABEL=NOW->PLANNED (e.g. parallel=1->4): where optlog measured "
                "that change, the measured effect replaces the claimed gain in the score.")
_PID = Arg(metavar="ID", help="The plan number (1, or 01).")
_PLAN_DETAIL = Opt("--detail/--brief", show_default=True, help="The whole plan, or its id, rank, score, status and reason.")


@verb("plan add")
def plan_add(call: Call, *,
             title: Annotated[str, Arg(help="What the plan does, e.g. 'MSCCLPP allreduce for TP8 decode'.")],
             gain: Annotated[str, Opt(metavar="LOW-HIGH%", help="Predicted gain range in percent, e.g. 10-30%.")],
             effort: Annotated[str, Opt(choices=tuple(EFFORT_WEIGHT), case_sensitive=False,
                                        help="Effort: S (÷1), M (÷3), L (÷8).")],
             confidence: Annotated[str, Opt(metavar="F", help="Confidence in the gain, 0 to 1.")],
             needs: Annotated[tuple[str, ...], Opt(metavar="HYP[=falsified]", help=_NEEDS_HELP)] = (),
             rationale: Annotated[str | None, Opt(metavar="T", help="Why this should help.")] = None,
             steps: Annotated[tuple[str, ...], Opt("--step", metavar="T", help="A step (repeatable, in order).")] = (),
             risks: Annotated[tuple[str, ...], Opt("--risk", metavar="T", help="A risk (repeatable).")] = (),
             validation: Annotated[str | None, Opt(metavar="SPEC", help="How it will be validated (a run spec or a "
                                                                        "description).")] = None,
             change: Annotated[str | None, Opt(metavar="LABEL=A->B", help=_CHANGE_HELP)] = None,
             detail: Annotated[Detail, _PLAN_DETAIL] = True,
             ) -> dict[str, Any] | documents.PlanAck:
    """Add an improvement plan (recorded; `plan render` writes and commits the files)."""
    res = plans.add(call.ctx, title, gain=gain, effort=effort, confidence=confidence, needs=needs,
                    rationale=rationale, steps=steps, risks=risks, validation=validation, change=change)
    return res if detail else plans.ack(res)


@verb("plan list", read_only=True)
def plan_list(call: Call, *,
              status: Annotated[str | None, Opt(choices=PLAN_STATUSES, help="Only plans with this status.")] = None,
              fields: Annotated[Fields, AgentDefault("id,title,rank,score,status,gain,effort,confidence,reason")] = None,
              ) -> documents.PlanList:
    """Plans in rank order, with how well past predictions held."""
    doc = plans.list_(call.ctx, status)
    doc["plans"] = select(doc["plans"], fields)
    return cast(documents.PlanList, doc)


@verb("plan show", read_only=True)
def plan_show(call: Call, *, pid: Annotated[str, _PID]) -> dict[str, Any]:
    """Show one plan with its score, reason and needs."""
    return plans.show(call.ctx, pid)


@verb("plan set")
def plan_set(call: Call, *,
             pid: Annotated[str, _PID],
             status: Annotated[str | None, Opt(choices=PLAN_STATUSES, help="The new status.")] = None,
             measured: Annotated[str | None, Opt("--measured-gain", metavar="P",
                                                 help="The gain measured when done, in percent.")] = None,
             why: Annotated[str | None, Opt(metavar="T", help="The reason.")] = None,
             detail: Annotated[Detail, _PLAN_DETAIL] = True,
             ) -> dict[str, Any] | documents.PlanAck:
    """Change a plan's status; record the gain measured beside the predicted one."""
    res = plans.set_(call.ctx, pid, status, measured, why)
    return res if detail else plans.ack(res)


@verb("plan edit")
def plan_edit(call: Call, *,
              pid: Annotated[str, _PID],
              title: Annotated[str | None, Opt(metavar="T", help="A new title (titles are unique).")] = None,
              gain: Annotated[str | None, Opt(metavar="LOW-HIGH%", help="Predicted gain range in percent.")] = None,
              effort: Annotated[str | None, Opt(metavar="S|M|L", help="Effort: S (÷1), M (÷3), L (÷8).")] = None,
              confidence: Annotated[str | None, Opt(metavar="F", help="Confidence in the gain, 0 to 1.")] = None,
              needs: Annotated[tuple[str, ...], Opt(metavar="HYP[=falsified]", help=_NEEDS_HELP + " Replaces the list.")] = (),
              no_needs: Annotated[bool, Opt(help="The plan rests on no hypothesis.")] = False,
              rationale: Annotated[str | None, Opt(metavar="T", help="Why this should help.")] = None,
              steps: Annotated[tuple[str, ...], Opt("--step", metavar="T",
                                                    help="A step (repeatable; replaces the steps).")] = (),
              risks: Annotated[tuple[str, ...], Opt("--risk", metavar="T",
                                                    help="A risk (repeatable; replaces the risks).")] = (),
              validation: Annotated[str | None, Opt(metavar="SPEC", help="How it will be validated.")] = None,
              why: Annotated[str | None, Opt(metavar="T", help="The reason for the change (kept in the plan's history).")] = None,
              change: Annotated[str | None, Opt(metavar="LABEL=A->B", help=_CHANGE_HELP + " An empty value clears it.")] = None,
              ) -> dict[str, Any]:
    """Change a plan's fields; the old values go to its history and the files are re-rendered and committed."""
    if needs and no_needs:
        raise BadInput(f"give {param('needs')} or {param('no_needs')}, not both", field="no_needs")
    # an empty `needs`, `steps` or `risks`: unchanged; `no_needs`: the plan rests on no hypothesis
    return plans.edit(call.ctx, pid, title=title, gain=gain, effort=effort, confidence=confidence,
                      needs=[] if no_needs else (needs or None), rationale=rationale, steps=steps or None,
                      risks=risks or None, validation=validation, why=why, change=change)


@verb("plan rm")
def plan_rm(call: Call, *,
            pid: Annotated[str, _PID],
            why: Annotated[str, Opt(metavar="T", help="Why the plan is removed (in the commit).")],
            ) -> dict[str, Any]:
    """Remove a plan: its file is deleted in a commit (git history keeps it); its number is not reused."""
    return plans.rm(call.ctx, pid, why)


@verb("plan render")
def plan_render(call: Call, *,
                detail: Annotated[Detail, Opt("--detail/--brief", show_default=True, help=(
                    "Every plan as rendered, or only the files, what changed and the commit."))] = True,
                ) -> dict[str, Any] | documents.PlanRenderBrief:
    """Write <prefix>/<prefix>-NN.md and <prefix>/README.md, and commit them."""
    res = plans.render(call.ctx)
    return res if detail else cast(documents.PlanRenderBrief, {k: res[k] for k in ("files", "changed", "commit")})


@verb("plan import")
def plan_import(call: Call, *,
                replace: Annotated[bool, Opt(help="Overwrite records the files also hold.")] = False,
                ) -> dict[str, Any]:
    """Rebuild plan records from the plan files' front matter (a fresh clone)."""
    return plans.import_(call.ctx, replace)


@verb("report")
def report(call: Call, *,
           out: Annotated[str | None, Opt(metavar="FILE", help=(
               "Where to write (default reports/report.md, or report-HYP.md, report-since-WHEN.md for a scope: "
               "replaced by the next report of that scope)."))] = None,
           hypothesis: Annotated[str | None, Opt(metavar="HYP", help=(
               "Only HYP, its pivots and their rivals (their runs, notes, todos and plans)."))] = None,
           since: Annotated[str | None, Opt(metavar="TIME", help=(
               "Only what happened at or after TIME (ISO 8601, e.g. 2026-12-01T08:00)."))] = None,
           keep: Annotated[bool, Opt(help=("Keep the current report: write a new time-stamped file "
                                           "(reports/report-YYYYMMDD-HHMM.md) instead of replacing it."))] = False,
           no_commit: Annotated[bool, Opt(help="Write the files but do not commit them.")] = False,
           ) -> dict[str, Any]:
    """Write a session report (findings first, markdown with SVG plots) and commit it."""
    return reports.write(call.ctx, out, commit=not no_commit, hypothesis=hypothesis, since=since, keep=keep)
