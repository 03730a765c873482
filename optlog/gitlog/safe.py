"""The safe commit: optlog's files only, through a private index, never the user's.

How one commit is made (all under a lock file in the git directory, `optlog.lock`, so optlog
processes that share a repository — two workspaces in one repository, two worktrees, an agent and
the TUI — take turns):

1. `HEAD` is read (it may be a branch, a detached HEAD, or an unborn branch in a repository with no
   commits yet).
2. A private index (`GIT_INDEX_FILE`, a temporary file in the git directory) is filled from HEAD's
   tree, and only optlog's paths are added to it (`git add -A -- PATHS`). The user's real index is
   not read or written, so a file the user staged is in no optlog commit and stays staged; a file the
   user changed and did not stage is untouched.
3. `write-tree`, `commit-tree`, then `update-ref HEAD NEW OLD`: a compare-and-swap, so a commit the
   user made meanwhile is never lost; optlog rebuilds its commit on the new HEAD and tries again.
4. The real index is brought in step for optlog's paths only (`git reset -q -- PATHS`), so
   `git status` does not show optlog's committed files as changed. This step takes git's own
   `index.lock`; when another git process holds it, optlog waits and retries, and if it is still held
   it says so and carries on (the commit is made; nothing fails on `index.lock`).

Rules:
- Hooks: optlog runs no repository hooks. It commits with plumbing (`commit-tree`, `update-ref`),
  which runs no `pre-commit`, `commit-msg` or `post-commit` hook, and it runs `update-ref` with
  `core.hooksPath=/dev/null` so no `reference-transaction` hook runs either. A `pre-commit` hook
  checks the user's staged work, which an optlog commit never contains, and could change the user's
  files; optlog's own files are generated and validated by optlog. Hooks still run for the user's
  own `git commit` and `git push`.
- Identity: the user's (`user.name`/`user.email`, or `GIT_AUTHOR_*`/`GIT_COMMITTER_*`/`EMAIL`).
  Where git has none (a fresh CI machine, a container), the missing parts are filled with the
  fallback identity `optlog <optlog@localhost>`, and optlog says so once per workspace.
- Ignored paths: a path git ignores and does not track yet is refused (`BadInput`, exit 2) before
  anything is written; see `gitlog.history.check_trackable`.
- Detached HEAD: the commit is made on the detached HEAD (it is on no branch) and optlog says so.
- A rebase, a merge, a cherry-pick or a revert in progress: optlog commits, and says what
  `--continue`/`--abort` would do to its commit (a rebase's abort drops it; a merge's, a single
  cherry-pick's or revert's keeps it; a sequence's keeps it but stops rewinding): see `in_progress`.
- Signing: where `commit.gpgsign` is true, optlog's commits are signed like `git commit` signs
  (`commit-tree -S`); if signing fails, nothing is committed and optlog says why (exit 1).
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from optlog import settings
from optlog.core.numfmt import fmt_written
from optlog.errors import BadInput, Failed
from optlog.gitlog.commit import FALLBACK_EMAIL, FALLBACK_NAME, CommitRequest, message, run_git
from optlog.paths import Workspace
from optlog.store.faults import lock_holders, lock_timeout

Notice = Callable[[str], None]

_REPOS: dict[str, "RepoInfo"] = {}
_LOCKS: dict[str, Any] = {}
NO_HOOKS = ("-c", "core.hooksPath=/dev/null")


@dataclass(frozen=True)
class RepoInfo:
    toplevel: Path
    git_dir: Path  # this worktree's git directory (its index lives here)
    common_dir: Path  # shared by all worktrees (objects, refs, optlog.lock)


def repo_info(root: Path) -> RepoInfo | None:
    """The git repository holding `root`, or None (works in worktrees, where `.git` is a file)."""
    key = str(root)
    if key in _REPOS:
        return _REPOS[key]
    p = run_git(root, "rev-parse", "--show-toplevel", "--absolute-git-dir", "--git-common-dir", check=False)
    lines = p.stdout.splitlines()
    if p.returncode != 0 or len(lines) < 3:
        return None
    common = Path(lines[2])
    if not common.is_absolute():
        common = (root / common).resolve()
    info = RepoInfo(Path(lines[0]), Path(lines[1]), common)
    _REPOS[key] = info
    return info


@contextmanager
def git_lock(info: RepoInfo, timeout: float = 120.0) -> Iterator[None]:
    """One optlog committer per repository at a time, across processes (re-entrant in a process)."""
    from filelock import FileLock, Timeout  # deferred: filelock imports asyncio; only writers lock

    key = str(info.common_dir / "optlog.lock")
    lock = _LOCKS.get(key)
    if lock is None:
        lock = _LOCKS[key] = FileLock(key, timeout=timeout)
    wait = lock_timeout(timeout)
    try:
        lock.acquire(timeout=wait)
    except Timeout:
        who = ", ".join(f"pid {h['pid']} ({h['command']})" for h in lock_holders(key)) or "another optlog process"
        raise Failed(f"{who} held {key} for {fmt_written(wait)} s; nothing was committed",
                     code="git_locked") from None
    try:
        yield
    finally:
        lock.release()


# ---------------------------------------------------------------- ignore rules


def ignored_untracked(ws: Workspace, rels: list[str]) -> list[dict[str, Any]]:
    """Paths (workspace-relative) that git ignores and HEAD does not track, with the rule."""
    if not rels:
        return []
    p = run_git(ws.root, "check-ignore", "--no-index", "-v", "-z", "--stdin", check=False,
                input="".join(r + "\0" for r in rels))
    if p.returncode not in (0, 1):
        raise Failed(f"git check-ignore failed: {p.stderr.strip()}", code="git_failed")
    parts = p.stdout.split("\0")
    hits: list[dict[str, Any]] = []
    for i in range(0, len(parts) - 3, 4):
        source, line, pattern, path = parts[i:i + 4]
        if not path or pattern.startswith("!"):
            continue
        hits.append({"path": path, "source": source, "line": int(line) if line.isdigit() else None,
                     "pattern": pattern})
    if not hits:
        return []
    tracked = set(run_git(ws.root, "ls-tree", "-r", "--name-only", "HEAD", "--",
                          *[h["path"] for h in hits], check=False).stdout.splitlines())
    return [h for h in hits if h["path"] not in tracked]


def refuse_ignored(ws: Workspace, rels: list[str]) -> None:
    hits = ignored_untracked(ws, rels)
    if not hits:
        return
    h = hits[0]
    more = f" (and {len(hits) - 1} more)" if len(hits) > 1 else ""
    raise BadInput(
        f"git ignores {h['path']}{more} (rule {h['pattern']!r} in {h['source']}"
        f"{':' + str(h['line']) if h['line'] else ''}); optlog keeps its decisions in git and writes "
        f"nothing git would not track: remove that rule or add an exception such as "
        f"'!{h['path'].split('/')[0]}/'",
        file=h["source"], line=h["line"], field=h["path"], code="gitignored",
    )


# ---------------------------------------------------------------- identity


_IDENT: dict[str, dict[str, str]] = {}


def _identity_env(ws: Workspace, notice: Notice | None) -> dict[str, str]:
    key = str(ws.root)
    if key in _IDENT:
        return _IDENT[key]
    env = _read_identity(ws, notice)
    _IDENT[key] = env
    return env


def _read_identity(ws: Workspace, notice: Notice | None) -> dict[str, str]:
    p = run_git(ws.root, "config", "--get-regexp", r"^(user|author|committer)\.(name|email)$", check=False)
    cfg: dict[str, str] = {}
    for line in p.stdout.splitlines():
        k, _, v = line.partition(" ")
        if v.strip():
            cfg[k.lower()] = v.strip()
    env: dict[str, str] = {}
    used: list[str] = []
    for role in ("author", "committer"):
        for what, fallback in (("name", FALLBACK_NAME), ("email", FALLBACK_EMAIL)):
            var = f"GIT_{role.upper()}_{what.upper()}"
            if settings.environ().get(var) or cfg.get(f"{role}.{what}") or cfg.get(f"user.{what}"):
                continue
            if what == "email" and settings.environ().get("EMAIL"):
                continue
            env[var] = fallback
            used.append(f"user.{what}")
    if env:
        _say_once(ws, "git-identity", notice,
                  f"git has no {' / '.join(sorted(set(used)))} here, so optlog commits as "
                  f"'{FALLBACK_NAME} <{FALLBACK_EMAIL}>' (the fallback identity); set "
                  f"`git config user.name` and `git config user.email` to commit as yourself "
                  f"(said once)")
    return env


def _say_once(ws: Workspace, key: str, notice: Notice | None, text: str) -> None:
    marker = ws.state_dir / "said" / key
    if marker.exists():
        return
    try:
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.write_text(text + "\n", encoding="utf-8")
    except OSError:
        pass
    if notice:
        notice(text)


# ---------------------------------------------------------------- the commit


class _Retry(Exception):
    pass


def safe_commit(ws: Workspace, req: CommitRequest, notice: Notice | None = None) -> str | None:
    info = repo_info(ws.root)
    if info is None:
        return None
    rels = list(dict.fromkeys(ws.rel(p) for p in req.paths))
    if not rels:
        return None
    with git_lock(info):
        for _attempt in range(8):
            try:
                sha = _commit_once(ws, info, req, rels, notice)
                break
            except _Retry:
                time.sleep(0.05)
        else:
            raise Failed("HEAD kept moving while optlog committed (another git process is committing); "
                         "the files are written, run `optlog sync` to commit them", code="git_busy")
        if sha is not None:
            _refresh_real_index(ws, rels, notice)
    return sha


def _commit_once(ws: Workspace, info: RepoInfo, req: CommitRequest, rels: list[str],
                 notice: Notice | None) -> str | None:
    head, head_tree, detached = _read_head(ws)
    fd, idx = tempfile.mkstemp(prefix="optlog-index-", dir=info.git_dir)
    os.close(fd)
    os.unlink(idx)  # git makes it; an empty file is not a valid index
    env = {"GIT_INDEX_FILE": idx}
    try:
        if head:
            run_git(ws.root, "read-tree", head, env=env)
        present = [r for r in rels if (ws.root / r).exists()]
        gone = [r for r in rels if r not in present]
        files = [r for r in present if not (ws.root / r).is_dir()]
        dirs = [r for r in present if r not in files]
        if present:
            refuse_ignored(ws, present)  # ignored and untracked: refused (verbs check before writing)
        if files:
            # update-index, not `git add`: add refuses a tracked file under an ignored folder
            run_git(ws.root, "update-index", "--add", "--remove", "--", *files, env=env)
        if dirs:
            run_git(ws.root, "add", "-A", "--", *dirs, env=env)
        if gone:
            run_git(ws.root, "rm", "-r", "-q", "--cached", "--ignore-unmatch", "--", *gone, env=env)
        tree = run_git(ws.root, "write-tree", env=env).stdout.strip()
        if tree == head_tree:
            return None  # nothing changed
        if req.describe is not None:
            base = head or run_git(ws.root, "mktree", input="").stdout.strip()
            diff = run_git(ws.root, "diff-index", "--cached", "--relative", "--no-renames", "--name-status",
                           base, "--", *rels, env=env).stdout
            changes = [(ln.split("\t", 1)[0], ln.split("\t", 1)[1]) for ln in diff.splitlines() if "\t" in ln]
            if not changes:
                return None
            req.describe(req, changes)
    finally:
        try:
            os.unlink(idx)
        except FileNotFoundError:
            pass
    ident = _identity_env(ws, notice)
    sign = _wants_signature(ws)
    args = ["commit-tree", tree] + (["-p", head] if head else []) + (["-S"] if sign else []) + ["-F", "-"]
    made = run_git(ws.root, *args, env=ident, input=message(req), check=False)
    if made.returncode != 0:
        why = made.stderr.strip() or made.stdout.strip()
        if sign:
            raise Failed("commit.gpgsign is true here and git could not sign optlog's commit "
                         f"({' / '.join(ln.strip() for ln in why.splitlines() if ln.strip())[:500] or 'no message'}); nothing was committed. Fix signing "
                         "(gpg.program, user.signingkey, the agent) and run the command again, or set "
                         "`git config commit.gpgsign false` for this repository", code="sign_failed")
        raise Failed(f"git commit-tree failed: {why}", code="git_failed")
    sha = made.stdout.strip()
    old = head or "0" * len(sha)
    p = run_git(ws.root, *NO_HOOKS, "update-ref", "-m", f"optlog: {req.subject}"[:200], "HEAD", sha, old,
                check=False)
    if p.returncode != 0:
        if _read_head(ws)[0] != head:
            raise _Retry()
        raise Failed(f"git update-ref failed: {p.stderr.strip()}", code="git_failed")
    said = in_progress(ws, info, sha) if notice else None
    if said and notice:
        notice(said)
    elif detached and notice:
        notice(f"HEAD is detached: committed {sha[:10]} on the detached HEAD, on no branch "
               f"(`git switch -c NAME` keeps it on a branch)")
    return sha


def _branch_name(ref: str) -> str:
    return ref.strip().removeprefix("refs/heads/") or "its branch"


def in_progress(ws: Workspace, info: RepoInfo, sha: str) -> str | None:
    """What finishing or aborting the rebase, merge, cherry-pick or revert in progress would do to optlog's commit
    `sha` (None when neither is). optlog commits anyway (refusing would lose the decision, waiting
    could last days) and says it, so the user chooses knowing:
    - a rebase: HEAD is detached on the commits being replayed; `git rebase --continue` keeps
      optlog's commit on the branch, `git rebase --abort` puts the branch back where it was and
      drops it (a `git cherry-pick` after the abort brings it back);
    - a merge: optlog's commit is on the branch under the merge; concluding the merge and
      `git merge --abort` (which resets to HEAD) both keep it;
    - a cherry-pick or a revert of one commit (CHERRY_PICK_HEAD / REVERT_HEAD): optlog's commit is
      on the branch under it; `--continue` and `--abort` (which resets to HEAD) both keep it;
    - a cherry-pick or a revert of several (`sequencer/`): `--continue` keeps it; `--abort` keeps
      it too, but no longer rewinds: git finds HEAD moved since its last step ("You seem to have
      moved HEAD. Not rewinding"), so the commits applied so far stay and the stopped one is left
      in the work tree (`git reset --merge` drops it)."""
    for d in ("rebase-merge", "rebase-apply"):
        head_name = info.git_dir / d / "head-name"
        if head_name.is_file():
            branch = _branch_name(head_name.read_text(encoding="utf-8", errors="replace"))
            return (f"a rebase of {branch} is in progress: committed {sha[:10]} on the detached HEAD it is "
                    f"replaying onto. `git rebase --continue` keeps it on {branch}; `git rebase --abort` drops it "
                    f"from {branch} (`git cherry-pick {sha[:10]}` after the abort brings it back)")
    if (info.git_dir / "MERGE_HEAD").is_file():
        branch = _branch_name(run_git(ws.root, "symbolic-ref", "-q", "HEAD", check=False).stdout)
        return (f"a merge into {branch} is in progress: committed {sha[:10]} on {branch}, under the merge. "
                f"Concluding the merge and `git merge --abort` both keep it")
    verb = _sequence_verb(info.git_dir)
    if verb is None:
        return None
    branch = _branch_name(run_git(ws.root, "symbolic-ref", "-q", "HEAD", check=False).stdout)
    if (info.git_dir / "sequencer").is_dir():
        return (f"a {verb} of several commits onto {branch} is in progress: committed {sha[:10]} on {branch}, after "
                f"the commits applied so far. `git {verb} --continue` keeps it; `git {verb} --abort` keeps it too "
                f"but no longer rewinds (git finds HEAD moved): the commits applied so far stay, and the stopped one "
                f"is left in the work tree (`git reset --merge` drops it)")
    return (f"a {verb} onto {branch} is in progress: committed {sha[:10]} on {branch}, under the {verb}. "
            f"`git {verb} --continue` and `git {verb} --abort` both keep it")


def _sequence_verb(git_dir: Path) -> str | None:
    """"cherry-pick" or "revert" while one is in progress (stopped on a conflict, or a sequence of
    several between its steps), else None."""
    if (git_dir / "CHERRY_PICK_HEAD").is_file():
        return "cherry-pick"
    if (git_dir / "REVERT_HEAD").is_file():
        return "revert"
    try:
        todo = (git_dir / "sequencer" / "todo").read_text(encoding="utf-8", errors="replace").split()
    except OSError:
        return None
    return "revert" if todo[:1] == ["revert"] else "cherry-pick"


def _wants_signature(ws: Workspace) -> bool:
    """`commit.gpgsign`, as `git commit` reads it: optlog's plumbing commits are signed the same way
    (`commit-tree -S`, with the user's gpg.program, gpg.format and user.signingkey)."""
    p = run_git(ws.root, "config", "--type=bool", "--get", "commit.gpgsign", check=False)
    return p.stdout.strip() == "true"


def _read_head(ws: Workspace) -> tuple[str | None, str | None, bool]:
    """(HEAD commit, its tree, detached?) in one call; (None, None, False) on an unborn branch."""
    p = run_git(ws.root, "rev-parse", "HEAD^{commit}", "HEAD^{tree}", "--symbolic-full-name", "HEAD", "--",
                check=False)
    lines = p.stdout.split()
    if p.returncode != 0 or len(lines) < 3:
        return None, None, False
    return lines[0], lines[1], lines[2] == "HEAD"


def _refresh_real_index(ws: Workspace, rels: list[str], notice: Notice | None) -> None:
    """Make the user's index agree with HEAD for optlog's paths only (waits out index.lock)."""
    delay, deadline = 0.02, time.monotonic() + 10.0
    while True:
        p = run_git(ws.root, "reset", "-q", "--", *rels, check=False)
        if p.returncode == 0:
            return
        if "index.lock" not in p.stderr or time.monotonic() > deadline:
            break
        time.sleep(delay)
        delay = min(delay * 2, 0.25)
    if notice:
        notice("committed, but git's index could not be refreshed for "
               f"{', '.join(rels)} ({p.stderr.strip().splitlines()[0] if p.stderr.strip() else 'git reset failed'}); "
               f"`git status` may list them until you run `git reset -q -- {' '.join(rels)}`")
