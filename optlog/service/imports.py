"""`run import`: peer benchmark result files → one run per result (source "imported").

All or nothing: every file is read and parsed, every label and key map checked, before anything is
written; then all runs go in one write transaction. The imported file is copied (content-addressed)
to `.optlog/runs/imported/<sha256[:16]>/` and each run's `artifacts_dir` points there; `raw` keeps
the original path, the position in the file (line / benchmark), the format and the checksum.
"""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path
from typing import Any

from optlog.core import labels as L
from optlog.errors import BadInput
from optlog.service.context import Ctx


def parse_key_map(items: list[str] | tuple[str, ...]) -> dict[str, str]:
    """`NAME=PATH` pairs (NAME a metric, or `label.NAME`)."""
    out: dict[str, str] = {}
    for it in items:
        k, v = L.parse_pair(it, "--key-map")
        if not v:
            raise BadInput(f"expected NAME=PATH, got {it!r} (empty path)", field="--key-map")
        out[k] = v
    return out


def import_files(
    ctx: Ctx,
    files: list[str] | tuple[str, ...],
    fmt: str | None = None,
    key_map: list[str] | tuple[str, ...] | dict[str, str] = (),
    labels: list[str] | tuple[str, ...] = (),
    hypothesis: str | None = None,
) -> dict[str, Any]:
    from optlog.runs.parsers import canonical_format, parse_bytes

    if not files:
        raise BadInput("name at least one result file", field="FILE")
    km = dict(key_map) if isinstance(key_map, dict) else parse_key_map(key_map)
    for k in km:
        L.check_key(k[len("label."):] if k.startswith("label.") else k, "--key-map")
    overrides = L.parse_pairs(labels, "--label")
    if fmt:
        fmt = canonical_format(fmt)
    if hypothesis:
        from optlog.service.refs import require

        require(ctx, hypothesis)

    # 1. read and parse everything (BadInput on the first problem; nothing written yet)
    parsed: list[tuple[Path, str, Any]] = []
    blobs: dict[Path, bytes] = {}
    for f in files:
        p = Path(f)
        if not p.is_absolute():
            p = Path.cwd() / p
        from optlog.runs.parsers import _read

        data = _read(p)
        blobs[p] = data
        for r in parse_bytes(str(f), data, fmt, km):
            parsed.append((p, hashlib.sha256(data).hexdigest(), r))
    rows: list[tuple[dict[str, Any], dict[str, float], dict[str, Any], str, Path, str]] = []
    for p, sha, r in parsed:
        lab = {k: v for k, v in r.labels.items()}
        for k in lab:
            L.check_key(k, "label")
        lab.update(overrides)
        for k in r.metrics:
            L.check_key(k, "metric")
        where = r.source[len(r.file):].lstrip(":#") if r.source.startswith(r.file) else r.source
        raw = {"file": str(p), "where": where or None, "index": r.index, "format": r.tool, "sha256": sha, "data": r.raw}
        name = p.name + (f":{where.split()[-1]}" if where else "")
        rows.append((lab, r.metrics, raw, name, p, sha))

    # 2. keep the files (content-addressed, so re-importing the same file stores it once)
    dirs: dict[str, str] = {}
    for p, sha in {(row[4], row[5]) for row in rows}:
        d = ctx.ws.artifacts_dir / "imported" / sha[:16]
        d.mkdir(parents=True, exist_ok=True)
        target = d / p.name
        if not target.exists():
            tmp = target.with_name(target.name + ".part")
            tmp.write_bytes(blobs[p])
            tmp.replace(target)
        dirs[sha] = ctx.ws.rel(d)

    # 3. one transaction for all runs
    from optlog.service import evidence

    ids: list[int] = []
    with ctx.db.write() as s:
        for lab, met, raw, name, _p, sha in rows:
            ids.append(evidence.insert_run(s, labels=lab, metrics=met, source="imported", hypothesis_id=hypothesis,
                                           raw=raw, name=name, artifacts_dir=dirs[sha]))
    runs = _summaries(ctx, ids)
    ctx.notice(f"imported {len(ids)} run{'s' if len(ids) != 1 else ''} from {len(blobs)} file{'s' if len(blobs) != 1 else ''}")
    return {"runs": runs}


def _summaries(ctx: Ctx, ids: list[int]) -> list[dict[str, Any]]:
    from sqlmodel import select

    from optlog.service.evidence import run_summary
    from optlog.store.runrows import labels_metrics
    from optlog.store.models import Run

    if not ids:
        return []
    with ctx.db.read() as s:
        runs = s.exec(select(Run).where(Run.id.in_(ids)).order_by(Run.id)).all()  # type: ignore[union-attr,arg-type]
        labels, metrics = labels_metrics(s, ids)
        return [run_summary(r, labels[r.id], metrics[r.id]) for r in runs]


def remove_copies(ctx: Ctx, sha: str) -> None:  # pragma: no cover - maintenance helper
    shutil.rmtree(ctx.ws.artifacts_dir / "imported" / sha[:16], ignore_errors=True)
