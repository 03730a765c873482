"""Telemetry beside a launch: the launcher's one entry point.

    sess = open_session(ctx, launch_id=7, settings={...}, env=server_env, executor=ex)
    if sess: sess.start()
    for each point:  sess.begin_point(run_id) … bench … extra = sess.end_point(run_id, metrics)
    sess.stop()

`settings` = optlog.yaml `telemetry:` merged with the spec's `telemetry:`: `enabled`, `interval_s`
(default 0.5), `gpm_interval_s` (default 10; a point's end always takes its own GPM reading), `warmup_s`, `gpus` (NVML indices/UUIDs; else the run env's CUDA_VISIBLE_DEVICES or
Slurm's GPUs), `scrape` (a /metrics URL), `scrape_interval_s` (default 1), `gpm` (default true),
`remote` ("auto" | "optlog" | "nvidia-smi"), `optlog` (the optlog command on a remote host).

Sources: local executor (telemetry "nvml") → the NVML sampler in a background thread of this process. ssh/slurm → a
long-lived command on the host, read line by line: `optlog telemetry sample` (JSON lines) when optlog
is installed there, else `nvidia-smi --query-gpu … -lms N`. The executor starts it: the first of
`executor.stream(argv)`, `.start_stream(argv)`, `.popen(argv)`, `.spawn(argv)` that exists must
return a Popen-like object (`.stdout` yielding text lines, `.terminate()`/`.kill()`/`.poll()`).
Which source: the executor's `telemetry` ("nvml" or "stream", its kind's, optlog.runs.executors).

Failures never fail a run: they become notices (ctx.notice) and missing metrics.
"""

from __future__ import annotations

import shlex
import threading
import time
from typing import Any

from optlog.core import modelfacts as MF
from optlog.core.diagnosis import diagnose
from optlog.core.windows import join_windows
from optlog.needs import Launches
from optlog.store.runrows import labels_metrics
from optlog.telemetry import prometheus as prom
from optlog.telemetry import smi
from optlog.telemetry.nvml import NvmlSampler, NvmlUnavailable
from optlog.telemetry.store import columns, write_columns, write_samples
from optlog.telemetry.summary import energy_metrics, steady, summarize
from optlog.core import jsondoc


def open_session(ctx: Launches, *, launch_id: int | None, settings: dict[str, Any] | None, env: dict[str, str] | None,
                 executor: Any = None) -> "TelemetrySession | None":
    st = dict(settings or {})
    if st.get("enabled") is False:
        return None
    return TelemetrySession(ctx, launch_id, st, dict(env or {}), executor)


class TelemetrySession:
    def __init__(self, ctx: Launches, launch_id: int | None, settings: dict[str, Any], env: dict[str, str],
                 executor: Any) -> None:
        self.ctx = ctx
        self.launch_id = launch_id
        self.settings = settings
        self.env = env
        self.executor = executor
        self.kind = getattr(executor, "kind", None) or "local"
        # "nvml": sampled in this process (this machine); "stream": a sampler command on the host
        self.stream = executor is not None and executor.telemetry == "stream"
        self.interval_s = float(settings.get("interval_s") or 0.5)
        self.warmup_s = float(settings.get("warmup_s") or 0.0)
        self.scrape_url = settings.get("scrape") or None
        self.scrape_interval_s = float(settings.get("scrape_interval_s") or 1.0)
        self.samples: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        self.stop_ev = threading.Event()
        self.threads: list[threading.Thread] = []
        self.sampler: Any = None
        self.sampler_lock = threading.Lock()
        self.proc: Any = None
        self.dmon_proc: Any = None
        self.uuid_of: dict[int, str] = {}
        self.source: str | None = None
        self.points: dict[int, dict[str, Any]] = {}
        self.active: int | None = None
        self._noticed: set[str] = set()
        self._flushed_until = 0.0
        self.sample_cpu_s = 0.0
        self.sample_ticks = 0

    # ---------------------------------------------------------------- helpers
    def notice(self, text: str) -> None:
        if text in self._noticed:
            return
        self._noticed.add(text)
        try:
            self.ctx.notice(text)
        except Exception:
            pass

    def _add(self, batch: list[dict[str, Any]]) -> None:
        if batch:
            with self.lock:
                self.samples.extend(batch)

    # ---------------------------------------------------------------- lifecycle
    def start(self) -> None:
        try:
            if self.stream:
                self._start_remote()
            else:
                self._start_local()
        except Exception as e:  # never fail the launch
            self.notice(f"telemetry: GPU sampling off: {e}")
        if self.scrape_url:
            t = threading.Thread(target=self._scrape_loop, name="optlog-scrape", daemon=True)
            t.start()
            self.threads.append(t)

    def _gpus(self) -> Any:
        """The GPUs to sample: the spec's `gpus`, else those a scheduler assigned to the run's job
        (the Slurm executor exposes SLURM_JOB_GPUS as `executor.gpus`), else None (the sampler maps
        the run's CUDA_VISIBLE_DEVICES)."""
        return self.settings.get("gpus") or getattr(self.executor, "gpus", None) or None

    def _start_local(self) -> None:
        s = NvmlSampler(gpus=self._gpus(), env=self.env or None, interval_s=self.interval_s,
                        gpm=self.settings.get("gpm", True) is not False, notice=self.notice,
                        gpm_interval_s=float(self.settings.get("gpm_interval_s") or 10.0))
        try:
            s.open()
        except NvmlUnavailable as e:
            self.notice(f"telemetry: GPU sampling not available: {e}")
            return
        self.sampler = s
        self.source = "nvml"

        def run() -> None:
            nxt = time.monotonic()
            while not self.stop_ev.is_set():
                c0 = time.thread_time()
                with self.sampler_lock:
                    try:
                        batch = s.sample()
                    except Exception as e:
                        self.notice(f"telemetry: sampling stopped: {e}")
                        return
                self.sample_cpu_s += time.thread_time() - c0
                self.sample_ticks += 1
                self._add(batch)
                nxt += self.interval_s
                d = nxt - time.monotonic()
                if d < 0:
                    nxt, d = time.monotonic(), 0.0
                if self.stop_ev.wait(d):
                    return

        t = threading.Thread(target=run, name="optlog-nvml", daemon=True)
        t.start()
        self.threads.append(t)

    def _remote_argv(self) -> tuple[list[str], str]:
        mode = self.settings.get("remote", "auto")
        optlog_cmd = self.settings.get("optlog") or getattr(self.executor, "optlog", None)
        gpus = self._gpus() or self.env.get("CUDA_VISIBLE_DEVICES")
        if mode == "optlog" or (mode == "auto" and optlog_cmd):
            argv = shlex.split(optlog_cmd or "optlog") + ["telemetry", "sample", "--interval", str(self.interval_s),
                                                          "--gpm-interval", str(self.settings.get("gpm_interval_s") or 10.0)]
            if self.settings.get("gpm") is False:
                argv.append("--no-gpm")
            if gpus:
                argv += ["--gpus", str(gpus) if not isinstance(gpus, list) else ",".join(map(str, gpus))]
            return argv, "optlog"
        fields = smi.query_fields()
        return smi.query_cmd(int(self.interval_s * 1000), fields, gpus=None), "nvidia-smi"

    def _spawn(self, argv: list[str]) -> Any:
        for name in ("stream", "start_stream", "popen", "spawn"):
            fn = getattr(self.executor, name, None)
            if callable(fn):
                return fn(argv)
        raise RuntimeError(f"the {self.kind} executor cannot run a telemetry command on its host")

    def _start_remote(self) -> None:
        argv, how = self._remote_argv()
        self.proc = self._spawn(argv)
        self.source = how
        fields = smi.query_fields()
        if how == "nvidia-smi":
            self.notice(smi.missing_notice(fields, gpm=self.settings.get("gpm", True) is not False))
        gpus_sel = self.settings.get("gpus") or self.env.get("CUDA_VISIBLE_DEVICES")

        def read() -> None:
            integ: dict[str, tuple[float, float, float]] = {}
            for line in self.proc.stdout:
                if self.stop_ev.is_set():
                    break
                now = time.time()
                if how == "optlog":
                    try:
                        s = jsondoc.loads(line)
                    except ValueError:
                        continue
                    if not isinstance(s, dict) or "t" not in s:
                        if isinstance(s, dict) and s.get("notice"):
                            self.notice(str(s["notice"]))
                        continue
                else:
                    s = smi.parse_query_line(line, fields, now=now)
                    if s is None:
                        continue
                    if gpus_sel and str(s.get("gpu")) not in str(gpus_sel).split(",") and \
                            str(s.get("uuid")) not in str(gpus_sel).split(","):
                        continue
                    if s.get("uuid"):
                        self.uuid_of[int(s["gpu"])] = s["uuid"]
                    key = str(s.get("uuid") or s.get("gpu"))
                    p = s.get("gpu_power_w")
                    if p is not None:  # energy integrated from power (no counter through nvidia-smi)
                        t0, p0, e0 = integ.get(key, (now, p, 0.0))
                        e = e0 + (now - t0) * (p + p0) / 2
                        integ[key] = (now, p, e)
                        s["energy_j"] = e
                self._add([s])

        t = threading.Thread(target=read, name="optlog-remote-telemetry", daemon=True)
        t.start()
        self.threads.append(t)
        if how == "nvidia-smi" and self.settings.get("gpm", True) is not False:
            self._start_dmon()

    def _start_dmon(self) -> None:
        """GPM metrics (and PCIe rates) through `nvidia-smi dmon --gpm-metrics` where the driver offers it:
        its rows carry the GPU index only, so they are matched to the query stream's UUIDs."""
        try:
            proc = self._spawn(smi.dmon_cmd(max(1, round(self.interval_s)), gpm=True))
        except Exception as e:
            self.notice(f"telemetry: nvidia-smi dmon not started ({e}); no GPM metrics from this host")
            return
        self.dmon_proc = proc
        keep = ("gr_active", "sm_active", "sm_occupancy", "tensor_active", "dram_bw_util", "pcie_rx_gbps", "pcie_tx_gbps")

        def read() -> None:
            p = smi.DmonParser()
            got = 0
            for line in proc.stdout:
                if self.stop_ev.is_set():
                    break
                row = p.feed(line)
                if row is None:
                    continue
                uuid = self.uuid_of.get(row["gpu"])
                vals = {k: row[k] for k in keep if k in row}
                if uuid is None or not vals:
                    continue
                got += 1
                self._add([{"t": row["t"], "gpu": row["gpu"], "uuid": uuid, **vals}])
            if not got and not self.stop_ev.is_set():
                self.notice("telemetry: nvidia-smi dmon gave no GPM metrics on this host (driver without "
                            "--gpm-metrics?): sm_occupancy, tensor_active, dram_bw_util not available")

        t = threading.Thread(target=read, name="optlog-dmon", daemon=True)
        t.start()
        self.threads.append(t)

    def _scrape_loop(self) -> None:
        while not self.stop_ev.wait(self.scrape_interval_s):
            rid = self.active
            if rid is None:
                continue
            self._scrape_into(rid)

    def _scrape_into(self, run_id: int) -> None:
        try:
            d = prom.scrape(self.scrape_url)  # type: ignore[arg-type]
        except Exception as e:
            self.notice(f"telemetry: cannot scrape {self.scrape_url}: {e}")
            return
        p = self.points.get(run_id)
        if p is not None:
            p["scrapes"].append(d)

    # ---------------------------------------------------------------- points
    def begin_point(self, run_id: int) -> None:
        now = time.time()
        p: dict[str, Any] = {"t0": now, "scrapes": [], "energy0": None}
        self.points[run_id] = p
        if self.sampler is not None:
            with self.sampler_lock:
                try:
                    p["energy0"] = self.sampler.read_energy(now)
                    # a tick exactly at the start: it completes the ticks still waiting for their power
                    # and closes the GPM window, so the point's GPM windows start with the point
                    # (stamped just before the point: what it read describes the stretch before)
                    held = self.sampler.sample(now - 0.001, flush=True)
                except Exception:
                    p["energy0"] = None
                    held = []
            self._add(held)
        self._flush_outside(now)
        self.active = run_id
        if self.scrape_url:
            self._scrape_into(run_id)

    def end_point(self, run_id: int, metrics: dict[str, float] | None = None, windows: dict[str, Any] | None = None,
                  fact_sources: dict[str, str] | None = None, labels: dict[str, Any] | None = None) -> dict[str, float]:
        """The point's telemetry summaries and diagnosis as metrics. `windows`: the measured phase as
        the bench saw it (the load generator's `{"measured": [t0, t1], "decode": [[a, b], …]}`, unix
        seconds), over which the `*_steady` summaries the diagnosis reads are taken; `fact_sources`:
        where the run's `model_*` facts came from (named in the diagnosis); `labels`: the result's own
        labels, which the run will store beside the point's (so a later re-diagnosis sees the same)."""
        metrics = dict(metrics or {})
        now = time.time()
        p = self.points.get(run_id)
        if p is None:
            return {}
        if self.scrape_url:
            self._scrape_into(run_id)
        self.active = None
        energy1 = None
        if self.sampler is not None:
            with self.sampler_lock:
                try:
                    energy1 = self.sampler.read_energy(now)
                    batch = self.sampler.sample(now, flush=True)  # the point's last sample, exactly at its end
                except Exception:
                    batch = []
            self._add(batch)
        t0 = p["t0"]
        with self.lock:
            mine = [s for s in self.samples if t0 <= s["t"] <= now]
            self.samples = [s for s in self.samples if s["t"] > now]
        self._flushed_until = now
        out: dict[str, float] = {}
        try:
            cols = columns(mine)
            if cols:
                with self.ctx.db.write(touches="launch") as s:
                    write_columns(s, cols, run_id=run_id, launch_id=self.launch_id)
            out.update(summarize(cols, t0, now, self.warmup_s))
            out["telemetry_window_s"] = now - t0
            out.update(_steady(cols, windows, t0, now))
            if self.sampler is not None and any(k in out for k in ("tensor_active", "dram_bw_util", "sm_active")):
                # how finely GPM resolved this point: a reading averages over its whole window
                out["telemetry_gpm_interval_s"] = float(self.settings.get("gpm_interval_s") or 10.0)
            energy = None
            if energy1 is not None and p["energy0"] is not None:
                energy = sum(energy1[k] - p["energy0"].get(k, energy1[k]) for k in energy1)
            else:
                energy = _energy_from_samples(cols)
            out.update(energy_metrics(energy, {**metrics, "duration_s": metrics.get("duration_s", now - t0)}))
        except Exception as e:
            self.notice(f"telemetry: could not store or summarise the samples of run {run_id}: {e}")
        if p["scrapes"]:
            out.update(prom.point_metrics(p["scrapes"]))
        # model facts written in the spec's telemetry block are the user's: stored as the run's facts
        # (over any found at launch) so that a later re-diagnosis sees what this one saw
        for k in MF.NUMERIC_FACTS:
            v = self.settings.get(k)
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                out[MF.FACT_PREFIX + k] = float(v)
        try:
            out.update(self._diagnosis(run_id, {**metrics, **out}, fact_sources, labels))
        except Exception as e:
            self.notice(f"telemetry: diagnosis failed for run {run_id}: {e}")
        self.points.pop(run_id, None)
        return out

    def _diagnosis(self, run_id: int, merged: dict[str, float], fact_sources: dict[str, str] | None,
                   given: dict[str, Any] | None = None) -> dict[str, float]:
        labels: dict[str, Any] = dict(given or {})
        try:
            with self.ctx.db.read() as s:
                labels.update(labels_metrics(s, [run_id])[0].get(run_id, {}))  # the point's labels win, as stored
        except Exception:
            pass
        if "dtype" in self.settings and "dtype" not in labels:
            labels["dtype"] = self.settings["dtype"]
        try:
            ceilings = self.ctx.config.ceilings()
        except Exception:
            ceilings = {}
        return diagnose(merged, ceilings, labels, fact_sources=fact_sources).metrics()

    def _flush_outside(self, until: float) -> None:
        """Samples between points (server start-up, idle) go to launch-level chunks."""
        with self.lock:
            old = [s for s in self.samples if s["t"] < until]
            self.samples = [s for s in self.samples if s["t"] >= until]
        if not old or self.launch_id is None:
            return
        try:
            with self.ctx.db.write(touches="launch") as s:
                write_samples(s, old, run_id=None, launch_id=self.launch_id)
        except Exception as e:
            self.notice(f"telemetry: could not store samples: {e}")

    def stop(self) -> None:
        self.stop_ev.set()
        for proc in (self.proc, self.dmon_proc):
            if proc is None:
                continue
            for m in ("terminate", "kill", "stop", "cancel"):
                fn = getattr(proc, m, None)
                if callable(fn):
                    try:
                        fn()
                        break
                    except Exception:
                        pass
        for t in self.threads:
            t.join(timeout=2.0)
        if self.sampler is not None:
            with self.sampler_lock:
                try:
                    held = self.sampler.flush()
                except Exception:
                    held = []
                self.sampler.close()
            self._add(held)
        self._flush_outside(time.time() + 1e9)

    def __enter__(self) -> "TelemetrySession":
        self.start()
        return self

    def __exit__(self, *a: Any) -> None:
        self.stop()


def _steady(cols: dict[str, Any], windows: dict[str, Any] | None, t0: float, now: float) -> dict[str, float]:
    """`summary.steady` over the bench's decode windows, else its measured start/end, and over its
    prefill windows (`*_prefill`) where it gave them; {} without any."""
    if not cols or not isinstance(windows, dict):
        return {}
    pairs: list[tuple[float, float]] = []
    for w in windows.get("decode") or []:
        if isinstance(w, (list, tuple)) and len(w) == 2 and all(isinstance(x, (int, float)) for x in w):
            pairs.append((float(w[0]), float(w[1])))
    decode = bool(pairs)
    if not pairs:
        mw = windows.get("measured")
        if isinstance(mw, (list, tuple)) and len(mw) == 2 and all(isinstance(x, (int, float)) for x in mw):
            pairs = [(float(mw[0]), float(mw[1]))]
    ws = join_windows(pairs, t0, now)
    out = steady(cols, ws, t0, decode) if ws else {}
    pre = [(float(w[0]), float(w[1])) for w in windows.get("prefill") or []
           if isinstance(w, (list, tuple)) and len(w) == 2 and all(isinstance(x, (int, float)) for x in w)]
    pws = join_windows(pre, t0, now, max_n=256)
    if pws:  # the requests' prefill stretches, summarised apart (issue 43: phases diagnosed apart)
        out.update(steady(cols, pws, t0, True, suffix="_prefill"))
    return out


def _energy_from_samples(cols: dict[str, Any]) -> float | None:
    """Energy over a point from the samples: counter deltas (energy_j) or integrated power."""
    import numpy as np  # deferred: numpy (~80 ms); `run record` imports the launcher, not the arrays

    tot = 0.0
    got = False
    for c in cols.values():
        t = c.get("_t")
        e = c.get("energy_j")
        if e is not None:
            ok = ~np.isnan(e)
            if ok.sum() >= 2:
                tot += float(e[ok][-1] - e[ok][0])
                got = True
                continue
        p = c.get("gpu_power_w")
        if p is not None and t is not None and len(t) >= 2:
            ok = ~np.isnan(p)
            if ok.sum() >= 2:
                tot += float(np.trapezoid(p[ok], t[ok]) if hasattr(np, "trapezoid") else np.trapz(p[ok], t[ok]))  # type: ignore[attr-defined]  # numpy < 2 only; numpy 2's stubs lack it
                got = True
    return tot if got else None
