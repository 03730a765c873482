"""Note rows (service.evidence keeps the rules: text required, links checked, what a note names exists)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sqlmodel import Session

    from optlog.store.models import Note


def add_note(s: Session, *, text: str, hypothesis_id: str | None, link: str | None, run_id: int | None,
             by: str, created_at: str) -> Note:
    """Insert a note inside an open write session and return it with its id."""
    from optlog.store.models import Note  # deferred: the row models load SQLModel (the ORM)

    n = Note(text=text, hypothesis_id=hypothesis_id, link=link, run_id=run_id, by=by, created_at=created_at)
    s.add(n)
    s.flush()
    return n


def notes(s: Session, hypothesis_id: str | None = None) -> list[Note]:
    """Every note (of one hypothesis, when given), oldest first."""
    from sqlmodel import col, select  # deferred: SQLModel is the ORM, loaded with the database

    from optlog.store.models import Note  # deferred: the row models load SQLModel (the ORM)

    q = select(Note).order_by(col(Note.id))
    if hypothesis_id:
        q = q.where(Note.hypothesis_id == hypothesis_id)
    return list(s.exec(q).all())
