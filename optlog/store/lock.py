"""The workspace write lock: one optlog writer of files (and git) at a time, across processes; and
the decision lock, which also holds the database's write lock.

Re-entrant within a thread (one lock object per path; the database's write transaction nests), so
a service verb that calls another does not deadlock on itself.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from optlog.paths import Workspace

if TYPE_CHECKING:
    from optlog.store.db import Database

_LOCKS: dict[str, Any] = {}


@contextmanager
def workspace_lock(ws: Workspace, timeout: float = 120.0) -> Iterator[None]:
    from filelock import FileLock  # deferred: filelock imports asyncio; only writers lock

    ws.state_dir.mkdir(parents=True, exist_ok=True)
    key = str(ws.lock_file)
    lock = _LOCKS.get(key)
    if lock is None:
        lock = _LOCKS[key] = FileLock(key, timeout=timeout)
    with lock.acquire(timeout=timeout):
        yield


@contextmanager
def decision_lock(ws: Workspace, db: "Database") -> Iterator[None]:
    """What a judgement is made and committed under: the workspace lock (every write of a
    hypothesis file — prediction add/edit, override — and every commit of this clone) and the
    database's write lock from the start (every write that changes what counts as evidence: a run
    recorded, imported or finished by a launch, an invalidation, a launch queued; on PostgreSQL
    across every clone and host that shares the database). So a verdict is judged on the evidence
    as it is when it is committed: a concurrent writer waits for it, or it waits for the writer.

    Always the workspace lock first, then the database's: never the other way round."""
    from optlog.store.db import exclusive  # deferred: SQLAlchemy; only deciders take it

    with workspace_lock(ws), exclusive(db):
        yield
