"""Alembic environment: runs against the engine optlog hands over (no alembic.ini needed)."""

from alembic import context
from sqlmodel import SQLModel

import optlog.store.models  # noqa: F401  (registers the tables)

config = context.config
engine = config.attributes["engine"]

with engine.connect() as connection:
    context.configure(
        connection=connection,
        target_metadata=SQLModel.metadata,
        render_as_batch=connection.dialect.name == "sqlite",
    )
    with context.begin_transaction():
        context.run_migrations()
    connection.commit()
