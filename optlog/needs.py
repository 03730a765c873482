"""What the layers below the service take of its context, declared (issue 35).

`runs/` (the launcher, executors, recovery) and `telemetry/` (the sampling session, the run's
telemetry summary) and the steps of opening a workspace (service/identity, recovery, runfiles,
which the context calls: typed by this, they do not import the context back) are handed the service's context, which they may not import (it sits above them).
They take this Protocol instead of `Any`, so mypy checks every use, and the one place that says what
a launcher needs of a workspace is here. `optlog.service.context.Ctx` satisfies it structurally.

It sits in its own layer, just above the store: it names the store's `Database`, the settings and
the workspace's paths, and is named by runs/ and telemetry/ (those types are imported for the
checker only, so importing this module loads nothing).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from optlog.config import Config
    from optlog.paths import Workspace
    from optlog.store.db import Database


class ServiceContext(Protocol):
    """The workspace, who acts, its opened database, its settings, and where narration goes."""

    @property
    def ws(self) -> Workspace: ...

    @property
    def actor(self) -> str: ...

    @property
    def db(self) -> Database: ...

    @property
    def config(self) -> Config: ...

    def notice(self, text: str) -> None:
        """Narration for a person (stderr in the CLI, a notification in the TUI)."""
        ...
