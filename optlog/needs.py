"""What the layers take of the service's context, declared once as narrow facets (issues 35, 46).

A function is handed the session (`optlog.service.context.Ctx`) but types its `ctx` with the
narrowest facet below that covers what it uses, so its signature says what it touches and mypy
checks every use; `Ctx` satisfies each facet structurally, so callers pass it unchanged.
`tests/architecture/test_ctx_facets.py` holds every service function to the first facet of
`NARROWEST_FIRST` that covers the attributes it reads on `ctx` and the facets of the functions it
hands `ctx` to.

| facet | members | what takes it |
|---|---|---|
| `Files` | `ws` | what touches only the workspace's files and paths |
| `Index` | `db`, `db_exists()` | what reads or writes only the database |
| `Commits` | `Files` + `actor`, `notice()` | recording a decision in git (`gitlog.history`) |
| `Reads` | `Files` + `Index` + `config`, `notice()`, `hypothesis_memo` | a read verb: files, database, settings |
| `Launches` | `ws`, `actor`, `db`, `config`, `notice()` | `runs/` and `telemetry/`: the launcher, executors, recovery |
| `Writes` | all of the above + `forget_config()` | a verb that writes and commits |

What only opening a session uses (`check_config`, `writes`, `recover_journal`, `open`) stays on
`Ctx` itself. This module sits in its own layer, just above the store: it names the store's
`Database`, the settings and the workspace's paths for the checker only, so importing it loads
nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from optlog.config import Config
    from optlog.paths import Workspace
    from optlog.store.db import Database


class Files(Protocol):
    """The workspace on disk: its root, paths, identity."""

    @property
    def ws(self) -> Workspace: ...


class Index(Protocol):
    """The workspace's opened database (`db_exists`: whether there is one yet, opening nothing)."""

    @property
    def db(self) -> Database: ...

    def db_exists(self) -> bool: ...


class Commits(Files, Protocol):
    """What recording a decision in git needs: the workspace, who acts, where narration goes."""

    @property
    def actor(self) -> str: ...

    def notice(self, text: str) -> None:
        """Narration for a person (stderr in the CLI, a notification in the TUI)."""
        ...


class Reads(Files, Index, Protocol):
    """What a read needs: the files, the database, the settings, narration, and the memo of
    validated hypothesis files a long-lived face reuses."""

    @property
    def config(self) -> Config: ...

    @property
    def hypothesis_memo(self) -> dict[str, tuple[int, object]]: ...

    def notice(self, text: str) -> None: ...


class Launches(Files, Protocol):
    """What a launch needs (runs/ and telemetry/ take it): the workspace, who acts, its opened
    database, its settings, and where narration goes."""

    @property
    def actor(self) -> str: ...

    @property
    def db(self) -> Database: ...

    @property
    def config(self) -> Config: ...

    def notice(self, text: str) -> None: ...


class Writes(Reads, Commits, Launches, Protocol):
    """What a verb that writes needs: everything a read needs, who acts (the commits' trailers,
    the rows' authors), and forgetting the settings it just rewrote."""

    def forget_config(self) -> None:
        """Drop the cached settings, so the next `config` reads optlog.yaml again."""
        ...


# The facets a service function may take, narrowest first: it takes the first that covers what it
# uses (Launches is what runs/ and telemetry/ take; a service function that launches writes).
NARROWEST_FIRST = ("Files", "Index", "Commits", "Reads", "Writes")
