"""The Plans tab: the improvement plans, ranked (`plan list`)."""

from __future__ import annotations

from typing import Any

from optlog.core.numfmt import fmt_score
from optlog.core.plans import gain_cell
from optlog.tui.widgets import PlainTable

# whether a need holds: its hypothesis has the verdict the plan expects of it, the other one, or none yet
NEED_GLYPH = {"holds": "✓", "fails": "✗", "open": "?"}


def needs_text(p: dict[str, Any]) -> str:
    """`✓ compute-bound ✗ comm-bound`: each hypothesis the plan rests on, with whether it holds (its
    verdict is the one the plan expects), fails (the opposite verdict) or is open; `–` for none."""
    out = []
    for n in p.get("needs_status") or [{"id": h} for h in p.get("needs") or []]:
        st, want = n.get("status"), n.get("expects", "confirmed")
        state = "holds" if st == want else "fails" if st in ("confirmed", "falsified") else "open"
        out.append(f"{NEED_GLYPH[state]} {n['id']}")
    return " ".join(out) or "–"


class PlansTable(PlainTable):
    def on_mount(self) -> None:
        self.add_columns("rank", "id", "score", "gain", "needs", "status", "title", "why")

    def show(self, plans: list[dict[str, Any]]) -> None:
        self.clear()
        for p in plans:
            gain = gain_cell(p.get("measured_effect"), *p["gain"]) if p.get("gain") else "–"
            self.add_row(str(p.get("rank") or "–"), str(p["id"]), fmt_score(p.get("score") or 0.0), gain,
                         needs_text(p), p.get("status", ""), p.get("title", ""), p.get("reason") or "",
                         key=str(p["id"]))
        if not plans:
            self.say_empty("no plans yet: P adds one (gain, effort, the hypotheses it needs); the verdicts rank them", 5)
