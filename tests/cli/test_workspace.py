"""Workspace: init (new and adopted), finding the workspace, optlog.yaml validation, CLI conventions."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from _foundation import ERROR_KEYS, bad, files


def test_init_new_folder_makes_git_repo_and_layout(make_ws, tmp_path):
    w = make_ws("fresh", init=False)
    res = w.j("init", str(w.root), "--plan-prefix", "plans-x", cwd=tmp_path)
    assert res["git_initialised"] is True and res["adopted"] is False
    assert res["plan_prefix"] == "plans-x"
    for d in ("hypotheses", "reports", "runs", "plans-x"):
        assert (w.root / d).is_dir(), d
    assert (w.root / "optlog.yaml").is_file()
    assert "/.optlog/" in (w.root / ".gitignore").read_text()
    assert w.commits() == 1
    msg = w.git("log", "-1", "--format=%B")
    assert "Optlog-Event: init" in msg
    # optlog's files are committed and the user's index is clean
    assert w.git("status", "--porcelain") == ""
    assert "plans-x/.gitkeep" in w.git("ls-files")
    # the database is there for the next command (SQLite: in .optlog/)
    assert w.j("todo", "list") == {"todos": []}
    # init again: adopted, nothing new, no commit
    again = w.j("init", str(w.root), cwd=tmp_path)
    assert again["adopted"] is True and again["created"] == [] and again["commit"] is None
    assert w.commits() == 1
    # a different prefix on an adopted workspace is refused (it is set in optlog.yaml)
    bad(w, "init", str(w.root), "--plan-prefix", "other", cwd=tmp_path, field="plans.prefix")


def test_init_adopts_existing_repo_without_touching_user_changes(make_ws, tmp_path):
    w = make_ws("existing", init=False)
    w.root.mkdir()
    w.git("init", "-q")
    (w.root / "app.py").write_text("print(1)\n")
    (w.root / ".gitignore").write_text("*.log\n")
    w.git("add", "app.py", ".gitignore")
    w.git("commit", "-qm", "user commit")
    (w.root / "staged.txt").write_text("staged\n")
    w.git("add", "staged.txt")
    (w.root / "app.py").write_text("print(2)\n")  # unstaged change
    sub = w.root / "src"
    sub.mkdir()
    res = w.j("init", cwd=w.root)  # no PATH: the current folder
    assert res["git_initialised"] is False and res["adopted"] is False
    assert w.commits() == 2
    status = w.git("status", "--porcelain").splitlines()
    assert "A  staged.txt" in status and " M app.py" in status, status
    committed = w.git("show", "--name-only", "--format=", "HEAD").split()
    assert "staged.txt" not in committed and "app.py" not in committed
    assert "optlog.yaml" in committed
    gi = (w.root / ".gitignore").read_text().splitlines()
    assert gi[0] == "*.log" and "/.optlog/" in gi
    # found from a subfolder, upwards
    assert w.j("todo", "list", cwd=sub) == {"todos": []}


def test_dash_C_before_and_after_subcommand(ws, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    ws.cli("todo", "add", "first", cwd=ws.root)
    a = ws.j("-C", str(ws.root), "todo", "list", cwd=elsewhere)
    b = ws.j("todo", "list", "-C", str(ws.root), cwd=elsewhere)
    c = ws.j("todo", "-C", str(ws.root), "list", cwd=elsewhere)
    assert a == b == c and [t["content"] for t in a["todos"]] == ["first"]
    # init with -C and a relative PATH lands inside the -C folder
    r = ws.j("-C", str(tmp_path), "init", "inner", cwd=elsewhere)
    assert r["workspace"] == str((tmp_path / "inner").resolve())


def test_no_workspace_is_bad_input_and_creates_nothing(ws, tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    err = bad(ws, "todo", "list", cwd=empty)
    assert err["code"] == "no_workspace" and "optlog init" in err["message"]
    err = bad(ws, "run", "record", "--label", "a=1", "--metric", "x=1", cwd=empty)
    assert err["code"] == "no_workspace"
    assert list(empty.iterdir()) == []
    err = bad(ws, "-C", str(tmp_path / "missing"), "todo", "list", cwd=empty)
    assert "no such folder" in err["message"]


def test_config_wrong_field_names_file_line_field(ws):
    before = ws.commits()
    cfg = ws.root / "optlog.yaml"
    good = cfg.read_text()
    lines = good.splitlines()
    i = next(n for n, ln in enumerate(lines) if ln.strip().startswith("interval_s:"))
    lines[i] = "  interval_s: fast"
    cfg.write_text("\n".join(lines) + "\n")
    for cmd in (("todo", "list"), ("status",), ("hypothesis", "add", "x")):
        err = bad(ws, *cmd)
        assert err["file"] == "optlog.yaml" and err["line"] == i + 1 and err["field"] == "telemetry.interval_s", err
    # an unknown key (a typo) is an error too, at its line
    cfg.write_text(good + "telemetri:\n  interval_s: 1\n")
    err = bad(ws, "todo", "list")
    assert err["field"] == "telemetri" and err["line"] == len(good.splitlines()) + 1, err
    # malformed YAML: file, line, column
    cfg.write_text(good + "broken: [unclosed\n")  # (a key good lacks: a repeated one is a duplicate_key first)
    err = bad(ws, "status")
    assert err["file"] == "optlog.yaml" and err["code"] == "malformed_yaml" and err["line"] >= len(good.splitlines())
    assert not (ws.root / "hypotheses" / "x.yaml").exists()
    assert ws.commits() == before
    cfg.write_text(good)
    assert ws.j("todo", "list") == {"todos": []}


def test_bare_optlog_not_on_terminal_prints_help(ws):
    r = subprocess.run([sys.executable, "-m", "optlog"], cwd=ws.root, env=ws.env, capture_output=True, text=True,
                       stdin=subprocess.DEVNULL, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "Usage:" in r.stdout and "hypothesis" in r.stdout and "todo" in r.stdout
    # a group with no subcommand prints its help too
    r = ws.cli("todo")
    assert "Usage:" in r.out and "write" in r.out


def test_error_document_and_exit_codes(ws):
    # usage error: unknown option, missing argument, unknown command
    for args in (("todo", "list", "--bogus"), ("hypothesis", "show"), ("frobnicate",)):
        r = ws.cli(*args, "--json", check=2)
        doc = json.loads(r.out)
        assert set(doc) == {"error"} and ERROR_KEYS <= set(doc["error"]) and doc["error"]["code"] == "usage", doc
    # a group without its subcommand under --json: still one error document
    err = bad(ws, "todo")
    assert err["code"] == "usage" and "command" in err["message"].lower()
    # without --json: nothing on stdout, the message on stderr
    r = ws.cli("hypothesis", "show", "nope", check=2)
    assert r.out == "" and "no hypothesis 'nope'" in r.err
    err = bad(ws, "hypothesis", "show", "nope", field="ID")  # the command's argument (was "hypothesis", a noun, no parameter of it)
    assert err["code"] == "not_found"
    assert ws.cli("--version").out.startswith("optlog")


def test_files_listing_helper_sees_user_files(ws):
    (ws.root / "notes.md").write_text("x")
    assert any(f.startswith("notes.md:") for f in files(ws.root))
    assert not any(f.startswith(".optlog") for f in files(ws.root))
    assert os.path.isdir(ws.root / ".optlog")
