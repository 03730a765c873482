"""The context every service verb gets: workspace, settings, database, actor.

Everything heavy is created lazily, so a command pays only for what it touches.
"""

from __future__ import annotations

import getpass
import os
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from optlog.paths import Workspace, find_workspace
from optlog.store.db import Database
from optlog.store.launchrows import anything_live
from optlog.store.runsync import evidence_unchanged

if TYPE_CHECKING:
    from optlog.config import Config


def default_actor() -> str:
    """Who acts: `OPTLOG_ACTOR` (agents set e.g. `agent:claude`), else the login name."""
    a = os.environ.get("OPTLOG_ACTOR")
    if a:
        return a
    try:
        return getpass.getuser()
    except Exception:
        return "unknown"


class Ctx:
    def __init__(self, ws: Workspace, actor: str | None = None) -> None:
        self.ws = ws
        self.actor = actor or default_actor()
        self.notices: list[str] = []
        # Memo of validated hypothesis files by modification time: a long-lived face (the MCP
        # server) reuses one context, so a read after a read pays only the stat calls.
        self.hypothesis_memo: dict[str, tuple[int, object]] = {}
        # Where a face shows narration as it happens (stderr in the CLI, a notification in the TUI).
        self.on_notice: Callable[[str], None] | None = None

    @classmethod
    def find(cls, start: Path | str | None = None, actor: str | None = None) -> "Ctx":
        return cls(find_workspace(start), actor)

    @cached_property
    def config(self) -> "Config":
        from optlog.config import load_config  # deferred: pydantic and YAML (~80 ms); hot commands skip them

        return load_config(self.ws)

    @cached_property
    def db(self) -> "Database":
        if self.ws.sqlite_file is None and self.ws.identity is None and self.ws.config_file.is_file():
            self.check_config()  # a broken settings file is bad input: nothing, not even an id, is written
            from optlog.service.identity import ensure  # deferred: once per workspace (YAML, git, a lease)

            ensure(self)  # a shared database needs to know whose rows are whose
        db = Database(self.ws)
        # What opening does only now and then loads only then: every command opens a workspace,
        # and the common case (nothing live, no new evidence) is two indexed probes.
        with db.engine.connect() as c:
            live, unchanged = anything_live(c), evidence_unchanged(c, str(self.ws.evidence_dir))
        if live:
            from optlog.service.recovery import recover_dead_launches  # deferred: processes, executors, ssh/Slurm

            recover_dead_launches(self, db)
        if not unchanged:
            from optlog.service.runfiles import import_changed  # deferred: YAML, pydantic, git

            import_changed(self, db)  # runs committed in another clone
        return db

    def check_config(self) -> None:
        """Validate optlog.yaml if it changed since it last passed (else this is one stat and one
        small read): every command reports a broken settings file with file, line and field, yet
        the hot commands do not import YAML and pydantic each time."""
        try:
            st = os.stat(self.ws.config_file)
        except FileNotFoundError:
            return
        stamp = f"{st.st_mtime_ns} {st.st_size} {st.st_ino}"
        mark = self.ws.state_dir / "config.checked"
        try:
            if mark.read_text(encoding="utf-8") == stamp:
                return
        except OSError:
            pass
        self.__dict__.pop("config", None)
        self.config  # noqa: B018  (validates; raises BadInput naming file, line and field)
        try:
            self.ws.state_dir.mkdir(exist_ok=True)
            mark.write_text(stamp, encoding="utf-8")
        except OSError:
            pass

    def db_exists(self) -> bool:
        f = self.ws.sqlite_file
        return f is None or f.exists()

    def notice(self, text: str) -> None:
        """Narration for a person (stderr in the CLI, a notification in the TUI)."""
        self.notices.append(text)
        if self.on_notice is not None:
            self.on_notice(text)

    def close(self) -> None:
        if "db" in self.__dict__:
            self.db.dispose()
