"""Git states a commit can land in (issue 34 item 5), in real repositories: during a rebase, a
merge, a cherry-pick or a revert in progress optlog commits and says what finishing or aborting it would do to that commit
(and the test does it, so the sentence is checked against git); a shallow clone's cut history is
said in `log` and in the report."""

from __future__ import annotations

import json
import subprocess


def _git(ws, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=ws.root, capture_output=True, text=True, env={**ws.env, **(env or {})})


def _user_commit(ws, name: str, text: str) -> None:
    (ws.root / name).write_text(text)
    _git(ws, "add", name)
    _git(ws, "commit", "-qm", f"user: {name}")


def test_a_commit_during_a_rebase_says_abort_drops_it_and_abort_does(ws):
    _user_commit(ws, "notes.txt", "one\n")
    _user_commit(ws, "notes.txt", "two\n")
    branch = _git(ws, "symbolic-ref", "--short", "HEAD").stdout.strip()
    p = _git(ws, "rebase", "-i", "HEAD~1", env={"GIT_SEQUENCE_EDITOR": "sed -i 1s/^pick/edit/"})
    assert p.returncode == 0 and (ws.root / ".git" / "rebase-merge").is_dir(), p.stderr
    r = ws.cli("hypothesis", "add", "During a rebase", "--id", "mid-rebase", subprocess=True)
    assert f"rebase of {branch} is in progress" in r.err and "--abort" in r.err, r.err
    sha = _git(ws, "rev-parse", "HEAD").stdout.strip()
    assert sha[:10] in r.err and "drops it" in r.err
    _git(ws, "rebase", "--abort")
    assert _git(ws, "merge-base", "--is-ancestor", sha, branch).returncode == 1  # what it said: dropped


def _diverged(ws, text: str) -> str:
    """A branch `side` and the current branch, each with its own change of notes.txt (a conflict to
    come); the current branch's name."""
    base = _git(ws, "symbolic-ref", "--short", "HEAD").stdout.strip()
    _git(ws, "checkout", "-qb", "side")
    _user_commit(ws, "notes.txt", "side\n")
    _git(ws, "checkout", "-q", base)
    _user_commit(ws, "notes.txt", text)
    return base


def test_a_commit_during_a_merge_says_the_merge_keeps_it_and_abort_does(ws):
    base = _diverged(ws, "main\n")
    assert _git(ws, "merge", "side").returncode != 0  # a conflict: the merge stays in progress
    r = ws.cli("hypothesis", "add", "During a merge", "--id", "mid-merge", subprocess=True)
    assert "merge into" in r.err and "in progress" in r.err and "keep it" in r.err, r.err
    sha = _git(ws, "rev-parse", "HEAD").stdout.strip()
    _git(ws, "merge", "--abort")
    assert _git(ws, "merge-base", "--is-ancestor", sha, base).returncode == 0  # what it said: kept


def test_a_commit_during_a_cherry_pick_or_a_revert_says_what_abort_does_and_abort_does(ws):
    base = _diverged(ws, "one\n")
    # one commit, stopped on its conflict: the abort resets to HEAD, which holds optlog's commit
    assert _git(ws, "cherry-pick", "side").returncode != 0 and (ws.root / ".git" / "CHERRY_PICK_HEAD").is_file()
    r = ws.cli("hypothesis", "add", "During a cherry-pick", "--id", "mid-pick")
    assert f"a cherry-pick onto {base} is in progress" in r.err and "--abort` both keep it" in r.err, r.err
    sha = _git(ws, "rev-parse", "HEAD").stdout.strip()
    assert sha[:10] in r.err
    assert _git(ws, "cherry-pick", "--abort").returncode == 0
    assert _git(ws, "merge-base", "--is-ancestor", sha, base).returncode == 0  # what it said: kept
    # several commits reverted, the second stopped on a conflict: the abort keeps optlog's commit
    # but no longer rewinds, so the first revert stays and the stopped one waits in the work tree
    _user_commit(ws, "g.txt", "g\n")
    _user_commit(ws, "notes.txt", "two\n")
    _user_commit(ws, "notes.txt", "three\n")
    assert _git(ws, "revert", "--no-edit", "HEAD~2", "HEAD~1").returncode != 0
    assert (ws.root / ".git" / "sequencer").is_dir()
    r = ws.cli("hypothesis", "add", "During a revert", "--id", "mid-revert")
    assert f"a revert of several commits onto {base} is in progress" in r.err and "no longer rewinds" in r.err, r.err
    sha = _git(ws, "rev-parse", "HEAD").stdout.strip()
    assert "Not rewinding" in _git(ws, "revert", "--abort").stderr  # git's own words for what it said
    assert _git(ws, "merge-base", "--is-ancestor", sha, base).returncode == 0
    assert 'Revert "user: g.txt"' in _git(ws, "log", "--format=%s", "-3").stdout  # applied so far: stays
    assert _git(ws, "reset", "--merge").returncode == 0 and not (ws.root / ".git" / "REVERT_HEAD").exists()
    assert _git(ws, "rev-parse", "HEAD").stdout.strip() == sha


def test_a_shallow_history_is_said_in_log_and_report(ws):
    for i in range(3):
        ws.cli("hypothesis", "add", f"H{i}", "--id", f"h{i}")
    clone = ws.root.parent / "shallow"
    p = subprocess.run(["git", "clone", "-q", "--depth", "1", f"file://{ws.root}", str(clone)],
                       capture_output=True, text=True, env=ws.env)
    assert p.returncode == 0, p.stderr
    c = type(ws)(clone, ws.env)
    doc = c.j("log")
    assert doc["shallow"]["cut"] is True and doc["shallow"]["since"], doc
    assert "shallow" in doc["notice"] and "git fetch --unshallow" in doc["notice"]
    assert "shallow" in c.cli("log").out
    full = ws.j("log")
    assert "shallow" not in full and len(full["events"]) >= 3
    r = c.cli("report", "--json")
    text = (clone / json.loads(r.out)["file"]).read_text()
    assert "git history is shallow" in text and "git fetch --unshallow" in text, text[:800]
