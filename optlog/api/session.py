"""The session, as the faces take it (issue 46): the faces import this and the verbs, never the
service, the store or the launcher themselves (an import contract in pyproject.toml).

`open_session` is the one way into a workspace (`optlog.service.context`); `Ctx` is the session a
verb receives as `call.ctx`; `Opened` is what opening did, step by step. `named_fault` and
`bad_database` word a failure of the database's environment for a face's error message;
`internal_error` words any other exception no check foresaw.
"""

from __future__ import annotations

import sys
import traceback

from optlog import settings
from optlog.errors import OptlogError
from optlog.service.context import Ctx, Opened, open_session
from optlog.store.faults import named as named_fault

__all__ = ["Ctx", "Opened", "bad_database", "internal_error", "named_fault", "open_session"]


def bad_database(where: str, why: str) -> OptlogError:
    """The error of a database file that cannot be read (`optlog.store.db.bad_database`)."""
    from optlog.store.db import bad_database as bad  # deferred: optlog.store.db loads SQLAlchemy

    return bad(where, why)


def internal_error(e: BaseException, db_url: str | None = None, db_file: str | None = None) -> OptlogError:
    """An exception no check foresaw: an error document (exit 1), never a traceback. The type and
    place say where to look; OPTLOG_DEBUG=1 prints the traceback on stderr as well. A fault of
    the environment (an unreachable server, a refused password, a read-only disk) is named for
    what it is instead (`optlog.store.faults`); a database file whose pages went bad, as such.
    `db_url`/`db_file`: the face's open database, where it has one."""
    fault = named_fault(e, db_url or settings.read("db_url"))
    if fault is not None:
        return fault
    sa = sys.modules.get("sqlalchemy.exc")
    if sa is not None and isinstance(e, sa.DatabaseError) and any(
            m in str(e) for m in ("malformed", "not a database", "file is encrypted")):  # a page went bad
        return bad_database(db_file or db_url or "the database", f"cannot be read ({getattr(e, 'orig', e)})")
    tb = traceback.extract_tb(e.__traceback__)
    at = f" at {tb[-1].filename.rsplit('/optlog/', 1)[-1]}:{tb[-1].lineno}" if tb else ""
    if settings.read("debug"):
        traceback.print_exception(e, file=sys.stderr)
    return OptlogError(f"internal error: {type(e).__name__}: {str(e)[:300]}{at} (please report it; "
                       f"OPTLOG_DEBUG=1 shows the details)", code="internal_error")
