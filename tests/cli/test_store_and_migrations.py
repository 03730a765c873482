"""The store: migrations keep rows, SQLite's WAL/busy-timeout/IMMEDIATE settings, and start-up
imports (commands that do not need textual, httpx or git never import them)."""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from _foundation import run_py

MIGRATIONS = Path(__file__).resolve().parents[2] / "optlog" / "store" / "migrations"

EXTRA_REVISION = '''\
"""test-only revision: a new column with a default, a new table, and a data step"""
from alembic import op
import sqlalchemy as sa

revision = "ztest1"
down_revision = {down!r}
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("todo", sa.Column("effort", sa.String(), nullable=True))
    op.create_table("extra_thing", sa.Column("id", sa.Integer(), primary_key=True), sa.Column("x", sa.Text()))
    op.execute("UPDATE todo SET effort = 'S'")


def downgrade() -> None:
    op.drop_table("extra_thing")
    op.drop_column("todo", "effort")
'''

CHECK = textwrap.dedent('''
    import json, sys
    from pathlib import Path
    from sqlalchemy import text
    from optlog.paths import find_workspace
    from optlog.store.db import workspace_engine
    from optlog.store.migrate import current_revision, ensure_schema, head_revision
    ws = find_workspace(sys.argv[1]); mig = Path(sys.argv[2])
    e = workspace_engine(ws)
    def counts():
        with e.connect() as c:
            return {t: c.execute(text(f"SELECT COUNT(*) FROM {t}")).scalar()
                    for t in ("todo", "run", "metric", "run_label", "note", "hypothesis", "evidence_link")}
    out = {"before_rev": current_revision(e), "before": counts(), "old_head": head_revision()}
    ensure_schema(e, mig)
    out["after_rev"] = current_revision(e); out["after"] = counts(); out["new_head"] = head_revision(mig)
    with e.connect() as c:
        if out["new_head"] == "ztest1":
            out["effort"] = sorted({r[0] for r in c.execute(text("SELECT effort FROM todo"))})
        out["contents"] = [r[0] for r in c.execute(text("SELECT content FROM todo ORDER BY position"))]
    ensure_schema(e, mig)  # at head now: a no-op
    print(json.dumps(out))
''')


def test_upgrade_keeps_rows(ws, tmp_path):
    """A database made by this optlog (at today's head, e.g. 0001) with rows in it is upgraded by a
    later revision — here a test-only one added to a copy of the migrations — without losing rows."""
    ws.cli("hypothesis", "add", "Comm-bound", "--id", "comm-bound")
    ws.j("todo", "write", "-", input=json.dumps({"todos": [
        {"content": "one", "status": "pending"}, {"content": "two", "status": "completed", "activeForm": "x"}]}))
    for c in (64, 256):
        ws.cli("run", "record", "--label", "config=tp8", "--label", f"concurrency={c}", "--metric", f"tput={c * 7}",
               "--hypothesis", "comm-bound")
    ws.cli("note", "add", "autotune crashes for M128 tiles", "--hypothesis", "comm-bound")
    mig = tmp_path / "migrations"
    shutil.copytree(MIGRATIONS, mig, ignore=shutil.ignore_patterns("__pycache__"))
    p = run_py(CHECK, tmp_path, ws.env, str(ws.root), str(mig), timeout=300)
    assert p.returncode == 0, p.stderr
    first = json.loads(p.stdout)
    assert first["before_rev"] == first["old_head"] == first["after_rev"]  # copy == current: nothing to do
    (mig / "versions" / "ztest1_extra.py").write_text(EXTRA_REVISION.format(down=first["old_head"]))
    p = run_py(CHECK, tmp_path, ws.env, str(ws.root), str(mig), timeout=300)
    assert p.returncode == 0, p.stderr
    res = json.loads(p.stdout)
    assert res["before_rev"] == first["old_head"] and res["new_head"] == "ztest1" and res["after_rev"] == "ztest1"
    assert res["before"] == res["after"] and res["after"]["run"] == 2 and res["after"]["metric"] == 2
    assert res["after"]["todo"] == 2 and res["after"]["run_label"] == 4 and res["after"]["note"] == 1
    assert res["effort"] == ["S"] and res["contents"] == ["one", "two"]
    # an optlog older than the database's schema refuses to work on it, rather than guess
    for args in (("todo", "list"), ("run", "record", "--label", "a=1", "--metric", "x=1")):
        r = ws.cli(*args, "--json", check=1)
        assert r.json["error"]["code"] == "schema_too_new" and "ztest1" in r.json["error"]["message"]


def test_head_revision_is_read_from_the_files(tmp_path):
    from optlog.store import migrate

    assert migrate.head_revision() == migrate.HEAD
    assert migrate.head_revision() in migrate.known_revisions()
    mig = tmp_path / "m"
    (mig / "versions").mkdir(parents=True)
    (mig / "versions" / "a.py").write_text('revision = "a"\ndown_revision = None\n')
    (mig / "versions" / "b.py").write_text('revision: str = "b"\ndown_revision: str | None = "a"\n')
    assert migrate.head_revision(mig) == "b"
    mig2 = tmp_path / "m2"
    shutil.copytree(mig, mig2)
    (mig2 / "versions" / "c.py").write_text('revision = "c"\ndown_revision = "a"\n')
    with pytest.raises(RuntimeError, match="more than one migration head"):
        migrate.head_revision(mig2)


@pytest.mark.sqlite_only
def test_sqlite_wal_busy_timeout_and_immediate_writes(ws):
    """A write transaction holds SQLite's RESERVED lock from its first statement (BEGIN IMMEDIATE),
    even when that statement is a read; a read transaction does not block writers."""
    code = textwrap.dedent(f'''
        import json, sqlite3
        from sqlalchemy import text
        from optlog.paths import find_workspace
        from optlog.store.db import Database
        ws = find_workspace({str(ws.root)!r})
        db = Database(ws)
        out = {{}}
        with db.engine.connect() as c:
            out["journal_mode"] = c.exec_driver_sql("PRAGMA journal_mode").scalar()
            out["busy_timeout"] = c.exec_driver_sql("PRAGMA busy_timeout").scalar()
        def other_can_write():
            o = sqlite3.connect(str(ws.db_file), timeout=0, isolation_level=None)
            try:
                o.execute("BEGIN IMMEDIATE"); o.execute("ROLLBACK"); return True
            except sqlite3.OperationalError as e:
                return str(e)
            finally:
                o.close()
        with db.write() as s:
            s.exec(text("SELECT COUNT(*) FROM todo")).one()   # a read first, as todo write does
            out["during_write"] = other_can_write()
        out["after_write"] = other_can_write()
        with db.read() as s:
            s.exec(text("SELECT COUNT(*) FROM todo")).one()
            out["during_read"] = other_can_write()
        print(json.dumps(out))
    ''')
    p = run_py(code, ws.root, ws.env)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out["journal_mode"] == "wal" and out["busy_timeout"] == 60000
    assert out["during_write"] == "database is locked"
    assert out["after_write"] is True and out["during_read"] is True


FORBIDDEN = ("textual", "httpx", "git", "alembic", "pynvml", "numpy", "scipy", "mcp")
# the modules of `run`'s launch, import and judging verbs (and their services): `run list` and
# `run record` load none of them
RUN_PARTS = ("optlog.api.launches", "optlog.api.imports", "optlog.api.judging", "optlog.service.launch",
             "optlog.service.imports", "optlog.service.verdicts")

PROBE = textwrap.dedent('''
    import io, json, sys
    from contextlib import redirect_stdout
    from optlog.cli.main import main
    buf = io.StringIO()
    try:
        with redirect_stdout(buf):
            main(sys.argv[2:])
    except SystemExit as e:
        code = e.code
    print(json.dumps({"code": code, "out": buf.getvalue(),
                      "loaded": sorted({m.split(".")[0] for m in sys.modules}),
                      "own": sorted(m for m in sys.modules if m.startswith("optlog.")),
                      "orm": "sqlmodel" in sys.modules or "sqlalchemy.orm" in sys.modules}))
''')


def _probe(ws, *args: str) -> dict:
    p = subprocess.run([sys.executable, "-c", PROBE, "x", "-C", str(ws.root), *args, "--json"], env=ws.env,
                       capture_output=True, text=True, timeout=120, cwd=ws.root)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout.strip().splitlines()[-1])


def test_commands_do_not_import_tui_http_or_git(ws):
    ws.j("todo", "write", "-", input='{"todos": [{"content": "probe me", "status": "pending"}]}')
    ws.cli("hypothesis", "add", "H", "--id", "h")
    cases = [
        (("todo", "list"), lambda o: o["todos"][0]["content"] == "probe me"),
        (("todo", "write", "-"), None),
        (("run", "record", "--label", "a=1", "--metric", "x=2"), lambda o: o["metrics"] == {"x": 2.0}),
        (("run", "list"), lambda o: len(o["runs"]) == 1),
        (("note", "add", "n", "--link", "https://example.com/1"), lambda o: o["link"] == "https://example.com/1"),
        (("status",), lambda o: o["hypotheses"]["total"] == 1),
        (("hypothesis", "list"), lambda o: o["hypotheses"][0]["id"] == "h"),
    ]
    for args, ok in cases:
        if args[-1] == "-":
            args = ("todo", "write", str(ws.root / ".optlog" / "probe.json"))
            (ws.root / ".optlog" / "probe.json").write_text('{"todos": [{"content": "probe me", "status": "pending"}]}')
        r = _probe(ws, *args)
        assert r["code"] in (0, None), (args, r["out"])
        if ok is not None:
            assert ok(json.loads(r["out"])), (args, r["out"])  # the command really ran
        bad = sorted(set(r["loaded"]) & set(FORBIDDEN))
        assert bad == [], (args, bad)
        if args[0] == "run":  # run's other verbs are parts of the group, imported only when used
            assert set(r["own"]) & set(RUN_PARTS) == set(), (args, sorted(set(r["own"]) & set(RUN_PARTS)))
    # the hottest read path does not even load the ORM
    assert _probe(ws, "todo", "list")["orm"] is False


def test_a_verdict_with_nothing_new_loads_no_orm(ws):
    """A steady `verdict` (judged before, nothing changed) only reads: plain SQL, no ORM tables
    (their import is most of its cost over start-up, bench/verdict_bench.py)."""
    ws.cli("hypothesis", "add", "H", "--id", "h")
    ws.cli("prediction", "add", "h", "--expect", "a > b", "--metric", "m", "--a", "c=x", "--b", "c=y")
    for c, m in (("x", 30), ("x", 31), ("x", 32), ("y", 10), ("y", 11), ("y", 12)):
        ws.cli("run", "record", "--label", f"c={c}", "--metric", f"m={m}")
    assert ws.j("verdict", "--all")["committed"] == 1
    # the next command reads the evidence folder the verdict wrote to (once): not this one's cost
    assert ws.j("verdict", "--all")["committed"] == 0
    r = _probe(ws, "verdict", "--all")
    assert json.loads(r["out"])["results"][0]["auto_status"] == "confirmed"  # really judged
    assert r["orm"] is False


def test_existing_workspace_gets_the_evidence_run_index(ws, monkeypatch):
    """0003: a workspace made before it (at 0002, without the index) gains the index on
    evidence_link.run_id at its next command, on SQLite and PostgreSQL alike, keeping its links."""
    from sqlalchemy import inspect, text

    from optlog.paths import find_workspace
    from optlog.store.db import workspace_engine
    from optlog.store.migrate import head_revision

    for k, v in ws.env.items():
        monkeypatch.setenv(k, v)  # the workspace's database (OPTLOG_DB_URL on PostgreSQL)
    ws.cli("hypothesis", "add", "H", "--id", "h")
    ws.cli("run", "record", "--label", "a=1", "--metric", "x=1", "--hypothesis", "h")
    e = workspace_engine(find_workspace(ws.root))
    try:
        def indexed() -> bool:
            return any(ix["column_names"] == ["run_id"] for ix in inspect(e).get_indexes("evidence_link"))

        assert indexed()
        with e.begin() as c:  # back to what 0002 left
            c.execute(text("DROP INDEX ix_evidence_link_run_id"))
            c.execute(text('ALTER TABLE "plan" DROP COLUMN "change"'))  # 0004's column
            c.execute(text("UPDATE alembic_version SET version_num = '0002'"))
        assert not indexed()
        ws.j("todo", "list")
        assert indexed()
        with e.connect() as c:
            assert c.execute(text("SELECT version_num FROM alembic_version")).scalar() == head_revision()
            assert c.execute(text("SELECT COUNT(*) FROM evidence_link")).scalar() == 1
    finally:
        e.dispose()
