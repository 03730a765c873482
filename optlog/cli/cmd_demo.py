"""demo: the whole loop on this machine (or simulated), then the dashboard on a terminal.

A module of its own: the demo pulls the launcher, plans and report modules, which `status` and
`note` (in cmd_core) never need.
"""

from __future__ import annotations

import sys
from typing import Any

import click

from optlog.cli.binding import Call, verb
from optlog.cli.cmd_core import open_tui
from optlog.cli.main import agent
from optlog.service import demo


def _human(r: dict[str, Any]) -> str:
    return f"demo workspace: {r['workspace']}\nreport: {r['report']}"


def _then_dashboard(call: Call, path: str | None, simulated: bool) -> int:
    """The CLI without --json: the demo, then the dashboard when a person is at a terminal (else the
    summary lines). Only the CLI has a dashboard to open, so the binding itself returns the document."""
    res = demo.run(path, call.say, simulated=simulated)
    if sys.stdout.isatty() and sys.stdin.isatty():
        open_tui(res["workspace"])
    else:
        click.echo(_human(res))
    return 0


@click.command("demo")
@click.argument("path", required=False)
@click.option("--simulated", is_flag=True,
              help="The offline story instead: TP8 vs TP4+PP2 on optlog's simulated server (seconds, deterministic).")
@agent(args={"path": "A new or empty folder for the demo workspace (default: a new temporary folder).",
             "simulated": "Run the offline simulated story instead of measuring this machine."})
@verb(_human, text=_then_dashboard)
def demo_cmd(call: Call, path: str | None, simulated: bool) -> Any:
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
