"""Committed evidence: the runs a verdict used travel with git, so a clone can re-check the verdict.

Why: the database (`.optlog/`) is not in git. Without this a fresh clone had the verdicts but not
the runs behind them, and `verdict --all` there wrote `open` over `falsified`. Now:

- Export. Before a verdict is committed, every run its predictions could use (the counting runs
  their groups select, `core.verdict.candidate_runs`) is written as `runs/evidence/<uid>.yaml` and
  committed in the same commit as the verdict. `run invalidate` updates the run's file in the
  invalidation commit. One small file per run (labels, metrics, status, times, invalidation, a
  digest of the environment; no telemetry samples), written once and never rewritten except to add
  an invalidation, so two clones that judge in parallel merge without conflicts.
- Import. When a command opens the database and `runs/evidence/` changed (one stat of the folder
  against a stamp kept in the database), files this database has not read are imported, keyed by
  the run's `uid` (random 128 bits, so runs made in two clones never collide). An imported run keeps
  its number when that number is free here, so verdicts (which name runs by number) read the same.
- A verdict whose runs are not in this database (made before evidence travelled, or a run never
  committed) is kept as it is, never downgraded: see `missing_runs`.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional, Union

from pydantic import BaseModel, ConfigDict, Field

from optlog.core import duestate as DS
from optlog.errors import BadInput
from optlog.gitlog import history
from optlog.gitlog import trailers as TR
from optlog.gitlog.commit import run_git
from optlog.needs import Commits, Files, Index, Reads
from optlog.paths import Workspace
from optlog.runs.redact import redact
from optlog.store import runsync
from optlog.store.lock import workspace_lock
from optlog.store.runrows import insert_run, runs_by_id
from optlog.store.runsync import (
    evidence_stamps,
    ids_present,
    set_evidence_stamps,
    set_sync_stamp,
    sync_stamp,
    uids_by_id,
    uids_present,
)
from optlog.yamlio import dump, parse_text, read_text, validate, write_atomic

if TYPE_CHECKING:
    from optlog.store.db import Database

STAMP_KEY = runsync.EVIDENCE_STAMP_KEY
MAX_FILE_BYTES = 256 * 1024  # a run file is ~1 KB; anything near this is not one optlog wrote
HEADER = "# A run a verdict used, committed so a clone can re-check the verdict (optlog; do not edit).\n"


def _file_stamp(st: os.stat_result) -> str:
    return f"{st.st_mtime_ns}:{st.st_size}"


def env_digest(environment: dict[str, Any] | None) -> str:
    """sha256 of the run's environment as canonical JSON (what the file keeps of it)."""
    return hashlib.sha256(json.dumps(environment or {}, sort_keys=True, default=str).encode()).hexdigest()


def path_for(ws: Workspace, uid: str) -> Path:
    return ws.evidence_dir / f"{uid}.yaml"


# ---------------------------------------------------------------- the file format


def _model() -> Any:
    """The file's schema (built on first use: pydantic is not imported by the fast path)."""
    global _MODEL
    if _MODEL is not None:
        return _MODEL

    class RunEvidence(BaseModel):
        model_config = ConfigDict(extra="forbid")
        uid: str = Field(pattern=r"^[0-9a-f]{32}$")
        number: int = Field(ge=1)
        status: str
        source: str = "recorded"
        name: Optional[str] = None
        hypothesis: Optional[str] = None
        launch: Optional[int] = None
        repeat: int = 0
        host: Optional[str] = None
        created_at: Optional[str] = None
        started_at: Optional[str] = None
        finished_at: Optional[str] = None
        exit_code: Optional[int] = None
        labels: dict[str, Union[bool, int, float, str]] = Field(default_factory=dict)
        metrics: dict[str, float] = Field(default_factory=dict)
        invalidated: bool = False
        invalid_reason: Optional[str] = None
        environment_sha256: Optional[str] = None

    _MODEL = RunEvidence
    return _MODEL


_MODEL: Any = None


def _doc(r: Any, labels: dict[str, Any], metrics: dict[str, float]) -> dict[str, Any]:
    raw = r.raw or {}
    d: dict[str, Any] = {
        "uid": r.uid, "number": r.id, "status": r.status, "source": r.source, "name": r.name,
        "hypothesis": r.hypothesis_id, "launch": r.launch_id, "repeat": r.repeat, "host": r.host,
        "created_at": r.created_at, "started_at": r.started_at, "finished_at": r.finished_at,
        "exit_code": r.exit_code, "labels": labels, "metrics": metrics,
        "invalidated": bool(r.invalidated), "invalid_reason": r.invalid_reason,
        "environment_sha256": raw.get("environment_sha256") or env_digest(r.environment),
    }
    return {k: v for k, v in d.items() if v is not None}


def _write(path: Path, data: dict[str, Any]) -> str:
    write_atomic(path, HEADER + dump(data))
    return _file_stamp(path.stat())


def _read(ctx: Files, path: Path) -> Any:
    rel = ctx.ws.rel(path)
    ctx.ws.check_inside(path, rel)  # (a committed link to a file outside is not followed)
    if path.stat().st_size > MAX_FILE_BYTES:
        raise BadInput(f"an evidence file over {MAX_FILE_BYTES // 1024} KiB is not one optlog wrote", file=rel)
    text = read_text(path, rel)  # UTF-8 and the document limits, as every file optlog reads
    data = parse_text(text, rel)
    if not isinstance(data, dict):
        raise BadInput("an evidence file is a mapping of fields", file=rel, line=1)
    doc = validate(_model(), data, text, rel)
    if doc.uid != path.stem:
        raise BadInput(f"uid {doc.uid!r} does not match the file name {path.name!r}", file=rel, field="uid")
    return doc


# ---------------------------------------------------------------- export


def _runs(ctx: Index, run_ids: list[int]) -> list[tuple[Any, dict[str, Any], dict[str, float]]]:
    with ctx.db.read() as s:
        return runs_by_id(s, run_ids)


def unexported(ctx: Reads, run_ids: set[int] | list[int], known: dict[int, str] | None = None) -> list[int]:
    """The runs of `run_ids` with no evidence file yet, in id order (what `export` would write).
    `known`: uids by run id already read (else one query)."""
    if not run_ids:
        return []
    ids = sorted(set(run_ids))
    uids = [known[i] for i in ids] if known is not None and all(i in known for i in ids) else uids_of(ctx, ids)
    # one directory listing, not a stat per run: a verdict over 10,000 runs checks them all each time
    try:
        have = set(os.listdir(ctx.ws.evidence_dir))
    except FileNotFoundError:
        have = set()
    return [i for i, u in zip(ids, uids) if u and f"{u}.yaml" not in have]


def export(ctx: Reads, run_ids: set[int] | list[int], known: dict[int, str] | None = None) -> list[Path]:
    """Write the evidence file of each run that has none yet; returns the files written.
    `known`: uids by run id already read (else one query). The caller commits the files with the
    verdict that uses them."""
    missing = unexported(ctx, run_ids, known)
    if not missing:
        return []
    todo = _runs(ctx, missing)
    written: list[Path] = []
    stamps: dict[int, str] = {}
    for r, lab, met in todo:
        p = path_for(ctx.ws, r.uid)
        stamps[r.id] = _write(p, _doc(r, lab, met))
        written.append(p)
    _set_stamps(ctx.db, stamps)
    return written


def mark_invalidated(ctx: Reads, run_id: int) -> Path:
    """Write the run's invalidation into its evidence file (creating the file if it has none)."""
    [(r, lab, met)] = _runs(ctx, [run_id])
    p = path_for(ctx.ws, r.uid)
    if p.exists():
        data = _read(ctx, p).model_dump(mode="json", exclude_none=True)
        data.update(invalidated=True, invalid_reason=r.invalid_reason)
    else:
        data = _doc(r, lab, met)
    _set_stamps(ctx.db, {r.id: _write(p, data)})
    return p


def _set_stamps(db: "Database", stamps: dict[int, str]) -> None:
    set_evidence_stamps(db, stamps)


# ---------------------------------------------------------------- import


def import_changed(ctx: Commits, db: "Database") -> int:
    """Import evidence files this database has not read (cheap when `runs/evidence/` is unchanged:
    one stat and one indexed query). Returns how many runs were added or updated."""

    d = ctx.ws.evidence_dir
    try:
        dir_stamp = str(os.stat(d).st_mtime_ns)
    except (FileNotFoundError, NotADirectoryError):
        return 0
    with db.connect() as c:  # one snapshot: the stamp and the files it stamps
        if sync_stamp(c, STAMP_KEY) == dir_stamp:
            return 0
        known = evidence_stamps(c)
    files: dict[str, tuple[Path, str]] = {}
    with os.scandir(d) as it:
        for e in it:
            if e.name.endswith(".yaml") and not e.name.startswith(".") and e.is_file():
                files[e.name[:-5]] = (Path(e.path), _file_stamp(e.stat()))
    todo = [(uid, p, st) for uid, (p, st) in sorted(files.items()) if known.get(uid, "") != st]
    docs = [(_read(ctx, p), st) for _uid, p, st in todo]  # all validated before anything is written
    n = _import_docs(db, docs) if docs else 0
    set_sync_stamp(db, STAMP_KEY, dir_stamp)
    if n:
        ctx.notice(f"imported {n} run{'s' if n != 1 else ''} from the committed evidence in {ctx.ws.rel(d)}/")
    return n


def _import_docs(db: "Database", docs: list[tuple[Any, str]]) -> int:
    changed = 0
    explicit = False
    with db.write() as s:
        for doc, st in docs:
            row = runsync.run_by_uid(s, doc.uid)
            if row is not None:
                if doc.invalidated and not row[1]:  # an invalidation made in another clone
                    runsync.set_invalidated(s, row[0], doc.invalid_reason)
                    changed += 1
                runsync.set_evidence_stamp(s, row[0], st)
                continue
            taken = runsync.id_taken(s, doc.number)
            extra: dict[str, Any] = {} if taken else {"id": doc.number}
            explicit = explicit or not taken
            insert_run(s, labels=redact(doc.labels), metrics=doc.metrics, status=doc.status, source=doc.source,
                       hypothesis_id=doc.hypothesis, name=doc.name, launch_id=None, uid=doc.uid,
                       repeat=doc.repeat, host=doc.host, created_at=doc.created_at or "",
                       started_at=doc.started_at, finished_at=doc.finished_at, exit_code=doc.exit_code,
                       invalidated=doc.invalidated, invalid_reason=doc.invalid_reason, evidence_stamp=st,
                       raw=redact({"evidence_file": f"runs/evidence/{doc.uid}.yaml", "origin_number": doc.number,
                                   # the launch it was measured in there: its cycles pair runs (core.verdict)
                                   **({"origin_launch": doc.launch} if doc.launch is not None else {}),
                                   **({"environment_sha256": doc.environment_sha256} if doc.environment_sha256 else {})}),
                       **extra)
            changed += 1
        if explicit and not db.is_sqlite:  # explicit ids do not advance PostgreSQL's sequence
            runsync.advance_run_ids(s)
    return changed


# ---------------------------------------------------------------- missing evidence


def missing_runs(ctx: Index, verdicts: dict[str, Any]) -> dict[str, list[Any]]:
    """For each hypothesis' last verdict (by id), the runs it used that this database does not have
    (by uid where the verdict names them, else by number); only hypotheses with some missing.

    Such a verdict is kept as it is: evidence missing *here* is no reason to re-judge it `untested`."""

    named = {h: DS.named_runs(v.model_extra or {}) for h, v in verdicts.items()}
    all_u, all_n = DS.wanted(named)
    if not all_u and not all_n:
        return {}
    with ctx.db.connect() as c:
        have_u = uids_present(c, all_u)
        have_n = ids_present(c, all_n)
    return DS.missing(named, have_u, have_n)


def uids_of(ctx: Index, run_ids: list[int]) -> list[str]:
    """The uids of `run_ids`, in the same order."""
    if not run_ids:
        return []

    with ctx.db.connect() as c:
        m = uids_by_id(c, run_ids)
    return [m.get(i) or "" for i in run_ids]


# ---------------------------------------------------------------- committing


def pending(ctx: Commits) -> list[str]:
    """Evidence files that differ from HEAD (written, not committed: a commit that failed)."""

    d = ctx.ws.evidence_dir
    info = history.repo(ctx) if d.is_dir() else None
    if info is None:
        return []
    p = run_git(ctx.ws.root, "status", "--porcelain", "-z", "--untracked-files=all", "--no-renames", "--",
                ctx.ws.rel(d), check=False)
    if p.returncode != 0:
        return []
    top = info.toplevel
    out = []
    for item in p.stdout.split("\0"):
        if len(item) > 3:
            out.append(ctx.ws.rel(top / item[3:]))
    return out


def commit_pending(ctx: Commits) -> str | None:
    """Commit every evidence file not committed yet (event `evidence`); the sha, or None."""

    with workspace_lock(ctx.ws):
        rels = pending(ctx)
        if not rels:
            return None
        n = len(rels)
        return history.record(ctx, [ctx.ws.root / r for r in rels] if n <= 500 else [ctx.ws.evidence_dir],
                              f"optlog: commit the evidence of {n} run{'s' if n != 1 else ''}",
                              "Runs that verdicts rest on, committed so a clone can re-check those verdicts.",
                              {TR.EVENT: "evidence"})
