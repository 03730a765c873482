"""Waiting for a quiet machine before a launch: `optlog run launch SPEC --when-quiet SECONDS` (issue 45).

Why: on a shared host most runs of a launch were measured under load (17 of 24 in the issue) and the
verdict then answered for "this shared machine", not for the question asked. Re-running them at once
only measures the same load again; a launch that waits for the machine to be quiet does not.

Quiet is judged by the rule that flags a run `loaded` (runs.hostload, `host_load` in optlog.yaml),
applied to the machine before anything starts:
- CPUs: the CPUs busy over a window (from /proc/stat) must not exceed `busy_cpus_fraction` × CPUs
  where it is set; otherwise (its default) `1 − min_cpu_share` × CPUs: with more busy than that, a
  run that asks for every CPU gets less than `min_cpu_share` of what it asks for, which is what flags
  a run loaded. Neither set: CPUs are not judged.
- GPUs (with `gpu_processes`, the default): no compute process on the GPUs (NVML; none where NVML
  is missing).
The wait is bounded by SECONDS: past it the launch is refused with exit 75 (EX_TEMPFAIL: try again
later) and error code `not_quiet`, and nothing is written. Progress goes to the narration (stderr).
A signal ends the wait as it ends any launch being planned (runs.interrupt).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from optlog.core.numfmt import fmt_num, fmt_whole
from optlog.errors import OptlogError, param
from optlog.runs import hostload

NOT_QUIET_EXIT = 75  # sysexits' EX_TEMPFAIL: the machine was busy; the same command may work later
WINDOW_S = 1.0       # CPUs busy are measured over this long (at least `host_load.window_s`)
POLL_S = 2.0         # between two checks
SAY_EVERY_S = 10.0   # a progress line at most this often (and at the first check)


def cpu_limit(settings: Any, cpus: int) -> float | None:
    """Busy CPUs above which the machine is not quiet (see the module doc), or None."""
    frac = getattr(settings, "busy_cpus_fraction", None)
    if frac is None:
        floor = getattr(settings, "min_cpu_share", None)
        if floor is None:
            return None
        frac = 1.0 - float(floor)
    return float(frac) * cpus


def busy(settings: Any, window_s: float = WINDOW_S) -> list[str]:
    """Why the machine is not quiet now ([] when it is)."""
    why: list[str] = []
    snap = hostload.snapshot(max(window_s, float(getattr(settings, "window_s", 0.0) or 0.0)))
    cpus = int(snap.get("cpus") or 1)
    limit = cpu_limit(settings, cpus)
    used = snap.get("busy_cpus")
    if limit is not None and used is not None and used > limit:
        why.append(f"{fmt_num(used)} of {cpus} CPUs busy (quiet: at most {fmt_num(limit)})")
    if getattr(settings, "gpu_processes", True):
        gp = hostload.gpu_processes()
        if isinstance(gp, list) and gp:
            why.append(f"{len(gp)} process(es) on the GPUs: "
                       + ", ".join(f"pid {p['pid']} on GPU {p['gpu']}" for p in gp[:4]))
    return why


def wait(check: Callable[[], list[str]], limit_s: float, say: Callable[[str], None], *,
         poll_s: float = POLL_S, say_every_s: float = SAY_EVERY_S,
         clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep) -> dict[str, Any]:
    """Check until `check` finds nothing (quiet) or `limit_s` has passed (then `OptlogError`, exit 75).
    Returns how long it waited and how many checks it took."""
    if limit_s < 0:
        raise OptlogError(f"{param('when_quiet')} takes seconds (0 or more), got {fmt_num(limit_s)}",
                          exit_code=2, code="bad_input", field="when_quiet")
    t0 = clock()
    checks = 0
    said_at: float | None = None
    while True:
        why = check()
        checks += 1
        waited = clock() - t0
        if not why:
            say(f"the machine is quiet after {fmt_whole(waited)} s: launching" if checks > 1 else
                "the machine is quiet: launching")
            return {"waited_s": round(waited, 1), "checks": checks}
        if said_at is None or clock() - said_at >= say_every_s:
            say(f"waiting for a quiet machine ({fmt_whole(waited)} of {fmt_num(limit_s)} s): {'; '.join(why)}")
            said_at = clock()
        if waited >= limit_s:
            raise OptlogError(
                f"the machine did not become quiet within {fmt_num(limit_s)} s: {'; '.join(why)}; nothing was "
                f"launched: run it again later, with a longer {param('when_quiet')}, or without it",
                exit_code=NOT_QUIET_EXIT, code="not_quiet", field="when_quiet",
                extra={"busy": why, "waited_s": round(waited, 1)})
        sleep(max(0.0, min(poll_s, limit_s - (clock() - t0))))
