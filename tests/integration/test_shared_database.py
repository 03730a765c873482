"""Workspaces sharing one database stay apart (issue 13 item 8), through the real CLI.

Every workspace has an identity (`id:` in optlog.yaml, committed). On PostgreSQL each identity gets
its own schema, so every row and query is that workspace's: two workspaces on one database (a
team's server) are a supported setup. A SQLite file holds one workspace: a second workspace pointed
at the same file is refused with a clear message and nothing of the first is touched.
"""

from __future__ import annotations

import json
import re

import pytest

from tests.conftest import PG_BASE

A_TODOS = {"todos": [{"id": "1", "content": "A: profile GEMMs", "status": "pending", "priority": "high"}]}
B_TODOS = {"todos": [{"id": "1", "content": "B: tune allreduce", "status": "in_progress", "priority": "low"}]}


def _ident(w):
    m = re.search(r"^id: ([0-9a-f]{32})", (w.root / "optlog.yaml").read_text(), re.M)
    return m.group(1) if m else None


def _two(make_ws, url):
    a, b = make_ws("wsa"), make_ws("wsb")
    a.env["OPTLOG_DB_URL"] = b.env["OPTLOG_DB_URL"] = url
    return a, b


def test_init_writes_a_committed_identity(ws):
    ident = _ident(ws)
    assert ident and ws.git("show", "HEAD:optlog.yaml").count(ident) == 1
    assert ws.git("status", "--porcelain") == ""


@pytest.mark.skipif(not PG_BASE, reason="PostgreSQL: set OPTLOG_TEST_PG")
def test_two_workspaces_on_one_postgresql_database_stay_apart(make_ws, db_env):
    a, b = _two(make_ws, db_env["OPTLOG_DB_URL"])
    assert _ident(a) != _ident(b)
    a.j("todo", "write", "-", input=json.dumps(A_TODOS))
    a.cli("run", "record", "--label", "config=tp8", "--metric", "ttt=700")
    a.cli("hyp", "add", "Same id in both", "--id", "same")
    b.cli("hyp", "add", "Same id in both, B's", "--id", "same")
    b.j("todo", "write", "-", input=json.dumps(B_TODOS))  # replaced A's list before the fix
    assert [t["content"] for t in a.j("todo", "list")["todos"]] == ["A: profile GEMMs"]
    assert [t["content"] for t in b.j("todo", "list")["todos"]] == ["B: tune allreduce"]
    assert b.j("run", "list")["runs"] == []  # A's runs listed in B before the fix
    assert [r["labels"] for r in a.j("run", "list")["runs"]] == [{"config": "tp8"}]
    assert a.j("hypothesis", "show", "same")["title"] == "Same id in both"
    assert b.j("hypothesis", "show", "same")["title"] == "Same id in both, B's"
    # each workspace's rows live in its own schema of the one database
    import psycopg

    with psycopg.connect(db_env["OPTLOG_DB_URL"]) as c:
        schemas = {r[0] for r in c.execute("SELECT nspname FROM pg_namespace WHERE nspname LIKE 'optlog_%'")}
        assert schemas >= {f"optlog_{_ident(a)}", f"optlog_{_ident(b)}"}
        assert c.execute(f'SELECT count(*) FROM "optlog_{_ident(a)}".run').fetchone()[0] == 1
        assert c.execute(f'SELECT count(*) FROM "optlog_{_ident(b)}".run').fetchone()[0] == 0


@pytest.mark.skipif(not PG_BASE, reason="PostgreSQL: set OPTLOG_TEST_PG")
def test_a_clone_on_the_shared_database_is_the_same_workspace(ws, make_ws, db_env):
    import subprocess

    ws.cli("run", "record", "--label", "config=tp8", "--metric", "ttt=700")
    c = make_ws("clone", init=False)
    subprocess.run(["git", "clone", "-q", str(ws.root), str(c.root)], check=True, env=c.env, capture_output=True)
    c.env["OPTLOG_DB_URL"] = db_env["OPTLOG_DB_URL"]
    assert _ident(c) == _ident(ws)
    assert [r["labels"] for r in c.j("run", "list")["runs"]] == [{"config": "tp8"}]


def test_a_shared_sqlite_file_holds_one_workspace(make_ws, tmp_path):
    a, b = _two(make_ws, f"sqlite:///{tmp_path / 'shared.db'}")
    a.j("todo", "write", "-", input=json.dumps(A_TODOS))
    a.cli("run", "record", "--label", "config=tp8", "--metric", "ttt=700")
    before = (tmp_path / "shared.db").read_bytes()
    for args in (("todo", "write", "-"), ("run", "list"), ("status",)):
        r = b.cli(*args, "--json", input=json.dumps(B_TODOS), check=2)
        err = r.json["error"]
        assert err["code"] == "foreign_database" and err["file"] == "optlog.yaml" and err["field"] == "id"
        assert _ident(a) in err["message"] and "Traceback" not in r.err
    assert (tmp_path / "shared.db").read_bytes() == before
    assert [t["content"] for t in a.j("todo", "list")["todos"]] == ["A: profile GEMMs"]
    assert len(a.j("run", "list")["runs"]) == 1


def test_a_workspace_without_identity_gets_one_committed_on_first_shared_use(make_ws, tmp_path, db_env):
    w = make_ws("old")
    text = re.sub(r"^id: .*\n", "", (w.root / "optlog.yaml").read_text(), flags=re.M)
    (w.root / "optlog.yaml").write_text(text)
    w.git("commit", "-q", "-am", "a workspace from before identities")
    assert _ident(w) is None
    w.env["OPTLOG_DB_URL"] = db_env.get("OPTLOG_DB_URL") or f"sqlite:///{tmp_path / 'team.db'}"
    before = w.commits()
    r = w.cli("todo", "write", "-", "--json", input=json.dumps(A_TODOS))
    assert "identity" in r.err
    ident = _ident(w)
    assert ident and w.commits() == before + 1 and ident in w.git("show", "HEAD:optlog.yaml")
    assert "Optlog-Event: identity" in w.git("log", "-1", "--format=%B")
    assert w.git("status", "--porcelain") == ""
    assert w.j("todo", "list")["todos"][0]["content"] == "A: profile GEMMs"


FIRST_RELEASE = "6190f40"  # the first release: workspaces without an identity, tables in `public`


def _first_release(tmp_path):
    """The first release's `optlog` package, unpacked from this repository's history (or a skip)."""
    import subprocess
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    out = tmp_path / "release-1"
    out.mkdir()
    arch = subprocess.run(["git", "-C", str(root), "archive", FIRST_RELEASE, "optlog"], capture_output=True)
    if arch.returncode != 0:
        pytest.skip(f"the first release {FIRST_RELEASE} is not in this clone's history (shallow?)")
    subprocess.run(["tar", "-x", "-C", str(out)], input=arch.stdout, check=True)
    return out


@pytest.mark.skipif(not PG_BASE, reason="PostgreSQL: set OPTLOG_TEST_PG")
def test_two_clones_of_a_first_release_workspace_upgrade_to_one_identity(make_ws, tmp_path, db_env):
    """Issue 37 item 3: a workspace made by the first release on the team's PostgreSQL database,
    cloned by two teammates who upgrade apart (neither has pulled the other's identity commit):
    both end up with one identity, see the same rows, and `git pull` merges without a conflict."""
    import subprocess

    url = db_env["OPTLOG_DB_URL"]
    origin = make_ws("origin", init=False)
    origin.env["OPTLOG_DB_URL"] = url
    old = dict(origin.env, PYTHONPATH=str(_first_release(tmp_path)))
    origin.cli("init", str(origin.root), cwd=tmp_path, env=old, subprocess=True)
    origin.cli("run", "record", "--label", "config=tp8", "--metric", "ttt=700", env=old, subprocess=True)
    origin.cli("hyp", "add", "Made before identities", "--id", "old", env=old, subprocess=True)
    assert _ident(origin) is None
    clones = []
    for name in ("alice", "bob"):
        c = make_ws(name, init=False)
        subprocess.run(["git", "clone", "-q", str(origin.root), str(c.root)], check=True, env=c.env, capture_output=True)
        c.env["OPTLOG_DB_URL"] = url
        clones.append(c)
    alice, bob = clones
    assert [r["labels"] for r in alice.j("run", "list")["runs"]] == [{"config": "tp8"}]
    r = bob.cli("run", "list", "--json")
    assert [x["labels"] for x in r.json["runs"]] == [{"config": "tp8"}], r.err  # 0 runs before the fix
    assert _ident(alice) and _ident(alice) == _ident(bob)
    assert "adopted" in r.err
    bob.git("pull", "-q", "--no-rebase", "--no-edit", str(alice.root), "main")  # a conflict before the fix
    assert _ident(bob) == _ident(alice) and bob.git("status", "--porcelain") == ""
    import psycopg

    with psycopg.connect(url) as c:
        owners = c.execute("SELECT value FROM public.sync_stamp WHERE key = 'workspace'").fetchall()
        assert owners == [(_ident(alice),)]
        assert not c.execute("SELECT nspname FROM pg_namespace WHERE nspname LIKE 'optlog_%'").fetchall()


def test_clones_without_a_database_hint_derive_the_same_identity(make_ws, tmp_path):
    """Issue 37 item 3, the part that needs no database: the identity of a workspace from before
    identities comes from the repository's first commit and its folder, the same in every clone."""
    import subprocess

    w = make_ws("old")
    text = re.sub(r"^id: .*\n", "", (w.root / "optlog.yaml").read_text(), flags=re.M)
    (w.root / "optlog.yaml").write_text(text)
    w.git("commit", "-q", "-am", "a workspace from before identities")
    ids = []
    for name in ("c1", "c2"):
        c = make_ws(name, init=False)
        subprocess.run(["git", "clone", "-q", str(w.root), str(c.root)], check=True, env=c.env, capture_output=True)
        c.env["OPTLOG_DB_URL"] = f"sqlite:///{tmp_path / (name + '.db')}"  # two databases: no hint to share
        c.cli("todo", "list")
        ids.append(_ident(c))
    assert ids[0] and ids[0] == ids[1]
