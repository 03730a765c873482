"""The session, as the faces take it (issue 46): the faces import this and the verbs, never the
service, the store or the launcher themselves (an import contract in pyproject.toml).

`open_session` is the one way into a workspace (`optlog.service.context`); `Ctx` is the session a
verb receives as `call.ctx`; `Opened` is what opening did, step by step. `named_fault` and
`bad_database` word a failure of the database's environment for a face's error message.
"""

from __future__ import annotations

from optlog.errors import OptlogError
from optlog.service.context import Ctx, Opened, open_session
from optlog.store.faults import named as named_fault

__all__ = ["Ctx", "Opened", "bad_database", "named_fault", "open_session"]


def bad_database(where: str, why: str) -> OptlogError:
    """The error of a database file that cannot be read (`optlog.store.db.bad_database`)."""
    from optlog.store.db import bad_database as bad  # deferred: optlog.store.db loads SQLAlchemy

    return bad(where, why)
