"""Hypothesis files on disk and their index in the database.

The YAML file is the truth; the database row caches its parsed content keyed by the file's
content hash. Every optlog write is a compare-and-swap: it names the hash it read, and if the file
changed meanwhile (a hand edit raced the write) it raises Conflict instead of overwriting.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from optlog.core.hypothesis import HypothesisDoc
from optlog.core.limits import LIMITS
from optlog.errors import BadInput, Conflict, NotFound
from optlog.paths import Workspace
from optlog.store import cas
from optlog.yamlio import decode, dump, line_of, parse_text, validate


def content_hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:16]


@dataclass
class Loaded:
    doc: HypothesisDoc
    hash: str
    mtime_ns: int
    path: Path


def list_files(ws: Workspace) -> list[Path]:
    d = ws.hypotheses_dir
    if not d.is_dir():
        return []
    # a listing and a sort by name: pathlib's glob and Path comparisons cost ~50 ms per 1,000 files
    return [d / n for n in _names(os.listdir(d))]


def _names(listing: list[str]) -> list[str]:
    """The hypothesis files of a listing of the folder, by name: `*.yaml`, not hidden (an
    editor's `.x.yaml.swp`, a `.hidden.yaml`)."""
    return sorted(n for n in listing if n.endswith(".yaml") and not n.startswith("."))


def stamps(ws: Workspace) -> dict[str, int]:
    """Each hypothesis file's id → its modification time (ns), by name (0: removed since it was
    listed, as `mtime_ns` says). Names, and `stat` relative to the open folder: no path object is
    made (at 10,000 files pathlib's cost ~60 ms of each write's two index syncs)."""
    try:
        fd = os.open(ws.hypotheses_dir, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except (FileNotFoundError, NotADirectoryError):
        return {}
    out: dict[str, int] = {}
    try:
        for n in _names(os.listdir(fd)):
            try:
                out[n[:-5]] = os.stat(n, dir_fd=fd).st_mtime_ns
            except FileNotFoundError:
                out[n[:-5]] = 0
    finally:
        os.close(fd)
    return out


def load_file(ws: Workspace, path: Path) -> Loaded:
    rel = ws.rel(path)
    ws.check_inside(path, rel)
    if path.stat().st_size > LIMITS.file_bytes:
        decode(b"x" * (LIMITS.file_bytes + 1), rel)  # refused with the size, before reading it
    raw = path.read_bytes()
    text = decode(raw, rel)
    data = parse_text(text, rel)
    if not isinstance(data, dict):
        raise BadInput("a hypothesis file must be a mapping of fields", file=rel, line=1, code="invalid_field")
    doc = validate(HypothesisDoc, data, text, rel)
    seen: dict[str, int] = {}
    for i, p in enumerate(doc.predictions):  # two predictions of one id: which one would a verdict name?
        if p.id in seen:
            first = line_of(text, ("predictions", seen[p.id], "id"))
            raise BadInput(f"prediction id {p.id!r} is used twice (also at line {first}): give each prediction "
                           "its own id", file=rel, line=line_of(text, ("predictions", i, "id")),
                           field=f"predictions.{i}.id", code="duplicate")
        seen[p.id] = i
    if doc.id != path.stem:
        raise BadInput(
            f"id {doc.id!r} does not match the file name {path.name!r}",
            file=rel,
            line=line_of(text, ("id",)),
            field="id",
            code="invalid_field",
        )
    return Loaded(doc, content_hash(raw), path.stat().st_mtime_ns, path)


def index_row(ld: Loaded, now: str) -> dict[str, Any]:
    """A loaded file's `hypothesis` index row, but its id and created_at (store.hypindex writes it
    through SQLAlchemy, store.plainindex on sqlite3)."""
    d = ld.doc
    return {"title": d.title, "status": d.effective_status(), "parent": d.parent, "rivals": list(d.rivals),
            "file_hash": ld.hash, "file_mtime_ns": ld.mtime_ns, "updated_at": now,
            "doc": d.model_dump(mode="json", by_alias=True)}


def prediction_rows(ld: Loaded) -> list[dict[str, Any]]:
    """A loaded file's `prediction` index rows."""
    d = ld.doc
    return [{"id": p.id, "hypothesis_id": d.id, "version": p.version, "metric": p.metric, "expect": p.expect,
             "status": p.status, "spec": p.model_dump(mode="json")} for p in d.predictions]


def load(ws: Workspace, hid: str) -> Loaded:
    path = ws.hypothesis_file(hid)
    if not path.is_file():
        raise NotFound(f"no hypothesis {hid!r} (no {ws.rel(path)})", field="hypothesis")
    return load_file(ws, path)


def render(doc: HypothesisDoc) -> str:
    return dump(doc.to_yaml_data())


def current_hash(path: Path) -> str | None:
    try:
        return content_hash(path.read_bytes())
    except FileNotFoundError:
        return None


def save(ws: Workspace, doc: HypothesisDoc, expected_hash: str | None) -> tuple[str, bool]:
    """Write the file if it still has `expected_hash` (None: must not exist yet).

    Returns (new hash, changed). The caller holds the workspace write lock."""
    path = ws.hypothesis_file(doc.id)
    data = render(doc).encode("utf-8")
    new = content_hash(data)
    if new == expected_hash and current_hash(path) == expected_hash:
        return new, False
    try:
        # exact: the content replaced is checked after an atomic swap (see store.cas)
        cas.replace(path, data, expected_hash, lambda b: None if b is None else content_hash(b))
    except cas.Changed:
        if expected_hash is None:
            raise Conflict(f"hypothesis {doc.id!r} already exists", file=ws.rel(path), field="id") from None
        raise Conflict(
            "the file changed while optlog was writing it (a hand edit?); nothing was overwritten: "
            "look at the file and run the command again",
            file=ws.rel(path),
        ) from None
    return new, True


def mtime_ns(path: Path) -> int:
    try:
        return os.stat(path).st_mtime_ns
    except FileNotFoundError:
        return 0
