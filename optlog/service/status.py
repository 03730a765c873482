"""`optlog status`: the digest an agent reads after losing its context."""

from __future__ import annotations

from typing import Any

from optlog.service.context import Ctx


def status(ctx: Ctx) -> dict[str, Any]:
    from optlog.service import evidence, hypotheses, todos

    fresh = not ctx.db_exists()
    docs = hypotheses.sync(ctx)
    open_h = []
    latest: list[dict[str, Any]] = []
    for d in sorted(docs.values(), key=lambda d: (d.created or "", d.id)):
        st = d.effective_status()
        if st not in ("confirmed", "falsified", "superseded"):
            open_h.append({
                "id": d.id, "title": d.title, "status": st,
                "predictions": [{"id": p.id, "status": p.status, "expect": p.expect} for p in d.predictions],
            })
        for v in hypotheses.verdict_history(d):
            latest.append({"hypothesis": d.id, **v})
    latest.sort(key=lambda v: v["at"], reverse=True)
    n_runs = evidence.count_runs(ctx)
    live = []
    if n_runs and evidence.count_runs(ctx, ("running", "queued")):
        live = evidence.list_runs(ctx, status="running") + evidence.list_runs(ctx, status="queued")
    pend = [t for t in todos.list_(ctx) if t["status"] in ("pending", "in_progress")]
    out: dict[str, Any] = {
        "workspace": str(ctx.ws.root),
        "hypotheses": {"total": len(docs), "open": open_h},
        "live_runs": live,
        "runs_total": n_runs,
        "latest_verdicts": latest[:10],
        "todos": pend,
        "run_database_empty": n_runs == 0,
    }
    if fresh or n_runs == 0:
        out["notice"] = "the run database is empty" + (
            " (fresh clone: hypotheses, predictions, verdicts and plans are read from the files)" if docs else "")
    return out
