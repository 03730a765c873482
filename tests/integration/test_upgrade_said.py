"""The first command after a migration says the database was upgraded, and from which schema
revision (issue 34 item 6): on the CLI a line on stderr (stdout stays the document), in an MCP
answer an `upgraded` field. The database is a real older one: the 0002 schema (0003's index
dropped, its revision put back), on SQLite and PostgreSQL alike."""

from __future__ import annotations

import json

from _face import face


def _back_to_0002(ws, monkeypatch) -> None:
    from sqlalchemy import text

    from optlog.paths import find_workspace
    from optlog.store.db import workspace_engine

    for k, v in ws.env.items():
        monkeypatch.setenv(k, v)  # the workspace's database (OPTLOG_DB_URL on PostgreSQL)
    ws.cli("hypothesis", "add", "H", "--id", "h")
    e = workspace_engine(find_workspace(ws.root))
    try:
        with e.begin() as c:
            c.execute(text("DROP INDEX ix_evidence_link_run_id"))
            c.execute(text('ALTER TABLE "plan" DROP COLUMN "change"'))  # 0004's column
            c.execute(text("UPDATE alembic_version SET version_num = '0002'"))
    finally:
        e.dispose()


def test_the_first_command_after_an_upgrade_says_so_once(ws, monkeypatch):
    from optlog.store.migrate import head_revision

    _back_to_0002(ws, monkeypatch)
    r = ws.cli("todo", "list", "--json", subprocess=True)
    json.loads(r.out)  # stdout is the document only
    assert f"the database was upgraded from schema revision 0002 to {head_revision()}" in r.err, r.err
    again = ws.cli("todo", "list", "--json", subprocess=True)
    assert "upgraded" not in again.err


def test_the_mcp_answer_after_an_upgrade_says_so(ws, monkeypatch):
    from optlog.store.migrate import head_revision

    _back_to_0002(ws, monkeypatch)
    with face(ws, monkeypatch) as call:
        doc, is_error, _ = call("hypothesis_list", {})
        assert not is_error and doc["upgraded"] == {"from": "0002", "to": head_revision()}, doc
        doc, _, _ = call("hypothesis_list", {})
        assert "upgraded" not in doc
