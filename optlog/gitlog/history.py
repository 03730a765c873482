"""Recording decisions in git: the calls service verbs make around changing tracked files.

A verb that writes tracked files (hypotheses, plans, reports) does, in order:

1. `check_trackable(ctx, paths)` BEFORE writing: refuses (BadInput, exit 2) a path git ignores and
   does not track, so nothing is written that could not be committed.
2. `uncommitted(ctx, paths)` BEFORE writing (optional): the paths whose file differs from HEAD, i.e.
   a hand edit (by a person or an agent editing the file) that optlog's commit will now include.
3. write the files, then `record(ctx, paths, subject, body, trailers, hand_edited=...)`.

`record` commits through a private index (see `gitlog.safe` for the rules on the user's index,
locks, hooks, identity and detached HEAD). Outside a git repository it does nothing.

Events (the `Optlog-Event` trailer) and the other trailer keys: `gitlog.trailers` (EVENTS, KEYS).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from optlog.errors import Conflict
from optlog.gitlog import trailers as TR
from optlog.gitlog.commit import CommitRequest, run_git
from optlog.gitlog.safe import refuse_ignored, repo_info, safe_commit
from optlog.needs import Commits

if TYPE_CHECKING:
    from optlog.gitlog.safe import RepoInfo


def repo(ctx: Commits) -> "RepoInfo | None":
    return repo_info(ctx.ws.root)


def shallow_cut(root: Path) -> dict[str, Any] | None:
    """Where a shallow clone's history is cut (None when it is whole): the date of the oldest
    commit this clone has and its boundary commits. Events older than that are not here, so the
    decision log is not the whole story (`git fetch --unshallow` brings the rest)."""
    p = run_git(root, "rev-parse", "--is-shallow-repository", "--git-path", "shallow", check=False)
    lines = p.stdout.splitlines()
    if p.returncode != 0 or not lines or lines[0].strip() != "true":
        return None
    path = Path(lines[1]) if len(lines) > 1 else None
    if path is not None and not path.is_absolute():
        path = root / path
    try:
        boundary = [ln.strip() for ln in path.read_text().splitlines() if ln.strip()] if path else []
    except OSError:
        boundary = []
    dates = run_git(root, "show", "-s", "--format=%cI", *boundary, check=False).stdout.split() if boundary else []
    return {"cut": True, "since": min(dates) if dates else None, "boundary": [b[:10] for b in boundary]}


def check_trackable(ctx: Commits, paths: list[Path]) -> None:
    """Raise BadInput if git would ignore any of `paths` (and does not track it already)."""
    if repo(ctx) is None:
        return
    refuse_ignored(ctx.ws, [ctx.ws.rel(p) for p in paths])


def uncommitted(ctx: Commits, paths: list[Path]) -> list[str]:
    """Workspace-relative paths whose file on disk differs from HEAD (a hand edit, a new file not
    committed yet, a deleted file). Empty outside git and in a repository with no commits."""
    if repo(ctx) is None or not paths:
        return []
    rels = [ctx.ws.rel(p) for p in paths]
    p = run_git(ctx.ws.root, "ls-tree", "-r", "HEAD", "--", *rels, check=False)
    if p.returncode != 0:
        return []  # no commits yet
    in_head: dict[str, str] = {}
    for line in p.stdout.splitlines():
        meta, _, name = line.partition("\t")
        in_head[name] = meta.split()[2]
    present = [r for r in rels if (ctx.ws.root / r).is_file()]
    on_disk: dict[str, str] = {}
    if present:
        shas = run_git(ctx.ws.root, "hash-object", "--", *present).stdout.split()
        on_disk = dict(zip(present, shas))
    out = []
    for r in rels:
        if in_head.get(r) != on_disk.get(r):
            out.append(r)
    return out


def refuse_overwriting_hand_edits(ctx: Commits, outputs: dict[Path, bytes], how_to_keep: str) -> None:
    """Raise Conflict, before anything is written, if a generated file that is about to change
    holds an edit made outside optlog (it differs from HEAD, i.e. from what optlog last committed):
    a render rebuilds it from records, so that edit would be lost without a word. `how_to_keep`
    says where the edit belongs instead."""
    changing = [p for p, data in outputs.items() if p.is_file() and p.read_bytes() != data]
    edited = uncommitted(ctx, changing)
    if edited:
        raise Conflict(
            f"{edited[0]} has an edit made outside optlog (not committed); it is generated, and writing it "
            f"again would lose that edit. {how_to_keep}, or discard the edit (`git checkout -- {edited[0]}`), "
            "then run this again", file=edited[0], extra={"files": edited})


def hand_edit_note(rels: list[str]) -> str:
    return ("Includes " + ("an edit" if len(rels) == 1 else "edits") + " of " + ", ".join(rels)
            + " made outside optlog and not committed before.")


def record(
    ctx: Commits,
    paths: list[Path],
    subject: str,
    body: str = "",
    trailers: dict[str, str] | None = None,
    *,
    hand_edited: list[str] | tuple[str, ...] = (),
    describe: Any = None,
    groups: list[dict[str, str]] | None = None,
) -> str | None:
    """Commit `paths` (files or folders, as they are on disk now); returns the sha, or None when
    nothing changed or the workspace is not in a git repository. `groups`: one trailer group per
    decision of a commit that records several (each led by its `Optlog-Event`, see
    `gitlog.commit`); `trailers` is then usually empty, and a hand edit belongs in its group."""
    if repo(ctx) is None:
        return None
    tr = dict(trailers or {})
    if hand_edited:
        body = (body.rstrip() + "\n\n" if body.strip() else "") + hand_edit_note(list(hand_edited))
        tr[TR.HAND_EDIT] = ",".join(hand_edited)
    grs = [{**g, TR.ACTOR: g.get(TR.ACTOR) or ctx.actor} for g in groups or []]
    if not grs:
        tr.setdefault(TR.ACTOR, ctx.actor)
    req = CommitRequest(subject=subject, body=body, trailers=tr, groups=grs, paths=list(paths), describe=describe)
    return safe_commit(ctx.ws, req, notice=ctx.notice)
