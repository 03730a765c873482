"""How a process started by a launch knows it is inside one: the launcher puts these variables in
every bench command's environment.

`optlog bench` used as a launched point's bench command used to record its own runs as well as the
launcher's (6 exact duplicates where 3 were measured). Inside a launch it writes its result file
(`--output-file`, else `$OPTLOG_RUN_OUT/optlog-bench.jsonl`) and records nothing: the launcher
records the one run of the measurement.
"""

from __future__ import annotations

from collections.abc import Mapping

from optlog import settings

LAUNCH_ENV = "OPTLOG_LAUNCH"   # the launch id
RUN_ENV = "OPTLOG_RUN"         # the run id of the point
OUT_ENV = "OPTLOG_RUN_OUT"     # the point's output folder (where the launcher looks for results)
DEFAULT_RESULT = "optlog-bench.jsonl"


def bench_env(launch_id: int, run_id: int, out: str) -> dict[str, str]:
    return {LAUNCH_ENV: str(launch_id), RUN_ENV: str(run_id), OUT_ENV: out}


def current(env: Mapping[str, str] | None = None) -> dict[str, str] | None:
    """{"launch", "run", "out"} when this process was started by a launch, else None."""
    e = settings.environ() if env is None else env
    if not e.get(LAUNCH_ENV):
        return None
    return {"launch": e[LAUNCH_ENV], "run": e.get(RUN_ENV, ""), "out": e.get(OUT_ENV, "")}
