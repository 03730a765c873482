"""The decision timeline read back from git (`optlog log`) and committing hand edits (`optlog sync`).

`log` reads optlog's commits (those with an `Optlog-Event` trailer that touch this workspace) with
one `git log -z` call whose fields are separated by NUL, the one byte no commit message can hold
(git refuses it), so no text in a subject, body or trailer can end a field or a record early and
forge an event; git itself parses the trailers (`%(trailers)`), so what optlog reads is what
`git log --format=%(trailers)` shows a person. Pivots are visible: a hypothesis created from a
parent carries `Optlog-Parent`, and `log --hypothesis P` includes the children that pivoted from P.

`sync` validates every hypothesis file (errors name file, line and field; exit 2, nothing
committed) and commits each file that differs from HEAD as a `hand-edit` event.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, cast

from optlog.core.text import is_id
from optlog.errors import BadInput, Failed, NotFound, param
from optlog.gitlog import history
from optlog.gitlog import trailers as TR
from optlog.gitlog.commit import run_git
from optlog.needs import Commits, Writes
from optlog.paths import Workspace
from optlog.service import hypotheses
from optlog.service import documents
from optlog.store import hypfiles
from optlog.store.lock import workspace_lock
from optlog.yamlio import parse_text

_LOG_FIELDS = ("%H", "%aI", "%an", "%ae", "%s", "%b", "%(trailers:only,unfold)")
_LOG_FORMAT = "%x00".join(_LOG_FIELDS)  # with -z, records are NUL-separated too
_TRAILER_RE = re.compile(r"^([A-Za-z0-9][A-Za-z0-9-]*):\s?(.*)$")


def _split_list(v: str | None) -> list[str]:
    if not v:
        return []
    return [x for x in re.split(r"[,\s]+", v) if x]


def _runs(v: str | None) -> list[Any]:
    return [int(x) if x.lstrip("#").isdigit() else x for x in (s.lstrip("#") for s in _split_list(v))]


def _strip_trailer_block(body: str, trailer_text: str) -> str:
    """%b includes the trailer paragraph; drop it (git said which lines are trailers)."""
    if not trailer_text.strip():
        return body.strip()
    paras = body.rstrip().split("\n\n")
    if paras and all(_TRAILER_RE.match(ln) for ln in paras[-1].strip().split("\n") if ln.strip()):
        paras = paras[:-1]
    return "\n\n".join(paras).strip()


def _trailer_groups(trailer_text: str) -> list[dict[str, str]]:
    """The commit's trailers, one group per decision: a commit that records several (a `verdict
    --all` pass) leads each group with its `Optlog-Event` line (`gitlog.commit`); a commit with
    one event line (or none) is one group, a repeated key in it joined with commas as before."""
    pairs = []
    for line in trailer_text.split("\n"):
        m = _TRAILER_RE.match(line)
        if m:
            pairs.append((m.group(1), m.group(2).strip()))
    several = sum(1 for k, _ in pairs if k == TR.EVENT) > 1
    groups: list[dict[str, str]] = [{}]
    for k, v in pairs:
        if several and k == TR.EVENT and TR.EVENT in groups[-1]:
            groups.append({})
        g = groups[-1]
        g[k] = f"{g[k]},{v}" if k in g else v
    return groups


def parse_log(out: str) -> list[dict[str, Any]]:
    """Events from `git log -z --format=_LOG_FORMAT`: a flat NUL-separated list, 7 fields a commit;
    a commit that records several decisions gives one event each, with its own subject and
    summary (the commit's body, a cause they share, before it)."""
    events = []
    parts = out.split("\0")
    n = len(_LOG_FIELDS)
    for i in range(0, len(parts) - n + 1, n):
        sha, at, author, email, subject, body, trailer_text = parts[i:i + n]
        groups = _trailer_groups(trailer_text)
        shared = _strip_trailer_block(body, trailer_text)
        for trailers in groups:
            if len(groups) == 1:
                events.append(_event(sha, at, author, email, subject, shared, trailers))
            else:
                own = "\n\n".join(x for x in (shared, trailers.get(TR.SUMMARY, "")) if x)
                events.append(_event(sha, at, author, email, trailers.get(TR.SUBJECT) or subject, own, trailers))
    return events


def _event(sha: str, at: str, author: str, email: str, subject: str, body: str,
           trailers: dict[str, str]) -> dict[str, Any]:
    """One decision as `log` gives it."""
    hyps = _split_list(trailers.get(TR.HYPOTHESIS))
    parent = trailers.get(TR.PARENT) or None
    return {
        "sha": sha,
        "at": at,
        "event": trailers.get(TR.EVENT),
        "hypothesis": hyps[0] if len(hyps) == 1 else (",".join(hyps) or None),
        "hypotheses": hyps,
        "subject": subject,
        "body": body,
        "trailers": trailers,
        "runs": _runs(trailers.get(TR.RUN)),
        "parent": parent,
        "pivot": {"from": parent, "to": hyps[0] if hyps else None} if parent else None,
        "status": trailers.get(TR.STATUS),
        "actor": trailers.get(TR.ACTOR),
        "author": f"{author} <{email}>",
        "hand_edit": _split_list(trailers.get(TR.HAND_EDIT)),
    }


def log(ctx: Commits, hypothesis: str | None = None, limit: int | None = None) -> dict[str, Any]:
    """The decision timeline, oldest first; `hypothesis` keeps its events and its children's pivots."""

    if limit is not None and limit < 1:
        raise BadInput(f"{param('limit')} must be at least 1", field="limit")
    if hypothesis is not None:
        if not is_id(hypothesis):
            raise NotFound(f"no hypothesis {hypothesis!r} (not an id)", field="hypothesis")
    if history.repo(ctx) is None:
        return {"events": [], "notice": f"{ctx.ws.root} is not in a git repository: no decision history"}
    p = run_git(ctx.ws.root, "log", "-z", "-E", "--grep=^Optlog-Event: ", f"--format={_LOG_FORMAT}", "--reverse",
                "HEAD", "--", ".", check=False)
    if p.returncode != 0:
        no_head = run_git(ctx.ws.root, "rev-parse", "-q", "--verify", "HEAD", check=False).returncode != 0
        if no_head:
            return {"events": []}  # a repository with no commits yet
        raise Failed(f"git log failed: {p.stderr.strip()}", code="git_failed")
    events = [e for e in parse_log(p.stdout) if e["event"]]
    if hypothesis is not None:
        events = [e for e in events if hypothesis in e["hypotheses"] or e["parent"] == hypothesis]
        if not events and not ctx.ws.hypothesis_file(hypothesis).exists():
            raise NotFound(f"no hypothesis {hypothesis!r} (no file, no history)", field="hypothesis")
    if limit is not None:
        events = events[-limit:]
    out: dict[str, Any] = {"events": events}
    cut = history.shallow_cut(ctx.ws.root)
    if cut is not None:  # a shallow clone: say the timeline starts where the clone's history does
        out["shallow"] = cut
        out["notice"] = shallow_notice(cut)
    return out


def shallow_notice(cut: dict[str, Any]) -> str:
    """The sentence `log` and the report say about a shallow clone's history."""
    since = f" at {str(cut['since'])[:19]}" if cut.get("since") else ""
    return (f"this clone's git history is shallow (cut{since}): decisions recorded before then are not "
            f"shown; `git fetch --unshallow` brings them")


# ---------------------------------------------------------------- sync: commit hand edits


def _fields_changed(old: dict[str, Any] | None, new: dict[str, Any]) -> list[str]:
    if old is None:
        return sorted(new)
    keys = list(dict.fromkeys([*old, *new]))
    return [k for k in keys if old.get(k) != new.get(k)]


def _head_yaml(ws: Workspace, rel: str) -> dict[str, Any] | None:
    p = run_git(ws.root, "show", f"HEAD:./{rel}", check=False)
    if p.returncode != 0:
        return None

    try:
        data = parse_text(p.stdout, f"HEAD:{rel}")
    except BadInput:
        return None
    return data if isinstance(data, dict) else None


def sync_files(ctx: Writes) -> dict[str, Any]:
    """Validate every hypothesis file, index it, and commit each hand-edited one."""

    with workspace_lock(ctx.ws):
        docs = hypotheses.sync(ctx)  # raises BadInput (file, line, field) before anything is committed
        if history.repo(ctx) is None:
            return {"committed": [], "hypotheses": len(docs),
                    "notice": f"{ctx.ws.root} is not in a git repository: nothing to commit"}
        files = {ctx.ws.rel(p) for p in hypfiles.list_files(ctx.ws)}
        hdir = ctx.ws.rel(ctx.ws.hypotheses_dir)
        tracked = run_git(ctx.ws.root, "ls-tree", "-r", "--name-only", "HEAD", "--", hdir + "/",
                          check=False).stdout.splitlines()
        files |= {t for t in tracked if t.endswith(".yaml") and not Path(t).name.startswith(".")}
        paths = [ctx.ws.root / r for r in sorted(files)]
        history.check_trackable(ctx, [p for p in paths if p.exists()])
        changed = history.uncommitted(ctx, paths)
        if not tracked and not run_git(ctx.ws.root, "rev-parse", "-q", "--verify", "HEAD", check=False).stdout:
            changed = sorted(files)  # no commits yet: every file is new
        committed = []
        for rel in changed:
            path = ctx.ws.root / rel
            hid = Path(rel).stem
            old = _head_yaml(ctx.ws, rel)
            tr = {TR.EVENT: "hand-edit", TR.HYPOTHESIS: hid}
            if not path.exists():
                subject = f"optlog: hypothesis {hid} removed by hand"
                body = f"{rel} was deleted outside optlog; committed by `optlog sync`."
            else:
                doc = docs[hid]
                new = doc.to_yaml_data()
                if old is None:
                    subject = f"optlog: add hypothesis {hid} (written by hand)" + (
                        f" (pivot from {doc.parent})" if doc.parent else "")
                    if doc.parent:
                        tr[TR.PARENT] = doc.parent
                    body = f"{doc.title}\n\n{rel} was written outside optlog; committed by `optlog sync`."
                else:
                    fields = _fields_changed(old, new)
                    st_old, st_new = old.get("status"), new.get("status")
                    if "status" in fields and st_old != st_new:
                        subject = f"optlog: {hid} {st_old} → {st_new} (hand edit)"
                        tr[TR.STATUS] = str(st_new)
                    else:
                        subject = f"optlog: hand edit of hypothesis {hid}" + (
                            f" ({', '.join(fields)})" if fields else "")
                    body = (f"{rel} was edited outside optlog; committed by `optlog sync`."
                            + (f"\nChanged: {', '.join(fields)}." if fields else ""))
            tr[TR.HAND_EDIT] = rel
            sha = history.record(ctx, [path], subject, body, tr)
            if sha:
                committed.append({"sha": sha, "hypothesis": hid, "file": rel, "subject": subject})
        return {"committed": committed, "hypotheses": len(docs)}


# ---------------------------------------------------------------- the verbs' documents (every face)


def brief_event(e: dict[str, Any]) -> documents.LogEvent:
    """An event without its commit body (an agent's default): what happened, to what, why in one line."""
    out: dict[str, Any] = {k: e.get(k) for k in ("sha", "at", "event", "subject")}  # the subject names the hypothesis
    out["sha"] = (e.get("sha") or "")[:8]
    out["at"] = str(e.get("at") or "")[:19]
    if e.get("runs"):
        out["runs"] = e["runs"][:5]
    if e.get("pivot"):
        out["pivot"] = e["pivot"]
    return cast(documents.LogEvent, out)
