"""The workspace write lock: one optlog writer of files (and git) at a time, across processes.
(The decision lock, this one together with the database's write lock, is `store.db.decision_lock`.)

Re-entrant within a thread (one lock object per path), so a service verb that calls another does
not deadlock on itself.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from optlog.paths import Workspace
from optlog.store.faults import lock_holders, lock_timeout, locked

_LOCKS: dict[str, Any] = {}


@contextmanager
def workspace_lock(ws: Workspace, timeout: float = 120.0) -> Iterator[None]:
    """Hold the workspace lock; another process that holds it for `timeout` seconds (or
    OPTLOG_LOCK_TIMEOUT) is named in a `locked` error (exit 1). `timeout=0` tries once: the caller
    catches filelock.Timeout itself."""
    from filelock import FileLock, Timeout  # deferred: filelock imports asyncio; only writers lock

    ws.state_dir.mkdir(parents=True, exist_ok=True)
    key = str(ws.lock_file)
    lock = _LOCKS.get(key)
    if lock is None:
        lock = _LOCKS[key] = FileLock(key, timeout=timeout)
    wait = lock_timeout(timeout) if timeout > 0 else timeout
    try:
        held = lock.acquire(timeout=wait)
    except Timeout:
        if timeout == 0:
            raise
        raise locked(f"the workspace ({key})", wait, lock_holders(key)) from None
    with held:
        yield
