"""demo: the whole loop on this machine (or simulated), then the dashboard on a terminal.

A module of its own: the demo pulls the launcher, plans and report modules, which `status` and
`note` never need.
"""

from __future__ import annotations

from typing import Annotated, Any

from optlog.api.verb import Arg, Call, Opt, verb
from optlog.service import demo


def _then_dashboard(call: Call, *, path: str | None, simulated: bool) -> dict[str, Any] | None:
    """A face with a text channel (the CLI without --json): the demo, then the dashboard where the
    face can open one (a person at a terminal); else the document, which the face shows."""
    res = demo.run(path, call.say, simulated=simulated)
    return None if call.dashboard(res["workspace"]) else res


@verb("demo", text=_then_dashboard)
def demo_run(call: Call, *,
             path: Annotated[str | None, Arg(help="A new or empty folder for the demo workspace (default: a new "
                                                  "temporary folder).")] = None,
             simulated: Annotated[bool, Opt(help="The offline story instead: TP8 vs TP4+PP2 on optlog's simulated "
                                                 "server (seconds, deterministic).")] = False,
             ) -> dict[str, Any]:
    """Run the whole loop for real on this machine: llama.cpp's llama-server serving Gemma 3 270M
    (built and fetched once by scripts/llama-server.sh, about 6 minutes on 2 cores, then cached), a
    hypothesis registered before measuring ("4 parallel slots give at least 2x the tokens/s of 1 at
    concurrency 4") and its rival, a launched sweep with telemetry, verdicts that follow the numbers,
    the pivot, ranked plans and a report; then the dashboard on a terminal.

    --simulated: the same loop on optlog's simulated OpenAI-compatible server ("tp8" at 4 ms per
    token, "tp4pp2" at 9 ms), offline and in seconds.

    PATH must be a new or empty folder; it becomes a git repository of its own (default: a new
    folder under the system's temporary directory, printed at the end).
    """
    return demo.run(path, call.say, simulated=simulated)
