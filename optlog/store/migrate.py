"""Versioned schema migrations with Alembic, run automatically when a database is behind.

The check is one cheap query of `alembic_version`; Alembic itself is imported only when an upgrade
is due, so everyday commands do not pay its start-up cost.
"""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import Engine, inspect

MIGRATIONS_DIR = Path(__file__).with_name("migrations")
HEAD = "0001"


def current_revision(engine: Engine) -> str | None:
    with engine.connect() as c:
        try:
            return c.exec_driver_sql("SELECT version_num FROM alembic_version").scalar()
        except Exception:
            c.rollback()
            return None


def _alembic_config(engine: Engine):  # type: ignore[no-untyped-def]
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    cfg.attributes["engine"] = engine
    return cfg


def upgrade(engine: Engine, revision: str = "head") -> None:
    from alembic import command

    command.upgrade(_alembic_config(engine), revision)


def ensure_schema(engine: Engine) -> None:
    if current_revision(engine) == HEAD:
        return
    import filelock  # noqa: F401  (only for the SQLite case below)

    url = engine.url
    if url.get_backend_name() == "sqlite" and url.database:
        # Two first commands at once must not both create tables.
        from filelock import FileLock

        with FileLock(str(url.database) + ".migrate.lock"):
            if current_revision(engine) != HEAD:
                upgrade(engine)
    else:
        upgrade(engine)
    # Development safety net: tables added to models.py before their revision exists.
    from sqlmodel import SQLModel

    import optlog.store.models  # noqa: F401

    SQLModel.metadata.create_all(engine, checkfirst=True)
    _ensure_counter(engine)


def _ensure_counter(engine: Engine) -> None:
    with engine.begin() as c:
        if not c.exec_driver_sql("SELECT 1 FROM change_counter WHERE id = 1").first():
            c.exec_driver_sql("INSERT INTO change_counter (id, n) VALUES (1, 0)")


def table_names(engine: Engine) -> list[str]:
    return sorted(inspect(engine).get_table_names())
