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
