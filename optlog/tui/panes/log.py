"""The Log tab: the project's history (`optlog log`), newest first."""

from __future__ import annotations

from typing import Any

from optlog.tui.widgets import PlainTable


class LogTable(PlainTable):
    def on_mount(self) -> None:
        self.add_columns("when", "event", "hypothesis", "subject")

    def show(self, events: list[dict[str, Any]]) -> None:
        self.clear()
        for e in events:
            self.add_row(str(e.get("at", ""))[:19], e.get("event") or "", e.get("hypothesis") or "", e.get("subject", ""))
        if not events:
            self.say_empty("no decisions yet: each hypothesis, prediction, verdict and plan shows here as it is "
                           "committed", 3)
