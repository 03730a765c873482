"""Recovery on start: runs left `running` by an optlog process that died are marked `interrupted`
and their leftover process groups are ended. The launcher fills this in (see runs/).

Every command opens the database through here, so the common case (nothing live) costs one
indexed Core query and imports nothing; the launcher's recovery module is imported only when some
launch, run or process is still marked live.
"""

from __future__ import annotations

from typing import Any

from optlog.needs import Writes
from optlog.runs.recover import recover
from optlog.store import launchrows
from optlog.store.db import Database


def anything_live(db: "Database") -> bool:
    with db.engine.connect() as c:
        return launchrows.anything_live(c)


def recover_dead_launches(ctx: Writes, db: "Database") -> list[int]:
    """`ctx` is the service context being opened (typed by its Protocol: this module does not import the context)."""
    if not anything_live(db):
        return []

    return recover(ctx, db)
