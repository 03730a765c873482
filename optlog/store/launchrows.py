"""Reading launch rows: the dashboard and the faces ask which launches are still live."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sqlmodel import Session

    from optlog.store.models import Launch


def live_launches(s: Session) -> list[Launch]:
    """Launches queued or running."""
    from sqlmodel import col, select

    from optlog.store.models import Launch

    return list(s.exec(select(Launch).where(col(Launch.status).in_(("queued", "running")))).all())


def run_states(s: Session, launch_id: int) -> list[tuple[int, str, str | None, str | None]]:
    """(id, status, error, cause) of a launch's runs, in id order: the dashboard's launch pane
    shows its failures as they happen."""
    from sqlmodel import col, select

    from optlog.store.models import Run

    q = select(Run.id, Run.status, Run.error, Run.cause).where(Run.launch_id == launch_id).order_by(col(Run.id))
    return [(int(i or 0), st, e, c) for i, st, e, c in s.exec(q).all()]


def launch_label(s: Session, launch_id: int, key: str) -> str | None:
    """A label's value on a launch's first run that has it (the `study` of an optlog tune launch)."""
    from sqlmodel import col, select

    from optlog.store.models import Run, RunLabel

    q = (select(RunLabel.value).join(Run, col(Run.id) == col(RunLabel.run_id))
         .where(Run.launch_id == launch_id, RunLabel.key == key).order_by(col(Run.id)).limit(1))
    return s.exec(q).first()
