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
from optlog.errors import BadInput, param
from optlog.needs import Files, Index, Reads
from optlog.runs.modelfacts import from_path
from optlog.runs.parsers import ParsedResult, canonical_format, parse_bytes, read_file, unique
from optlog.service import evidence
from optlog.service.evidence import run_summary
from optlog.service.refs import require
from optlog.store.runrows import (imported_measurements, launched_results, launched_run, rounded_measurements, runs_by_id,
                                  runs_with_artifacts)


def check_key_map(key_map: dict[str, Any]) -> dict[str, str]:
    """`--key-map` as typed pairs, NAME → PATH (NAME a metric, or `label.NAME`): names checked, paths non-empty."""
    out: dict[str, str] = {}
    for k, v in key_map.items():
        k = L.check_key(str(k), "key_map")
        L.check_key(k[len("label."):] if k.startswith("label.") else k, "key_map")
        if not isinstance(v, str):
            raise BadInput(f"{param('key_map')} {k}: the PATH is a dotted name, got {v!r}", field="key_map")
        if not v.strip():
            raise BadInput(f"expected NAME=PATH, got {f'{k}={v}'!r} (empty path)", field="key_map")
        out[k] = v.strip()
    return out


def import_files(
    ctx: Reads,
    files: list[str] | tuple[str, ...],
    fmt: str | None = None,
    key_map: dict[str, Any] | None = None,
    labels: dict[str, Any] | None = None,
    hypothesis: str | None = None,
) -> dict[str, Any]:
    """Import `files` (typed `key_map` NAME → PATH and `labels` overrides: a face parses its own syntax)."""
    if not files:
        raise BadInput("name at least one result file", field="files")
    km = check_key_map(key_map or {})
    overrides = {L.check_key(str(k), "labels"): v for k, v in (labels or {}).items()}
    if fmt:
        fmt = canonical_format(fmt)
    if hypothesis:
        require(ctx, hypothesis)

    # 1. read and parse everything (BadInput on the first problem; nothing written yet)
    parsed: list[tuple[Path, str, Any]] = []
    blobs: dict[Path, bytes] = {}
    for f in files:
        p = Path(f)
        if not p.is_absolute():
            p = Path.cwd() / p

        data = read_file(p)
        blobs[p] = data
        for r in parse_bytes(str(f), data, fmt, km):
            parsed.append((p, hashlib.sha256(data).hexdigest(), r))
    # 1b. one run per measurement: a file already imported (same content), or a launched run's own
    # result file, is not imported again
    already = _already(ctx, {(p, hashlib.sha256(d).hexdigest()) for p, d in blobs.items()})
    for a in already:
        ctx.notice(f"{a['file']}: already imported as run{'s' if len(a['runs']) != 1 else ''} "
                   f"{', '.join(map(str, a['runs']))} ({a['why']}); nothing imported from it")
    skip = {a["sha256"] for a in already}
    first: dict[str, Path] = {}
    for p, sha, _r in parsed:
        first.setdefault(sha, p)
    for p, d in blobs.items():  # the same content under two names in one call: one measurement, said
        sha = hashlib.sha256(d).hexdigest()
        if first.get(sha, p) != p and sha not in skip:
            ctx.notice(f"{p}: the same content as {first[sha]}; imported once")
    parsed = [x for x in parsed if x[1] not in skip and first[x[1]] == x[0]]
    # 1c. each measurement once, by content: results repeated across the files of this import (a
    # sweep's run=N.json and summary.json) or already runs of the workspace
    kept, said = unique([r for _p, _s, r in parsed])
    for line in said:
        ctx.notice(line)
    known = _measured(ctx, [m for r in kept if (m := r.measurement())])
    dup = [r for r in kept if r.measurement() in known]
    for r in dup:
        ctx.notice(f"{r.source}: the same measurement as run {known[r.measurement() or '']} (same figures); "
                   "not imported again")
    rounded = _rounded(ctx, [r for r in kept if r.measurement() not in known])
    for r, rid in rounded:
        ctx.notice(f"{r.source}: {_ROUNDED.format(rid)}; not imported again")
    keep_ids = {id(r) for r in kept if r.measurement() not in known} - {id(r) for r, _ in rounded}
    parsed = [x for x in parsed if id(x[2]) in keep_ids]
    for _p, _s, r in parsed:
        for n in r.notes:
            ctx.notice(f"{r.source}: {n}")
    repeated = [{"source": line.split(": ", 1)[0], "why": line.split(": ", 1)[1]} for line in said] + \
        [{"source": r.source, "why": f"the same measurement as run {known[r.measurement() or '']}"} for r in dup] + \
        [{"source": r.source, "why": _ROUNDED.format(rid)} for r, rid in rounded]
    rows: list[tuple[dict[str, Any], dict[str, float], dict[str, Any], str, Path, str, str]] = []
    facts_cache: dict[str, Any] = {}
    for p, sha, r in parsed:
        lab = {k: v for k, v in r.labels.items()}
        for k in lab:
            L.check_key(k, "label")
        lab.update(overrides)
        for k in r.metrics:
            L.check_key(k, "metric")
        where = r.source[len(r.file):].lstrip(":#") if r.source.startswith(r.file) else r.source
        raw = {"file": str(p), "where": where or None, "index": r.index, "format": r.tool, "sha256": sha, "data": r.raw,
               **({"measurement": r.measurement()} if r.measurement() else {}),
               **({"measurement_rounded": r.rounded_measurement()} if r.rounded_measurement() else {}),
               **({"decimals": r.decimals} if r.decimals is not None else {}),
               **({"corrections": r.notes} if r.notes else {})}
        mf = _model_facts(lab, r.raw, facts_cache)
        if mf is not None:  # the file names a model this machine can read: its work counts (issue 30)
            met = {**mf.metrics(), **r.metrics}
            raw["model_facts"] = mf.to_json()
        else:
            met = r.metrics
        name = p.name + (f":{where.split()[-1]}" if where else "")
        rows.append((lab, met, raw, name, p, sha, r.status))

    # 2. keep the files (content-addressed, so re-importing the same file stores it once)
    dirs: dict[str, str] = {}
    for p, sha in {(row[4], row[5]) for row in rows}:
        folder = ctx.ws.artifacts_dir / "imported" / sha[:16]
        folder.mkdir(parents=True, exist_ok=True)
        target = folder / p.name
        if not target.exists():
            tmp = target.with_name(target.name + ".part")
            tmp.write_bytes(blobs[p])
            tmp.replace(target)
        dirs[sha] = ctx.ws.rel(folder)

    # 3. one transaction for all runs

    ids: list[int] = []
    with ctx.db.write() as s:
        for lab, met, raw, name, _p, sha, status in rows:
            ids.append(evidence.insert_run(s, labels=lab, metrics=met, source="imported", hypothesis_id=hypothesis,
                                           raw=raw, name=name, artifacts_dir=dirs[sha], status=status))
    runs = _summaries(ctx, ids)
    n_files = len(blobs) - len(already)
    ctx.notice(f"imported {len(ids)} run{'s' if len(ids) != 1 else ''} from {n_files} file{'s' if n_files != 1 else ''}")
    return {"runs": runs, "already_imported": already, **({"repeated": repeated} if repeated else {})}


def _model_facts(labels: dict[str, Any], raw: dict[str, Any], cache: dict[str, Any]) -> Any:
    """The work counts of the model a result file names (its `model` label, or SGLang's `model_path`
    in the line or its `server_info`) when that is a GGUF file or a Hugging Face folder here; else None."""
    got = raw.get("server_info")
    si: dict[str, Any] = got if isinstance(got, dict) else {}
    for cand in (raw.get("model_path"), si.get("model_path"), labels.get("model")):
        if not isinstance(cand, str) or not cand or ("/" not in cand and not cand.endswith(".gguf")):
            continue
        if cand not in cache:
            p = Path(cand).expanduser()
            cache[cand] = from_path(p) if p.exists() else None
        mf = cache[cand]
        if mf is not None and mf.facts:
            return mf
    return None


def _already(ctx: Reads, files: set[tuple[Path, str]]) -> list[dict[str, Any]]:
    """The files whose measurement is already a run: an earlier import of the same content (its
    copy's folder, `imported/<sha256[:16]>`, is the index), a launched run's output folder, or a
    copy of a launched run's result file (the sha256 the launcher recorded), wherever it now lies."""

    out: list[dict[str, Any]] = []
    with ctx.db.connect() as c:
        launched = launched_results(c, {sha for _p, sha in files})
        for p, sha in sorted(files, key=lambda x: str(x[0])):
            d = ctx.ws.rel(ctx.ws.artifacts_dir / "imported" / sha[:16])
            ids = runs_with_artifacts(c, d)
            why = f"same content, sha256 {sha[:12]}…"
            if not ids and sha in launched:
                ids = launched[sha]
                why = f"the same content as the launched run's result file, sha256 {sha[:12]}…"
            if not ids:
                try:
                    rel = p.resolve().relative_to(ctx.ws.artifacts_dir.resolve())
                except ValueError:
                    continue
                if not rel.parts or not rel.parts[0].isdigit():
                    continue
                ids = launched_run(c, int(rel.parts[0]))
                why = "it is the launched run's own result file"
            if ids:
                out.append({"file": str(p), "sha256": sha, "runs": ids, "why": why})
    return out


def _measured(ctx: Index, ids: list[str]) -> dict[str, int]:
    """Of these measurement identities (`ParsedResult.measurement`), those a run of the workspace
    already has (imported, or launched and read by the launcher), with that run's id."""
    if not ids:
        return {}
    with ctx.db.connect() as c:
        return imported_measurements(c, set(ids))


_ROUNDED = "the same measurement as run {} (the same figures, rounded to 2 places)"


def _rounded(ctx: Index, results: list[ParsedResult]) -> list[tuple[ParsedResult, int]]:
    """Of these results, those whose rounded export (or full-precision original) is already a run,
    with that run: AIPerf's and genai-perf's CSV imported apart from its JSON, in either order."""
    ids = [(r, m) for r in results if (m := r.rounded_measurement())]
    if not ids:
        return []
    with ctx.db.connect() as c:
        of_csv = rounded_measurements(c, {m for r, m in ids if r.decimals is not None}, of_rounded=False)
        of_json = rounded_measurements(c, {m for r, m in ids if r.decimals is None}, of_rounded=True)
    return [(r, found) for r, m in ids if (found := (of_csv if r.decimals is not None else of_json).get(m))]


def _summaries(ctx: Index, ids: list[int]) -> list[dict[str, Any]]:
    if not ids:
        return []
    with ctx.db.read() as s:
        return [run_summary(*t) for t in runs_by_id(s, ids)]


def remove_copies(ctx: Files, sha: str) -> None:  # pragma: no cover - maintenance helper
    shutil.rmtree(ctx.ws.artifacts_dir / "imported" / sha[:16], ignore_errors=True)
