"""Issue 28, item 3: interleaving that means it (optlog.runs.order's `cycles`)."""

from __future__ import annotations

from optlog.runs import order as O


def test_the_cycles_order_visits_every_configuration_in_every_cycle():
    """Item 3: `order: cycles` runs repeat r of every point (across servers) before repeat r+1; the
    default keeps a server's points together (one start-up each), cycling inside each server."""
    points = [(srv, cfg, r) for srv, cfg in (("A", "t4"), ("B", "t8")) for r in range(3)]
    cyc, how = O.arrange(points, "cycles", None, server=lambda p: p[0], repeat=lambda p: p[2])
    assert [(p[1], p[2]) for p in cyc] == [("t4", 0), ("t8", 0), ("t4", 1), ("t8", 1), ("t4", 2), ("t8", 2)]
    assert how == {"order": "cycles"}
    inter, _ = O.arrange(points, None, None, server=lambda p: p[0], repeat=lambda p: p[2])
    assert [p[0] for p in inter] == ["A", "A", "A", "B", "B", "B"]  # one start-up per server
