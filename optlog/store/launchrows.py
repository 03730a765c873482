"""Reading launch rows: the dashboard and the faces ask which launches are still live."""

from __future__ import annotations

from typing import TYPE_CHECKING

from optlog.core.statuses import LIVE_RUN_STATUSES

if TYPE_CHECKING:
    from sqlmodel import Session

    from optlog.store.models import Launch


def live_launches(s: Session) -> list[Launch]:
    """Launches queued or running."""
    from sqlmodel import col, select  # deferred: the ORM; ORM-free reads (todo list) skip it

    from optlog.store.models import Launch  # deferred: ORM tables (sqlmodel); ORM-free reads skip them

    return list(s.exec(select(Launch).where(col(Launch.status).in_(LIVE_RUN_STATUSES))).all())


def run_states(s: Session, launch_id: int) -> list[tuple[int, str, str | None, str | None]]:
    """(id, status, error, cause) of a launch's runs, in id order: the dashboard's launch pane
    shows its failures as they happen."""
    from sqlmodel import col, select  # deferred: the ORM; ORM-free reads (todo list) skip it

    from optlog.store.models import Run  # deferred: ORM tables (sqlmodel); ORM-free reads skip them

    q = select(Run.id, Run.status, Run.error, Run.cause).where(Run.launch_id == launch_id).order_by(col(Run.id))
    return [(int(i or 0), st, e, c) for i, st, e, c in s.exec(q).all()]
