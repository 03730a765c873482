"""Launching runs from a spec, and watching them from any terminal: launch, wait, logs, cancel.

`launch` checks everything first (spec shape, placeholders of every point, `--set`, hypothesis,
executor) and writes nothing on bad input; then it writes one Launch row and one queued Run per
point × repeat, and drives them in the foreground or hands them to a detached driver process
(`python -m optlog.service.driver LAUNCH_ID`, its own session, its narration in
`.optlog/launches/<id>/launch.log`).

References: a plain number is a run id; `L7` (or `launch:7`) is launch 7.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any, cast

from optlog import settings
from optlog.core import costing as CO
from optlog.core import proposal as P
from optlog.core.ids import parse_ref
from optlog.core.statuses import WAITING
from optlog.core.timeutil import now_iso
from optlog.errors import BadInput, Failed, Interrupted, NotFound, param
from optlog.needs import Commits, Files, Index, Reads, Writes
from optlog.paths import Workspace
from optlog.runs import interrupt, ports, procs, quiet
from optlog.runs.executors.registry import make_executor, on_this_machine
from optlog.runs.launcher import Driver
from optlog.runs.record import env_used, run_record
from optlog.runs.recover import recover
from optlog.runs.redact import Redactor
from optlog.runs.spec import SetPairs, base_url, load_spec, plan, render_point, resolve_cwd, typed_sets
from optlog.runs.targetlock import open_lock
from optlog.service import launch_record
from optlog.service import documents
from optlog.service.nextexp import measured_of
from optlog.store.runrows import counting_run_ids, runs_by_id
from optlog.service.evidence import insert_run
from optlog.service.refs import require
from optlog.store import launchrows, runrows
from optlog.store.runrows import runs_of_launch

TERMINAL = ("succeeded", "failed", "cancelled", "interrupted")


def resolve_spec(ws: Workspace, spec: str) -> Path:
    cands = [Path(spec)]
    if not Path(spec).is_absolute():
        cands += [ws.root / spec, ws.runs_dir / spec, ws.runs_dir / f"{spec}.yaml"]
    for c in cands:
        if c.is_file():
            return c.resolve()
    raise BadInput(f"no such run spec: {spec} (looked in the current folder, the workspace and runs/)",
                   field="spec", code="not_found")


def prepare(ctx: Writes, spec: str, *, sets: SetPairs = (), server_url: str | None = None,
            hypothesis: str | None = None, name: str | None = None, worker: int = 0) -> tuple[Any, list[Any]]:
    """Validate everything a launch needs; nothing is written. `name`: the launch's name when the
    spec gives none (a launch again from its record keeps the name it had); `worker`: the
    `{{ tune_worker }}` of an optlog tune worker."""

    path = resolve_spec(ctx.ws, spec)
    ls = load_spec(path, ctx.ws.rel(path))
    if name and not ls.spec.name:
        ls.spec.name = name
    st = typed_sets(sets)
    if server_url is not None:
        if not base_url(server_url):
            raise BadInput(f"not a server URL: {server_url!r} (expected e.g. http://127.0.0.1:30000)", field="server_url")
        server_url = server_url.rstrip("/")
    points = plan(ls, st, server_url, worker=worker)
    if hypothesis:
        require(ctx, hypothesis)
    make_executor(ctx, ls.spec.executor)  # an executor that cannot run fails here, before any write
    if on_this_machine(ls.spec.executor):
        _check_cwds(ctx.ws, ls, points)
    if server_url is None and on_this_machine(ls.spec.executor):
        _refuse_taken_ports(points)
    return ls, points


def dry_run(ctx: Reads, spec: str | None, *, sets: SetPairs = (), server_url: str | None = None,
            again: str | None = None) -> dict[str, Any]:
    """What `run launch` would run, launching nothing and writing nothing: the spec planned as a
    launch plans it (matrix × include × repeats, `--set` applied, every template rendered, in launch
    order), each point's labels and server and bench commands (secrets redacted), and the run count."""
    if again is not None:
        if spec is not None or sets or server_url:
            raise BadInput(f"{param('again')} launches a record as it ran: give no SPEC, {param('sets')} or "
                           f"{param('server_url')} with it", field="again")
        kind, n = parse_ref(again, "again")
        if kind != "launch":
            raise BadInput(f"{param('again')} takes a launch (L3), got {again!r}", field="again")
        a = launch_record.again_args(ctx, n)
        spec, sets, server_url = a["spec"], a["sets"], a["server_url"]
    if spec is None:
        raise BadInput(f"name a run spec ({param('spec')}), or a launch to run again ({param('again')} L3)", field="spec")
    path = resolve_spec(ctx.ws, spec)
    ls = load_spec(path, ctx.ws.rel(path))
    if server_url is not None:
        if not base_url(server_url):
            raise BadInput(f"not a server URL: {server_url!r} (expected e.g. http://127.0.0.1:30000)", field="server_url")
        server_url = server_url.rstrip("/")
    points = plan(ls, typed_sets(sets), server_url)
    red = Redactor.of(ls.data, _sets_doc(sets), server_url, [p.rendered for p in points], environ=settings.environ())

    def argv(part: dict[str, Any] | None) -> list[str] | None:
        return None if not part else [str(x) for x in red.redact([str(a) for a in part.get("argv") or []])]

    out = [{"labels": p.labels, "repeat": p.repeat, "server": argv(p.rendered.get("server")),
            "bench": argv(p.rendered.get("bench"))} for p in points]
    return {"dry_run": True, "spec": ls.file, "name": ls.name, "runs": len(points),
            "servers": len({p.server_key for p in points if p.rendered.get("server")}), "points": out,
            "cost": _dry_cost(ctx, points)}


def _dry_cost(ctx: Index, points: list[Any]) -> dict[str, Any]:
    """What the dry run's launch would cost (core.costing, as `next` states it): its runs, and a time
    from the median run by level among the runs already measured that are like these (the plan's
    constant labels, else its names); `like` says which, null when none was measured yet."""
    labels = [{k: v for k, v in p.labels.items() if k != "repeat"} for p in points]
    axis = CO.plan_axis(labels)
    with ctx.db.read() as s:
        measured = measured_of(runs_by_id(s, counting_run_ids(s)))
    like, how = CO.like(labels, measured, axis)
    cost = CO.estimate([CO.Planned(p.labels, P.flag_value([str(a) for a in p.rendered["bench"].get("argv") or []],
                                                          P.PROMPT_FLAGS)) for p in points], like, axis)
    text = cost.text() + f"; runs like these: {how}" if how else \
        f"{cost.text().split(',')[0]}, time unknown: no run like these measured yet (none with the same labels or names)"
    return cost.as_dict() | {"like": how or None, "text": text}


def _refuse_taken_ports(points: list[Any]) -> None:
    """A server optlog is to start must not find its port taken: whatever answers there (a stale
    server) would be benchmarked under this launch's labels (see optlog.runs.ports)."""

    wanted = {port for p in points if (port := ports.server_port(p.rendered.get("server"))) is not None}
    for port in sorted(wanted):
        if ports.in_use(port):
            raise Failed(f"{ports.describe(port)}: optlog would benchmark a server it did not start. Stop it, "
                         f"give the spec another port, or pass {param('server_url')} to measure that server on purpose",
                         code="port_in_use", field="server",
                         extra={"port": port, "holders": [{"pid": h.pid} for h in ports.holders(port)]})


def _check_cwds(ws: Workspace, ls: Any, points: list[Any]) -> None:
    """A `cwd:` that does not exist is an error before anything runs (it used to fail each point as
    "command not found"). A cwd under the run's own output folder is made by the launcher."""

    seen: set[tuple[str, str]] = set()
    for p in points:
        for sec in ("server", "bench"):
            cwd = (p.rendered.get(sec) or {}).get("cwd")
            if not cwd or cwd.startswith("/nonexistent/") or (sec, cwd) in seen:
                continue
            seen.add((sec, cwd))
            if not resolve_cwd(ws.root, cwd).is_dir():
                raise ls.bad(f"{sec}.cwd {cwd!r} is not a folder" + ("" if Path(cwd).is_absolute()
                                                                      else f" (under {ws.root})"),
                             sec, "cwd", code="not_found")


def launch(ctx: Writes, spec: str | None = None, *, sets: SetPairs = (), server_url: str | None = None,
           hypothesis: str | None = None, detach: bool = False, allow_concurrent: bool = False,
           on_event: Callable[[dict[str, Any]], None] | None = None, again: str | None = None,
           lock: bool = True, when_quiet: float | None = None) -> dict[str, Any]:
    """Launch a spec, or (`again="L3"`) launch 3's committed record again (service.launch_record).
    `lock=False`: take no lock on the target (runs.targetlock), for a launch that measures nothing a
    busy machine would change (`demo --simulated`: a simulated server, every run labelled so).

    SIGINT, SIGTERM and SIGHUP are heard from here on (runs.interrupt): while the launch is only
    being checked they end the command at once (nothing is written yet, exit 128 + the signal);
    once its rows are written they cancel it (`cancelled`, every process ended).

    `when_quiet`: first wait, at most that many seconds, for the machine to be quiet (runs.quiet);
    past it, exit 75 (`not_quiet`) with nothing written."""
    with interrupt.scope():
        return _launch_or_again(ctx, spec, sets=sets, server_url=server_url, hypothesis=hypothesis, detach=detach,
                                allow_concurrent=allow_concurrent, on_event=on_event, again=again, lock=lock,
                                when_quiet=when_quiet)


def _launch_or_again(ctx: Writes, spec: str | None, *, sets: SetPairs, server_url: str | None, hypothesis: str | None,
                     detach: bool, allow_concurrent: bool, on_event: Callable[[dict[str, Any]], None] | None,
                     again: str | None, lock: bool, when_quiet: float | None = None) -> dict[str, Any]:
    name = again_of = None
    if again is not None:
        if spec is not None or sets or server_url:
            raise BadInput(f"{param('again')} launches a record as it ran: give no SPEC, {param('sets')} or {param('server_url')} with it",
                           field="again")
        kind, n = parse_ref(again, "again")
        if kind != "launch":
            raise BadInput(f"{param('again')} takes a launch (L3), got {again!r}", field="again")
        a = launch_record.again_args(ctx, n)
        spec, sets, server_url, name, again_of = a["spec"], a["sets"], a["server_url"], a["name"], a["again_of"]
        hypothesis = hypothesis or a["hypothesis"]
    if spec is None:
        raise BadInput(f"name a run spec ({param('spec')}), or a launch to run again ({param('again')} L3)", field="spec")
    return _launch(ctx, spec, sets=sets, server_url=server_url, hypothesis=hypothesis, detach=detach,
                   allow_concurrent=allow_concurrent, on_event=on_event, name=name, again_of=again_of, lock=lock,
                   when_quiet=when_quiet)


def _launch(ctx: Writes, spec: str, *, sets: SetPairs, server_url: str | None,
            hypothesis: str | None, detach: bool, allow_concurrent: bool,
            on_event: Callable[[dict[str, Any]], None] | None, name: str | None, again_of: str | None,
            lock: bool = True, when_quiet: float | None = None) -> dict[str, Any]:
    ls, points = prepare(ctx, spec, sets=sets, server_url=server_url, hypothesis=hypothesis, name=name)
    if when_quiet is not None:  # checked first (bad input: exit 2), then the wait, before anything is written
        waited = quiet.wait(partial(quiet.busy, ctx.config.host_load), when_quiet, ctx.notice)
    else:
        waited = None
    done = _launch_planned(ctx, ls, points, sets=sets, server_url=server_url, hypothesis=hypothesis, detach=detach,
                           allow_concurrent=allow_concurrent, on_event=on_event, again_of=again_of, lock=lock)
    return done if waited is None else {**done, "when_quiet": waited}


def _launch_planned(ctx: Writes, ls: Any, points: Any, *, sets: SetPairs, server_url: str | None,
                    hypothesis: str | None, detach: bool, allow_concurrent: bool,
                    on_event: Callable[[dict[str, Any]], None] | None, again_of: str | None,
                    lock: bool) -> dict[str, Any]:
    with interrupt.noting():  # rows and record are written whole; a signal meanwhile cancels after
        st = open_launch(ctx, ls, points, sets=sets, server_url=server_url, hypothesis=hypothesis,
                         allow_concurrent=allow_concurrent, again_of=again_of, lock=lock)
        lid, doc = st["launch"], st["doc"]
        launch_dir = ctx.ws.state_dir / "launches" / str(lid)
        run_ids = [d["run_id"] for d in doc["points"]]
        if not detach:  # the driver hears a signal that came meanwhile and cancels at its first step
            return Driver(ctx, lid, on_event=on_event, doc=doc).run()
        if (sig := interrupt.received()) is not None:
            _cancel_unstarted(ctx, lid, sig)
        holder = None if allow_concurrent or not lock else _busy(ctx, lid, doc)
        out = _detach(ctx, lid, run_ids, launch_dir, doc)
        if (sig := interrupt.received()) is not None:  # it came while the driver started: it is cancelled
            _stop_driver(out["pid"])
            raise Interrupted(sig)
        if holder:  # it will wait for the machine: say so now, not "running" (issue 31)
            out.update(status=WAITING, waiting_for=holder)
        return out


def _cancel_unstarted(ctx: Index, lid: int, sig: int) -> None:
    """A signal came before launch `lid`'s driver started: its runs are `cancelled`, none ran."""
    why = f"cancelled by {signal.Signals(sig).name} before it started"
    now = now_iso()
    with ctx.db.write(touches="launch") as s:
        for r in launchrows.live_runs(s, lid):
            r.status, r.error, r.cause, r.finished_at = "cancelled", why, "cancelled", now
            s.add(r)
        launchrows.update_launch(s, lid, status="cancelled", finished_at=now, error=why)
    raise Interrupted(sig)


def _stop_driver(pid: int) -> None:
    """Cancel a detached driver just started (SIGTERM: it ends its processes and marks its runs)."""
    start = procs.start_ticks(pid)
    if start is not None and procs.alive(pid, start):
        os.kill(pid, signal.SIGTERM)


def open_launch(ctx: Writes, ls: Any, points: list[Any], *, sets: SetPairs, server_url: str | None,
                hypothesis: str | None, allow_concurrent: bool, again_of: str | None = None,
                streamed: int | None = None, lock: bool = True) -> dict[str, Any]:
    """Write the Launch row and a queued Run per point, and commit the launch's record; returns
    {"launch", "doc" (the driver's unredacted document), "redact", "host"}. `streamed`: the points
    are made while the launch runs (optlog tune), at most this many; the record is written at the
    end (`write_record`)."""
    # what is stored and shown is redacted; the driver runs the real document it is handed
    red = Redactor.of(ls.data, _sets_doc(sets), server_url, [p.rendered for p in points], environ=settings.environ())

    host = socket.gethostname()
    token = uuid.uuid4().hex
    with ctx.db.write(touches="launch") as s:
        la = launchrows.add_launch(
            s, spec_path=ls.file, spec={}, status="running", pid=os.getpid(),
            pid_start=str(procs.start_ticks(os.getpid())), host=host, hypothesis_id=hypothesis,
            created_at=now_iso(), progress={"done": 0, "total": len(points) if streamed is None else streamed})
        lid = la.id
        assert lid is not None
        docs = [add_point(ctx, s, ls, p, lid=lid, server_url=server_url, hypothesis=hypothesis, host=host, redact=red.redact)
                for p in points]
        doc = {"name": ls.name, "file": ls.file, "spec": ls.data, "sets": _sets_doc(sets),
               "server_url": server_url, "executor": ls.spec.executor,
               "on_error": points[0].on_error if points else ls.spec.on_error,
               "order": points[0].order if points else {},
               "stop_s": ls.spec.timeouts.stop_s, "token": token, "allow_concurrent": bool(allow_concurrent),
               "points": docs, "record": launch_record.choose_dir(ctx.ws, lid, token), "again_of": again_of}
        if streamed is not None:
            doc["total"] = streamed
        if not lock:
            doc["lock"] = False  # the driver takes no target lock (runs.launcher)
        la.spec = {**red.redact(doc), "token": token}  # the token finds the launch's processes: not a secret
        s.add(la)
    st = {"launch": lid, "doc": doc, "redact": red.redact, "host": host}
    if streamed is None:
        write_record(ctx, ls, st, sets=sets, server_url=server_url, hypothesis=hypothesis)
    (ctx.ws.state_dir / "launches" / str(lid)).mkdir(parents=True, exist_ok=True)
    return st


def write_record(ctx: Commits, ls: Any, st: dict[str, Any], *, sets: SetPairs, server_url: str | None,
                 hypothesis: str | None) -> None:
    """Commit the launch's spec and points (service.launch_record) for `open_launch`'s state `st`."""

    doc = st["doc"]
    launch_record.write(ctx, doc["record"], lid=st["launch"], ls=ls, sets=sets, server_url=server_url,
                        hypothesis=hypothesis, docs=doc["points"], token=doc["token"], order=doc["order"],
                        again_of=doc.get("again_of"), redact=st["redact"])


def add_point(ctx: Files, s: Any, ls: Any, p: Any, *, lid: int, server_url: str | None, hypothesis: str | None,
              host: str, redact: Callable[[Any], Any]) -> dict[str, Any]:
    """One planned point of launch `lid` as a queued Run (in the open write session `s`), rendered
    with its run id; returns the point's document for the driver."""
    rid = insert_run(s, labels=redact(p.labels), metrics={}, status="queued", source="launched",
                     hypothesis_id=hypothesis, name=ls.name, launch_id=lid, started_at=None, finished_at=None,
                     host=host, repeat=p.repeat)
    out = ctx.ws.artifacts_dir / str(rid)
    launch_dir = ctx.ws.state_dir / "launches" / str(lid)
    rendered = render_point(ls, p.values, launch_dir=str(launch_dir), out=str(out), server_url=server_url,
                            run_id=rid, launch_id=lid)
    rendered["bench"]["out"] = str(out)
    record = run_record(p, rendered)
    environ = settings.environ()
    env = {n: environ[n] for n in sorted(env_used(ls.data)) if n in environ}
    if env:  # what `{{ env.NAME }}` rendered to here; the committed record keeps the reference instead
        record["env"] = env
    r = runrows.run(s, rid)
    assert r is not None  # inserted above, in this session
    r.artifacts_dir = ctx.ws.rel(out)
    r.raw = redact(record)
    s.add(r)
    return {"run_id": rid, "labels": p.labels, "repeat": p.repeat, "server_key": p.server_key,
            "rendered": rendered, "record": record}


def _sets_doc(sets: SetPairs) -> dict[str, Any]:
    """`--set` as the launch's document shows it: key → the value as given (the CLI's text)."""
    return {str(k): v for k, v in sets}


def _busy(ctx: Files, lid: int, doc: dict[str, Any]) -> str | None:
    """Whom a launch about to start would wait for on its target (runs.targetlock), or None."""
    lock = open_lock(ctx, doc.get("executor", "local"), lid, points=doc.get("points") or ())
    return lock.busy() if lock is not None else None


def _detach(ctx: Reads, lid: int, run_ids: list[int], launch_dir: Path, doc: dict[str, Any]) -> dict[str, Any]:
    """Start the background driver; the unredacted launch document reaches it on a pipe (stdin),
    so no secret is ever written to a file or the database."""
    log = open(launch_dir / "driver.log", "ab")
    try:
        p = subprocess.Popen([sys.executable, "-P", "-m", "optlog.service.driver", str(lid), "--root", str(ctx.ws.root),
                              "--doc-stdin"],
                             stdin=subprocess.PIPE, stdout=log, stderr=log, cwd=str(ctx.ws.root),
                             start_new_session=True, close_fds=True, env=dict(settings.environ()))
    finally:
        log.close()
    assert p.stdin is not None
    try:
        p.stdin.write(json.dumps(doc).encode())
        p.stdin.close()
    except BrokenPipeError:
        pass
    with ctx.db.write(touches="launch") as s:
        la = launchrows.launch(s, lid)
        if la is not None and la.pid == os.getpid():  # the driver may already have written its own
            la.pid = p.pid
            la.pid_start = str(procs.start_ticks(p.pid))
            s.add(la)
    return {"launch": lid, "ref": f"L{lid}", "status": "running", "detached": True, "pid": p.pid, "runs": run_ids,
            "log": ctx.ws.rel(launch_dir / "launch.log")}


# --------------------------------------------------------------------------- references


def _row(ctx: Index, get: Callable[[Any, int], Any], key: int, what: str) -> Any:
    with ctx.db.read() as s:
        row = get(s, key)
    if row is None:
        raise NotFound(f"no {what} {key}", field="ref")
    return row


def _launch_row(ctx: Index, lid: int) -> Any:
    return _row(ctx, launchrows.launch, lid, "launch")


def _run_row(ctx: Index, rid: int) -> Any:
    return _row(ctx, runrows.run, rid, "run")


def status(ctx: Index, ref: str) -> dict[str, Any]:
    """The status of a run (ID) or a launch (L<n>, with its runs' statuses)."""
    kind, n = parse_ref(ref)
    if kind == "run":
        r = _run_row(ctx, n)
        return {"run": r.id, "launch": r.launch_id, "status": r.status, "error": r.error, "cause": r.cause,
                "exit_code": r.exit_code}
    la = _launch_row(ctx, n)
    with ctx.db.read() as s:
        runs = runs_of_launch(s, n)
    pr = la.progress or {}
    # a running launch that waits for the machine lock says so, and for whom (issue 31)
    waiting = la.status == "running" and pr.get("waiting_for")
    return {"launch": la.id, "status": WAITING if waiting else la.status,
            **({"waiting_for": pr["waiting_for"]} if waiting else {}), "error": la.error, "progress": pr,
            "runs": [{"id": r.id, "status": r.status, "error": r.error, "cause": r.cause} for r in runs]}


def wait(ctx: Writes, ref: str, timeout: float | None = None, interval: float = 0.2) -> dict[str, Any]:
    """Block until the run or launch is finished (any terminal status); returns its status document."""
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        doc = status(ctx, ref)
        if doc["status"] in TERMINAL:
            return doc
        # a driver that died while we wait: recovery marks it (cheap when nothing is dead)

        recover(ctx, ctx.db)
        if deadline is not None and time.monotonic() >= deadline:
            doc["timed_out"] = True
            return doc
        time.sleep(interval)


def log_files(ctx: Reads, ref: str) -> tuple[list[Path], Callable[[], bool]]:
    """The files `run logs` shows, and a function telling whether the subject is finished."""
    kind, n = parse_ref(ref)
    if kind == "launch":
        _launch_row(ctx, n)
        d = ctx.ws.state_dir / "launches" / str(n)
        files = [d / "launch.log"]
    else:
        r = _run_row(ctx, n)
        d = ctx.ws.root / (r.artifacts_dir or f".optlog/runs/{n}")
        files = [d / "bench.stdout.log", d / "bench.stderr.log"]

    def finished() -> bool:
        return status(ctx, ref)["status"] in TERMINAL

    return files, finished


def follow(ctx: Reads, ref: str, write: Callable[[str], None], follow: bool = False, interval: float = 0.2) -> None:
    files, finished = log_files(ctx, ref)
    offsets = {f: 0 for f in files}
    multi = len(files) > 1

    def drain(headers: bool) -> bool:
        got = False
        for f in files:
            try:
                with open(f, "rb") as fh:
                    fh.seek(offsets[f])
                    data = fh.read()
            except FileNotFoundError:
                continue
            if data:
                offsets[f] += len(data)
                if headers and multi:
                    write(f"==> {f.name} <==\n")
                write(data.decode("utf-8", "replace"))
                got = True
        return got

    if not follow:
        drain(True)
        return
    while True:
        done = finished()
        drain(False)
        if done:
            drain(False)
            return
        time.sleep(interval)


def cancel(ctx: Writes, ref: str) -> dict[str, Any]:
    """Ask the launch's driver to stop (SIGTERM after checking its start time): it ends every process
    of the launch and marks unfinished runs `cancelled`."""

    kind, n = parse_ref(ref)
    lid = n if kind == "launch" else _run_row(ctx, n).launch_id
    if lid is None:
        raise BadInput(f"run {n} was not launched by optlog (nothing to cancel)", field="ref")
    la = _launch_row(ctx, lid)
    if la.status in TERMINAL:
        return {"launch": lid, "status": la.status, "cancelled": False, "message": f"launch {lid} already {la.status}"}
    if la.host and la.host != socket.gethostname():
        raise Failed(f"launch {lid} runs on host {la.host}; cancel it there", code="other_host")
    start = int(la.pid_start) if la.pid_start and la.pid_start != "None" else None
    if la.pid and procs.alive(la.pid, start):
        os.kill(la.pid, signal.SIGTERM)
        doc = wait(ctx, f"L{lid}", timeout=60)
        return {"launch": lid, "status": doc["status"], "cancelled": doc["status"] == "cancelled", "runs": doc["runs"]}

    recover(ctx, ctx.db)
    doc = status(ctx, f"L{lid}")
    return {"launch": lid, "status": doc["status"], "cancelled": False, "runs": doc["runs"],
            "message": "the driver was already gone; its runs were marked interrupted"}


# ---------------------------------------------------------------- the verbs' documents (every face)


def brief_status(d: dict[str, Any]) -> documents.RunWait:
    """A run's or launch's status in a few lines: counts by status and the first failures."""
    if "runs" not in d:
        out = dict(d)
        if out.get("error"):
            out["error"] = out["error"].splitlines()[0][:200]
        return cast(documents.RunWait, out)
    counts: dict[str, int] = {}
    for r in d["runs"]:
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    bad = [{"id": r["id"], "status": r["status"], "cause": r.get("cause"),
            "error": (r.get("error") or "").splitlines()[0][:160] if r.get("error") else None}
           for r in d["runs"] if r["status"] in ("failed", "cancelled", "interrupted")]
    out = {k: v for k, v in d.items() if k not in ("runs", "progress")}
    if out.get("error"):
        out["error"] = out["error"].splitlines()[0][:200]
    out.update(ref=f"L{d['launch']}", runs=counts, run_ids=[r["id"] for r in d["runs"]][:50], failures=bad[:5])
    return cast(documents.RunWait, out)


def _tail(text: str, n: int | None, width: int | None = None) -> str:
    lines = text.splitlines(keepends=True)
    if n is not None:
        lines = lines[-n:] if n > 0 else []
    if width is not None:
        lines = [ln if len(ln.rstrip("\n")) <= width else ln[: max(0, width - 1)] + "…\n" for ln in lines]
    return "".join(lines)


def read_logs(ctx: Reads, ref: str, *, follow_: bool = False, tail: int | None = None,
              width: int | None = None) -> dict[str, Any]:
    """`run logs --json`: the log files and their text (the last `tail` lines, each cut to `width`)."""
    files, _ = log_files(ctx, ref)
    parts: list[str] = []
    follow(ctx, ref, parts.append, follow=follow_)
    text = "".join(parts)
    doc: dict[str, Any] = {"ref": ref, "files": [ctx.ws.rel(f) for f in files], "text": _tail(text, tail, width)}
    if tail is not None:
        doc["lines_total"] = len(text.splitlines())
    return doc


def logs_text(ctx: Reads, ref: str, tail: int | None, width: int | None = None) -> str:
    """The last `tail` lines of the logs as they are now (the human `run logs --tail N`)."""
    parts: list[str] = []
    follow(ctx, ref, parts.append, follow=False)
    return _tail("".join(parts), tail, width)


def stream_logs(ctx: Reads, ref: str, write: Callable[[str], None], *, follow_: bool = False, tail: int | None = None,
                width: int | None = None) -> None:
    """The human `run logs`: the last `tail` lines as they are now, else every line so far (and,
    with `follow_`, each new one until the run or launch finishes), handed to `write` as it comes."""
    if tail is not None:
        write(logs_text(ctx, ref, tail, width))
        return
    follow(ctx, ref, write, follow=follow_)
