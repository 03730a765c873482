"""Run rows with their labels and metrics: inserting one, and reading a set in two queries. Every
layer that stores, shows or judges runs (the launcher's summary, telemetry's diagnosis, the
service's listings, the import of a clone's committed runs) needs the same rows, so the SQL lives
here, below all of them, once."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from sqlalchemy import bindparam, func, insert, select, text, update

from optlog.core import labels as L
from optlog.core.ids import new_id
from optlog.core.limits import LIMITS
from optlog.core.timeutil import now_iso
from optlog.store import evidencerows

if TYPE_CHECKING:
    from sqlalchemy import Connection
    from sqlmodel import Session

    from optlog.core.verdict import Evidence
    from optlog.store.db import Database

    from optlog.store.models import Run

# SQLite's default limit on bound parameters is 999: ask for run ids in chunks below it.
_CHUNK = 900


def saved_id(run: Run) -> int:
    """The id of a run read from the database (the model allows None only for a row not yet saved)."""
    if run.id is None:
        raise ValueError("a run row without an id was never saved")
    return run.id


def insert_run(
    s: Session,
    *,
    labels: dict[str, Any],
    metrics: dict[str, float],
    status: str = "succeeded",
    source: str = "recorded",
    hypothesis_id: str | None = None,
    note: str | None = None,
    raw: dict[str, Any] | None = None,
    environment: dict[str, Any] | None = None,
    name: str | None = None,
    launch_id: int | None = None,
    **fields: Any,
) -> int:
    """Insert one run with its labels and metrics inside an open write session; returns its id.
    What it is given is stored as it is (the service redacts secrets first).

    Every run gets a fresh random `uid` (its identity across clones) unless `uid` is given (a run
    imported from committed evidence)."""
    from optlog.store.models import EvidenceLink, Metric, Run, RunLabel  # deferred: ORM tables (sqlmodel); ORM-free reads skip them

    now = now_iso()
    uid = fields.pop("uid", None)
    run = Run(status=status, source=source, name=name, hypothesis_id=hypothesis_id, note=note,
              created_at=fields.pop("created_at", None) or now,
              started_at=fields.pop("started_at", now), finished_at=fields.pop("finished_at", now),
              raw=raw or {}, environment=environment or {}, launch_id=launch_id, host=fields.pop("host", None), **fields)
    s.add(run)
    s.flush()
    rid = saved_id(run)
    run.uid = uid or new_id("run", rid, now)
    for k, v in labels.items():
        s.add(RunLabel(run_id=rid, key=k, value=L.canonical(v), num=L.as_number(v)))
    for k, v in metrics.items():
        if v is None or (isinstance(v, float) and math.isnan(v)):
            continue
        s.add(Metric(run_id=rid, name=k, value=float(v)))
    if hypothesis_id:
        s.add(EvidenceLink(hypothesis_id=hypothesis_id, run_id=rid, kind="linked", created_at=now))
    return rid


def labels_metrics(s: Session, run_ids: Sequence[int]) -> tuple[dict[int, dict[str, Any]], dict[int, dict[str, float]]]:
    """(labels by run id, metrics by run id) for `run_ids`; every id has an entry, empty if it has none."""
    from sqlmodel import col, select  # deferred: the ORM; ORM-free reads (todo list) skip it

    from optlog.store.models import Metric, RunLabel  # deferred: ORM tables (sqlmodel); ORM-free reads skip them

    labels: dict[int, dict[str, Any]] = {i: {} for i in run_ids}
    metrics: dict[int, dict[str, float]] = {i: {} for i in run_ids}
    for start in range(0, len(run_ids), _CHUNK):
        chunk = list(run_ids[start:start + _CHUNK])
        for rl in s.exec(select(RunLabel).where(col(RunLabel.run_id).in_(chunk))).all():
            labels[rl.run_id][rl.key] = L.typed(rl.value)
        for m in s.exec(select(Metric).where(col(Metric.run_id).in_(chunk))).all():
            metrics[m.run_id][m.name] = m.value
    return labels, metrics


def with_labels(s: Session, runs: Sequence[Run]) -> list[tuple[Run, dict[str, Any], dict[str, float]]]:
    """(run row, typed labels, metrics) for each of `runs`, in their order."""
    labels, metrics = labels_metrics(s, [saved_id(r) for r in runs])
    return [(r, labels[saved_id(r)], metrics[saved_id(r)]) for r in runs]


def runs_by_id(s: Session, run_ids: Sequence[int]) -> list[tuple[Run, dict[str, Any], dict[str, float]]]:
    """(run row, typed labels, metrics) for each of `run_ids` that exists, in id order."""
    from sqlmodel import col, select  # deferred: the ORM; ORM-free reads (todo list) skip it

    from optlog.store.models import Run  # deferred: ORM tables (sqlmodel); ORM-free reads skip them

    out: list[tuple[Run, dict[str, Any], dict[str, float]]] = []
    for start in range(0, len(run_ids), _CHUNK):
        chunk = list(run_ids[start:start + _CHUNK])
        out.extend(with_labels(s, s.exec(select(Run).where(col(Run.id).in_(chunk)).order_by(col(Run.id))).all()))
    return sorted(out, key=lambda t: saved_id(t[0]))


def runs_of_launch(s: Session, launch_id: int) -> list[Run]:
    """The runs of one launch, in id order."""
    from sqlmodel import col, select  # deferred: the ORM; ORM-free reads (todo list) skip it

    from optlog.store.models import Run  # deferred: ORM tables (sqlmodel); ORM-free reads skip them

    return list(s.exec(select(Run).where(Run.launch_id == launch_id).order_by(col(Run.id))).all())


def environments(s: Session, run_ids: Sequence[int]) -> list[dict[str, Any]]:
    """The captured environment of each of `run_ids` (one per distinct host and document): what the
    machines that ran them have (CPUs, GPUs), for sizing a proposal (core.proposal)."""
    from sqlmodel import col, select  # deferred: the ORM; ORM-free reads (todo list) skip it

    from optlog.store.models import Run  # deferred: ORM tables (sqlmodel); ORM-free reads skip them

    out: dict[str, dict[str, Any]] = {}
    ids = sorted(set(run_ids))
    for start in range(0, len(ids), _CHUNK):
        chunk = ids[start:start + _CHUNK]
        for host, env in s.exec(select(Run.host, Run.environment).where(col(Run.id).in_(chunk))).all():
            if isinstance(env, str):
                try:
                    env = json.loads(env)
                except ValueError:
                    continue
            if isinstance(env, dict) and env:
                out.setdefault(f"{host}|{json.dumps(env.get('host'), sort_keys=True, default=str)}"
                               f"|{len(env.get('gpus') or [])}", env)
    return list(out.values())


def counting_run_ids(s: Session) -> list[int]:
    """Ids of the runs not invalidated."""
    from sqlmodel import col, select  # deferred: the ORM; ORM-free reads (todo list) skip it

    from optlog.store.models import Run  # deferred: ORM tables (sqlmodel); ORM-free reads skip them

    return [saved_id(r) for r in s.exec(select(Run).where(col(Run.invalidated) == False)).all()]  # noqa: E712


def diagnosed_run_ids(c: Connection, marks: Sequence[str], prefixes: Sequence[str]) -> list[int]:
    """Ids of the counting runs that carry any metric named in `marks` or starting with one of
    `prefixes`: the runs a stored diagnosis can go stale on. One plain query (no ORM tables: their
    import alone costs ~0.3 s), so a verdict over 10,000 runs without telemetry does not load every
    run's labels and metrics to find none."""
    params: dict[str, Any] = {f"m{i}": m for i, m in enumerate(marks)}
    conds = [f"metric.name = :m{i}" for i in range(len(marks))]
    for i, p in enumerate(prefixes):
        # LIKE with an escape: '_' in a prefix (bound_) is a literal, not a wildcard
        params[f"p{i}"] = p.replace("!", "!!").replace("%", "!%").replace("_", "!_") + "%"
        conds.append(f"metric.name LIKE :p{i} ESCAPE '!'")
    if not conds:
        return []
    q = text("SELECT DISTINCT metric.run_id FROM metric JOIN run ON run.id = metric.run_id "
             f"WHERE NOT run.invalidated AND ({' OR '.join(conds)})")
    return sorted(int(r) for (r,) in c.execute(q, params))


def replace_metrics(s: Session, run_id: int, drop: Sequence[str], new: dict[str, float]) -> None:
    """Delete the run's metrics named in `drop`, then add `new`."""
    from sqlmodel import col, delete  # deferred: the ORM; ORM-free reads (todo list) skip it

    from optlog.store.models import Metric  # deferred: ORM tables (sqlmodel); ORM-free reads skip them

    s.exec(delete(Metric).where(col(Metric.run_id) == run_id, col(Metric.name).in_(list(drop))))
    for k, v in new.items():
        s.add(Metric(run_id=run_id, name=k, value=float(v)))


def metric_names(c: Connection, among: Sequence[str] | None = None) -> set[str]:
    """Names of the metrics some run has (only those `among`, when given)."""
    if among is None:
        return {m for (m,) in c.execute(text("SELECT DISTINCT name FROM metric"))}
    q = text("SELECT DISTINCT name FROM metric WHERE name IN :v").bindparams(bindparam("v", expanding=True))
    out: set[str] = set()
    for start in range(0, len(among), _CHUNK):
        out.update(m for (m,) in c.execute(q, {"v": list(among[start:start + _CHUNK])}))
    return out


def label_values(c: Connection, keys: Sequence[str]) -> dict[str, set[str]]:
    """key → the canonical values some run has, for each of `keys` some run has."""
    q = text("SELECT DISTINCT key, value FROM run_label WHERE key IN :v").bindparams(bindparam("v", expanding=True))
    out: dict[str, set[str]] = {}
    for start in range(0, len(keys), _CHUNK):
        for k, v in c.execute(q, {"v": list(keys[start:start + _CHUNK])}):
            out.setdefault(k, set()).add(v)
    return out


def runs_with_artifacts(c: Connection, artifacts_dir: str) -> list[int]:
    """Ids of the runs whose artifacts folder is `artifacts_dir` (workspace-relative), in id order."""
    return [i for (i,) in c.execute(text("SELECT id FROM run WHERE artifacts_dir = :d ORDER BY id"), {"d": artifacts_dir})]


def imported_measurements(c: Connection, ids: set[str]) -> dict[str, int]:
    """{measurement identity: the first run carrying it} for the given identities: the `measurement`
    key of an imported run's raw, or of a launched run's `result_of` (the result the launcher read):
    the same figures read from another file."""
    if c.dialect.name == "sqlite":
        sql = ("SELECT id, CASE WHEN source = 'imported' THEN json_extract(raw, '$.measurement') "
               "ELSE json_extract(raw, '$.result_of.measurement') END FROM run")
    else:
        sql = ("SELECT id, CASE WHEN source = 'imported' THEN raw ->> 'measurement' "
               "ELSE raw -> 'result_of' ->> 'measurement' END FROM run")
    out: dict[str, int] = {}
    for rid, m in c.execute(text(sql + " WHERE source IN ('imported', 'launched') ORDER BY id")):
        if m in ids and m not in out:
            out[m] = rid
    return out


def rounded_measurements(c: Connection, ids: set[str], *, of_rounded: bool) -> dict[str, int]:
    """{rounded measurement identity: the first imported run carrying it} for the given identities
    (`ParsedResult.rounded_measurement`, kept in an imported run's raw): a rounded export (a CSV)
    is the run of any of them; a result at full precision only the run of a rounded export
    (`of_rounded`: its raw has `decimals`), since two full-precision runs equal to 2 places need
    not be one."""
    if c.dialect.name == "sqlite":
        sql = "SELECT id, json_extract(raw, '$.measurement_rounded'), json_extract(raw, '$.decimals') FROM run"
    else:
        sql = "SELECT id, raw ->> 'measurement_rounded', raw ->> 'decimals' FROM run"
    out: dict[str, int] = {}
    for rid, m, places in c.execute(text(sql + " WHERE source = 'imported' ORDER BY id")):
        if m in ids and m not in out and (places is not None or not of_rounded):
            out[m] = rid
    return out


def launched_results(c: Connection, shas: set[str]) -> dict[str, list[int]]:
    """{sha256: the launched runs whose result file had that content} (`result_of.sha256`, written
    by the launcher), for a copy of a launched run's file imported from wherever it was moved."""
    sql = ("SELECT id, json_extract(raw, '$.result_of.sha256') FROM run" if c.dialect.name == "sqlite"
           else "SELECT id, raw -> 'result_of' ->> 'sha256' FROM run")
    out: dict[str, list[int]] = {}
    for rid, sha in c.execute(text(sql + " WHERE source = 'launched' ORDER BY id")):
        if sha in shas:
            out.setdefault(sha, []).append(rid)
    return out


def launched_run(c: Connection, run_id: int) -> list[int]:
    """[run_id] when that run exists and was launched by optlog, else []."""
    return [i for (i,) in c.execute(text("SELECT id FROM run WHERE id = :i AND source = 'launched'"), {"i": run_id})]


def counting_evidence(db: Database, metric_names: set[str]) -> Evidence:
    """Runs that count (succeeded, not invalidated) with their labels, what launched runs were
    configured with, their uids, and the named metrics: what verdicts and comparisons judge
    (store.evidencerows, on the driver's own cursor)."""
    with db.connect() as c:  # a Core connection: no ORM session (the ORM's import alone costs ~0.3 s)
        cur = c.connection.dbapi_connection.cursor()  # type: ignore[union-attr]

        def rows(sql: str, params: tuple[Any, ...]) -> Sequence[Any]:
            cur.execute(sql, params)
            return cur.fetchall()

        return evidencerows.counting_evidence(rows, db.is_sqlite, metric_names)


def linked_runs(c: Connection, hypothesis_ids: Sequence[str]) -> set[tuple[str, int]]:
    """(hypothesis, run) of every evidence link of `hypothesis_ids`. Plain SQL on a Core connection
    (no ORM tables: their import costs more than a steady `verdict --all` judging 10,000 runs)."""
    q = text("SELECT hypothesis_id, run_id FROM evidence_link WHERE hypothesis_id IN :h").bindparams(
        bindparam("h", expanding=True))
    out: set[tuple[str, int]] = set()
    ids = list(hypothesis_ids)
    for start in range(0, len(ids), _CHUNK):
        out.update((h, int(r)) for h, r in c.execute(q, {"h": ids[start:start + _CHUNK]}))
    return out


def add_links(s: Session, pairs: Sequence[tuple[str, int]], kind: str, at: str) -> None:
    """An evidence link (hypothesis, run) of `kind` for each pair."""
    from optlog.store.models import EvidenceLink  # deferred: ORM tables (sqlmodel); ORM-free reads skip them

    s.add_all([EvidenceLink(hypothesis_id=h, run_id=r, kind=kind, created_at=at) for h, r in pairs])


def metric_names_by_use(s: Any) -> list[str]:
    """Every metric name the runs have, the most common first (then by name)."""
    from optlog.store.models import Metric  # deferred: ORM tables (sqlmodel); ORM-free reads skip them

    t = Metric.__table__  # type: ignore[attr-defined]
    counts = s.connection().execute(select(t.c.name, func.count()).group_by(t.c.name)).all()
    return [n for n, _ in sorted(counts, key=lambda nc: (-nc[1], nc[0]))]


def predicted_metrics(s: Any) -> set[str]:
    """The metrics the predictions judge."""
    from optlog.store.models import PredictionIndex  # deferred: ORM tables (sqlmodel); ORM-free reads skip them

    t = PredictionIndex.__table__  # type: ignore[attr-defined]
    return {m for (m,) in s.connection().execute(select(t.c.metric).distinct()).all() if m}


def table_rows(s: Any, metrics: list[str]) -> list[dict[str, Any]]:
    """Every run as a light row in id order: {"id", "status", "invalidated", "launch",
    "hypothesis", "labels" (typed), "canon" (their canonical text), "metrics" (only `metrics`)}.
    Core statements on the session's connection: the ORM's row loading cost ~4x the query itself
    over 10,000 runs' 30,000 labels."""
    from optlog.store.models import Metric, Run, RunLabel  # deferred: ORM tables (sqlmodel); ORM-free reads skip them

    con = s.connection()
    run_t, label_t, metric_t = Run.__table__, RunLabel.__table__, Metric.__table__  # type: ignore[attr-defined]
    rows: dict[int, dict[str, Any]] = {}
    c = run_t.c
    for rid, st, inv, lid, hid in con.execute(select(c.id, c.status, c.invalidated, c.launch_id,
                                                     c.hypothesis_id).order_by(c.id)).all():
        rows[rid] = {"id": rid, "status": st, "invalidated": bool(inv), "launch": lid, "hypothesis": hid,
                     "labels": {}, "canon": {}, "metrics": {}}
    typed: dict[str, Any] = {}  # a sweep has few distinct values: type each once
    for rid, k, v in con.execute(select(label_t.c.run_id, label_t.c.key, label_t.c.value)).all():
        r = rows.get(rid)
        if r is not None:  # the stored text is canonical already (core.labels)
            tv = typed.get(v)
            if tv is None:
                tv = typed[v] = L.typed(v)
            r["labels"][k] = tv
            r["canon"][k] = v
    if metrics:
        for rid, n, v in con.execute(select(metric_t.c.run_id, metric_t.c.name, metric_t.c.value)
                                     .where(metric_t.c.name.in_(metrics))).all():
            r = rows.get(rid)
            if r is not None:
                r["metrics"][n] = v
    return list(rows.values())


def statuses(s: Any, run_ids: list[int]) -> list[tuple[int, str]]:
    """(run id, status) of `run_ids`, in id order (optlog tune reads a trial's runs)."""
    from sqlmodel import col, select  # deferred: the ORM; ORM-free reads (todo list) skip it

    from optlog.store.models import Run  # deferred: ORM tables (sqlmodel); ORM-free reads skip them

    run_ids = [i for i in run_ids if storable_id(i)]
    rows = s.exec(select(Run.id, Run.status).where(col(Run.id).in_(run_ids)).order_by(col(Run.id))).all()
    return [(int(i), str(st)) for i, st in rows]


def storable_id(n: int) -> bool:
    """Whether a row can have id `n` (PostgreSQL's INTEGER id column holds 32 bits, SQLite's 64): an
    id past it is found nowhere, and asking the PostgreSQL driver for it is an error (issue 42)."""
    return 0 <= n <= LIMITS.row_id_max


def run(s: Session, run_id: int) -> Run | None:
    """The run row `run_id`, if there is one."""
    from optlog.store.models import Run  # deferred: the row models load SQLModel (the ORM)

    return s.get(Run, run_id) if storable_id(run_id) else None


def update_run(s: Session, run_id: int, **values: Any) -> None:
    """Set columns of a run without loading it (the launch driver does it at each step of a point)."""
    from optlog.store.models import Run  # deferred: the row models load SQLModel (the ORM)

    t = Run.__table__  # type: ignore[attr-defined]
    s.connection().execute(update(t).where(t.c.id == run_id).values(**values))


def add_label_and_metric_rows(s: Session, label_rows: Sequence[dict[str, Any]],
                              metric_rows: Sequence[dict[str, Any]]) -> None:
    """Insert label rows ({run_id, key, value, num}, value canonical already) and metric rows
    ({run_id, name, value}) in two executemany statements: a finished point's results, without
    building ORM objects."""
    from optlog.store.models import Metric, RunLabel  # deferred: the row models load SQLModel (the ORM)

    conn = s.connection()
    if label_rows:
        conn.execute(insert(RunLabel.__table__), list(label_rows))  # type: ignore[attr-defined]
    if metric_rows:
        conn.execute(insert(Metric.__table__), list(metric_rows))  # type: ignore[attr-defined]


def label_keys(c: Connection, among: Sequence[str] | None = None) -> set[str]:
    """The label keys some run has (only those `among`, when given): a filter on a key no run has
    is refused with a did-you-mean."""
    if among is None:
        return {k for (k,) in c.execute(text("SELECT DISTINCT key FROM run_label"))}
    q = text("SELECT DISTINCT key FROM run_label WHERE key IN :v").bindparams(bindparam("v", expanding=True))
    out: set[str] = set()
    for start in range(0, len(among), _CHUNK):
        out.update(k for (k,) in c.execute(q, {"v": list(among[start:start + _CHUNK])}))
    return out


def run_page(
    s: Session,
    *,
    status: str | None = None,
    hypothesis: str | None = None,
    launch: int | None = None,
    since: str | None = None,
    include_invalidated: bool = True,
    labels: dict[str, str] | None = None,
    newest: bool = False,
    offset: int = 0,
    limit: int | None = None,
    count: bool = False,
) -> tuple[list[Run], int | None]:
    """(a page of run rows, the number matching when `count`) for the filters of `run list`;
    `labels` maps a key to its canonical value (each must match). In id order, newest first with
    `newest`."""
    from sqlmodel import col, select  # deferred: SQLModel is the ORM, loaded with the database

    from optlog.store.models import Run, RunLabel  # deferred: the row models load SQLModel (the ORM)

    q = select(Run)
    if status:
        q = q.where(Run.status == status)
    if hypothesis:
        q = q.where(Run.hypothesis_id == hypothesis)
    if launch is not None:
        q = q.where(Run.launch_id == launch)
    if since:
        q = q.where(Run.created_at >= since)
    if not include_invalidated:
        q = q.where(Run.invalidated == False)  # noqa: E712
    for k, v in (labels or {}).items():
        sub = select(RunLabel.run_id).where(RunLabel.key == k, RunLabel.value == v)
        q = q.where(col(Run.id).in_(sub))
    total = int(s.exec(select(func.count()).select_from(q.subquery())).one()) if count else None
    q = q.order_by(col(Run.id).desc() if newest else col(Run.id))
    if offset:
        q = q.offset(offset)
    if limit is not None:
        q = q.limit(limit)
    return list(s.exec(q).all()), total


def live_hypotheses(c: Connection) -> set[str]:
    """Hypotheses with a queued or running run, their own or linked. Plain SQL: building the ORM's
    table classes costs more than the answer."""
    # the live runs' ids first (a handful), then one pass over evidence_link
    q = text("SELECT hypothesis_id FROM run WHERE status IN ('queued', 'running') AND hypothesis_id IS NOT NULL "
             "UNION SELECT hypothesis_id FROM evidence_link WHERE run_id IN "
             "(SELECT id FROM run WHERE status IN ('queued', 'running'))")
    return {h for (h,) in c.execute(q) if h}


def count_runs(c: Connection, statuses: Sequence[str] | None = None) -> int:
    """How many runs (with one of `statuses`, if given). Core SQL: `status` calls it every time."""
    if statuses:
        q = text("SELECT COUNT(*) FROM run WHERE status IN :st").bindparams(bindparam("st", expanding=True))
        return int(c.execute(q, {"st": list(statuses)}).scalar() or 0)
    return int(c.execute(text("SELECT COUNT(*) FROM run")).scalar() or 0)


def report_machines(db: Database) -> tuple[list[tuple[Any, Any]], dict[int, str]]:
    """What a report says about where runs ran: (host, environment) of one run per host (the first),
    and each launch's spec file by launch id."""
    with db.read() as s:
        cur = s.connection().connection.cursor()
        try:
            cur.execute("SELECT host, environment FROM run WHERE id IN (SELECT MIN(id) FROM run GROUP BY host)")
            envs = [(h, e) for h, e in cur.fetchall()]
            cur.execute("SELECT id, spec_path FROM launch")
            specs = {int(i): str(p) for i, p in cur.fetchall() if p}
        finally:
            cur.close()
    return envs, specs


def report_rows(db: Database) -> list[dict[str, Any]]:
    """Every run with labels and metrics (the report's input), read as plain rows through the
    driver's own cursor: for 10,000 runs (100,000+ label and metric rows) SQLAlchemy's per-row result machinery cost more
    than the query (bench/report_bench.py). Plain SQL without parameters: the same text on SQLite
    and PostgreSQL."""
    with db.read() as s:
        cur = s.connection().connection.cursor()  # the DBAPI connection under this transaction
        try:
            cur.execute("SELECT id, status, created_at, invalidated, invalid_reason, hypothesis_id, note, launch_id, host, "
                        "name FROM run ORDER BY id")
            rows = cur.fetchall()
            labels: dict[int, dict[str, Any]] = {r[0]: {} for r in rows}
            metrics: dict[int, dict[str, float]] = {r[0]: {} for r in rows}
            cur.execute("SELECT run_id, key, value FROM run_label")
            for rid, key, value in cur.fetchall():
                d = labels.get(rid)
                if d is not None:
                    d[key] = value  # canonical text: what selection compares and a reader sees
            cur.execute("SELECT run_id, name, value FROM metric")
            for rid, name, value in cur.fetchall():
                d2 = metrics.get(rid)
                if d2 is not None:
                    d2[name] = value
        finally:
            cur.close()
    out = []
    for rid, status, created, inval, reason, hyp, note, launch_id, host, name in rows:
        lab = labels[rid]
        out.append({"id": rid, "status": status, "created_at": created, "invalidated": bool(inval),
                    "invalid_reason": reason, "hypothesis": hyp, "note": note, "launch_id": launch_id, "host": host,
                    "name": name,
                    "labels": dict(sorted(lab.items())), "metrics": metrics[rid]})
    return out
