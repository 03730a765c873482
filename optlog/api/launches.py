"""run launch | wait | logs | cancel: launched runs, watched from any terminal.

IDs: a plain number is a run id; `L3` (or `launch:3`) is launch 3. A part of the `run` group
(`optlog.api.runs`): imported only when one of these verbs is used.
"""

from __future__ import annotations

import signal
import sys
import threading
import time
from collections.abc import Mapping
from typing import Annotated, Any, cast

from optlog.api.params import Detail
from optlog.api.verb import AgentDefault, Arg, Call, Opt, Pairs, verb
from optlog.core import text as TX
from optlog.core.numfmt import fmt_num, fmt_seconds
from optlog.core.views import kv
from optlog.service import documents, launch


class _Progress:
    """Narration on stderr: a live status line on a terminal (points done, current point, elapsed,
    last metric; redrawn every second), plain lines otherwise."""

    def __init__(self) -> None:
        self.tty = sys.stderr.isatty()
        self.t0 = time.monotonic()
        self.line = ""
        self.done = 0
        self.total = 0
        self.current = ""
        self.last = ""
        self.closed = False
        self.lock = threading.Lock()
        if self.tty:
            threading.Thread(target=self._tick, daemon=True).start()

    def _tick(self) -> None:
        while not self.closed:
            time.sleep(1.0)
            with self.lock:
                if not self.closed and self.total:
                    self._draw()

    def _status(self) -> str:
        el = time.monotonic() - self.t0
        return (f"[{self.done}/{self.total}] {fmt_seconds(el):>7}  {self.current}"
                + (f"  last {self.last}" if self.last else ""))

    def _clear(self) -> None:
        if self.tty and self.line:
            sys.stderr.write("\r\x1b[2K")
            self.line = ""

    def _draw(self) -> None:
        if self.tty and not self.closed:
            self.line = self._status()[:200]
            sys.stderr.write("\r\x1b[2K" + self.line)
            sys.stderr.flush()

    def __call__(self, ev: dict[str, Any]) -> None:
        with self.lock:
            self._handle(ev)

    def _handle(self, ev: dict[str, Any]) -> None:
        k = ev.get("kind")
        if "total" in ev:
            self.total = ev["total"]
        if k == "log":
            self._clear()
            sys.stderr.write(f"optlog: {ev['text']}\n")
            sys.stderr.flush()
            if self.total:
                self._draw()
        elif k == "point_start":
            self.done = ev["done"]
            self.current = f"run {ev['run']} {kv(ev['labels'])}"
            self._draw()
        elif k == "point_end":
            self.done = ev["done"]
            lm = ev.get("last_metric")
            if lm:
                self.last = f"{lm[0]}={fmt_num(lm[1])}"
            self.current = ""
            self._draw()
        elif k == "finished":
            self._clear()
            self.closed = True
            sys.stderr.flush()


def progress() -> Any:
    """The narration of a launch on stderr (for other commands that launch: optlog tune)."""
    return _Progress()


def _launch_exit(d: dict[str, Any], _args: Mapping[str, Any]) -> int:
    """0 for a dry run; 0 when detached (the launch runs on), else 0 succeeded, 1 failed; cancelled: 128 + the signal
    that cancelled it as a shell reports it (SIGINT 130, SIGTERM 143, SIGHUP 129), else 130."""
    if d.get("detached") or d.get("dry_run"):
        return 0
    if d["status"] == "cancelled":
        return cancelled_exit(d)
    return 0 if d["status"] == "succeeded" else 1


def cancelled_exit(d: Mapping[str, Any]) -> int:
    """The exit code of a command a cancel ended (`run launch`, `tune run`): 128 + the signal named
    by the document's `signal`, as a shell reports it (SIGINT 130, SIGTERM 143, SIGHUP 129); 130
    when none is named (`run cancel` from another command)."""
    sig = getattr(signal, str(d.get("signal") or "SIGINT"), signal.SIGINT)
    return 128 + int(sig)


_REF = "A run id (12) or a launch (L3, as run_launch returned it)."
Ref = Annotated[str, Arg(metavar="REF", help=_REF)]


@verb("run launch", exit=_launch_exit,
      description="An agent's launch is detached by default: then call run_wait(ref) and run_logs(ref).")
def run_launch(call: Call, *,
               spec: Annotated[str | None, Arg(metavar="[SPEC]", help="The run spec: a file under runs/ (name or path); "
                                                                      "none with --again.")] = None,
               again: Annotated[str | None, Opt(metavar="L3", help="Launch a launch again from its committed record "
                                                                   "(launches/L3/).")] = None,
               hypothesis: Annotated[str | None, Opt(metavar="ID", help="Attach every run as evidence to this "
                                                                        "hypothesis.")] = None,
               sets: Annotated[tuple[tuple[str, Any], ...], Pairs(lists=True), Opt(
                   "--set", metavar="K=V",
                   help="Set a value the templates use, a matrix axis (K=[a,b] or matrix.K=…), or repeats, order, "
                        "order_seed, on_error (repeatable); any other key is an error.")] = (),
               server_url: Annotated[str | None, Opt(metavar="URL", help="Use this already running server "
                                                                         "(no server start).")] = None,
               detach: Annotated[bool, AgentDefault(True), Opt(
                   help="Return at once with the launch and run ids; a background driver runs them.")] = False,
               allow_concurrent: Annotated[bool, Opt(
                   help="Run even while another launch uses the machine (else wait); overlapping runs are "
                        "labelled concurrent.")] = False,
               dry_run: Annotated[bool, Opt(
                   help="Show the commands each run would run and the run count; launch nothing, write "
                        "nothing.")] = False,
               when_quiet: Annotated[float | None, Opt(
                   "--when-quiet", metavar="SECONDS",
                   help="First wait, at most SECONDS, until the machine is quiet by the rule that flags runs "
                        "loaded (host_load in optlog.yaml); still busy then: exit 75, nothing launched.")] = None,
               ) -> dict[str, Any]:
    """Launch the runs of a spec (runs/*.yaml): server up, ready, sane, sweep, tear down.

    Every launch commits the spec as it ran under launches/L<id>/; --again L3 launches that again;
    --dry-run only shows what would run."""
    if dry_run:
        return launch.dry_run(call.ctx, spec, sets=sets, server_url=server_url, again=again)
    return launch.launch(call.ctx, spec, sets=sets, server_url=server_url, hypothesis=hypothesis, detach=detach,
                         allow_concurrent=allow_concurrent, on_event=_Progress() if call.narrate else None,
                         again=again, when_quiet=when_quiet)


@verb("run wait", exit=lambda d, _: 0 if d["status"] == "succeeded" else 1,
      read_only=True)
def run_wait(call: Call, *,
             ref: Ref,
             timeout_s: Annotated[float | None, AgentDefault(300), Opt(
                 "--timeout", metavar="S", help="Give up after S seconds (then timed_out is true; exit 1).")] = None,
             detail: Annotated[Detail, Opt("--detail/--brief", show_default=True,
                                           help="Every run's status, or counts by status and the first "
                                                "failures.")] = True,
             ) -> documents.RunWait:
    """Wait for a run (ID) or a launch (L<n>) to finish: exit 0 if it succeeded, 1 otherwise."""
    doc = launch.wait(call.ctx, ref, timeout=timeout_s)
    return cast(documents.RunWait, doc) if detail else launch.brief_status(doc)


def _logs_text(call: Call, *, ref: str, follow: bool, tail: int | None, width: int | None) -> None:
    """`run logs` without --json: the text itself on stdout, as it comes (no document)."""

    def write(t: str) -> None:
        sys.stdout.write(TX.shown(t))  # a bench's output is data: it may not drive the terminal
        sys.stdout.flush()

    launch.stream_logs(call.ctx, ref, write, follow_=follow, tail=tail, width=width)



@verb("run logs", text=_logs_text, read_only=True)
def run_logs(call: Call, *,
             ref: Ref,
             follow: Annotated[bool, Opt("--follow", "-f", help="Keep printing until the run or launch finishes.")] = False,
             tail: Annotated[int | None, AgentDefault(10), Opt(metavar="N", help="Only the last N lines.")] = None,
             width: Annotated[int | None, AgentDefault(160), Opt(metavar="N", help="Cut each line to N characters.")] = None,
             ) -> dict[str, Any]:
    """A run's bench stdout/stderr (ID), or a launch's narration (L<n>)."""
    return launch.read_logs(call.ctx, ref, follow_=follow, tail=tail, width=width)


@verb("run cancel",
      exit=lambda d, _: 0 if d["status"] in ("cancelled", "succeeded", "failed", "interrupted") else 1)
def run_cancel(call: Call, *, ref: Ref) -> dict[str, Any]:
    """Cancel a launch (L<n>, or the launch of run ID): its processes end, unfinished runs are cancelled."""
    return launch.cancel(call.ctx, ref)
