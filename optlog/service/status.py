"""`optlog status`: the way back into a session after losing context.

It answers "where was I": what is running, what failed or was cancelled since the last verdict,
which hypotheses' evidence changed since their verdict (a verdict is due: `service.verdicts.due`,
from the evidence fingerprints, never from timestamps), the todos in
progress, recent invalidations, and up to three suggested next calls. Bounded whatever the
workspace holds (each list capped, with its total), so an agent can call it every few minutes.
Runs are read with plain SQL: the ORM's table classes cost more than the whole answer.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from optlog.core import statusdoc as SD
from optlog.core.statusdoc import next_calls as _next  # noqa: F401  (the rules' tests call it by this name)
from optlog.needs import Index, Reads
from optlog.service import documents, hypotheses, todos, verdicts
from optlog.service.evidence import live_hypotheses
from optlog.store.statusrows import planned_for, run_facts
from optlog.store.todorows import list_owner

OPEN_CAP, LIVE_CAP, TODO_CAP, DUE_CAP, MAX_BYTES = SD.OPEN_CAP, SD.LIVE_CAP, SD.TODO_CAP, SD.DUE_CAP, SD.MAX_BYTES


def _runs_facts(ctx: Index, last_verdict_at: str) -> dict[str, Any]:
    with ctx.db.connect() as c:
        f = run_facts(c, last_verdict_at, LIVE_CAP)
    return SD.runs_section(f, live_hypotheses(ctx) if f.total and f.live_total else set())


def status(ctx: Reads, *, docs: Mapping[str, Any] | None = None, all_todos: list[dict[str, Any]] | None = None) -> documents.StatusDoc:
    """`docs` (from `hypotheses.sync`) and `all_todos` (from `todos.list_`), when the caller has just
    read them (the dashboard, on every reload), are not read again. The document is
    `core.statusdoc`'s (the first read after a change builds it there too, on plain SQL)."""

    if docs is None:
        docs = hypotheses.sync(ctx)
    latest, last_at = SD.latest_verdicts(docs)
    runs = _runs_facts(ctx, latest[0]["at"] if latest else "")
    why = verdicts.due(ctx, docs) if runs["total"] else {}
    if all_todos is None:
        all_todos = todos.list_(ctx)
    planned, owner = _loop_facts(ctx)
    return cast(documents.StatusDoc, SD.document(str(ctx.ws.root), docs, latest, last_at, runs, why, all_todos,
                                                 planned, owner))


def _loop_facts(ctx: Index) -> tuple[set[str], str | None]:
    """The hypotheses some plan needs, and the agent tool that owns the todo list (or None)."""
    with ctx.db.connect() as c:
        return planned_for(c), list_owner(c)
