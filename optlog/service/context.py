"""The context every service verb gets: workspace, settings, database, actor; and opening a
workspace, which is an explicit call (`open_workspace`), not a side effect of reading an attribute.

`open_session` is the one way in, and every face calls it (the CLI per command that needs a
workspace, the MCP server once, the TUI after its first frame): it finds the workspace (the nearest
optlog.yaml) and validates a changed optlog.yaml, so a broken settings file is bad input before
anything runs. Opening the database is then `Ctx.open()`, five steps in this order, each by name,
returning what it did (`Opened`):

1. settings: on a shared database, a changed optlog.yaml is validated (bad input names file, line
   and field); the database is opened, and migrated when its schema is behind (said once, as a
   notice and in `Opened.upgraded`);
2. identity: a workspace from before identities on a shared database gets one, committed to git;
3. recovery: launches whose driver died are marked interrupted and their process groups ended
   (locally, over SSH or through Slurm);
4. journal: the write-and-commits an optlog process left half done when it died are completed
   (`service.journal`; one listdir when there are none). A step of opening a session that may
   write (`Ctx.writes`): a face opens a read verb's session with `writes=False`, so nothing
   commits as a side effect of a read (`hypotheses.sync` only reads either); a long-lived face
   repeats the step with `Ctx.recover_journal()` before each call that may write;
5. committed evidence: runs committed in another clone are imported into the index.

`Ctx.db` is the opened database (opened by the steps above on first use). Everything heavy is
still created lazily, so a command pays only for what it uses.
"""

from __future__ import annotations

import getpass
import os
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from optlog import settings
from optlog.needs import Commits, Writes
from optlog.paths import Workspace, find_workspace
from optlog.store.db import Database
from optlog.store.launchrows import anything_live
from optlog.store.migrate import head_revision
from optlog.store.readcache import sqlite_facts
from optlog.store.runsync import evidence_unchanged

if TYPE_CHECKING:
    from optlog.config import Config


def default_actor() -> str:
    """Who acts: `OPTLOG_ACTOR` (agents set e.g. `agent:claude`), else the login name."""
    a = settings.read("actor")
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
        # What opening did (None until `open`): the database and each step's outcome.
        self.opened: Opened | None = None
        # The verb may write: opening completes an interrupted writer's commits (the journal step).
        # False for a read verb, which commits nothing, not even another process's leftovers.
        self.writes = True

    @classmethod
    def find(cls, start: Path | str | None = None, actor: str | None = None) -> "Ctx":
        """The context of the workspace at or above `start`, checking nothing (see `open_session`)."""
        return cls(find_workspace(start), actor)

    @cached_property
    def config(self) -> "Config":
        from optlog.config import load_config  # deferred: pydantic and YAML (~80 ms); hot commands skip them
        from optlog.runs.executors.registry import config_sections  # deferred: the executor kinds, with the config

        return load_config(self.ws, config_sections())

    def open(self) -> "Opened":
        """Open the workspace (once per context): see `open_workspace`. A face calls it before a
        verb that needs the database; later calls return the same record."""
        if self.opened is None:
            self.opened = open_workspace(self)
        return self.opened

    def settle(self) -> None:
        """Before any command, reads and commands that never touch the database included (`log`):
        a launch whose optlog process died (kill -9) is marked `interrupted` and what it started is
        ended now, not at some later command that happens to open the database. Cheap: on SQLite
        one read-only query with the standard library (`readcache.sqlite_facts`) finds nothing live
        and opens nothing; an opened context (the MCP server's, for its whole life) asks its
        database, one indexed query."""
        if self.opened is not None:
            _recover(self, self.opened.db)
            return
        f = self.ws.sqlite_file
        if f is not None:
            if not f.is_file():
                return  # no database yet: nothing was launched
            facts = sqlite_facts(self.ws)
            if facts is not None and not facts[2]:
                return
        self.open()  # opening recovers (and says what is wrong with a database that cannot be read)

    @property
    def db(self) -> "Database":
        """The opened database. A verb reached without its face opening first opens here, by the
        same named steps (`open_workspace`): the service functions take the context, not the
        database, so this stays the one way in for them."""
        return self.open().db

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
        self.forget_config()
        self.config  # noqa: B018  (validates; raises BadInput naming file, line and field)
        try:
            self.ws.state_dir.mkdir(exist_ok=True)
            mark.write_text(stamp, encoding="utf-8")
        except OSError:
            pass

    def forget_config(self) -> None:
        """Drop the cached settings, so the next `config` reads optlog.yaml again (after a verb
        rewrote it)."""
        self.__dict__.pop("config", None)

    def recover_journal(self) -> tuple[str, ...]:
        """Opening's journal step (see the module docstring): the commits it made."""
        from optlog.service.journal import recover  # deferred: git, only when an intent was left behind

        return tuple(recover(self))

    def db_exists(self) -> bool:
        f = self.ws.sqlite_file
        return f is None or f.exists()

    def notice(self, text: str) -> None:
        """Narration for a person (stderr in the CLI, a notification in the TUI)."""
        self.notices.append(text)
        if self.on_notice is not None:
            self.on_notice(text)

    def close(self) -> None:
        if self.opened is not None:
            self.opened.db.dispose()


@dataclass(frozen=True)
class Opened:
    """What opening a workspace did, step by step (see the module docstring)."""

    db: Database
    settings_checked: bool  # optlog.yaml was validated (it is there and no database file exists yet)
    identity_given: str | None  # the identity written and committed now; None: it had one or needs none
    recovered: tuple[int, ...]  # launches found dead and marked interrupted
    imported: int  # runs imported from the committed evidence of other clones
    upgraded: tuple[str, str] | None = None  # (from, to) schema revisions, when opening upgraded it
    journal: tuple[str, ...] = ()  # commits made completing writes an interrupted optlog left half done


def open_session(start: Path | str | None = None, *, actor: str | None = None,
                 on_notice: Callable[[str], None] | None = None, check_settings: bool = True) -> Ctx:
    """The one way into a workspace, for every face: find it (the nearest optlog.yaml at or above
    `start`; no workspace is `no_workspace`), validate a changed optlog.yaml (`check_settings`), and
    say narration through `on_notice`. The database opens by its named steps on first use
    (`Ctx.open`, `open_workspace`)."""
    ctx = Ctx.find(start, actor)
    if check_settings:
        ctx.check_config()
    ctx.on_notice = on_notice
    return ctx


def open_workspace(ctx: Ctx) -> Opened:
    """Open `ctx`'s workspace: settings, identity, recovery, committed evidence, in this order.
    The common case (an identified workspace, nothing live, no new evidence) costs two indexed
    probes; what a step needs beyond that it imports only when it runs."""
    settings_checked, identity_given = False, None
    if ctx.ws.sqlite_file is None and ctx.ws.identity is None and ctx.ws.config_file.is_file():
        ctx.check_config()  # a broken settings file is bad input: nothing, not even an id, is written
        settings_checked = True
        identity_given = _ensure_identity(ctx)
    db = Database(ctx.ws)
    with db.connect() as c:  # one snapshot of both
        live, unchanged = anything_live(c), evidence_unchanged(c, str(ctx.ws.evidence_dir))
    upgraded = (db.upgraded_from, head_revision() or "") if db.upgraded_from else None
    if upgraded:
        ctx.notice(f"the database was upgraded from schema revision {upgraded[0]} to {upgraded[1]} "
                   f"(an older optlog cannot open it now)")
    recovered = _recover(ctx, db) if live else []
    journal = _recover_journal(ctx) if ctx.writes else ()
    imported = 0 if unchanged else _import_evidence(ctx, db)
    return Opened(db=db, settings_checked=settings_checked, identity_given=identity_given,
                  recovered=tuple(recovered), imported=imported, upgraded=upgraded, journal=journal)


def _ensure_identity(ctx: Writes) -> str | None:
    """Step 2: a shared database needs to know whose rows are whose. Returns the identity if it
    was given now."""
    from optlog.service.identity import ensure  # deferred: once per workspace (YAML, git, a lease)

    had = ctx.ws.identity
    ident = ensure(ctx)
    return None if had == ident else ident


def _recover(ctx: Writes, db: Database) -> list[int]:
    """Step 3: only when the index says a launch is live."""
    from optlog.service.recovery import recover_dead_launches  # deferred: processes, executors, ssh/Slurm

    return recover_dead_launches(ctx, db)


def _recover_journal(ctx: Ctx) -> tuple[str, ...]:
    """Step 4, for a session that may write: complete what an interrupted write-and-commit left
    (one listdir when nothing was)."""
    try:
        if not any(n.endswith(".json") for n in os.listdir(ctx.ws.state_dir / "pending")):
            return ()
    except (FileNotFoundError, NotADirectoryError):
        return ()
    return ctx.recover_journal()


def _import_evidence(ctx: Commits, db: Database) -> int:
    """Step 4: only when runs/evidence/ changed since this database last read it."""
    from optlog.service.runfiles import import_changed  # deferred: YAML, pydantic, git

    return import_changed(ctx, db)  # runs committed in another clone
