"""The launch engine: drives one Launch row's planned points to the end, whatever happens.

For each group of points sharing a rendered server command: start the server in its own process
group, wait until it is ready (HTTP 200 or a log line), run the sanity check (prompts at
temperature 0 must match `expect_regex`), then each point × repeat: the bench command in its own
process group, its result parsed into metrics, stdout/stderr and result files kept under
`.optlog/runs/<run id>/`. The server is torn down after its group, and on every exit path
(failure, timeout, SIGINT/SIGTERM → `cancelled`) every process group is ended; a kill -9 of the
driver itself is handled by `runs.recover` on the next optlog start.

The service (`service.launch`) plans and validates, writes the Launch and its queued Runs, then
calls `Driver(ctx, launch_id).run()` in the foreground or starts `python -m optlog.service.driver`.
"""

from __future__ import annotations

import hashlib
import itertools
import math
import os
import select
import signal
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from optlog import settings
from optlog.core import labels as L
from optlog.core import metrics as M
from optlog.core.failure import classify
from optlog.core.labels import CONCURRENT
from optlog.core.numfmt import fmt_measured, fmt_seconds, fmt_written, plural
from optlog.core.timeutil import now_iso
from optlog.errors import Interrupted
from optlog.needs import Launches
from optlog.runs import interrupt, ports, procs, tree
from optlog.runs.cgroup import LaunchCgroup
from optlog.runs.executors.registry import make_executor
from optlog.runs.hostwatch import HostWatch
from optlog.runs.inside import bench_env
from optlog.runs.modelfacts import discover
from optlog.runs.parsers import parse_result, select_result_files, unique
from optlog.runs.readiness import Readiness
from optlog.runs.redact import Redactor
from optlog.runs.results import AMBIGUOUS, Ambiguous, distinguishing_keys
from optlog.runs.serving import Cancelled, PointFailure, Server, read_tail, server_died
from optlog.runs.spec import resolve_cwd
from optlog.runs.targetlock import open_lock
from optlog.store import launchrows, runrows
from optlog.telemetry.session import open_session

TERMINAL = ("succeeded", "failed", "cancelled", "interrupted")
LOG_NAMES = ("bench.stdout.log", "bench.stderr.log")


@dataclass
class Result:
    """One result of a point: what one run stores. `where`: which result of which file it is."""

    metrics: dict[str, float]
    labels: dict[str, Any]
    raw: dict[str, Any]
    where: dict[str, Any] | None


class Driver:
    def __init__(self, ctx: Launches, launch_id: int, *, on_event: Callable[[dict[str, Any]], None] | None = None,
                 install_signals: bool = True, doc: dict[str, Any] | None = None,
                 feed: Iterable[dict[str, Any]] | None = None) -> None:
        self.ctx = ctx
        # points made while the launch runs (optlog tune: the next trial is chosen after the last one
        # ran), instead of doc["points"]; consecutive points with one server key share the server
        self.feed = feed
        self.given_doc = doc  # the unredacted document (the stored one is redacted); None: the stored one
        # (the environment too: what `{{ env.NAME }}` rendered, what a bench may print it inherited)
        self.redactor = Redactor.of(*(() if doc is None else (doc,)), environ=settings.environ())
        self.launch_id = launch_id
        self.on_event = on_event
        self.install_signals = install_signals and threading.current_thread() is threading.main_thread()
        self.cancel_reason: str | None = None
        self.cancel_signal: str | None = None  # the signal's name when one cancelled the launch
        self.handles: list[Any] = []
        self._dead_records: list[int] = []
        self.current_run: int | None = None
        self.t0 = time.monotonic()
        self.done = 0
        self.last_metric: tuple[str, float] | None = None
        self.telemetry: Any = None
        self._log_file: Any = None
        self.ready = Readiness(self.check_cancel, self._interruptible, self.log)

    # ------------------------------------------------------------------ narration
    def log(self, text: str) -> None:
        text = self.redactor.text(text)
        line = f"{now_iso()} {text}"
        if self._log_file is not None:
            try:
                self._log_file.write(line + "\n")
                self._log_file.flush()
            except OSError:
                pass
        self._event({"kind": "log", "text": text})

    def _event(self, ev: dict[str, Any]) -> None:
        if self.on_event is not None:
            try:
                self.on_event(self.redactor.redact(ev))
            except Exception:
                pass

    # ------------------------------------------------------------------ signals (runs.interrupt)
    def _heard(self, signum: int) -> None:
        if self.cancel_reason is None:
            self.cancel_reason = f"cancelled by {signal.Signals(signum).name}"
            self.cancel_signal = signal.Signals(signum).name

    def check_cancel(self) -> None:
        if self.install_signals and (sig := interrupt.received()) is not None:
            self._heard(sig)
        if self.cancel_reason is not None:
            raise Cancelled(self.cancel_reason)

    @contextmanager
    def _interruptible(self) -> Iterator[None]:
        """A wait on another process (a health poll, an HTTP request): a signal cuts it short at once
        instead of at the driver's next step."""
        if not self.install_signals:
            yield
            return
        try:
            with interrupt.raising():
                yield
        except Interrupted as e:
            self._heard(e.signum)
            raise Cancelled(self.cancel_reason or str(e)) from None

    # ------------------------------------------------------------------ process records
    def _on_spawn(self, h: Any) -> None:
        self.handles.append(h)
        if h.role == "bench":
            return  # recorded in the same transaction that marks its run running (see _run_point)
        with self.ctx.db.write(touches="launch") as s:
            self._insert_record(s, h, None)

    def _on_exit(self, h: Any) -> None:
        if getattr(h, "record_id", None) is not None:
            self._dead_records.append(h.record_id)

    def _set_run(self, s: Any, rid: int, **values: Any) -> None:
        if values.get("status") == "succeeded" and not self.ctx.db.moves_evidence():
            raise RuntimeError(f"run {rid} made evidence in a write that keeps the evidence counter")  # (a bug)
        runrows.update_run(s, rid, **values)

    def _set_launch(self, s: Any, **values: Any) -> None:
        launchrows.update_launch(s, self.launch_id, **values)

    def _insert_record(self, s: Any, h: Any, run_id: int | None) -> None:
        h.record_id = launchrows.insert_process_record(s, launch_id=self.launch_id, run_id=run_id, role=h.role,
                                                       pid=h.pid, pgid=h.pgid, start_ticks=h.start_ticks, host=h.host)

    def _flush_dead(self, s: Any) -> None:
        if self._dead_records:
            ids, self._dead_records = self._dead_records, []
            launchrows.mark_records_dead(s, ids)

    # ------------------------------------------------------------------ the whole launch
    def run(self) -> dict[str, Any]:
        # SIGINT, SIGTERM and SIGHUP cancel the launch (runs.interrupt): heard from here on, inside
        # the launch verb's scope when there is one; noted, and acted on at the driver's next step
        with interrupt.scope(raising=False) if self.install_signals else nullcontext():
            return self._drive()

    def _drive(self) -> dict[str, Any]:
        ctx = self.ctx
        with ctx.db.read() as s:
            la = launchrows.launch(s, self.launch_id)
        if la is None:
            raise RuntimeError(f"no launch {self.launch_id}")
        self.doc: dict[str, Any] = self.given_doc if self.given_doc is not None else la.spec
        self.launch_dir = ctx.ws.state_dir / "launches" / str(self.launch_id)
        self.launch_dir.mkdir(parents=True, exist_ok=True)
        self._log_file = open(self.launch_dir / "launch.log", "a", encoding="utf-8")
        points: list[dict[str, Any]] = self.doc["points"]
        self.total = len(points) if self.feed is None else int(self.doc.get("total") or 0)
        token = self.doc.get("token", "")
        self.token = token
        # orphaned descendants (a daemonizing server's workers) are re-parented to this driver

        self.orphans_since = tree.now_ticks() if self.install_signals and tree.become_subreaper() else None
        with ctx.db.write(touches="launch") as s:
            self._set_launch(s, status="running", pid=os.getpid(), pid_start=str(procs.start_ticks(os.getpid())),
                             progress=self._progress(None))
        self.executor = make_executor(ctx, self.doc.get("executor", "local"), on_spawn=self._on_spawn,
                                      on_exit=self._on_exit,
                                      base_env={**settings.environ(), "OPTLOG_LAUNCH_TOKEN": token})
        self.host = HostWatch(ctx, self.executor, token, lambda: self.handles, self.log, self._interruptible)

        # a cgroup v2 of its own where one can be made: the kernel's list of the launch's processes
        self.cgroup = LaunchCgroup.create(token) if self.executor.on_this_machine else None
        if self.cgroup is not None:
            self.executor.cgroup = self.cgroup  # type: ignore[attr-defined]
        self._event({"kind": "started", "total": self.total, "done": 0})
        self.log(f"launch {self.launch_id} ({self.doc.get('name')}): " + (
            f"{plural(self.total, 'run')}, {plural(len({p['server_key'] for p in points}), 'server configuration')}"
            if self.feed is None else f"runs chosen as it goes (at most {self.total})"))
        failed_any = False
        stop_reason: str | None = None
        error: str | None = None

        self.target_lock = (None if self.doc.get("lock") is False  # service.launch(lock=False): none taken
                            else open_lock(ctx, self.doc.get("executor", "local"), self.launch_id, points=points))
        try:
            if self.target_lock is not None:  # one launch at a time on a machine or GPU set, unless allowed
                self.target_lock.acquire(allow_concurrent=bool(self.doc.get("allow_concurrent")), say=self.log,
                                         check_cancel=self.check_cancel, on_wait=self._waiting)
            groups = itertools.groupby(points if self.feed is None else self.feed, key=lambda p: p["server_key"])
            for gi, (_key, group) in enumerate(groups):
                if stop_reason:
                    break
                failed_any |= self._run_group(gi, group)
                if failed_any and self.doc.get("on_error") == "stop":
                    stop_reason = "not run: an earlier point failed and on_error is stop"
        except Cancelled as e:
            self.log(f"cancelling: {e}")
        except BaseException as e:  # an optlog bug must still end every process and say why
            error = f"{type(e).__name__}: {e}"
            self.log(f"launch driver error: {error}")
            if not isinstance(e, Exception):
                raise
        finally:
            if self.install_signals and (sig := interrupt.received()) is not None:
                self._heard(sig)  # a signal while the last point was stored still cancels the launch
            self._kill_all()
            if self.telemetry is not None:
                self._telemetry_stop()
            if self.target_lock is not None:
                self.target_lock.release()
            status = self._finish(stop_reason, error)
            self.log(f"launch {self.launch_id} {status} in {fmt_seconds(time.monotonic() - self.t0)}")
            self._event({"kind": "finished", "status": status})
            self._log_file.close()
            self._log_file = None
        return self.result()

    def _finish(self, stop_reason: str | None, error: str | None) -> str:
        now = now_iso()
        with self.ctx.db.write(touches="launch") as s:
            self._flush_dead(s)
            for r in launchrows.live_runs(s, self.launch_id):
                if self.cancel_reason:
                    r.status, r.error, r.cause = "cancelled", self.cancel_reason, "cancelled"
                elif error:
                    r.status, r.error, r.cause = "failed", f"launch driver error: {error}", "optlog_error"
                else:
                    r.status, r.error, r.cause = "cancelled", stop_reason or "not run", "not_run"
                r.finished_at = now
                s.add(r)
            statuses = [st for _, st, _, _ in launchrows.run_states(s, self.launch_id)]
            if self.cancel_reason:
                status = "cancelled"
            elif error or any(x != "succeeded" for x in statuses):
                status = "failed"
            else:
                status = "succeeded"
            self._set_launch(s, status=status, finished_at=now,
                             error=self.redactor.text(error or self.cancel_reason or stop_reason or "") or None,
                             progress=self._progress(None, final=True))
        return status

    def result(self) -> dict[str, Any]:
        with self.ctx.db.read() as s:
            la = launchrows.launch(s, self.launch_id)
            runs = runrows.runs_of_launch(s, self.launch_id)
            labels, metrics = runrows.labels_metrics(s, [runrows.saved_id(r) for r in runs])
        if la is None:
            raise RuntimeError(f"no launch {self.launch_id}")
        return {
            "launch": self.launch_id,
            "name": self.doc.get("name"),
            "status": la.status,
            "error": la.error,
            **({"signal": self.cancel_signal} if self.cancel_signal and la.status == "cancelled" else {}),
            "runs": [{"id": r.id, "status": r.status, "labels": labels[runrows.saved_id(r)],
                      "metrics": metrics[runrows.saved_id(r)],
                      "exit_code": r.exit_code, "error": r.error, "cause": r.cause,
                      "artifacts_dir": r.artifacts_dir} for r in runs],
        }

    def _waiting(self, holder: str | None) -> None:
        """The launch's progress says whom it waits for (`run wait` answers `waiting` then)."""
        pr = self._progress(None)
        if holder is not None:
            pr["waiting_for"] = holder
        with self.ctx.db.write(touches="launch") as s:
            self._set_launch(s, progress=pr)

    def _progress(self, current: dict[str, Any] | None, final: bool = False) -> dict[str, Any]:
        return {
            "done": self.done,
            "total": getattr(self, "total", 0),
            "current": None if final or current is None else {"run": current["run_id"], "labels": current["labels"]},
            "elapsed_s": round(time.monotonic() - self.t0, 3),
            "last_metric": list(self.last_metric) if self.last_metric else None,
        }

    def _kill_all(self) -> None:
        stop_s = float(self.doc.get("stop_s", 30))
        for h in list(self.handles):
            if h.poll() is None:  # an exited leader's strays were ended when it was reaped
                self.executor.kill(h, grace_s=min(stop_s, 10.0))
        self.handles = [h for h in self.handles if h.returncode is None]
        # and whatever left every group: the launch's token in its environment, or re-parented to us
        left = tree.find(token=getattr(self, "token", None) or None, orphans_since=getattr(self, "orphans_since", None))
        if left:
            known = {h.pid for h in self.handles}  # still-unreaped leaders keep their Popen's wait
            n = tree.end(left, grace_s=min(stop_s, 5.0),
                         reap={st.pid for st in left if st.ppid == os.getpid() and st.pid not in known})
            if n:
                self.log(f"ended {n} process(es) that had left their process group")
        cg = getattr(self, "cgroup", None)
        if cg is not None and cg.kill():
            self.log("ended the processes left in the launch's cgroup")

    # ------------------------------------------------------------------ one server group
    def _run_group(self, gi: int, group: Iterable[dict[str, Any]]) -> bool:
        """Returns True when any point of the group failed. `group` may be lazy (a feed): each point
        is taken only after the one before it ran."""
        failed = False
        server: Server | None = None
        points = iter(group)
        try:
            for p in points:
                self.check_cancel()
                if server is None or (server.handle is not None and server.handle.poll() is not None):
                    if server is not None:
                        self._stop_server(server)
                    try:
                        server = self._start_server(gi, p)
                    except PointFailure as e:
                        # the server of this group cannot serve: every remaining point fails with the reason
                        self._fail_unstarted(p, e)
                        for q in points:
                            self._fail_unstarted(q, e)
                        return True
                ok = self._run_point(p, server)
                failed |= not ok
                if not ok and self.doc.get("on_error") == "stop":
                    return True
        finally:
            if self.telemetry is not None:
                self._telemetry_stop()
            if server is not None:
                self._stop_server(server)
        return failed

    def _fail_unstarted(self, p: dict[str, Any], e: PointFailure) -> None:

        now = now_iso()
        with self.ctx.db.write(touches="launch") as s:
            self._flush_dead(s)
            self._set_run(s, p["run_id"], status=e.status, error=self.redactor.text(e.message), cause=e.cause, exit_code=e.exit_code,
                          started_at=now, finished_at=now, host=self.executor.host)
            self.done += 1
            self._set_launch(s, progress=self._progress(None))
        self.log(f"run {p['run_id']} {e.status}: {e.message.splitlines()[0] if e.message else ''}")
        self._event({"kind": "point_end", "run": p["run_id"], "status": e.status, "done": self.done,
                     "total": self.total, "labels": p["labels"], "error": e.message})

    def _start_server(self, gi: int, p: dict[str, Any]) -> Server:
        srv = p["rendered"].get("server")
        external = self.doc.get("server_url")
        if external:
            server = Server(gi, srv, url=external)
            self.ready.wait_external(server, srv)
        elif srv is None:
            server = Server(gi, None)
        else:
            n = len(list(self.launch_dir.glob("server-*.stdout.log")))
            server = Server(gi, srv, stdout=self.launch_dir / f"server-{n}.stdout.log",
                            stderr=self.launch_dir / f"server-{n}.stderr.log", url=p["rendered"].get("server_url"))
            port = ports.server_port(srv) if self.executor.on_this_machine else None
            if port is not None and ports.in_use(port):  # taken since the launch was planned
                raise PointFailure(f"server not started: {ports.describe(port)}", cause="port_in_use")
            self.log(f"starting server {n}: {' '.join(srv['argv'])}")
            self.current_run = None
            try:
                server.handle = self.executor.popen(srv["argv"], env=srv["env"], cwd=self._cwd(srv["cwd"]),
                                                    stdout=server.stdout, stderr=server.stderr, role="server")
            except OSError as e:
                raise PointFailure(f"server could not start: {e}", cause="not_found" if isinstance(e, FileNotFoundError) else "spawn_error",
                                   exit_code=127) from None
            try:
                self.ready.wait_ready(server, srv.get("ready"))
                if port is not None:
                    self.ready.check_ours(server, port, getattr(self, "orphans_since", None))
                self.log(f"server {n} ready")
                if srv.get("check"):
                    self.ready.sanity_check(server, srv["check"])
            except PointFailure:
                self._stop_server(server)
                raise
        if srv and srv.get("check") and external:
            self.ready.sanity_check(server, srv["check"])
        if srv is not None or external:
            self._model_facts(server, srv)
        if self.telemetry is not None:  # a restarted server gets a fresh session
            self._telemetry_stop()
        self._telemetry_start(p)
        return server

    def _model_facts(self, server: Server, srv: dict[str, Any] | None) -> None:
        """The served model's facts (work counts) from its server and files (runs.modelfacts), once per
        server start: stored with every run as `model_*` metrics, their sources in the environment."""
        try:
            with self._interruptible():
                mf = discover(server.url, (srv or {}).get("argv"), local=self.executor.on_this_machine)
        except Cancelled:
            raise
        except Exception as e:  # never fail a launch for its facts
            self.log(f"model facts not read: {type(e).__name__}: {e}")
            return
        server.model_facts = mf
        if mf.facts:
            f = mf.facts
            shown = ", ".join(fmt_measured(k, f[k]) for k in ("active_params", "param_bytes", "kv_bytes_per_token",
                                                              "n_expert") if k in f)
            src = mf.sources.get("active_params") or next(iter(mf.sources.values()), "")
            self.log(f"model facts: {shown} (from {src})")
        else:
            self.log("model facts: none found" + (f" ({'; '.join(mf.notes)})" if mf.notes else ""))

    def _stop_server(self, server: Server) -> None:
        h = server.handle
        if h is None:
            return
        srv = server.rendered or {}
        stop = srv.get("stop") or {}
        grace = float(stop.get("timeout_s") or 30)
        if h.returncode is None and h.poll() is None and stop.get("argv"):
            try:
                sh = self.executor.popen(stop["argv"], env=srv.get("env") or {}, cwd=self._cwd(srv.get("cwd")),
                                         stdout=server.stdout, stderr=server.stderr, role="stop")
                if _wait_grace(sh, grace) is None:
                    self.executor.kill(sh, grace_s=1.0)
                _wait_grace(h, grace)
            except OSError as e:
                self.log(f"server stop command failed: {e}")
        sig = getattr(signal, stop.get("signal") or "SIGTERM", signal.SIGTERM)
        self.executor.kill(h, sig=sig, grace_s=grace)
        name = server.stdout.name.split(".")[0] if server.stdout else "server"
        self.log(f"{name} stopped (exit {h.returncode})")
        server.handle = None
        with self.ctx.db.write(touches="launch") as s:
            self._flush_dead(s)

    def _cwd(self, cwd: str | None) -> str:
        if not self.executor.on_this_machine:
            return cwd or str(self.ctx.ws.root)

        return str(resolve_cwd(self.ctx.ws.root, cwd))

    # ------------------------------------------------------------------ telemetry
    def _telemetry_start(self, p: dict[str, Any]) -> None:
        tel = p["rendered"].get("telemetry")
        if tel is False:
            return

        settings: dict[str, Any] = {}
        try:
            settings = self.ctx.config.telemetry.model_dump()
        except Exception:
            pass
        if isinstance(tel, dict):
            settings.update(tel)
        if settings.get("enabled") is False:
            return
        srv = p["rendered"].get("server") or {}
        # The GPUs to watch are the server's; with no server, the bench's (a probe or a local
        # benchmark that pins CUDA_VISIBLE_DEVICES) — otherwise idle GPUs dilute the summaries.
        env = dict(srv.get("env") or {}) if srv else dict((p["rendered"].get("bench") or {}).get("env") or {})
        try:
            sess = open_session(self.ctx, launch_id=self.launch_id, settings=settings, env=env,
                                executor=self.executor)
            if sess is not None:
                sess.start()
            self.telemetry = sess
        except Exception as e:
            self.log(f"telemetry unavailable: {type(e).__name__}: {e}")
            self.telemetry = None

    def _telemetry_stop(self) -> None:
        sess, self.telemetry = self.telemetry, None
        try:
            sess.stop()
        except Exception as e:
            self.log(f"telemetry stop failed: {type(e).__name__}: {e}")

    # ------------------------------------------------------------------ one point
    def _run_point(self, p: dict[str, Any], server: Server) -> bool:

        rid = p["run_id"]
        b = p["rendered"]["bench"]
        out = Path(b["out"])
        out.mkdir(parents=True, exist_ok=True)
        self.current_run = rid

        def started(h: Any) -> None:
            with self.ctx.db.write(touches="launch") as s:
                self._set_run(s, rid, status="running", started_at=now_iso(), host=self.executor.host)
                if h is not None:
                    self._insert_record(s, h, rid)
                self._set_launch(s, progress=self._progress(p))

        self._started = started
        self._event({"kind": "point_start", "run": rid, "done": self.done, "total": self.total, "labels": p["labels"]})
        if self.telemetry is not None:
            try:
                self.telemetry.begin_point(rid)
            except Exception as e:
                self.log(f"telemetry begin_point failed: {e}")
        status, error, cause, rc = "succeeded", None, None, None
        results: list[Result] = []  # what the result file(s) hold: one run each (runs.results)
        lock = getattr(self, "target_lock", None)
        snap = lock.snapshot() if lock is not None else None
        load_before = self.host.load()
        load_after: dict[str, Any] | None = None
        share = self.host.tree_load(p)
        tree_load: dict[str, float] = {}
        try:
            rc = self._bench(b, out, server, started)
            load_after = self.host.load()
            if rc != 0:
                log = read_tail(out / "bench.stderr.log") or read_tail(out / "bench.stdout.log")
                raise PointFailure(f"bench exited with code {rc}" + (f"\n--- stderr tail ---\n{log}" if log else ""),
                                   cause=classify(log + "\n" + read_tail(out / "bench.stdout.log", 10), rc), exit_code=rc)
            results = self._parse(b, out, p["labels"])
        except PointFailure as e:
            status, error, cause = e.status, e.message, e.cause
            rc = e.exit_code if e.exit_code is not None else rc
        except Cancelled as e:
            status, error, cause = "cancelled", str(e), "cancelled"
        finally:
            tree_load = share.stop() if share is not None else {}
        if not results:  # failed or cancelled: the point's run says why
            results = [Result({}, {}, {}, None)]
        mf = getattr(server, "model_facts", None)
        if mf is not None and mf.facts and status == "succeeded":
            for res in results:  # what the server's model is, beside what the bench measured
                for k, v in mf.metrics().items():
                    res.metrics.setdefault(k, v)
        if self.telemetry is not None:
            try:
                # one telemetry window per point: its summary belongs to a run only when the point has one
                one = len(results) == 1
                extra = self.telemetry.end_point(
                    rid, dict(results[0].metrics) if one else {},
                    windows=results[0].raw.get("windows") if one and isinstance(results[0].raw, dict) else None,
                    fact_sources=mf.sources if mf is not None else None,
                    labels=dict(results[0].labels) if one else None) or {}
                if len(results) == 1:
                    results[0].metrics.update({k: float(v) for k, v in extra.items() if v is not None})
                elif extra:
                    self.log(f"run {rid}: telemetry covers all {len(results)} results of the point together; "
                             "its summary is stored with none of them")
            except Exception as e:
                self.log(f"telemetry end_point failed: {e}")
        flags: dict[str, Any] = {}
        if lock is not None and snap is not None and lock.overlapped(snap):
            flags[CONCURRENT] = "true"  # another launch ran on this target meanwhile
        for res in results:  # the load the point's processes ran under is a fact of each of its runs
            res.metrics.update({k: v for k, v in tree_load.items() if k not in res.metrics})
        environment = self.host.environment(server, p) if status != "cancelled" else {}
        if environment:
            environment.update(self.host.doc(p, load_before, load_after, flags, tree_load))
            if mf is not None and (mf.facts or mf.notes):
                environment["model_facts"] = mf.to_json()
        for i, res in enumerate(results):
            q = p if i == 0 else {**p, "run_id": self._result_run(p)}
            rs, rerr, rcause = status, error, cause
            if status == "succeeded" and res.where and res.where.get("status") == "failed":
                rs, rerr, rcause = "failed", "the result says no request completed", "no_request_completed"
            self._store(q, rs, rerr, rcause, rc, res.metrics, {**res.labels, **flags}, res.raw, environment,
                        result_of=res.where, point=i == 0)
        if status == "cancelled":
            raise Cancelled(error or "cancelled")
        return status == "succeeded"

    def _result_run(self, p: dict[str, Any]) -> int:
        """A run for a further result of point `p`: a copy of the point's run (its labels, launch,
        repeat, output folder, hypothesis) that the result's labels and metrics then complete."""
        with self.ctx.db.write(touches="launch") as s:
            r = runrows.run(s, p["run_id"])
            if r is None:
                raise RuntimeError(f"no run {p['run_id']}")
            return runrows.insert_run(s, labels=self.redactor.redact(p["labels"]), metrics={}, status="running",
                              source=r.source, hypothesis_id=r.hypothesis_id, name=r.name, launch_id=r.launch_id,
                              repeat=r.repeat, artifacts_dir=r.artifacts_dir, host=r.host, started_at=r.started_at,
                              finished_at=None, raw=dict(r.raw or {}))

    def _store(self, p: dict[str, Any], status: str, error: str | None, cause: str | None, rc: int | None,
               metrics: dict[str, float], extra_labels: dict[str, Any], raw: dict[str, Any],
               environment: dict[str, Any], *, result_of: dict[str, Any] | None = None, point: bool = True) -> None:
        """Store one run's outcome; `point` False: a further result of a point already counted."""
        rid = p["run_id"]
        red = self.redactor  # what is stored is redacted: labels, error, environment, raw, argv
        extra_labels, raw, environment = red.redact(extra_labels), red.redact(raw), red.redact(environment)
        error = red.text(error) if error else error
        label_rows = [{"run_id": rid, "key": k, "value": L.canonical(v), "num": L.as_number(v)}
                      for k, v in extra_labels.items()
                      if k not in p["labels"] and L.KEY_RE.match(str(k)) and v is not None]
        metric_rows = []
        for k, v in metrics.items():
            try:
                fv = float(v)
            except (TypeError, ValueError):
                continue
            if not math.isnan(fv):
                metric_rows.append({"run_id": rid, "name": str(k), "value": fv})
        argv = red.redact(p["rendered"]["bench"]["argv"])
        with self.ctx.db.write(touches="append" if status == "succeeded" else "launch") as s:
            self._flush_dead(s)
            if status == "succeeded":  # the run counts from now: journalled, so what is due is carried over it
                self.ctx.db.appended(rid)
            self._set_run(s, rid, status=status, error=error, cause=cause, exit_code=rc, finished_at=now_iso(),
                          environment=environment,
                          raw=red.redact({**p.get("record", {}), **({"result": raw} if raw else {}), "argv": argv,
                                          **({"result_of": result_of} if result_of else {})}))
            runrows.add_label_and_metric_rows(s, label_rows, metric_rows)
            self.done += point
            if metrics:
                key = next((k for k in M.HEADLINE_THROUGHPUT
                            if k in metrics), next(iter(metrics)))
                self.last_metric = (key, float(metrics[key]))
            self._set_launch(s, progress=self._progress(None))
        first = (error or "").splitlines()[0] if error else ""
        m = f" {fmt_measured(*self.last_metric)}" if status == "succeeded" and self.last_metric else ""
        shown = {**p["labels"], **{k: extra_labels[k] for k in (result_of or {}).get("told_apart_by", [])
                                     if k in extra_labels}}
        self.log(f"run {rid} {status} [{self.done}/{self.total}] {_fmt_labels(shown)}{m}"
                 + (f": {first}" if first else "") + (f" (cause: {cause})" if cause and status == 'failed' else ""))
        self._event({"kind": "point_end", "run": rid, "status": status, "done": self.done, "total": self.total,
                     "labels": p["labels"], "error": error, "cause": cause, "last_metric": self.last_metric})

    def _bench(self, b: dict[str, Any], out: Path, server: Server, started: Callable[[Any], None]) -> int:
        try:
            # optlog's load generator warms up only the first bench after a server (re)start
            env = {**b["env"], **bench_env(self.launch_id, self.current_run or 0, str(out)),
                   "OPTLOG_SERVER_FRESH": "0" if server.benched else "1"}
            server.benched = True
            h = self.executor.popen(b["argv"], env=env, cwd=self._cwd(b["cwd"]),
                                    stdout=out / "bench.stdout.log", stderr=out / "bench.stderr.log", role="bench")
        except FileNotFoundError:
            started(None)
            if b["cwd"] and not Path(self._cwd(b["cwd"])).is_dir():
                raise PointFailure(f"bench cwd is not a folder: {b['cwd']}", cause="not_found", exit_code=127) from None
            raise PointFailure(f"bench command not found: {b['argv'][0]}", cause="not_found", exit_code=127) from None
        except OSError as e:
            started(None)
            raise PointFailure(f"bench command could not start: {e}", cause="spawn_error", exit_code=126) from None
        try:
            started(h)
        except BaseException:
            self.executor.kill(h, grace_s=1.0)
            raise
        timeout = b.get("timeout_s")
        deadline = None if timeout is None else time.monotonic() + float(timeout)
        fds = [x for x in (h.fileno(), server.fileno()) if x is not None]
        try:
            while True:
                rc = h.poll()
                if rc is not None:
                    return rc
                self.check_cancel()
                if server.handle is not None and server.handle.poll() is not None:
                    self.executor.kill(h, grace_s=2.0)
                    raise server_died(server, "during the point")
                now = time.monotonic()
                if deadline is not None and now >= deadline:
                    self.executor.kill(h, grace_s=2.0)
                    log = read_tail(out / "bench.stderr.log", 10)
                    raise PointFailure(f"bench timed out after {fmt_written(float(timeout))}s"  # type: ignore[arg-type]
                                       + (f"\n--- stderr tail ---\n{log}" if log else ""), cause="timeout")
                wait = 0.1 if deadline is None else max(0.0, min(0.1, deadline - now))
                if fds and len(fds) == (1 + (server.handle is not None)):
                    try:
                        select.select(fds, [], [], wait)
                    except (InterruptedError, OSError):
                        pass
                else:
                    h.wait(wait)
        except BaseException:
            if h.returncode is None:
                self.executor.kill(h, grace_s=2.0)
            raise

    def _parse(self, b: dict[str, Any], out: Path, point_labels: dict[str, Any]) -> list[Result]:
        """Every result the bench left, one per run (runs.results: several are told apart by their
        labels, or refused); PointFailure when there is none or they cannot be told apart."""

        files: list[Path]
        parser = b.get("parser") or "json"
        left_out: list[str] = []
        home = out.resolve()
        if b.get("results"):
            # (a link the bench left that leads out of the folder is not followed: runs.spec refuses
            # such globs; this keeps a stored spec from an older release to the same rule)
            files = sorted({p for g in b["results"] if not g.startswith("/") for p in out.glob(g)
                            if p.is_file() and p.resolve().is_relative_to(home)})
        else:
            files = sorted(p for p in out.rglob("*") if p.is_file() and p.name not in LOG_NAMES
                           and p.resolve().is_relative_to(home))
            if files:
                every, files = files, select_result_files(files, parser)
                left_out = [self._rel(p) for p in every if p not in files]
                if left_out:  # said, so that a second result file is never dropped silently
                    self.log(f"run {self.current_run}: read {', '.join(self._rel(p) for p in files)} "
                             f"(parser {parser}); left out {', '.join(left_out)} (name the files with "
                             "bench.results to read them)")
        if not files:
            raise PointFailure(f"bench exited 0 but left no result file in {out} (parser {parser})", cause="no_result",
                               exit_code=0)
        names = ", ".join(self._rel(p) for p in files)
        try:
            parsed = parse_result(files, parser, b.get("key_map"))
            if not parsed:
                raise PointFailure(f"parser {parser} found no result in {names}", cause="parse_error", exit_code=0)
        except PointFailure:
            raise
        except Exception as e:
            raise PointFailure(f"result parse failed (parser {parser}): {e}", cause="parse_error", exit_code=0) from None
        parsed, said = unique(parsed)  # each measurement once (a sweep's run files and its summary)
        for line in said:
            self.log(f"run {self.current_run}: {line}")
        sources = [self._rel(Path(r.file)) + r.source[len(r.file):] if r.file and r.source.startswith(r.file)
                   else r.source for r in parsed]
        try:
            keys = distinguishing_keys(point_labels, [r.labels for r in parsed], sources, names)
        except Ambiguous as e:
            raise PointFailure(str(e), cause=AMBIGUOUS, exit_code=0) from None
        if len(parsed) > 1:
            self.log(f"run {self.current_run}: {len(parsed)} results in {names}, told apart by "
                     f"{', '.join(keys)}: one run each")
        # what identifies each result wherever its file goes next (a copy imported later is this run:
        # service.imports reads `sha256` and `measurement` back)
        shas = {str(p): hashlib.sha256(p.read_bytes()).hexdigest() for p in files}
        return [Result(dict(r.metrics), dict(r.labels), dict(getattr(r, "raw", {}) or {}),
                       {"file": self._rel(Path(r.file)) if r.file else names, "where": sources[i], "index": i,
                        "of": len(parsed), "told_apart_by": keys, "point_run": self.current_run,
                        **({"sha256": shas[r.file]} if r.file in shas else {}),
                        **({"measurement": r.measurement()} if r.measurement() else {}),
                        **({"left_out": left_out} if left_out else {}),
                        **({"status": r.status} if r.status != "succeeded" else {}),
                        **({"corrections": r.notes} if r.notes else {})})
                for i, r in enumerate(parsed)]

    def _rel(self, p: Path) -> str:
        return str(self.ctx.ws.rel(p))


def _wait_grace(h: Any, grace_s: float) -> int | None:
    """Wait up to `grace_s` for `h` to exit, less once a signal cancelled the launch
    (runs.interrupt.grace_left); its exit code, or None."""
    t0 = time.monotonic()
    while True:
        left = interrupt.grace_left(t0, grace_s)
        rc = h.wait(min(left, 0.2))
        if rc is not None or left <= 0:
            return rc


def _fmt_labels(labels: dict[str, Any]) -> str:
    return " ".join(f"{k}={v}" for k, v in labels.items())
