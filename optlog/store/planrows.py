"""Reading plan rows (service.plans keeps the rules: numbering against the plan files, statuses)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlalchemy import func

if TYPE_CHECKING:
    from sqlmodel import Session

    from optlog.store.models import Plan


def plans_in_order(s: Session) -> list[Plan]:
    """Every plan row, by number."""
    from sqlmodel import col, select  # deferred: the ORM; ORM-free reads (todo list) skip it

    from optlog.store.models import Plan  # deferred: ORM tables (sqlmodel); ORM-free reads skip them

    return list(s.exec(select(Plan).order_by(col(Plan.id))).all())


def last_plan_number(s: Session) -> int:
    """The largest plan number in the table (0 when it is empty)."""
    from sqlmodel import select  # deferred: the ORM; ORM-free reads (todo list) skip it

    from optlog.store.models import Plan  # deferred: ORM tables (sqlmodel); ORM-free reads skip them

    return int(s.exec(select(func.max(Plan.id))).one() or 0)
