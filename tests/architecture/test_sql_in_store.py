"""SQL lives in optlog/store only (issue 35): the import contract "SQL only in store" forbids
SQLAlchemy and SQLModel elsewhere, but a raw read needs neither — `sqlite3` or a DBAPI cursor under
a SQLAlchemy session runs SQL text the contract never sees. This test reads the source with `ast` and
fails on any of the three outside optlog/store/:

* an import of `sqlite3`;
* a call of `.cursor()` (a raw DBAPI cursor);
* a string that is a SQL statement (starts with SELECT/INSERT/UPDATE/DELETE/CREATE/DROP/ALTER/PRAGMA/
  WITH followed by SQL, case-sensitive as SQL is written here).

ALLOWED is the named fast path list: empty. An entry needs a reason, and one that no longer matches
fails the test, so the list only shrinks.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PKG = ROOT / "optlog"

# "path:what" -> reason. Empty: every read that bypasses the ORM lives in store/ (quickread.py, runrows.py).
ALLOWED: dict[str, str] = {}

_SQL = re.compile(
    r"^\s*(SELECT\s+.+\s+FROM\s|INSERT\s+INTO\s|UPDATE\s+\w+\s+SET\s|DELETE\s+FROM\s|CREATE\s+(TABLE|INDEX|UNIQUE)\s|"
    r"DROP\s+(TABLE|INDEX)\s|ALTER\s+TABLE\s|PRAGMA\s+\w|WITH\s+\w+\s+AS\s*\()",
    re.S,
)


def violations(source: str, name: str) -> list[str]:
    """Each raw-SQL construct in one module's source, as `name:line: what`."""
    out: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            out += [f"{name}:{node.lineno}: import sqlite3" for a in node.names if a.name.split(".")[0] == "sqlite3"]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "sqlite3":
            out.append(f"{name}:{node.lineno}: import sqlite3")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "cursor":
            out.append(f"{name}:{node.lineno}: .cursor()")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and _SQL.match(node.value):
            out.append(f"{name}:{node.lineno}: SQL text {node.value[:40]!r}")
    return out


def _outside_store() -> list[Path]:
    return [p for p in sorted(PKG.rglob("*.py")) if not p.relative_to(PKG).parts[0] == "store"]


def test_no_sql_outside_store() -> None:
    found = []
    for p in _outside_store():
        rel = p.relative_to(ROOT).as_posix()
        found += [v for v in violations(p.read_text(encoding="utf-8"), rel)
                  if not any(v.startswith(k.split(":")[0] + ":") and k.split(":", 1)[1] in v for k in ALLOWED)]
    assert not found, "SQL outside optlog/store/ (move the read into a store/ function):\n" + "\n".join(found)


def test_allowed_entries_still_match() -> None:
    for key, reason in ALLOWED.items():
        assert reason.strip(), f"{key}: an allowed fast path needs its reason"
        path, what = key.split(":", 1)
        src = (ROOT / path).read_text(encoding="utf-8")
        assert any(what in v for v in violations(src, path)), f"{key} no longer matches: remove it from ALLOWED"


def test_the_rule_can_fail() -> None:
    """Each construct the rule names is caught in a snippet, and plain prose is not."""
    snippet = (
        "import sqlite3\n"
        "from sqlite3 import connect\n"
        "def f(s):\n"
        "    cur = s.connection().connection.cursor()\n"
        "    cur.execute('SELECT id, title FROM hypothesis')\n"
        "    cur.execute(\"INSERT INTO run (id) VALUES (1)\")\n"
        "    return 'Select the runs to compare'\n"
    )
    got = violations(snippet, "x.py")
    assert [v.split(": ", 1)[1][:10] for v in got] == [
        "import sql", "import sql", ".cursor()", "SQL text '", "SQL text '"], got
    assert violations("help = 'SELECT a hypothesis from the list'\nx = 'update the plan'\n", "y.py") == []


def test_store_is_where_the_sql_is() -> None:
    """The rule has something to protect: the raw reads moved here are still found inside store/."""
    for mod in ("quickread.py", "runrows.py"):
        assert violations((PKG / "store" / mod).read_text(encoding="utf-8"), mod), mod
