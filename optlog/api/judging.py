"""run diff, run invalidate: what differs between two runs, and taking runs out of the evidence.
A part of the `run` group (`optlog.api.runs`): imported only when one of these verbs is used."""

from __future__ import annotations

from typing import Annotated, Any

from optlog.api.verb import Arg, Call, Opt, verb
from optlog.service import verdicts


@verb("run diff", read_only=True)
def run_diff(call: Call, *,
             a: Annotated[str, Arg(metavar="A", help="The first run id.")],
             b: Annotated[str, Arg(metavar="B", help="The second run id (ratios are b/a).")],
             ) -> dict[str, Any]:
    """Only what differs between two runs: labels, metrics, environment."""
    return verdicts.runs_diff(call.ctx, a, b)


@verb("run invalidate")
def run_invalidate(call: Call, *,
                   refs: Annotated[tuple[str, ...], Arg(metavar="ID...", help="Run ids (numbers) and/or launches "
                                                                              "(L3): all invalidated in one commit.")],
                   why: Annotated[str | None, Opt(metavar="T", help="The reason (required): e.g. FP4 GEMM returned "
                                                                    "zeros.")] = None,
                   ) -> dict[str, Any]:
    """Mark runs invalid (run ids and/or launches L3, one commit); verdicts that used them are re-evaluated."""
    ids = [str(x) for x in refs]
    if len(ids) == 1 and not ids[0].strip().lower().startswith("l"):
        return verdicts.invalidate(call.ctx, ids[0], why or "")  # one run id: the single-run document (DESIGN §7)
    return verdicts.invalidate_many(call.ctx, ids, why or "")
