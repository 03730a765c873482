"""The Plans tab: the improvement plans, ranked (`plan list`)."""

from __future__ import annotations

from typing import Any

from optlog.core.numfmt import fmt_num
from optlog.tui.widgets import PlainTable


class PlansTable(PlainTable):
    def on_mount(self) -> None:
        self.add_columns("rank", "id", "score", "status", "title", "why")

    def show(self, plans: list[dict[str, Any]]) -> None:
        self.clear()
        for p in plans:
            self.add_row(str(p.get("rank") or "–"), str(p["id"]), fmt_num(p.get("score")), p.get("status", ""),
                         p.get("title", ""), p.get("reason") or "", key=str(p["id"]))
