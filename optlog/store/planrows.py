"""Reading plan rows (service.plans keeps the rules: numbering against the plan files, statuses)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

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


def plan(s: Session, pid: int) -> Plan | None:
    """The plan row numbered `pid`, if there is one."""
    from optlog.store.models import Plan  # deferred: the row models load SQLModel (the ORM)

    return s.get(Plan, pid)


def new_plan(**fields: Any) -> Plan:
    """A plan row (not yet added to a session): the service builds rows without importing the ORM."""
    from optlog.store.models import Plan  # deferred: the row models load SQLModel (the ORM)

    return Plan(**fields)
