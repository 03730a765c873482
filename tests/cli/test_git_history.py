"""Git-tracked decision history on real repositories in temp folders, checked with `git` itself.

Covers: the user's staged and unstaged files untouched, trailers, concurrent writers, a repository
with no commits, a detached HEAD, a worktree, no git identity, a gitignored hypotheses folder, hooks,
hand edits (valid, malformed, racing a write), `optlog log`, `optlog sync`, and a fresh clone.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest


def git(cwd: Path, *args: str, env: dict[str, str] | None = None, check: bool = True) -> str:
    p = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, env=env)
    if check:
        assert p.returncode == 0, f"git {' '.join(args)}: {p.stderr}"
    return p.stdout


def head(cwd: Path, env: dict[str, str]) -> str:
    return git(cwd, "rev-parse", "HEAD", env=env).strip()


def files_in(cwd: Path, sha: str, env: dict[str, str]) -> list[str]:
    return git(cwd, "show", "--name-only", "--format=", sha, env=env).split()


def optlog_commits(cwd: Path, env: dict[str, str], rev: str = "HEAD") -> list[str]:
    return git(cwd, "log", "--format=%H", "--grep=^Optlog-Event: ", rev, env=env).split()


def in_process(monkeypatch: pytest.MonkeyPatch, ws, root: Path | None = None):  # type: ignore[no-untyped-def]
    """A service Ctx in this process, with the test workspace's environment (database, git config)."""
    for k in ("OPTLOG_DB_URL", "GIT_CONFIG_GLOBAL", "OPTLOG_ACTOR", "HOME"):
        if k in ws.env:
            monkeypatch.setenv(k, ws.env[k])
    from optlog.service.context import Ctx

    return Ctx.find(root or ws.root)


# ---------------------------------------------------------------- safe commits


def test_staged_and_unstaged_files_untouched(ws):
    e = ws.env
    (ws.root / "X.txt").write_text("x1\n")
    (ws.root / "Y.txt").write_text("y1\n")
    git(ws.root, "add", "X.txt", "Y.txt", env=e)
    git(ws.root, "commit", "-qm", "user work", env=e)
    (ws.root / "X.txt").write_text("x2 staged\n")
    git(ws.root, "add", "X.txt", env=e)
    (ws.root / "Y.txt").write_text("y2 unstaged\n")
    (ws.root / "Z.txt").write_text("untracked\n")
    before = head(ws.root, e)

    ws.cli("hypothesis", "add", "Communication-bound", "--id", "comm-bound")
    ws.cli("hypothesis", "add", "Compute-bound", "--id", "compute-bound", "--parent", "comm-bound")
    ws.cli("hypothesis", "set", "comm-bound", "--status", "falsified", "--why", "TP4+PP2 is 2x slower")

    new = git(ws.root, "rev-list", f"{before}..HEAD", env=e).split()
    assert len(new) == 3
    for sha in new:
        assert all(f.startswith("hypotheses/") for f in files_in(ws.root, sha, e)), files_in(ws.root, sha, e)
    # X is still staged with the user's content and in no optlog commit; Y is untouched on disk.
    assert git(ws.root, "diff", "--cached", "--name-only", env=e).split() == ["X.txt"]
    assert git(ws.root, "show", ":X.txt", env=e) == "x2 staged\n"
    assert git(ws.root, "show", "HEAD:X.txt", env=e) == "x1\n"
    assert git(ws.root, "diff", "--name-only", env=e).split() == ["Y.txt"]
    assert (ws.root / "Y.txt").read_text() == "y2 unstaged\n"
    status = git(ws.root, "status", "--porcelain", env=e).splitlines()
    assert sorted(status) == sorted(["M  X.txt", " M Y.txt", "?? Z.txt"]), status
    # the user's next commit contains X only
    git(ws.root, "commit", "-qm", "user commit", env=e)
    assert files_in(ws.root, "HEAD", e) == ["X.txt"]


def test_messages_subjects_and_trailers(ws):
    e = ws.env
    ws.cli("hypothesis", "add", "Communication-bound", "--id", "comm-bound", "--statement", "allreduce dominates")
    ws.cli("hypothesis", "add", "Compute-bound: FP4 GEMM kernels", "--id", "compute-bound",
           "--parent", "comm-bound", "--rival", "comm-bound")
    ws.cli("hypothesis", "set", "comm-bound", "--status", "falsified", "--why", "TP4+PP2 2x slower than TP8")
    assert git(ws.root, "log", "-1", "--format=%s", env=e).strip() == "optlog: comm-bound → falsified (override)"
    assert git(ws.root, "log", "-1", "--format=%b", env=e).startswith("TP4+PP2 2x slower than TP8\n")
    trailers = git(ws.root, "log", "-1", "--format=%(trailers)", env=e)
    assert "Optlog-Event: override\n" in trailers
    assert "Optlog-Hypothesis: comm-bound\n" in trailers
    assert "Optlog-Status: falsified\n" in trailers
    assert "Optlog-Actor: tester\n" in trailers
    pivot = git(ws.root, "log", "-1", "--format=%(trailers:key=Optlog-Parent,valueonly)", "HEAD~1", env=e)
    assert pivot.strip() == "comm-bound"
    assert git(ws.root, "log", "-1", "--format=%s", "HEAD~1", env=e).strip() == \
        "optlog: add hypothesis compute-bound (pivot from comm-bound)"
    events = git(ws.root, "log", "--format=%(trailers:key=Optlog-Event,valueonly)", env=e).split()
    assert events == ["override", "hypothesis-add", "hypothesis-add", "init"]

    # optlog log reads the same thing back, oldest first, with the pivot visible
    log = ws.j("log")["events"]
    assert [x["event"] for x in log] == ["init", "hypothesis-add", "hypothesis-add", "override"]
    assert log[2]["pivot"] == {"from": "comm-bound", "to": "compute-bound"} and log[2]["parent"] == "comm-bound"
    assert log[3]["subject"] == "optlog: comm-bound → falsified (override)"
    assert log[3]["body"] == "TP4+PP2 2x slower than TP8"
    assert log[3]["trailers"]["Optlog-Status"] == "falsified"
    assert set(log[3]) >= {"sha", "at", "event", "hypothesis", "subject", "body", "trailers", "runs", "parent"}
    # --hypothesis keeps its own events and the children that pivoted from it
    mine = ws.j("log", "--hypothesis", "comm-bound")["events"]
    assert [(x["event"], x["hypothesis"]) for x in mine] == [
        ("hypothesis-add", "comm-bound"), ("hypothesis-add", "compute-bound"), ("override", "comm-bound")]
    human = ws.cli("log").out
    assert "⇒ pivot: comm-bound → compute-bound" in human
    assert ws.j("log", "-n", "1")["events"][0]["event"] == "override"
    r = ws.cli("log", "--hypothesis", "nope", "--json", check=2)
    assert r.json["error"]["field"] == "--hypothesis"


def test_run_trailers_parsed(ws, monkeypatch):
    """A verdict-style commit (as the verdict verb makes it) reads back with its runs."""
    from optlog.gitlog import history

    ws.cli("hypothesis", "add", "Communication-bound", "--id", "comm-bound")
    ctx = in_process(monkeypatch, ws)
    path = ws.root / "hypotheses" / "comm-bound.yaml"
    path.write_text(path.read_text() + "auto_status: falsified\n")
    sha = history.record(ctx, [path], "optlog: comm-bound → falsified",
                         "tp4pp2 / tp8 output_throughput = 0.52 at concurrency 256 (expected > 1.05)",
                         {"Optlog-Event": "verdict", "Optlog-Hypothesis": "comm-bound", "Optlog-Run": "41,42"})
    assert sha and head(ws.root, ws.env) == sha
    assert git(ws.root, "log", "-1", "--format=%(trailers:key=Optlog-Run,valueonly)", env=ws.env).strip() == "41,42"
    ev = ws.j("log", "--hypothesis", "comm-bound")["events"][-1]
    assert ev["event"] == "verdict" and ev["runs"] == [41, 42] and ev["subject"] == "optlog: comm-bound → falsified"
    # nothing changed: no commit
    assert history.record(ctx, [path], "optlog: again", "", {"Optlog-Event": "verdict"}) is None
    assert head(ws.root, ws.env) == sha


def test_repository_with_no_commits(tmp_path, make_ws):
    w = make_ws("fresh", init=False)
    w.root.mkdir()
    git(w.root, "init", "-q", env=w.env)
    (w.root / "X.txt").write_text("staged before any commit\n")
    git(w.root, "add", "X.txt", env=w.env)
    w.cli("init", str(w.root))
    assert git(w.root, "rev-list", "--count", "HEAD", env=w.env).strip() == "1"
    assert git(w.root, "symbolic-ref", "HEAD", env=w.env).strip() == "refs/heads/main"
    assert "X.txt" not in git(w.root, "ls-tree", "-r", "--name-only", "HEAD", env=w.env).split()
    assert git(w.root, "diff", "--cached", "--name-only", env=w.env).split() == ["X.txt"]
    w.cli("hypothesis", "add", "First", "--id", "first")
    assert git(w.root, "rev-list", "--count", "HEAD", env=w.env).strip() == "2"
    assert git(w.root, "status", "--porcelain", env=w.env).splitlines() == ["A  X.txt"]


def test_log_and_sync_in_repository_without_commits(make_ws):
    w = make_ws("empty", init=False)
    w.root.mkdir()
    git(w.root, "init", "-q", env=w.env)
    (w.root / "optlog.yaml").write_text("name: empty\n")
    # nothing happened yet; on a shared PostgreSQL server the first command gives the workspace an
    # identity (optlog.yaml `id:`) and commits it, the only event there is
    events = w.j("log")["events"]
    assert [e["event"] for e in events] in ([], ["identity"]), events
    assert bool(events) == bool(os.environ.get("OPTLOG_TEST_PG")), events
    (w.root / "hypotheses").mkdir()
    (w.root / "hypotheses" / "by-hand.yaml").write_text("id: by-hand\ntitle: Written by hand\n")
    res = w.j("sync")
    assert [c["hypothesis"] for c in res["committed"]] == ["by-hand"]
    subjects = git(w.root, "log", "--format=%s", env=w.env).split("\n")
    subjects = [x for x in subjects if x]
    # on a shared PostgreSQL server the workspace is first given a committed identity (optlog.yaml `id:`)
    assert subjects[0] == "optlog: add hypothesis by-hand (written by hand)", subjects
    assert all("identity" in x for x in subjects[1:]), subjects


def test_detached_head(ws):
    e = ws.env
    ws.cli("hypothesis", "add", "One", "--id", "one")
    main_before = git(ws.root, "rev-parse", "main", env=e).strip()
    git(ws.root, "checkout", "-q", "--detach", env=e)
    r = ws.cli("hypothesis", "add", "Two", "--id", "two")
    assert "HEAD is detached" in r.err
    assert git(ws.root, "symbolic-ref", "-q", "HEAD", env=e, check=False) == ""
    assert git(ws.root, "rev-parse", "main", env=e).strip() == main_before
    assert git(ws.root, "rev-parse", "HEAD~1", env=e).strip() == main_before
    assert files_in(ws.root, "HEAD", e) == ["hypotheses/two.yaml"]
    assert git(ws.root, "status", "--porcelain", env=e) == ""


def test_worktree(ws):
    e = ws.env
    ws.cli("hypothesis", "add", "One", "--id", "one")
    wt = ws.root.parent / "wt-exp"
    git(ws.root, "worktree", "add", "-q", str(wt), "-b", "exp", env=e)
    assert (wt / ".git").is_file()
    main_before = git(ws.root, "rev-parse", "main", env=e).strip()
    ws.cli("hypothesis", "add", "In the worktree", "--id", "wt-hyp", cwd=wt)
    ws.cli("hypothesis", "set", "wt-hyp", "--status", "testing", "--why", "runs queued", cwd=wt)
    assert git(ws.root, "rev-parse", "main", env=e).strip() == main_before
    assert git(wt, "rev-list", "--count", "main..exp", env=e).strip() == "2"
    assert git(wt, "status", "--porcelain", env=e) == ""
    assert git(ws.root, "status", "--porcelain", env=e) == ""
    assert not (ws.root / "hypotheses" / "wt-hyp.yaml").exists()
    assert [x["hypothesis"] for x in ws.j("log", cwd=wt)["events"]][-2:] == ["wt-hyp", "wt-hyp"]


def test_no_git_identity_uses_fallback_and_says_so_once(tmp_path, make_ws):
    w = make_ws("noid", init=False)
    empty = tmp_path / "empty-gitconfig"
    empty.write_text("")
    home = tmp_path / "home"
    home.mkdir()
    w.env.update({"GIT_CONFIG_GLOBAL": str(empty), "HOME": str(home), "GIT_CONFIG_NOSYSTEM": "1"})
    for k in ("EMAIL", "GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL"):
        w.env.pop(k, None)
    # git itself refuses here (or would invent an identity); optlog commits under its fallback
    r1 = w.cli("init", str(w.root), cwd=tmp_path)
    assert r1.err.count("fallback identity") == 1, r1.err
    r2 = w.cli("hypothesis", "add", "One", "--id", "one")
    r3 = w.cli("hypothesis", "add", "Two", "--id", "two")
    assert "fallback identity" not in r2.err + r3.err
    idents = git(w.root, "log", "--format=%an <%ae>|%cn <%ce>", env=w.env).splitlines()
    assert idents == ["optlog <optlog@localhost>|optlog <optlog@localhost>"] * 3


def test_gitignored_hypotheses_folder_is_refused_before_writing(ws):
    e = ws.env
    ws.cli("hypothesis", "add", "Tracked before the rule", "--id", "old")
    gi = ws.root / ".gitignore"
    gi.write_text(gi.read_text() + "hypotheses/\n")
    n_lines = len(gi.read_text().splitlines())
    before = head(ws.root, e)
    r = ws.cli("hypothesis", "add", "New", "--id", "new", "--json", check=2)
    err = r.json["error"]
    assert err["code"] == "gitignored" and err["file"] == ".gitignore" and err["line"] == n_lines
    assert "git ignores hypotheses/new.yaml" in err["message"] and "hypotheses/" in err["message"]
    assert not (ws.root / "hypotheses" / "new.yaml").exists()
    assert head(ws.root, e) == before
    # a file git already tracks is still committed (ignore rules do not apply to tracked files)
    ws.cli("hypothesis", "set", "old", "--status", "testing", "--why", "queued")
    assert files_in(ws.root, "HEAD", e) == ["hypotheses/old.yaml"]
    # an exception for the folder lifts the refusal
    gi.write_text(gi.read_text() + "!hypotheses/\n")
    ws.cli("hypothesis", "add", "New", "--id", "new")


def test_repository_hooks_do_not_run(ws):
    e = ws.env
    hooks = ws.root / ".git" / "hooks"
    marker = ws.root.parent / "hook-ran"
    for name in ("pre-commit", "commit-msg", "prepare-commit-msg", "post-commit", "reference-transaction"):
        h = hooks / name
        h.write_text(f"#!/bin/sh\necho {name} >> '{marker}'\nexit 1\n")
        h.chmod(0o755)
    ws.cli("hypothesis", "add", "One", "--id", "one")
    assert not marker.exists()
    assert files_in(ws.root, "HEAD", e) == ["hypotheses/one.yaml"]
    # the hooks are real: git's own commit runs them (and the pre-commit hook refuses)
    (ws.root / "X.txt").write_text("x")
    git(ws.root, "add", "X.txt", env=e)
    assert subprocess.run(["git", "commit", "-qm", "x"], cwd=ws.root, env=e, capture_output=True).returncode != 0
    assert "pre-commit" in marker.read_text()


# ---------------------------------------------------------------- concurrency

WRITER = textwrap.dedent("""
    import sys
    from optlog.service.context import Ctx
    from optlog.service import hypotheses
    root, prefix, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    ctx = Ctx.find(root)
    ctx.on_notice = lambda t: print("notice:", t, file=sys.stderr)
    for i in range(n):
        hypotheses.add(ctx, f"{prefix} {i}", hid=f"{prefix}-{i}")
        hypotheses.set_status(ctx, f"{prefix}-{i}", "testing", "queued")
    ctx.close()
""")

INDEX_HAMMER = textwrap.dedent("""
    import subprocess, sys, time
    root, stop = sys.argv[1], time.monotonic() + float(sys.argv[2])
    i = 0
    while time.monotonic() < stop:
        i += 1
        open(f"{root}/user.txt", "w").write(str(i))
        subprocess.run(["git", "add", "user.txt"], cwd=root, capture_output=True)
""")


def _spawn(code: str, *args: str, env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-c", code, *args], env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def test_two_workspaces_in_one_repository_commit_concurrently(tmp_path, make_ws):
    """Two optlog processes (separate workspaces, so only the git-level lock orders them) commit to
    the same branch at once, while a third process keeps taking git's index.lock."""
    mono = tmp_path / "mono"
    mono.mkdir()
    a = make_ws("mono/a", init=False)
    b = make_ws("mono/b", init=False)
    git(mono, "init", "-q", env=a.env)
    a.cli("init", str(a.root), cwd=mono)
    b.cli("init", str(b.root), cwd=mono)
    before = int(git(mono, "rev-list", "--count", "HEAD", env=a.env))
    n = 5
    procs = [_spawn(WRITER, str(a.root), "a", str(n), env=a.env), _spawn(WRITER, str(b.root), "b", str(n), env=b.env),
             _spawn(INDEX_HAMMER, str(mono), "4", env=a.env)]
    outs = [p.communicate(timeout=240) for p in procs]
    for p, (_out, err) in zip(procs, outs):
        assert p.returncode == 0, err
    assert "index.lock" not in outs[0][1] + outs[1][1] or "could not be refreshed" in outs[0][1] + outs[1][1]
    subjects = git(mono, "log", "--format=%s", env=a.env).splitlines()
    assert int(git(mono, "rev-list", "--count", "HEAD", env=a.env)) == before + 4 * n
    for who in ("a", "b"):
        for i in range(n):
            assert f"optlog: add hypothesis {who}-{i}" in subjects
            assert f"optlog: {who}-{i} → testing (override)" in subjects
    tracked = git(mono, "ls-tree", "-r", "--name-only", "HEAD", env=a.env).split()
    assert sum(1 for t in tracked if t.startswith(("a/hypotheses/", "b/hypotheses/")) and t.endswith(".yaml")) == 2 * n
    assert "user.txt" not in tracked  # the hammer's staged file is in no optlog commit
    status = [ln for ln in git(mono, "status", "--porcelain", env=a.env).splitlines() if "user.txt" not in ln]
    assert status == []


def test_two_processes_in_one_workspace(ws):
    n = 4
    procs = [_spawn(WRITER, str(ws.root), p, str(n), env=ws.env) for p in ("p", "q")]
    outs = [p.communicate(timeout=240) for p in procs]
    for p, (_o, err) in zip(procs, outs):
        assert p.returncode == 0, err
    subjects = git(ws.root, "log", "--format=%s", env=ws.env).splitlines()
    assert sum(1 for s in subjects if s.startswith("optlog: add hypothesis ")) == 2 * n
    assert len(ws.j("hypothesis", "list")["hypotheses"]) == 2 * n
    assert git(ws.root, "status", "--porcelain", env=ws.env) == ""


# ---------------------------------------------------------------- hand edits


def test_hand_edit_with_yaml_error_is_reported_and_nothing_committed(ws):
    ws.cli("hypothesis", "add", "Communication-bound", "--id", "comm-bound")
    before = head(ws.root, ws.env)
    f = ws.root / "hypotheses" / "comm-bound.yaml"
    good = f.read_text()
    lines = good.splitlines()
    lines.insert(2, "statement: [unclosed")
    f.write_text("\n".join(lines) + "\n")
    for args in (("sync",), ("hypothesis", "list"), ("hypothesis", "set", "comm-bound", "--status", "testing", "--why", "x")):
        r = ws.cli(*args, "--json", check=2)
        err = r.json["error"]
        assert err["file"] == "hypotheses/comm-bound.yaml" and isinstance(err["line"], int), err
        assert "hypotheses/comm-bound.yaml:" in r.err
    assert head(ws.root, ws.env) == before
    # a field error names the field and its line
    f.write_text(good.replace("status: open", "status: maybe"))
    r = ws.cli("sync", "--json", check=2)
    err = r.json["error"]
    assert err["field"] == "status" and err["line"] == good.splitlines().index("status: open") + 1
    assert head(ws.root, ws.env) == before
    f.write_text(good)
    assert ws.j("sync")["committed"] == []


def test_hand_edit_committed_by_sync_and_by_next_write(ws):
    e = ws.env
    ws.cli("hypothesis", "add", "Communication-bound", "--id", "comm-bound")
    ws.cli("hypothesis", "add", "Compute-bound", "--id", "compute-bound")
    f = ws.root / "hypotheses" / "comm-bound.yaml"
    f.write_text(f.read_text() + "statement: allreduce latency dominates at 512\n")
    (ws.root / "hypotheses" / "by-agent.yaml").write_text("id: by-agent\ntitle: Written by an agent\nparent: comm-bound\n")
    (ws.root / "hypotheses" / "compute-bound.yaml").unlink()
    r = ws.j("sync")
    assert sorted(c["hypothesis"] for c in r["committed"]) == ["by-agent", "comm-bound", "compute-bound"]
    subjects = git(ws.root, "log", "-3", "--format=%s", env=e).splitlines()
    assert "optlog: hand edit of hypothesis comm-bound (statement)" in subjects
    assert "optlog: add hypothesis by-agent (written by hand) (pivot from comm-bound)" in subjects
    assert "optlog: hypothesis compute-bound removed by hand" in subjects
    assert git(ws.root, "log", "-3", "--format=%(trailers:key=Optlog-Event,valueonly)", env=e).split() == ["hand-edit"] * 3
    assert git(ws.root, "status", "--porcelain", env=e) == ""
    assert ws.j("sync")["committed"] == []

    # a hand edit, then an optlog write of the same hypothesis: one commit that says so
    f.write_text(f.read_text().replace("at 512", "at 256 and 512"))
    r = ws.cli("hypothesis", "set", "comm-bound", "--status", "falsified", "--why", "2x slower")
    assert "made outside optlog" in r.err
    msg = git(ws.root, "log", "-1", "--format=%B", env=e)
    assert "Includes an edit of hypotheses/comm-bound.yaml made outside optlog" in msg
    assert git(ws.root, "log", "-1", "--format=%(trailers:key=Optlog-Hand-Edit,valueonly)", env=e).strip() == \
        "hypotheses/comm-bound.yaml"
    assert "at 256 and 512" in git(ws.root, "show", "HEAD:hypotheses/comm-bound.yaml", env=e)
    ev = ws.j("log", "-n", "1")["events"][0]
    assert ev["hand_edit"] == ["hypotheses/comm-bound.yaml"]


def test_write_racing_a_hand_edit_is_a_conflict(ws, monkeypatch):
    from optlog.errors import Conflict
    from optlog.service import hypotheses

    ws.cli("hypothesis", "add", "Communication-bound", "--id", "comm-bound")
    ctx = in_process(monkeypatch, ws)
    f = ws.root / "hypotheses" / "comm-bound.yaml"
    before = head(ws.root, ws.env)
    hand = f.read_text() + "rationale: written by a person while optlog was writing\n"

    def change(doc):  # the hand edit lands between optlog's read and its write
        f.write_text(hand)
        doc.statement = "optlog's change"

    with pytest.raises(Conflict) as ei:
        hypotheses.mutate(ctx, "comm-bound", change, event="hypothesis-edit", subject="optlog: edit")
    assert ei.value.file == "hypotheses/comm-bound.yaml"
    assert f.read_text() == hand  # nothing overwritten
    assert head(ws.root, ws.env) == before  # nothing committed
    ctx.close()


# ---------------------------------------------------------------- fresh clone


def test_fresh_clone_tells_the_whole_story(ws, make_ws, monkeypatch):
    from optlog.core.hypothesis import Prediction, Verdict
    from optlog.service import hypotheses

    ws.cli("hypothesis", "add", "Communication-bound", "--id", "comm-bound", "--statement", "allreduce dominates")
    ws.cli("hypothesis", "add", "Compute-bound", "--id", "compute-bound", "--parent", "comm-bound")
    ws.cli("run", "record", "--label", "config=tp8", "--metric", "output_throughput=200")
    ctx = in_process(monkeypatch, ws)
    values = {"a": [104.0], "b": [200.0], "ratio": 0.52}

    def verdict(doc):
        doc.predictions.append(Prediction(id="comm-bound-1", expect="a > b", metric="output_throughput",
                                          a={"config": "tp4pp2"}, b={"config": "tp8"}, status="falsified"))
        doc.verdicts.append(Verdict(at="2026-01-01T00:00:00Z", by="tester", status="falsified",
                                    summary="tp4pp2/tp8 = 0.52 at 64",
                                    predictions=[{"id": "comm-bound-1", "status": "falsified",
                                                  "levels": [{"level": {"concurrency": 64}, **values,
                                                              "runs": [41, 42], "outcome": "fails"}]}]))
        doc.auto_status = "falsified"
        return {"Optlog-Run": "41,42", "Optlog-Status": "falsified"}

    hypotheses.mutate(ctx, "comm-bound", verdict, event="verdict", subject="optlog: comm-bound → falsified",
                      body="TP4+PP2 is 2x slower than TP8: compute-bound")
    ctx.close()

    c = make_ws("clone", init=False)
    git(ws.root.parent, "clone", "-q", str(ws.root), str(c.root), env=c.env)
    assert not (c.root / ".optlog").exists()
    hyps = {h["id"]: h for h in c.j("hypothesis", "list")["hypotheses"]}
    assert set(hyps) == {"comm-bound", "compute-bound"}
    assert hyps["comm-bound"]["status"] == "falsified" and hyps["compute-bound"]["parent"] == "comm-bound"
    show = c.j("hypothesis", "show", "comm-bound")
    assert show["children"] == ["compute-bound"]
    assert show["predictions"][0]["expect"] == "a > b"
    assert show["verdicts"][0]["status"] == "falsified"
    level = show["verdict_details"][0]["predictions"][0]["levels"][0]
    assert level["a"] == [104.0] and level["b"] == [200.0] and level["runs"] == [41, 42]
    st = c.j("status")
    assert st["run_database_empty"] is True and "run database is empty" in st["notice"]
    log = c.j("log")["events"]
    assert [x["event"] for x in log] == ["init", "hypothesis-add", "hypothesis-add", "verdict"]
    assert log[-1]["runs"] == [41, 42] and log[-1]["subject"] == "optlog: comm-bound → falsified"
    assert log[2]["pivot"] == {"from": "comm-bound", "to": "compute-bound"}
    assert git(c.root, "status", "--porcelain", env=c.env) == ""  # .optlog/ is ignored in the clone too


def test_outside_git_nothing_is_committed(tmp_path, make_ws):
    w = make_ws("nogit", init=False)
    w.root.mkdir()
    (w.root / "optlog.yaml").write_text("name: nogit\n")
    env = dict(w.env, GIT_CEILING_DIRECTORIES=str(tmp_path))
    w.cli("hypothesis", "add", "One", "--id", "one", env=env)
    assert (w.root / "hypotheses" / "one.yaml").exists()
    assert "not in a git repository" in w.j("log", env=env)["notice"]
    assert "not in a git repository" in w.j("sync", env=env)["notice"]
    assert os.path.exists(w.root / "hypotheses" / "one.yaml")


def test_log_and_sync_tools_give_the_cli_documents(ws, monkeypatch):
    """The MCP face calls the same bindings as `log` and `sync`: the same documents, a hand edit
    committed by the tool as the CLI would."""
    from tests._face import face, ok

    ws.cli("hyp", "add", "Communication-bound", "--id", "comm-bound")
    f = ws.root / "hypotheses" / "comm-bound.yaml"
    f.write_text(f.read_text().replace("title: Communication-bound", "title: Communication-bound (hand)"))
    with face(ws, monkeypatch) as call:
        synced = ok(call("sync", {}))
        assert [c["hypothesis"] for c in synced["committed"]] == ["comm-bound"]
        assert ok(call("sync", {})) == ws.j("sync")
        assert ok(call("log", {"limit": 5, "order": "newest", "detail": True})) == \
            ws.j("log", "--limit", "5", "--order", "newest")
        assert ok(call("log", {"hypothesis": "comm-bound"})) == \
            ws.j("log", "--hypothesis", "comm-bound", "--limit", "5", "--order", "newest", "--brief")
