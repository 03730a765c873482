"""Recovery on start: runs left `running` by an optlog process that died are marked `interrupted`
and their leftover process groups are ended. The launcher fills this in (see runs/)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from optlog.service.context import Ctx
    from optlog.store.db import Database


def recover_dead_launches(ctx: "Ctx", db: "Database") -> None:
    try:
        from optlog.runs.recover import recover
    except ImportError:
        return
    recover(ctx, db)
