"""Commit requests, commit messages, and running the `git` command.

A decision commit looks like this (subject for a person, body with the reason, trailers for a
program; `optlog log` reads the trailers back):

    optlog: comm-bound → falsified

    TP4+PP2 is 2x slower than TP8 at every concurrency: compute-bound, not comm-bound.

    Optlog-Event: verdict
    Optlog-Hypothesis: comm-bound
    Optlog-Run: 41,42
    Optlog-Actor: agent:claude

A commit that records several decisions at once (a `verdict --all` pass: one commit, not one per
hypothesis) carries one trailer group per decision, each led by its `Optlog-Event` line and holding
that decision's own subject and summary (`Optlog-Subject`, `Optlog-Summary`); `optlog log` lists
each group as its own event (see `service.history.parse_log`). A commit of one decision has no
groups and reads exactly as above.

Trailer values are one line each (newlines are folded into spaces) so `git interpret-trailers` and
`git log --format=%(trailers)` parse exactly what optlog wrote.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from optlog import settings
from optlog.errors import Failed

# The documented fallback identity: used (for author and committer alike, field by field) when git
# has no user.name / user.email and no GIT_AUTHOR_* / GIT_COMMITTER_* / EMAIL variable supplies them.
FALLBACK_NAME = "optlog"
FALLBACK_EMAIL = "optlog@localhost"

TRAILER_KEY_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9-]*\Z")


@dataclass
class CommitRequest:
    subject: str
    body: str = ""
    trailers: dict[str, str] = field(default_factory=dict)
    # further trailer groups, one a decision, after `trailers` (a commit that records several)
    groups: list[dict[str, str]] = field(default_factory=list)
    paths: list[Path] = field(default_factory=list)
    # Called with the workspace-relative paths the commit changes (after staging them in the
    # private index, before the commit object is made); may adjust subject/body/trailers.
    describe: Callable[["CommitRequest", list[tuple[str, str]]], None] | None = None


def _one_line(v: object) -> str:
    return " ".join(str(v).split())


def message(req: CommitRequest) -> str:
    subject = _one_line(req.subject) or "optlog: update"
    parts = [subject]
    body = req.body.strip()
    if body:
        parts.append(body)
    lines = []
    for group in (req.trailers, *req.groups):
        for k, v in group.items():
            if v is None or str(v).strip() == "":
                continue
            if not TRAILER_KEY_RE.match(k):
                raise ValueError(f"bad trailer key {k!r}")
            lines.append(f"{k}: {_one_line(v)}")
    if lines:
        parts.append("\n".join(lines))
    return "\n\n".join(parts) + "\n"


def git_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    e = dict(settings.environ())
    e.setdefault("LC_ALL", "C")  # messages we match on (index.lock) in one language
    if extra:
        e.update(extra)
    return e


def run_git(cwd: Path, *args: str, env: dict[str, str] | None = None, input: str | None = None,
            check: bool = True) -> subprocess.CompletedProcess[str]:
    p = subprocess.run(["git", *args], cwd=cwd, env=git_env(env), input=input, capture_output=True, text=True,
                       encoding="utf-8", errors="replace")  # a foreign commit in latin-1 is read, not a crash
    if check and p.returncode != 0:
        raise Failed(f"git {args[0]} failed: {p.stderr.strip() or p.stdout.strip()}", code="git_failed")
    return p
