"""Reading plan rows (service.plans keeps the rules: numbering against the plan files, statuses)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sqlmodel import Session

    from optlog.store.models import Plan


def plans_in_order(s: Session) -> list[Plan]:
    """Every plan row, by number."""
    from sqlmodel import col, select

    from optlog.store.models import Plan

    return list(s.exec(select(Plan).order_by(col(Plan.id))).all())


def last_plan_number(s: Session) -> int:
    """The largest plan number in the table (0 when it is empty)."""
    from sqlalchemy import func
    from sqlmodel import select

    from optlog.store.models import Plan

    return int(s.exec(select(func.max(Plan.id))).one() or 0)


def plan(s: Session, pid: int) -> Plan | None:
    """The plan row numbered `pid`, if there is one."""
    from optlog.store.models import Plan  # deferred: the row models load SQLModel (the ORM)

    return s.get(Plan, pid)
