"""A SQLite database corrupted behind optlog's back is refused by every command, reads included
(issue 34): a page overwritten in the middle of the file leaves every query that does not touch
it working, so `run list` answered from what was left.

How, cheaply: SQLite's own structural check (`PRAGMA quick_check`) reads every page, too slow to
run on every command at 100,000 runs. So optlog keeps a *stamp* beside the file (`<db>.checked`:
its inode, size and modification time) when it last knew the file good: after a check passed,
and when a command that opened it closes it (everything written since was optlog's own). A
command that finds the file as stamped trusts it; one that finds it changed by someone else (a
copy, a restore, a disk or a `dd` that wrote into it, a process killed before it stamped) checks
it first. Only the standard library: the read cache (`store.readcache`) consults it too.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

QUICK_CHECK_ROWS = 3  # the first problems SQLite names (tree, page, cell): where it is corrupt


def stamp_path(db: Path) -> Path:
    return db.with_name(db.name + ".checked")


def file_key(db: Path) -> str | None:
    try:
        st = os.stat(db)
    except OSError:
        return None
    return f"{st.st_dev}:{st.st_ino}:{st.st_size}:{st.st_mtime_ns}"


def as_stamped(db: Path) -> bool:
    """Whether the file is as optlog last knew it good."""
    key = file_key(db)
    try:
        return key is not None and stamp_path(db).read_text(encoding="ascii").strip() == key
    except (OSError, UnicodeDecodeError):
        return False


def restamp(db: Path) -> None:
    """Record the file as good now (the caller opened it checked and wrote only through SQLite)."""
    key = file_key(db)
    if key is None:
        return
    tmp = stamp_path(db).with_name(f".{db.name}.checked.{os.getpid()}")
    try:
        tmp.write_text(key + "\n", encoding="ascii")
        os.replace(tmp, stamp_path(db))
    except OSError:  # a read-only folder: the next command checks again
        try:
            tmp.unlink()
        except OSError:
            pass


def problems(conn: sqlite3.Connection) -> list[str]:
    """SQLite's first findings on the file's structure ([] when it is sound)."""
    try:
        rows = [str(r[0]) for r in conn.execute(f"PRAGMA quick_check({QUICK_CHECK_ROWS})")]
    except sqlite3.DatabaseError as e:
        return [str(e)]
    return [] if rows == ["ok"] else rows
