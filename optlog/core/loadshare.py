"""The load metrics' names, and when two groups of a comparison were measured under clearly
different load (issue 28 item 6).

The numbers are measured by runs.treeshare while a run runs (what each means: its docstring and
docs/evidence.md). This module is pure: the verdict engine calls `group_difference` with each
level's two groups and appends what it returns to the level's reason, so a comparison whose groups
got clearly different CPU shares, or whose GPUs were shared in one group and not the other, says so
instead of crediting the configuration with the difference.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from optlog.core.numfmt import fmt_share

CPU_SHARE = "cpu_share"
CPU_UTIL = "cpu_util"
CPU_USED = "cpu_used"
CPU_THREADS = "cpu_threads"
GPU_OTHER_PROCS = "gpu_other_procs"
GPU_OTHER_MEM = "gpu_other_mem_mib"
GPU_OTHER_FRAC = "gpu_other_frac"
METRICS = (CPU_SHARE, CPU_UTIL, CPU_USED, CPU_THREADS, GPU_OTHER_PROCS, GPU_OTHER_MEM, GPU_OTHER_FRAC)
"""Every load metric a launched run may carry (the verdict loads those it compares)."""
COMPARED = (CPU_SHARE, GPU_OTHER_FRAC)

SHARE_GAP = 0.1
"""Group means of cpu_share this far apart (10 points), with no overlap between the groups' runs,
are clearly different."""


def _metrics(r: Any) -> Mapping[str, float]:
    m = getattr(r, "metrics", r)
    return m if isinstance(m, Mapping) else {}


def _values(runs: Iterable[Any], key: str) -> list[float]:
    return [float(v) for r in runs if isinstance(v := _metrics(r).get(key), (int, float))]


def group_difference(a: Iterable[Any], b: Iterable[Any], names: tuple[str, str] = ("a", "b")) -> str | None:
    """What to say when the groups' load differs clearly (None when it does not, or is unknown).

    `a`, `b`: the runs of each group (objects with `metrics`, or metric mappings). The CPU share
    differs clearly when the group means are at least SHARE_GAP apart and no run of the lower group
    got more than any run of the higher; the GPUs were shared differently when one group's runs all
    saw another process on their GPUs and the other group's none did."""
    ra, rb = list(a), list(b)
    said: list[str] = []
    sa, sb = _values(ra, CPU_SHARE), _values(rb, CPU_SHARE)
    if sa and sb:
        ma, mb = sum(sa) / len(sa), sum(sb) / len(sb)
        lo, hi = (sa, sb) if ma < mb else (sb, sa)
        if abs(ma - mb) >= SHARE_GAP and max(lo) < min(hi):
            said.append(f"CPU share differs: {names[0]} got {fmt_share(ma)}, {names[1]} {fmt_share(mb)} "
                        "of the CPU time they asked for")
    ga, gb = _values(ra, GPU_OTHER_FRAC), _values(rb, GPU_OTHER_FRAC)
    if ga and gb and len(ga) == len(ra) and len(gb) == len(rb):
        if all(x > 0 for x in ga) and not any(x > 0 for x in gb):
            said.append(f"other processes used {names[0]}'s GPUs, not {names[1]}'s")
        elif all(x > 0 for x in gb) and not any(x > 0 for x in ga):
            said.append(f"other processes used {names[1]}'s GPUs, not {names[0]}'s")
    return "; ".join(said) if said else None
