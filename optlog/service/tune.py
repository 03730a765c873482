"""optlog tune: a search over a spec's `search:` space, each trial a launched point (docs/tune.md).

The optimiser is Optuna (TPE for one objective, NSGA-II for several, random or grid on request;
constraints through its `constraints_func`). optlog adds what a benchmark search needs:

- **Each trial is a launch's point.** One Launch per worker, its points made as the study goes: the
  launcher's Driver takes them from a feed (`runs.launcher.Driver(feed=…)`), so a trial gets the
  same server lifecycle, sanity check, telemetry, labels and records as `run launch`, and
  consecutive trials with the same rendered server command share the server. A trial's runs carry
  its parameters plus `study` and `trial` labels.
- **The study lives in the workspace's database.** Optuna's RDB storage, beside optlog's tables: on
  PostgreSQL in the workspace's companion schema `optlog_<id>_tune` of the same database (never
  `public`), on SQLite in `.optlog/tune.db` next to `optlog.db`. Both optlog and Optuna keep an
  `alembic_version` table, so they cannot share one schema or file.
- **Resumable, several workers.** A running trial beats a heartbeat (`tune.heartbeat_s`); a worker
  that died (kill -9) leaves a trial whose heartbeat stops, which the next worker fails and runs
  again (`RetryHeartbeatStaleTrialCallback`). Workers take the study's next trial under optlog's write lock
  (a PostgreSQL advisory lock on a shared database), so N trials are N, never N + workers − 1.
  `--trials N` is the study's total: running the command again resumes up to N.
  `--on ssh:HOST|slurm:NAME` runs the workers through the executors instead (`tune_remote`): each
  an `optlog tune run` on its host against the same PostgreSQL study.
- **A configuration measured already is not launched again**: the trial takes its result
  (`same_as`), so a sampler that proposes it again costs nothing.
- **Honest best.** The best trial(s) are re-measured with repeats interleaved with the runner-up
  before anything is called best; the winner's curse (first reading against the re-measured median)
  is reported.
"""

from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
import threading
import time
import warnings
from collections.abc import Callable, Generator, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from optlog import settings
from optlog.core import labels as L
from optlog.core import tune as T
from optlog.core.expr import ExprError
from optlog.core.limits import LIMITS
from optlog.core.numfmt import fmt_count, fmt_measured, plural
from optlog.core.timeutil import now_iso
from optlog.errors import BadInput, Failed, NotFound, OptlogError, param
from optlog.needs import Index, Reads, Writes
from optlog.paths import Workspace
from optlog.runs.executors.registry import make_executor, on_spellings, on_this_machine, parse_on
from optlog.runs.launcher import Driver
from optlog.runs.spec import plan, search_space, set_texts, typed_sets
from optlog.service import tune_claim
from optlog.service.context import Ctx
from optlog.service.launch import add_point, open_launch, prepare, write_record
from optlog.store.db import create_schema, exclusive, schema_exists
from optlog.store.runrows import labels_metrics, statuses
from optlog.core import jsondoc

SAMPLERS = ("tpe", "nsga2", "random", "grid")
DEFAULT_TRIALS = 20
ATTR = "optlog"  # the study's user attribute holding what optlog needs to show it (spec, objectives, …)


@dataclass
class TuneArgs:
    """Everything a tune worker needs (JSON: handed to the other local workers on stdin)."""
    spec: str
    objectives: list[list[str]] = field(default_factory=list)  # [[metric, "maximize"|"minimize"], …]
    constraints: list[str] = field(default_factory=list)
    trials: int | None = None  # the study's total; None: 20, or the grid's size with --sampler grid
    timeout_s: float | None = None
    workers: int = 1
    study: str | None = None
    sampler: str | None = None
    seed: int | None = None
    sets: list[tuple[str, Any]] = field(default_factory=list)  # `--set` pairs (runs.spec.SetPairs)
    server_url: str | None = None
    hypothesis: str | None = None
    remeasure: int | None = None
    prune_above: str | None = None  # `--prune-above PARAM`: see `core.tune.pruned_by`
    claim: float | None = None  # `--claim PCT`: register "tuning gains ≥ PCT % over the default settings" first
    on: list[str] = field(default_factory=list)  # executors the workers run on ("ssh:HOST", "slurm:NAME"); [] local


# ----------------------------------------------------------------------------- checking


def _check(ctx: Writes, a: TuneArgs, worker: int = 0) -> tuple[Any, list[T.SearchParam], list[Any]]:
    """Validate everything before anything is written: spec, objectives, constraints, sampler."""
    if not a.objectives:
        raise BadInput(f"name what to optimise: {param('maximize')} METRIC or {param('minimize')} METRIC (repeatable)",
                       field="maximize")
    names = [m for m, _ in a.objectives]
    if len(set(names)) != len(names):
        raise BadInput(f"a metric is named twice among the objectives: {', '.join(names)}", field="maximize")
    if a.trials is not None and a.trials < 1:
        raise BadInput(f"{param('trials')} must be at least 1", field="trials")
    if a.workers < 1 or a.workers > 64:
        raise BadInput(f"{param('workers')} is from 1 to 64", field="workers")
    if a.timeout_s is not None and a.timeout_s <= 0:
        raise BadInput(f"{param('timeout_s')} must be positive", field="timeout_s")
    if a.remeasure is not None and not 0 <= a.remeasure <= 100:
        raise BadInput(f"{param('remeasure')} is from 0 to 100", field="remeasure")
    if a.sampler is not None and a.sampler not in SAMPLERS:
        raise BadInput(f"{param('sampler')} is one of {', '.join(SAMPLERS)}", field="sampler")
    if a.study is not None:

        if not L.KEY_RE.match(a.study):
            raise BadInput(f"bad study name {a.study!r}: use letters, digits, '_', '.', '-'", field="study")
    conds = []
    for c in a.constraints:
        try:
            conds.append(T.parse_constraint(c))
        except ExprError as e:
            raise BadInput(f"{param('constraints')} {c!r}: {e.pretty()}", field="constraints", code="bad_expression") from None
    ls, _points = prepare(ctx, a.spec, sets=a.sets, server_url=a.server_url, hypothesis=a.hypothesis, worker=worker)
    if not ls.spec.search:
        raise ls.bad("optlog tune needs a `search:` section: the parameters to search and their ranges "
                     "(docs/tune.md)", code="missing_field")
    space = search_space(ls)
    if a.claim is not None:
        tune_claim.default_config(ls, a, space)  # raises BadInput naming what the claim lacks
    if a.prune_above is not None:
        numeric = [p.name for p in space if p.kind in ("int", "float")]
        if a.prune_above not in numeric:
            raise BadInput(f"{param('prune_above')} names a numeric search parameter ({', '.join(numeric) or 'the spec has none'}),"
                           f" not {a.prune_above!r}", field="prune_above")
        if not any(T.upper_bound(c) for c in conds):
            raise BadInput(f"{param('prune_above')} skips what breaks an upper-bound constraint at a lower value: give one "
                           f"({param('constraints')} 'p99_ttft_ms <= 200')", field="prune_above")
    if _sampler_name(a) == "grid":

        try:
            n = T.grid_size(space, LIMITS.matrix_points)
        except ValueError as e:
            raise ls.bad(f"{param('sampler')} grid: {e}", "search") from None
        if n > LIMITS.matrix_points:
            raise ls.bad(f"{param('sampler')} grid: the grid has more than {fmt_count(LIMITS.matrix_points)} points", "search",
                         code="too_large")
        size = len(T.grid_points(space))
        a.trials = size if a.trials is None else min(a.trials, size)
    elif a.trials is None:
        a.trials = DEFAULT_TRIALS
    return ls, space, conds


def _sampler_name(a: TuneArgs) -> str:
    return a.sampler or ("tpe" if len(a.objectives) == 1 else "nsga2")


def _study_name(ls: Any, a: TuneArgs) -> str:
    return a.study or ls.name


# ----------------------------------------------------------------------------- the storage


def storage_url(ctx: Reads, create: bool = True) -> tuple[str, dict[str, Any]]:
    """Optuna's RDB storage of this workspace: (URL, engine arguments). See the module docstring.
    `create`: make its place (the folder, the PostgreSQL schema) if missing; readers do not."""
    db = ctx.db
    if db.is_sqlite:
        path = ctx.ws.state_dir / "tune.db"
        if create:
            path.parent.mkdir(parents=True, exist_ok=True)
        return f"sqlite:///{path}", {"connect_args": {"timeout": 60}}
    schema = f"{db.schema or 'optlog'}_tune"

    if create:
        create_schema(db, schema)
    url = db.url
    if url.startswith("postgresql://") or url.startswith("postgres://"):
        url = "postgresql+psycopg://" + url.split("://", 1)[1]
    return url, {"pool_pre_ping": True, "connect_args": {"options": f"-csearch_path={schema}"}}


@contextmanager
def _locked(ctx: Index) -> Iterator[None]:
    """Mutual exclusion between tune processes on one workspace: optlog's write lock, taken at once
    (a write session takes SQLite's lock only at its first statement; on PostgreSQL it is an
    advisory lock, so workers on several hosts of one database are excluded too)."""
    with exclusive(ctx.db):
        yield


def _quiet() -> Any:
    import optuna  # deferred: the tuner (~0.5 s); plain commands and reports without studies skip it

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
    warnings.filterwarnings("ignore", message="Heartbeat of storage is supposed to be used with Study.optimize")
    return optuna


def _storage(ctx: Reads) -> Any:
    optuna = _quiet()
    url, kw = storage_url(ctx)
    st = ctx.config.tune
    # Optuna creates its tables (and PostgreSQL enum types) on first use; two processes doing it at
    # once collide (duplicate type "studydirection"), so under optlog's write lock
    with _locked(ctx):
        return optuna.storages.RDBStorage(url, engine_kwargs=kw, heartbeat_interval=st.heartbeat_s,
                                          grace_period=st.grace_s,
                                          heartbeat_stale_trial_callback=optuna.storages.RetryHeartbeatStaleTrialCallback(max_retry=3))


TRIAL_ATTR = "optlog"  # a trial's user attribute: worker, runs, metrics, statuses, constraint, … (one write)


def _attrs(ft: Any) -> dict[str, Any]:
    return dict(ft.user_attrs.get(TRIAL_ATTR) or {})


def _constraints_func(ft: Any) -> list[float]:
    return list(_attrs(ft).get("constraint") or [])


def _sampler(a: TuneArgs, n_constraints: int, worker: int = 0) -> Any:
    """The sampler of worker `worker`: each worker its own seed (the same seed would make every
    worker propose the same configurations)."""
    optuna = _quiet()
    cf = _constraints_func if n_constraints else None
    name = _sampler_name(a)
    seed = None if a.seed is None else a.seed + worker
    if name == "tpe":
        return optuna.samplers.TPESampler(seed=seed, constraints_func=cf)
    if name == "nsga2":
        return optuna.samplers.NSGAIISampler(seed=seed, constraints_func=cf)
    return optuna.samplers.RandomSampler(seed=seed)  # grid: every configuration is enqueued


def _open_study(ctx: Reads, a: TuneArgs, ls: Any, space: list[T.SearchParam], conds: list[Any],
                create: bool, worker: int = 0) -> tuple[Any, Any]:
    """Create (or load) the study; a study of another shape under the same name is refused.
    Returns (study, its storage)."""
    optuna = _quiet()
    name = _study_name(ls, a)
    storage = _storage(ctx)
    directions = [d for _, d in a.objectives]
    meta = {"spec": ls.file, "objectives": [m for m, _ in a.objectives], "directions": directions,
            "constraints": list(a.constraints), "sampler": _sampler_name(a)}
    try:
        study = optuna.load_study(study_name=name, storage=storage, sampler=_sampler(a, len(conds), worker))
    except KeyError:
        if not create:
            raise NotFound(f"no study {name!r}", field="study") from None
        try:
            study = optuna.create_study(study_name=name, storage=storage, directions=directions,
                                        sampler=_sampler(a, len(conds), worker))
        except optuna.exceptions.DuplicatedStudyError:  # another worker made it meanwhile
            study = optuna.load_study(study_name=name, storage=storage, sampler=_sampler(a, len(conds), worker))
        else:
            study.set_user_attr(ATTR, {**meta, "created_at": now_iso()})
            return study, storage
    old = study.user_attrs.get(ATTR) or {}
    for k in ("objectives", "directions", "constraints"):
        if old.get(k) is not None and old.get(k) != meta[k]:
            raise BadInput(f"study {name!r} exists with {k} {old.get(k)} (not {meta[k]}): resume it with the same "
                           f"objectives and constraints, or give another {param('study')}", field="study",
                           code="study_mismatch")
    return study, storage


# ----------------------------------------------------------------------------- one worker


class _Heartbeat:
    """A running trial's heartbeat in the study's storage, until stopped (Optuna beats only inside
    `Study.optimize`; optlog drives trials itself, ask and tell)."""
    def __init__(self, storage: Any, trial_id: int, interval: float) -> None:
        self.stop_ev = threading.Event()
        self.t = threading.Thread(target=self._beat, args=(storage, trial_id, interval), daemon=True)
        storage.record_heartbeat(trial_id)
        self.t.start()

    def _beat(self, storage: Any, trial_id: int, interval: float) -> None:
        while not self.stop_ev.wait(interval):
            try:
                storage.record_heartbeat(trial_id)
            except Exception:
                pass

    def stop(self) -> None:
        self.stop_ev.set()
        self.t.join(timeout=5)


def _counted(trials: list[Any]) -> int:
    """Trials that count against `--trials`: those taken by a worker (not waiting), a failed trial
    that is run again (stale heartbeat, Ctrl-C) not counted (its retry will be)."""
    retried = {t.system_attrs.get("failed_trial") for t in trials} | {
        t.number for t in trials if t.user_attrs.get("requeued")}
    return sum(1 for t in trials if t.number not in retried and t.state.name != "WAITING")


def _trial_metrics(ctx: Index, run_ids: list[int]) -> tuple[dict[str, float], list[str], list[dict[str, float]]]:
    """The median of each metric over the trial's succeeded runs; their statuses; per-run metrics."""
    with ctx.db.read() as s:
        runs = statuses(s, run_ids)
        _labels, metrics = labels_metrics(s, run_ids)
    ok = [metrics[i] for i, st in runs if st == "succeeded"]
    keys = sorted({k for m in ok for k in m})
    med = {k: T.median([m[k] for m in ok if k in m]) for k in keys}
    return {k: v for k, v in med.items() if v is not None}, [st for _, st in runs], ok


class Worker:
    """One worker: a Launch whose points are this study's trials, chosen as it goes."""
    def __init__(self, ctx: Writes, a: TuneArgs, index: int, on_event: Callable[[dict[str, Any]], None] | None,
                 opened: tuple[Any, Any] | None = None) -> None:
        self.ctx, self.a, self.index, self.on_event = ctx, a, index, on_event
        self.ls, self.space, self.conds = _check(ctx, a, worker=index)
        self.study, self.storage = opened or _open_study(ctx, a, self.ls, self.space, self.conds, create=True,
                                                         worker=index)
        self.name = _study_name(self.ls, a)
        self.deadline = None if a.timeout_s is None else time.monotonic() + a.timeout_s
        self.cancelled = False
        self.cancel_signal: str | None = None  # the signal that cancelled the study's launch (SIGTERM)
        self.grid = T.grid_points(self.space) if _sampler_name(a) == "grid" else None

    def _say(self, text: str) -> None:
        if self.on_event is not None:
            self.on_event({"kind": "log", "text": f"tune {self.name}: {text}"})

    def _next_trial(self) -> Any | None:
        """The study's next trial (a waiting retry first), or None when the study has its trials.
        Under optlog's write lock, so workers never take more trials than asked for."""
        optuna = _quiet()
        if self.deadline is not None and time.monotonic() >= self.deadline:
            return None
        with _locked(self.ctx):
            optuna.storages.fail_stale_trials(self.study)
            trials = self.study.get_trials(deepcopy=False)
            if _counted(trials) >= (self.a.trials or 0):
                return None
            waiting = any(t.state == optuna.trial.TrialState.WAITING for t in trials)
            if self.grid is not None and not waiting:  # the grid's next configuration nobody took yet
                taken = [t.params for t in trials]
                nxt = next((c for c in self.grid if c not in taken), None)
                if nxt is None:
                    return None
                self.study.enqueue_trial(nxt)
            return self.study.ask()  # a waiting trial (a retry, the grid's next) first

    def _suggest(self, trial: Any) -> dict[str, Any]:
        def choose(p: T.SearchParam) -> Any:
            if p.kind == "choice":
                return trial.suggest_categorical(p.name, list(p.choices))
            if p.kind == "int":
                return trial.suggest_int(p.name, int(p.low), int(p.high), step=int(p.step or 1), log=p.log)  # type: ignore[arg-type]
            return trial.suggest_float(p.name, float(p.low), float(p.high), step=p.step, log=p.log)  # type: ignore[arg-type]

        return T.active_params(self.space, choose)

    def _same_as(self, params: dict[str, Any], number: int) -> Any | None:
        optuna = _quiet()
        for t in self.study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,)):
            if t.number != number and t.params == params and _attrs(t).get("runs"):
                return t
        return None

    def feed(self, st: dict[str, Any]) -> Generator[dict[str, Any], None, None]:
        """The launch's points: each trial's, made after the previous trial was told its result."""
        optuna = _quiet()

        sets = typed_sets(self.a.sets)
        while not self.cancelled:
            trial = self._next_trial()
            if trial is None:
                return
            tid = self.storage.get_trial_id_from_study_id_trial_number(
                self.storage.get_study_id_from_name(self.name), trial.number)
            hb = _Heartbeat(self.storage, tid, float(self.ctx.config.tune.heartbeat_s))
            done = False
            try:
                params = self._suggest(trial)
                twin = self._same_as(params, trial.number)
                if twin is not None:
                    old = _attrs(twin)
                    kept: dict[str, Any] = {k: old[k] for k in ("runs", "metrics", "constraint") if k in old}
                    trial.set_user_attr(TRIAL_ATTR, {**kept, "worker": self.index, "same_as": twin.number})
                    hb.stop()
                    self.study.tell(trial, list(twin.values))
                    done = True
                    self._say(f"trial {trial.number} {params}: measured already (trial {twin.number})")
                    continue
                if self._prune(trial, params):
                    hb.stop()
                    self.study.tell(trial, state=optuna.trial.TrialState.PRUNED)
                    done = True
                    continue
                points = plan(self.ls, sets, self.a.server_url, trial=params, worker=self.index)
                docs = []
                with self.ctx.db.write(touches="launch") as s:  # queued runs: no evidence yet
                    for p in points:
                        p.labels.update({"study": self.name, "trial": trial.number, "phase": "search"})
                        d = add_point(self.ctx, s, self.ls, p, lid=st["launch"], server_url=self.a.server_url,
                                      hypothesis=self.a.hypothesis, host=st["host"], redact=st["redact"])
                        docs.append(d)
                self._say(f"trial {trial.number}: {params}")
                for d in docs:
                    st["doc"]["points"].append(d)
                    yield d
                hb.stop()
                self._tell(trial, [d["run_id"] for d in docs])
                done = True
            finally:
                if not done:  # cancelled (Ctrl-C, SIGTERM) or an error: the trial is failed and run again later
                    hb.stop()
                    try:
                        trial.set_user_attr("requeued", True)
                        self.study.tell(trial, state=optuna.trial.TrialState.FAIL)
                        self.study.enqueue_trial(trial.params)
                    except Exception:
                        pass

    def _prune(self, trial: Any, params: dict[str, Any]) -> bool:
        """`--prune-above P`: a configuration that an earlier trial, equal but for a lower P, showed to
        break an upper-bound constraint is not launched (Optuna's pruned state; the sampler gets
        that trial's violations). Returns True when `trial` was pruned (its attributes set)."""
        if self.a.prune_above is None:
            return False
        optuna = _quiet()
        earlier = [(t.number, dict(t.params), _attrs(t).get("constraint"))
                   for t in self.study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,))]
        hit = T.pruned_by(params, self.a.prune_above, self.conds, earlier)
        if hit is None:
            return False
        number, i = hit
        old = next(v for n, _p, v in earlier if n == number)
        why = (f"trial {number} broke {self.a.constraints[i]!r} at {self.a.prune_above}="
               f"{next(p for n, p, _v in earlier if n == number)[self.a.prune_above]}")
        trial.set_user_attr(TRIAL_ATTR, {"worker": self.index, "pruned": why, "pruned_by": number, "constraint": old})
        self._say(f"trial {trial.number} {params}: pruned, not launched ({why})")
        return True

    def _tell(self, trial: Any, run_ids: list[int]) -> None:
        optuna = _quiet()
        metrics, statuses, _ok = _trial_metrics(self.ctx, run_ids)
        attrs: dict[str, Any] = {"worker": self.index, "runs": run_ids, "metrics": metrics, "statuses": statuses}
        if self.conds:
            attrs["constraint"] = T.violations(self.conds, metrics)
            absent = sorted({m for c in self.conds for m in T.constraint_metrics(c)} - set(metrics))
            if absent and "succeeded" in statuses:
                why = (f"the runs report no {', '.join(absent)}, so the constraint counts as broken "
                       f"(they have: {', '.join(sorted(metrics)) or 'nothing'})")
                attrs["warning"] = why
                self._say(f"trial {trial.number}: {why}")
        missing = [m for m, _ in self.a.objectives if m not in metrics]
        if missing:
            why = (f"no run of the trial succeeded ({', '.join(statuses)})" if "succeeded" not in statuses else
                   f"the runs report no {', '.join(missing)} (they have: {', '.join(sorted(metrics)) or 'nothing'})")
            attrs["error"] = why
            trial.set_user_attr(TRIAL_ATTR, attrs)
            self.study.tell(trial, state=optuna.trial.TrialState.FAIL)
            self._say(f"trial {trial.number} failed: {why}")
            return
        values = [metrics[m] for m, _ in self.a.objectives]
        trial.set_user_attr(TRIAL_ATTR, attrs)
        self.study.tell(trial, values)
        self._say(f"trial {trial.number}: " + ", ".join(fmt_measured(m, v) for (m, _), v in zip(self.a.objectives, values)))

    def run(self, allow_concurrent: bool) -> dict[str, Any]:

        st = open_launch(self.ctx, self.ls, [], sets=self.a.sets, server_url=self.a.server_url,
                         hypothesis=self.a.hypothesis, allow_concurrent=allow_concurrent, streamed=self.a.trials)
        doc = st["doc"]
        doc["on_error"] = "continue"  # a failed trial is a result for the sampler, not the end of the study
        gen = self.feed(st)
        drv = Driver(self.ctx, st["launch"], on_event=self.on_event, doc=doc, feed=gen)
        try:
            res = drv.run()
        finally:
            gen.close()  # a trial cut short by a cancel is failed and queued again
        self.cancelled = res["status"] == "cancelled"
        self.cancel_signal = res.get("signal") if self.cancelled else None  # exit 128 + it (api/tune)
        write_record(self.ctx, self.ls, st, sets=self.a.sets, server_url=self.a.server_url, hypothesis=self.a.hypothesis)
        return {"launch": st["launch"], "status": res["status"]}


# ----------------------------------------------------------------------------- the command


def tune(ctx: Writes, a: TuneArgs, on_event: Callable[[dict[str, Any]], None] | None = None) -> dict[str, Any]:
    """Run (or resume) a study with `a.workers` local workers; returns the study's document."""
    if a.on:
        return tune_remote(ctx, a, on_event)
    first = _worker_index()
    ls, space, conds = _check(ctx, a)
    opened = _open_study(ctx, a, ls, space, conds, create=True)  # before the other workers start: one creator
    tune_claim.register(ctx, a, ls, space, opened[0], _study_name(ls, a))  # before any trial: pre-registered
    children = []
    logs = ctx.ws.state_dir / "tune"
    logs.mkdir(parents=True, exist_ok=True)
    name = _study_name(ls, a)
    for i in range(1, a.workers):
        log_path = logs / f"{name}.worker-{i}.log"
        with open(log_path, "ab") as log:
            p = subprocess.Popen([sys.executable, "-P", "-m", "optlog.service.tune", "--root", str(ctx.ws.root), "--worker", str(first + i)],
                                 stdin=subprocess.PIPE, stdout=log, stderr=log, cwd=str(ctx.ws.root), env=dict(settings.environ()))
        assert p.stdin is not None
        p.stdin.write(json.dumps(asdict(a)).encode())
        p.stdin.close()
        children.append((p, log_path))
    w = Worker(ctx, a, first, on_event, opened)
    launches = [w.run(allow_concurrent=a.workers > 1 or WORKER_ENV in settings.environ())]
    errors = []
    for p, log_path in children:
        rc = p.wait()
        if rc != 0:
            tail = log_path.read_text(encoding="utf-8", errors="replace").strip().splitlines()
            errors.append(f"worker exited with code {rc}: {tail[-1] if tail else ''} ({ctx.ws.rel(log_path)})")
    rounds = a.remeasure if a.remeasure is not None else ctx.config.tune.remeasure
    if not w.cancelled and rounds > 0:
        rm = _remeasure(ctx, a, w, rounds, on_event)
        if rm is not None:
            launches.append({"launch": rm["launch"], "status": rm["status"], "remeasure": True})
    if not w.cancelled:
        launches += _judge_claim(ctx, a, w, rounds, on_event)
    doc = show(ctx, w.name, storage=w.storage)
    doc["launches"] = launches
    doc["cancelled"] = w.cancelled
    if w.cancel_signal:
        doc["signal"] = w.cancel_signal
    if errors:
        doc["worker_errors"] = errors
    return doc


def _judge_claim(ctx: Writes, a: TuneArgs, w: Worker, rounds: int,
                 on_event: Callable[[dict[str, Any]], None] | None) -> list[dict[str, Any]]:
    """The study's claim (`--claim`), if it has one, judged on its best (service.tune_claim).
    `--remeasure 0` measures nothing after the search, the claim included: the search-only workers
    of `--on` run so, and leave the judging to the one worker that re-measures."""
    if a.remeasure == 0:
        return []
    before = (w.study.user_attrs.get(tune_claim.ATTR) or {}).get("launch")
    best = show(ctx, w.name, storage=w.storage)["best"]
    rec = tune_claim.judge(ctx, a, w.ls, w.study, w.name, best, rounds or ctx.config.tune.remeasure, on_event)
    if rec is None or rec.get("launch") in (None, before):
        return []
    return [{"launch": rec["launch"], "status": rec["status"], "claim": True}]


MAX_FRONT = 4  # re-measured points of a Pareto front (each costs `remeasure` runs)


def _candidates(trials: list[dict[str, Any]], directions: list[str]) -> list[dict[str, Any]]:
    """What to re-measure: the best and the runner-up (one objective), or the front (several)."""
    cands = [t for t in trials if t["state"] == "complete" and t["feasible"] and "same_as" not in t]
    if len(directions) == 1:
        sign = 1 if directions[0] == "maximize" else -1
        return sorted(cands, key=lambda t: -sign * t["values"][0])[:2]
    front = [cands[i] for i in T.pareto_front([t["values"] for t in cands], directions)]
    return front[:MAX_FRONT]


def _remeasure(ctx: Writes, a: TuneArgs, w: Worker, rounds: int,
               on_event: Callable[[dict[str, Any]], None] | None) -> dict[str, Any] | None:
    """Measure the candidates again, `rounds` times each, interleaved (A B A B …, so a drift of the
    machine falls on both), then name the best by the re-measured medians. Stored in the study."""
    trials = [_trial_fields(t) for t in w.study.get_trials(deepcopy=False)]
    directions = [d for _, d in a.objectives]
    cands = _candidates(trials, directions)
    if not cands:
        return None
    key = [[c["number"], c["run"]] for c in cands]
    old = w.study.user_attrs.get("remeasured") or {}
    if old.get("candidates") == key and old.get("rounds") == rounds:
        return None  # measured already (the study was run again with nothing new)
    sets = typed_sets(a.sets)
    points = []
    for r in range(rounds):
        for c in cands:
            p = plan(w.ls, sets, a.server_url, trial=c["params"])[0]
            p.repeat = r
            p.values["repeat"] = r
            p.labels.update({"repeat": r, "study": w.name, "trial": c["number"], "phase": "remeasure"})
            points.append(p)
    st = open_launch(ctx, w.ls, points, sets=a.sets, server_url=a.server_url, hypothesis=a.hypothesis,
                     allow_concurrent=False)
    if on_event is not None:
        on_event({"kind": "log", "text": f"tune {w.name}: re-measuring {'trial' if len(cands) == 1 else 'trials'} "
                                         f"{', '.join(str(c['number']) for c in cands)} × {rounds}, interleaved"})
    res = Driver(ctx, st["launch"], on_event=on_event, doc=st["doc"]).run()
    by_trial: dict[int, list[int]] = {c["number"]: [] for c in cands}
    for d, c in zip(st["doc"]["points"], [c for _ in range(rounds) for c in cands]):
        by_trial[c["number"]].append(d["run_id"])
    out: dict[str, Any] = {}
    samples: dict[int, list[list[float]]] = {}
    for c in cands:
        med, _statuses, ok = _trial_metrics(ctx, by_trial[c["number"]])
        per = [[m[o] for m in ok if o in m] for o, _ in a.objectives]
        samples[c["number"]] = per
        curse = [T.winners_curse(first, xs) for first, xs in zip(c["values"], per)]
        viol = T.violations(w.conds, med) if w.conds else None
        out[str(c["number"])] = {
            "values": [x["median"] for x in curse], "n": min((x["n"] for x in curse), default=0),
            "first": list(c["values"]), "shrink_pct": [x["shrink_pct"] for x in curse], "runs": by_trial[c["number"]],
            "feasible": T.feasible(viol), "samples": per}
    done = [c for c in cands if all(v is not None for v in out[str(c["number"])]["values"])
            and out[str(c["number"])]["feasible"]]
    pts = [out[str(c["number"])]["values"] for c in done]
    if len(directions) == 1:
        i = T.best_index(pts, directions[0])
        winners = [] if i is None else [done[i]["number"]]
    else:
        winners = [done[i]["number"] for i in T.pareto_front(pts, directions)]
    sep = None
    if len(directions) == 1 and len(done) == 2 and winners:
        other = next(c["number"] for c in done if c["number"] != winners[0])
        sep = {**T.separation(samples[winners[0]][0], samples[other][0]), "runner_up": other}
    first_best = [c["number"] for c in cands][:1] if len(directions) == 1 else None
    doc = {"launch": st["launch"], "status": res["status"], "rounds": rounds, "candidates": key,
           "trials": out, "winners": winners, "separation": sep,
           "changed": first_best is not None and winners != first_best}
    w.study.set_user_attr("remeasured", doc)
    return doc


# ----------------------------------------------------------------------------- workers through the executors

WORKER_ENV = "OPTLOG_TUNE_WORKER"  # set for a worker started by `--on`: its index (ports, seeds)


def _worker_index() -> int:
    """This process's worker index: 0, or the one `tune_remote` gave it (OPTLOG_TUNE_WORKER)."""
    raw = settings.read("tune_worker", "0") or "0"
    return int(raw) if raw.isdigit() else 0


def _targets(ctx: Writes, a: TuneArgs, ls: Any) -> list[Any]:
    """The executors of `--on` (the spellings of a spec's `executor:`), checked before anything is
    written: remote workers share the study only through a database every host reaches."""
    if not on_this_machine(ls.spec.executor):
        raise ls.bad(f"{param('on')} runs each worker's trials on the worker's own host, so the spec's executor must be "
                     f"local (or leave out {param('on')} to run the trials through the spec's executor)", "executor")
    out = []
    for on in a.on:
        spelled = parse_on(on)  # each kind's `--on` syntax (optlog.runs.executors)
        if spelled is None:
            raise BadInput(f"{param('on')} {on!r}: use {on_spellings()}", field="on")
        try:
            out.append((on, make_executor(ctx, spelled)))
        except Failed as e:
            raise BadInput(f"{param('on')} {on!r}: {e}", field="on", code="bad_executor") from None
    if ctx.db.is_sqlite:
        raise BadInput(f"{param('on')}: this workspace's database is a SQLite file on this machine (and so is its study, "
                       ".optlog/tune.db), which workers on other hosts cannot share; set OPTLOG_DB_URL to a "
                       "PostgreSQL database every host reaches (docs/tune.md)", field="on", code="not_shared")
    return out


def _worker_argv(ws: Workspace, a: TuneArgs, ls: Any, ex: Any, remeasure: int) -> list[str]:
    """`optlog -C ROOT tune run SPEC …` for one worker: the same study, objectives and constraints.
    Over ssh the host's optlog command (`executors.ssh.HOST.optlog`); in a Slurm job this Python (the
    workspace and optlog live on a filesystem the nodes share)."""
    cmd = shlex.split(getattr(ex, "optlog", None) or "optlog") if not ex.same_python else [sys.executable, "-P", "-m", "optlog"]
    argv = [*cmd, "-C", str(ws.root), "tune", "run", ls.file, "--study", _study_name(ls, a),
            "--trials", str(a.trials), "--remeasure", str(remeasure), "--sampler", _sampler_name(a), "--json"]
    for m, d in a.objectives:
        argv += [f"--{d}", m]
    for c in a.constraints:
        argv += ["--constraint", c]
    for kv in set_texts(a.sets):
        argv += ["--set", kv]
    for flag, v in (("--timeout", a.timeout_s), ("--seed", a.seed), ("--server-url", a.server_url),
                    ("--hypothesis", a.hypothesis), ("--prune-above", a.prune_above),
                    ("--claim", a.claim if remeasure > 0 else None)):  # the re-measuring worker judges it
        if v is not None:
            argv += [flag, str(v)]
    return argv


def _run_workers(ctx: Reads, a: TuneArgs, ls: Any, targets: list[Any], n: int, remeasure: int, tag: str,
                 say: Callable[[str], None]) -> list[dict[str, Any]]:
    """Start `n` workers over `targets` (round robin), wait for all; Ctrl-C or an error ends them all."""
    logs = ctx.ws.state_dir / "tune"
    logs.mkdir(parents=True, exist_ok=True)
    started = []
    try:
        for i in range(n):
            on, ex = targets[i % len(targets)]
            out = logs / f"{_study_name(ls, a)}.{tag}-{i}.json"
            err = logs / f"{_study_name(ls, a)}.{tag}-{i}.log"
            out.unlink(missing_ok=True)
            # the database URL travels in the environment: Slurm exports the submitter's, and both
            # executors keep a value with credentials out of files and command lines
            env = {WORKER_ENV: str(i), "OPTLOG_DB_URL": ctx.db.url}
            try:
                h = ex.popen(_worker_argv(ctx.ws, a, ls, ex, remeasure), env=env, cwd=str(ctx.ws.root), stdout=out,
                             stderr=err, role="tune-worker")
            except OSError as e:
                raise Failed(f"{param('on')} {on}: worker {i} did not start: {e}", field="on", code="worker_start") from None
            say(f"worker {i} started on {on} ({ctx.ws.rel(err)})")
            started.append((i, on, ex, h, out, err))
        docs = []
        for i, on, _ex, h, out, err in started:
            rc = h.wait()
            d: dict[str, Any] = {"worker": i, "on": on, "exit_code": rc, "log": ctx.ws.rel(err)}
            try:
                res = jsondoc.loads(out.read_text(encoding="utf-8"))
                d["launches"] = res.get("launches") or []
            except (OSError, ValueError):
                tail = err.read_text(encoding="utf-8", errors="replace").strip().splitlines() if err.exists() else []
                d["error"] = tail[-1] if tail else f"no result (exit {rc})"
            say(f"worker {i} on {on} ended (exit {rc})")
            docs.append(d)
        return docs
    finally:
        for _i, _on, ex, h, _out, _err in started:
            if h.poll() is None:
                ex.kill(h, grace_s=10.0)


def tune_remote(ctx: Writes, a: TuneArgs, on_event: Callable[[dict[str, Any]], None] | None = None) -> dict[str, Any]:
    """`--on`: one worker per ssh host or Slurm job (max(--workers, the targets) of them, round robin),
    each `optlog tune run` against this workspace's PostgreSQL study; then the re-measure, as one more
    worker on the first target (the trials' kind of machine, not this one)."""
    ls, space, conds = _check(ctx, a)
    targets = _targets(ctx, a, ls)
    study, storage = _open_study(ctx, a, ls, space, conds, create=True)  # one creator, before the workers
    name = _study_name(ls, a)
    tune_claim.register(ctx, a, ls, space, study, name)  # before any trial: pre-registered

    def say(text: str) -> None:
        if on_event is not None:
            on_event({"kind": "log", "text": f"tune {name}: {text}"})

    workers = _run_workers(ctx, a, ls, targets, max(a.workers, len(targets)), 0, "worker", say)
    rounds = a.remeasure if a.remeasure is not None else ctx.config.tune.remeasure
    if rounds > 0 and all(w["exit_code"] == 0 for w in workers):
        workers += _run_workers(ctx, a, ls, targets[:1], 1, rounds, "remeasure", say)
    doc = show(ctx, name, storage=storage)
    doc["launches"] = [la for w in workers for la in w.get("launches", [])]
    doc["workers"] = workers
    doc["cancelled"] = False
    errors = [f"worker {w['worker']} on {w['on']} exited with code {w['exit_code']}: {w.get('error', '')} ({w['log']})"
              for w in workers if w["exit_code"] != 0]
    if errors:
        doc["worker_errors"] = errors
    return doc


# ----------------------------------------------------------------------------- reading studies


def _trial_fields(t: Any) -> dict[str, Any]:
    at = _attrs(t)
    runs = at.get("runs") or []
    d = {"number": t.number, "params": dict(t.params), "values": list(t.values) if t.values else None,
         "state": t.state.name.lower(), "run": runs[0] if runs else None, "runs": runs,
         "feasible": T.feasible(at.get("constraint")) if t.values else None}
    for k in ("same_as", "error", "warning", "worker", "pruned", "pruned_by"):
        if k in at:
            d[k] = at[k]
    if "failed_trial" in t.system_attrs:
        d["retry_of"] = t.system_attrs["failed_trial"]
    return d


def _best(trials: list[dict[str, Any]], directions: list[str]) -> list[dict[str, Any]]:
    """The best feasible completed trial (one objective), or the Pareto front (several)."""
    cands = [t for t in trials if t["state"] == "complete" and t["feasible"] and "same_as" not in t]
    pts = [t["values"] for t in cands]
    if len(directions) == 1:
        i = T.best_index(pts, directions[0])
        idx = [] if i is None else [i]
    else:
        idx = T.pareto_front(pts, directions)
    return [{"number": cands[i]["number"], "params": cands[i]["params"], "values": cands[i]["values"],
             "run": cands[i]["run"], "remeasured": None} for i in idx]


def _remeasured_best(trials: list[dict[str, Any]], rm: dict[str, Any]) -> list[dict[str, Any]]:
    """The best as the re-measure named it: the trial's first reading and its re-measured medians."""
    by = {t["number"]: t for t in trials}
    out = []
    for n in rm.get("winners") or []:
        t = by.get(n)
        if t is None:
            continue
        r = dict(rm["trials"][str(n)])
        r.pop("samples", None)
        out.append({"number": n, "params": t["params"], "values": t["values"], "run": t["run"], "remeasured": r})
    return out


def show(ctx: Reads, name: str, storage: Any = None) -> dict[str, Any]:
    optuna = _quiet()
    storage = storage or _storage(ctx)
    try:
        study = optuna.load_study(study_name=name, storage=storage)
    except KeyError:
        raise NotFound(f"no study {name!r} (optlog tune list shows the studies)", field="study") from None
    meta = study.user_attrs.get(ATTR) or {}
    trials = [_trial_fields(t) for t in study.get_trials(deepcopy=False)]
    directions = [d.name.lower() for d in study.directions]
    rm = study.user_attrs.get("remeasured")
    doc: dict[str, Any] = {"study": name, "spec": meta.get("spec"), "objectives": meta.get("objectives"), "directions": directions,
           "constraints": meta.get("constraints") or [], "sampler": meta.get("sampler"),
           "trials": trials, "best": _best(trials, directions)}
    if rm:
        current = [[c["number"], c["run"]] for c in _candidates(trials, directions)] == rm.get("candidates")
        if current:  # else trials came after it: the first readings' best, until it is re-measured
            doc["best"] = _remeasured_best(trials, rm)
        rdoc: dict[str, Any] = {k: rm.get(k) for k in ("launch", "rounds", "winners", "separation", "changed")}
        doc["remeasure"] = rdoc
        rdoc["current"] = current
        rdoc["trials"] = {k: {x: v[x] for x in ("values", "first", "shrink_pct", "n", "feasible", "runs")}
                                      for k, v in (rm.get("trials") or {}).items()}
    claim = tune_claim.public(study.user_attrs.get(tune_claim.ATTR))
    if claim is not None:
        doc["claim"] = claim
    return doc


def list_studies(ctx: Reads) -> list[dict[str, Any]]:
    optuna = _quiet()
    out = []
    for s in optuna.get_all_study_summaries(_storage(ctx), include_best_trial=False):
        meta = s.user_attrs.get(ATTR) or {}
        out.append({"study": s.study_name, "spec": meta.get("spec"), "objectives": meta.get("objectives"),
                    "directions": [d.name.lower() for d in s.directions], "trials": s.n_trials,
                    "created_at": meta.get("created_at")})
    return out


# ----------------------------------------------------------------------------- for the report


def has_studies(ctx: Reads) -> bool:
    """Whether the workspace has a study storage at all (so a report without one loads no Optuna)."""
    db = ctx.db
    if db.is_sqlite:
        return (ctx.ws.state_dir / "tune.db").is_file()
    return schema_exists(db, f"{db.schema or 'optlog'}_tune")


def report_studies(ctx: Reads) -> list[dict[str, Any]]:
    """Every study as `show` gives it, plus `importances`: Optuna's parameter importances per
    objective (`_importances`), plain values for the report."""
    if not has_studies(ctx):
        return []
    optuna = _quiet()
    storage = _read_storage(ctx)
    out = []
    for s in sorted(optuna.get_all_study_summaries(storage, include_best_trial=False), key=lambda s: s.study_name):
        doc = show(ctx, s.study_name, storage=storage)
        doc["importances"] = _importances(optuna.load_study(study_name=s.study_name, storage=storage),
                                          doc.get("objectives") or [])
        out.append(doc)
    return out


_READERS: dict[str, Any] = {}  # one reading storage per URL: the dashboard asks twice a second


def _read_storage(ctx: Reads) -> Any:
    """The study storage for reading: its tables are not created (nor is the lock taken for it)."""
    optuna = _quiet()
    url, kw = storage_url(ctx, create=False)
    key = f"{url} {kw}"
    if key not in _READERS:
        _READERS[key] = optuna.storages.RDBStorage(url, engine_kwargs=kw, skip_table_creation=True)
    return _READERS[key]


def live_summary(ctx: Reads, name: str) -> dict[str, Any] | None:
    """A study as the dashboard shows it while it runs: its trials by state and its best so far
    (first readings: the re-measure comes at the end). None when there is no such study."""
    if not has_studies(ctx):
        return None
    try:
        doc = show(ctx, name, storage=_read_storage(ctx))
    except NotFound:
        return None
    states: dict[str, int] = {}
    for t in doc["trials"]:
        states[t["state"]] = states.get(t["state"], 0) + 1
    return {"study": name, "objectives": doc.get("objectives") or [], "directions": doc["directions"],
            "trials": len(doc["trials"]), "states": states, "best": doc["best"][:3],
            "remeasured": bool(doc["best"] and doc["best"][0].get("remeasured"))}


def _importances(study: Any, objectives: list[str]) -> dict[str, Any]:
    """{objective: {param: importance}} or {objective: {"why": reason}} where Optuna cannot tell.
    PED-ANOVA: Optuna's evaluator that needs no scikit-learn (fANOVA does) and draws nothing at
    random; it measures what it takes to reach the best 10 % of the completed trials, and it
    assumes lower is better, so a maximised objective is handed to it negated."""
    optuna = _quiet()
    done = [t for t in study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,))]
    directions = [d.name.lower() for d in study.directions]
    out: dict[str, Any] = {}
    for i, m in enumerate(objectives):
        if len(done) < 2:
            out[m] = {"why": f"{plural(len(done), 'completed trial')}: importances need at least 2"}
            continue
        sign = -1.0 if directions[i] == "maximize" else 1.0
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # "assumes lower is better": handled by the sign
                imp = optuna.importance.get_param_importances(
                    study, target=lambda t, i=i, sign=sign: sign * t.values[i],
                    evaluator=optuna.importance.PedAnovaImportanceEvaluator())
        except (ValueError, RuntimeError) as e:
            out[m] = {"why": str(e)}
            continue
        out[m] = {k: round(float(v), 4) for k, v in imp.items()}
    return out


# ----------------------------------------------------------------------------- the other local workers


def _worker_main(argv: list[str]) -> int:
    """`python -m optlog.service.tune --root R --worker I`, its TuneArgs as JSON on stdin."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", required=True)
    ap.add_argument("--worker", type=int, required=True)
    ns = ap.parse_args(argv)
    a = TuneArgs(**jsondoc.loads(sys.stdin.read()))

    ctx = Ctx(Workspace(Path(ns.root)))
    try:
        Worker(ctx, a, ns.worker, None).run(allow_concurrent=True)
    except OptlogError as e:
        print(f"optlog tune worker {ns.worker}: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(_worker_main(sys.argv[1:]))
