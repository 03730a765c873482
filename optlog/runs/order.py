"""The order a launch runs its points in, so that repeats decorrelate drift.

Repeats back to back (three of three alike when the machine was busy) measure the moment, not the
configuration. The run spec's `order`:

- `interleaved` (the default): points that share a server run together (no extra restarts), and
  inside each group the launch cycles through its points once per repeat: c=1 r0, c=2 r0, c=1 r1, …
- `random`: the server groups, and the points inside each, in a seeded random order
  (`order_seed`, else a fresh seed); the seed is recorded with the launch and each run;
- `sequential`: the order before this existed, each point's repeats back to back;
- `cycles`: every repeat cycle visits every point, across servers: c=1 r0 (server A), c=2 r0
  (server B), c=1 r1 (A again), … A configuration that needs its own server is then restarted once
  per cycle instead of once per launch: `repeats` × (server start-ups) more start-up time (a 30 s
  start-up, 2 servers, 5 repeats: 5 minutes instead of 1), in exchange for runs of every
  configuration measured close in time, so that verdicts can pair them per cycle (DESIGN §5) and host
  drift between configurations is controlled. With one server it is the same as `interleaved`.

Pure apart from drawing a fresh seed.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Hashable, Sequence
from typing import Any, Literal, TypeVar, get_args

from optlog.core.sweep import group_order

T = TypeVar("T")
Order = Literal["interleaved", "random", "sequential", "cycles"]  # the run spec's `order:` (checked by its model)
ORDERS: tuple[str, ...] = get_args(Order)
DEFAULT: Order = "interleaved"


def fresh_seed() -> int:
    return random.SystemRandom().randrange(2**31)


def arrange(points: Sequence[T], mode: str | None, seed: int | None, *, server: Callable[[T], Hashable],
            repeat: Callable[[T], int]) -> tuple[list[T], dict[str, Any]]:
    """The points in run order, and the record of how they were ordered ({"order", "seed"?})."""
    mode = mode or DEFAULT
    grouped = group_order(points, key=server)
    groups: list[list[T]] = []
    for p in grouped:
        if groups and server(groups[-1][0]) == server(p):
            groups[-1].append(p)
        else:
            groups.append([p])
    if mode == "sequential":
        return grouped, {"order": mode}
    if mode == "cycles":  # repeat-major across the server groups: a server restarts once per cycle
        out = [p for _, p in sorted(enumerate(grouped), key=lambda ip: (repeat(ip[1]), ip[0]))]
        return out, {"order": mode}
    if mode == "interleaved":
        out = [p for g in groups for _, p in sorted(enumerate(g), key=lambda ip: (repeat(ip[1]), ip[0]))]
        return out, {"order": mode}
    s = fresh_seed() if seed is None else seed
    rng = random.Random(s)
    rng.shuffle(groups)
    for g in groups:
        rng.shuffle(g)
    return [p for g in groups for p in g], {"order": mode, "seed": s}
