"""Note rows (service.evidence keeps the rules: text required, links checked, what a note names exists)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sqlalchemy.engine import Connection
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


def notes(c: Connection, hypothesis_id: str | None = None) -> list[Any]:
    """Every note (of one hypothesis, when given), oldest first: rows with the `Note` model's
    columns, on Core. The answer of a write to a hypothesis (`service.hypotheses.written`) reads
    its notes: through the ORM it imported SQLModel and the row models (~90 ms of `hypothesis add`,
    whose other steps are all on Core)."""
    from sqlalchemy import text  # deferred: SQLAlchemy, loaded with the database, not on import

    where, args = (" WHERE hypothesis_id = :h", {"h": hypothesis_id}) if hypothesis_id else ("", {})
    return list(c.execute(text('SELECT id, text, hypothesis_id, run_id, link, "by", created_at FROM note'
                               + where + " ORDER BY id"), args).all())
