#!/usr/bin/env python3
"""Generate an Alembic revision by autogenerate against a scratch SQLite db at the current head."""
import sys, tempfile, os
from pathlib import Path
from sqlalchemy import create_engine
from alembic import command
from alembic.config import Config
import optlog.store.models  # noqa
from optlog.store.migrate import MIGRATIONS_DIR
rev_id, msg = sys.argv[1], sys.argv[2]
d = tempfile.mkdtemp()
engine = create_engine(f"sqlite:///{d}/x.db")
cfg = Config(); cfg.set_main_option("script_location", str(MIGRATIONS_DIR)); cfg.attributes["engine"] = engine
command.upgrade(cfg, "head")
command.revision(cfg, message=msg, autogenerate=True, rev_id=rev_id)
