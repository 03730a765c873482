"""Launch rows and the process records of their runs: the dashboard and the faces ask which
launches are still live, the launch driver writes its progress and its processes, recovery on start
finds the launches whose driver died."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from sqlalchemy import insert, text, update

from optlog.core.statuses import LIVE_RUN_STATUSES
from optlog.store.runrows import storable_id
from optlog.store.readcache import LIVE_SQL  # one definition of "something is live"

if TYPE_CHECKING:
    from sqlalchemy import Connection
    from sqlmodel import Session

    from optlog.store.models import Launch, ProcessRecord, Run


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


def launch_label(s: Session, launch_id: int, key: str) -> str | None:
    """A label's value on a launch's first run that has it (the `study` of an optlog tune launch)."""
    from sqlmodel import col, select  # deferred: SQLModel is the ORM, loaded with the database

    from optlog.store.models import Run, RunLabel  # deferred: the row models load SQLModel (the ORM)

    q = (select(RunLabel.value).join(Run, col(Run.id) == col(RunLabel.run_id))
         .where(Run.launch_id == launch_id, RunLabel.key == key).order_by(col(Run.id)).limit(1))
    return s.exec(q).first()


def launch(s: Session, launch_id: int) -> Launch | None:
    """The launch row `launch_id`, if there is one."""
    from optlog.store.models import Launch  # deferred: the row models load SQLModel (the ORM)

    return s.get(Launch, launch_id) if storable_id(launch_id) else None


def update_launch(s: Session, launch_id: int, **values: Any) -> None:
    """Set columns of a launch without loading it: its spec column holds every rendered point, and
    the driver updates its progress after each one."""
    from optlog.store.models import Launch  # deferred: the row models load SQLModel (the ORM)

    t = Launch.__table__  # type: ignore[attr-defined]
    s.connection().execute(update(t).where(t.c.id == launch_id).values(**values))


def live_launch_processes(s: Session) -> list[tuple[int, int | None, str | None, str | None]]:
    """(id, pid, pid_start, host) of the launches queued or running: what recovery on start needs
    to tell whether their driver died, without loading their specs."""
    from sqlmodel import col, select  # deferred: SQLModel is the ORM, loaded with the database

    from optlog.store.models import Launch  # deferred: the row models load SQLModel (the ORM)

    q = select(Launch.id, Launch.pid, Launch.pid_start, Launch.host).where(col(Launch.status).in_(LIVE_RUN_STATUSES))
    return [(int(i or 0), pid, start, host) for i, pid, start, host in s.exec(q).all()]


def live_runs(s: Session, launch_id: int) -> list[Run]:
    """The runs of a launch still queued or running: what the driver closes when it ends, and
    what recovery marks interrupted when the driver died."""
    from sqlmodel import col, select  # deferred: SQLModel is the ORM, loaded with the database

    from optlog.store.models import Run  # deferred: the row models load SQLModel (the ORM)

    return list(s.exec(select(Run).where(Run.launch_id == launch_id, col(Run.status).in_(LIVE_RUN_STATUSES))).all())


def insert_process_record(s: Session, *, launch_id: int, run_id: int | None, role: str, pid: int,
                          pgid: int | None, start_ticks: int | None, host: str | None) -> int:
    """Record a process the launch spawned (alive) and return the record's id: recovery ends its
    group if the driver dies."""
    from optlog.store.models import ProcessRecord  # deferred: the row models load SQLModel (the ORM)

    res = s.connection().execute(insert(ProcessRecord.__table__).values(  # type: ignore[attr-defined]
        launch_id=launch_id, run_id=run_id, role=role, pid=pid, pgid=pgid, start_ticks=start_ticks, host=host,
        alive=True))
    key = res.inserted_primary_key
    assert key is not None  # an INSERT of one row always has its key
    return int(key[0])


def mark_records_dead(s: Session, record_ids: Sequence[int]) -> None:
    """The processes of `record_ids` have ended."""
    if not record_ids:
        return

    from optlog.store.models import ProcessRecord  # deferred: the row models load SQLModel (the ORM)

    t = ProcessRecord.__table__  # type: ignore[attr-defined]
    s.connection().execute(update(t).where(t.c.id.in_(list(record_ids))).values(alive=False))


def live_records(s: Session, launch_id: int) -> list[ProcessRecord]:
    """The process records of a launch still marked alive."""
    from sqlmodel import select  # deferred: SQLModel is the ORM, loaded with the database

    from optlog.store.models import ProcessRecord  # deferred: the row models load SQLModel (the ORM)

    return list(s.exec(select(ProcessRecord).where(ProcessRecord.launch_id == launch_id,
                                                   ProcessRecord.alive == True)).all())  # noqa: E712


def anything_live(c: Connection) -> bool:
    """Whether some launch or run is queued or running, or some process record alive: every
    command opens the database through recovery, and this one indexed probe is its common case."""
    return c.execute(text(f"SELECT EXISTS ({LIVE_SQL})"), {"t": True}).scalar() not in (None, 0, False)


def add_launch(s: Session, **fields: Any) -> Launch:
    """Insert a launch row inside an open write session and return it with its id."""
    from optlog.store.models import Launch  # deferred: the row models load SQLModel (the ORM)

    la = Launch(**fields)
    s.add(la)
    s.flush()
    return la
