"""init (make or adopt a workspace) and status (the short digest an agent starts from)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

from optlog.api.verb import Arg, Call, Opt, verb
from optlog.paths import DEFAULT_PLAN_PREFIX
from optlog.service import documents, status as digest


@verb("init")
def init(call: Call, *,
         path: Annotated[str | None, Arg(help="The folder to make (or adopt) as a workspace; default: the server's "
                                              "folder.")] = None,
         plan_prefix: Annotated[str | None, Opt(metavar="P", help=f"Plans render to P/P-NN.md (default "
                                                                  f"{DEFAULT_PLAN_PREFIX}).")] = None,
         ) -> dict[str, Any]:
    """Create (or adopt) a git repository as an optlog workspace."""
    from optlog.service.workspace import init as make  # deferred: optlog.config loads pydantic, which status never needs

    target = path
    if target is None and call.chdir:
        target = call.chdir
    elif target is not None and call.chdir and not Path(target).is_absolute():
        target = str(Path(call.chdir) / target)
    return make(target, plan_prefix, on_notice=call.say)


@verb("status", read_only=True)
def status(call: Call) -> documents.StatusDoc:
    """A short digest: open hypotheses, live runs, latest verdicts, pending todos."""
    return digest.status(call.ctx)
