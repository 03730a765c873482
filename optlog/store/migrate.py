"""Versioned schema migrations with Alembic, run automatically when a database is behind.

The check is one cheap query of `alembic_version` against the head revision, which is found by
scanning the revision files in `migrations/versions/` with a regular expression (no Alembic import,
well under a millisecond). Alembic itself is imported only when an upgrade is due, so everyday
commands do not pay its start-up cost. Two processes that find the same database behind take a
lock first (a file lock on SQLite, an advisory lock on PostgreSQL), so only one of them upgrades.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from sqlalchemy import Engine, inspect

from optlog.errors import Failed

MIGRATIONS_DIR = Path(__file__).with_name("migrations")
MIGRATE_LOCK_KEY = 0x6F706D67  # "opmg"

_REV_RE = re.compile(r"^revision\s*(?::[^=]*)?=\s*['\"]([^'\"]+)['\"]", re.M)
_DOWN_RE = re.compile(r"^down_revision\s*(?::[^=]*)?=\s*(.+)$", re.M)
_HEADS: dict[str, str | None] = {}
_REVS: dict[str, set[str]] = {}


def head_revision(migrations_dir: Path | None = None) -> str | None:
    """The newest revision in `migrations_dir/versions` (the one no other revision revises)."""
    d = migrations_dir or MIGRATIONS_DIR
    key = str(d)
    if key in _HEADS:
        return _HEADS[key]
    revs: set[str] = set()
    downs: set[str] = set()
    try:
        entries = list(os.scandir(d / "versions"))
    except FileNotFoundError:
        entries = []
    for e in entries:
        if not e.name.endswith(".py") or e.name.startswith(("_", ".")):
            continue
        with open(e.path, encoding="utf-8") as f:
            src = f.read()
        m = _REV_RE.search(src)
        if not m:
            continue
        revs.add(m.group(1))
        dm = _DOWN_RE.search(src)
        if dm:
            downs.update(re.findall(r"['\"]([^'\"]+)['\"]", dm.group(1)))
    heads = sorted(revs - downs)
    if len(heads) > 1:
        raise RuntimeError(f"more than one migration head in {d}: {', '.join(heads)} (merge them)")
    head = heads[0] if heads else None
    _HEADS[key] = head
    _REVS[key] = revs
    return head


def known_revisions(migrations_dir: Path | None = None) -> set[str]:
    head_revision(migrations_dir)
    return _REVS.get(str(migrations_dir or MIGRATIONS_DIR), set())


def current_revision(engine: Engine) -> str | None:
    with engine.connect() as c:
        try:
            return c.exec_driver_sql("SELECT version_num FROM alembic_version").scalar()
        except Exception:
            c.rollback()
            return None


def _alembic_config(engine: Engine, migrations_dir: Path | None = None):
    from alembic.config import Config  # deferred: alembic only when the schema is behind

    cfg = Config()
    cfg.set_main_option("script_location", str(migrations_dir or MIGRATIONS_DIR))
    cfg.attributes["engine"] = engine
    return cfg


def upgrade(engine: Engine, revision: str = "head", migrations_dir: Path | None = None) -> None:
    from alembic import command  # deferred: alembic only when the schema is behind

    command.upgrade(_alembic_config(engine, migrations_dir), revision)


def ensure_schema(engine: Engine, migrations_dir: Path | None = None) -> str | None:
    """Bring the database to the head revision (cheap when it is there already). Returns the
    revision this call upgraded from, so the first command after an upgrade can say so; None when
    nothing was upgraded (already at head, upgraded by another process meanwhile, or a new
    database made now)."""
    head = head_revision(migrations_dir)
    cur = current_revision(engine)
    if cur == head:
        return None
    if cur is not None and cur not in known_revisions(migrations_dir):
        raise Failed(
            f"the database is at schema revision {cur!r}, which this optlog does not know "
            f"(it knows up to {head!r}): it was upgraded by a newer optlog; upgrade optlog",
            code="schema_too_new",
        )
    url = engine.url
    if url.get_backend_name() == "sqlite":
        if url.database and url.database != ":memory:":
            # Two first commands at once must not both create tables.
            from filelock import FileLock  # deferred: filelock imports asyncio; only writers lock

            with FileLock(str(url.database) + ".migrate.lock"):
                return _upgrade_if_behind(engine, head, migrations_dir)
        return _upgrade_if_behind(engine, head, migrations_dir)
    with engine.connect() as c:
        c.exec_driver_sql(f"SELECT pg_advisory_lock({MIGRATE_LOCK_KEY})")
        c.commit()
        try:
            return _upgrade_if_behind(engine, head, migrations_dir)
        finally:
            c.exec_driver_sql(f"SELECT pg_advisory_unlock({MIGRATE_LOCK_KEY})")
            c.commit()


def _upgrade_if_behind(engine: Engine, head: str | None, migrations_dir: Path | None) -> str | None:
    """Under the migration lock: upgrade if still behind; the revision upgraded from (None for a
    database with no revision yet: made now, not upgraded)."""
    cur = current_revision(engine)
    if cur == head:
        return None
    _upgrade_locked(engine, migrations_dir)
    return cur


def _upgrade_locked(engine: Engine, migrations_dir: Path | None) -> None:
    upgrade(engine, migrations_dir=migrations_dir)
    # Development safety net: tables added to models.py before their revision exists.
    from sqlmodel import SQLModel  # deferred: the ORM; ORM-free reads (todo list) skip it

    import optlog.store.models  # noqa: F401 # deferred: ORM tables (sqlmodel); ORM-free reads skip them

    SQLModel.metadata.create_all(engine, checkfirst=True)
    _ensure_counter(engine)


def __getattr__(name: str) -> object:
    if name == "HEAD":  # the old constant, computed now
        return head_revision()
    raise AttributeError(name)


def _ensure_counter(engine: Engine) -> None:
    with engine.begin() as c:
        if not c.exec_driver_sql("SELECT 1 FROM change_counter WHERE id = 1").first():
            c.exec_driver_sql("INSERT INTO change_counter (id, n) VALUES (1, 0)")


def table_names(engine: Engine) -> list[str]:
    return sorted(inspect(engine).get_table_names())
