"""The real path on an NVIDIA GPU machine (run on the H200 device, one call): NVML call costs, the
sampler's CPU share, `optlog calibrate`, the GEMM-probe sweep (bf16, M = 16…8192, K = N = 8192) and a
4 GiB device copy, each point a run in a real optlog workspace with a TelemetrySession at 10 Hz (GPM on),
the diagnosis per point, the probe with the sampler on vs off, recorded nvidia-smi streams (test
fixtures) and, with two GPUs, NVLink traffic during a GPU0→GPU1 copy.

    PYTHONPATH=. python3 bench/telemetry_gpu_proof.py OUTDIR

Drives sampler + probe + diagnosis from this script (the launcher branch was not usable yet): each
point is inserted as a run, the session brackets it exactly as the launcher will (begin_point /
end_point), the probe runs as a subprocess.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import threading
import time
import traceback
from pathlib import Path
from typing import Any

OUT = Path(sys.argv[1] if len(sys.argv) > 1 else "/tmp/proof")
OUT.mkdir(parents=True, exist_ok=True)
RESULTS: dict[str, Any] = {}
LOG = open(OUT / "proof.log", "w")


def log(*a: Any) -> None:
    s = " ".join(str(x) for x in a)
    print(s, flush=True)
    LOG.write(s + "\n")
    LOG.flush()


def part(name: str):  # type: ignore[no-untyped-def]
    def deco(fn):  # type: ignore[no-untyped-def]
        def run() -> None:
            log(f"\n===== {name} =====")
            t0 = time.time()
            try:
                fn()
            except Exception:
                log(traceback.format_exc())
                RESULTS.setdefault("errors", []).append(name)
            log(f"[{name}: {time.time() - t0:.1f} s]")
        return run
    return deco


def sh(cmd: str, timeout: float = 60) -> str:
    p = subprocess.run(cmd, shell=True, capture_output=True, text=True, timeout=timeout)
    return p.stdout + p.stderr


@part("environment")
def env_info() -> None:
    import pynvml
    import torch

    log(sh("nvidia-smi -L; nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv"))
    log(sh("nvidia-smi topo -m"))
    log("torch", torch.__version__, "cuda", torch.version.cuda, "devices", torch.cuda.device_count())
    log("nvidia-ml-py", getattr(pynvml, "__version__", "?"))
    RESULTS["env"] = {"torch": torch.__version__, "gpus": torch.cuda.device_count(),
                      "name": torch.cuda.get_device_name(0)}


@part("NVML call costs (GPU 0; median of 200, wall and CPU of this thread)")
def call_costs() -> None:
    import pynvml as N

    from optlog.telemetry import nvml as M

    N.nvmlInit()
    h = N.nvmlDeviceGetHandleByIndex(0)
    try:
        nl = int(N.nvmlDeviceGetFieldValues(h, [M.FI_NVLINK_LINK_COUNT])[0].value.uiVal)
    except Exception:
        nl = 0
    batch = [M.FI_POWER_INSTANT, M.FI_POWER_AVERAGE, M.FI_PCIE_TX, M.FI_PCIE_RX, M.FI_MEMORY_TEMP]
    batch += [(M.FI_NVLINK_TX, i) for i in range(nl)] + [(M.FI_NVLINK_RX, i) for i in range(nl)]
    s1, s2 = N.nvmlGpmSampleAlloc(), N.nvmlGpmSampleAlloc()
    N.nvmlGpmSampleGet(h, s1)
    time.sleep(0.2)
    N.nvmlGpmSampleGet(h, s2)

    def gpm_metrics(k: int = 99) -> None:
        mg = N.c_nvmlGpmMetricsGet_t()
        mg.version = N.NVML_GPM_METRICS_GET_VERSION
        ids = list(M.GPM_METRICS)[:k]
        mg.numMetrics = len(ids)
        mg.sample1, mg.sample2 = s1, s2
        for i, m in enumerate(ids):
            mg.metrics[i].metricId = m
        N.nvmlGpmMetricsGet(mg)

    calls = {
        "nvmlDeviceGetPowerUsage": lambda: N.nvmlDeviceGetPowerUsage(h),
        "fieldValues[pcie tx+rx counters]": lambda: N.nvmlDeviceGetFieldValues(h, [M.FI_PCIE_TX, M.FI_PCIE_RX]),
        "fieldValues[hbm temp]": lambda: N.nvmlDeviceGetFieldValues(h, [M.FI_MEMORY_TEMP]),
        "fieldValues[nvlink link count]": lambda: N.nvmlDeviceGetFieldValues(h, [M.FI_NVLINK_LINK_COUNT]),
        "fieldValues[nvlink tx, link 0]": lambda: N.nvmlDeviceGetFieldValues(h, [(M.FI_NVLINK_TX, 0)]),
        "nvmlGpmMetricsGet (1 metric)": lambda: gpm_metrics(1),
        "nvmlGpmMetricsGet (4 metrics)": lambda: gpm_metrics(4),
        "fieldValues[power instant]": lambda: N.nvmlDeviceGetFieldValues(h, [M.FI_POWER_INSTANT]),
        f"fieldValues[sampler batch, {len(batch)} ids]": lambda: N.nvmlDeviceGetFieldValues(h, batch),
        "nvmlDeviceGetTotalEnergyConsumption": lambda: N.nvmlDeviceGetTotalEnergyConsumption(h),
        "nvmlDeviceGetUtilizationRates": lambda: N.nvmlDeviceGetUtilizationRates(h),
        "nvmlDeviceGetClockInfo(SM)": lambda: N.nvmlDeviceGetClockInfo(h, 1),
        "nvmlDeviceGetMemoryInfo": lambda: N.nvmlDeviceGetMemoryInfo(h),
        "nvmlDeviceGetTemperatureV": lambda: N.nvmlDeviceGetTemperatureV(h, 0),
        "nvmlDeviceGetCurrentClocksEventReasons": lambda: N.nvmlDeviceGetCurrentClocksEventReasons(h),
        "nvmlGpmSampleGet": lambda: N.nvmlGpmSampleGet(h, s2),
        "nvmlGpmMetricsGet (9 metrics)": gpm_metrics,
    }
    costs = {}
    for name, fn in calls.items():
        w, c = [], []
        for _ in range(200):
            t0, c0 = time.perf_counter(), time.thread_time()
            try:
                fn()
            except Exception as e:
                w, c = [float("nan")], [float("nan")]
                log(f"  {name}: {e}")
                break
            w.append(time.perf_counter() - t0)
            c.append(time.thread_time() - c0)
        costs[name] = {"wall_us": statistics.median(w) * 1e6, "cpu_us": statistics.median(c) * 1e6}
        log(f"  {name:<45} wall {costs[name]['wall_us']:9.1f} µs   cpu {costs[name]['cpu_us']:9.1f} µs")
    N.nvmlGpmSampleFree(s1)
    N.nvmlGpmSampleFree(s2)
    N.nvmlShutdown()
    RESULTS["nvml_call_costs"] = costs
    RESULTS["nvlinks"] = nl


def sampler_cost(label: str, seconds: float = 5.0, interval: float = 0.1, gpm_interval: float = 1.0) -> dict[str, float]:
    from optlog.telemetry.nvml import NvmlSampler

    s = NvmlSampler(interval_s=interval, env={}, notice=lambda t: log("  notice:", t), gpm_interval_s=gpm_interval)
    devs = s.open()
    n = 0
    cpu = 0.0
    wall = 0.0
    t_end = time.monotonic() + seconds
    nxt = time.monotonic()
    last: list[dict[str, Any]] = []
    gpm_ticks = 0
    while time.monotonic() < t_end:
        t0, c0 = time.perf_counter(), time.thread_time()
        last = s.sample()
        wall += time.perf_counter() - t0
        cpu += time.thread_time() - c0
        n += 1
        gpm_ticks += int("tensor_active" in last[0])
        nxt += interval
        time.sleep(max(0.0, nxt - time.monotonic()))
    s.close()
    ng = len(devs)
    res = {"gpus": ng, "ticks": n, "interval_s": interval, "gpm_interval_s": gpm_interval, "gpm_ticks": gpm_ticks, "cpu_ms_per_sample_per_gpu": cpu / n / ng * 1e3,
           "wall_ms_per_sample_per_gpu": wall / n / ng * 1e3,
           "cpu_share_one_core_at_10hz_8gpus_pct": cpu / n / ng * 8 * 10 * 100}
    log(f"  [{label}] {ng} GPU(s), {n} ticks ({gpm_ticks} with GPM): per sample per GPU cpu "
        f"{res['cpu_ms_per_sample_per_gpu']:.3f} ms, wall {res['wall_ms_per_sample_per_gpu']:.3f} ms → 8 GPUs at 10 Hz: "
        f"{res['cpu_share_one_core_at_10hz_8gpus_pct']:.2f} % of one core")
    log("  last sample:", json.dumps(last[0]))
    return res


@part("sampler cost: NVML calls 100 ms apart, and CPU per sample per GPU by configuration (bench/telemetry_bench.py sampler)")
def sampler_idle() -> None:
    sys.path.insert(0, str(Path(__file__).parent))
    from telemetry_bench import sampler

    r = sampler(5.0)
    log(json.dumps(r, indent=1))
    RESULTS["sampler_bench"] = r


def make_ws() -> Any:
    from optlog.config import default_config_text
    from optlog.paths import Workspace
    from optlog.service.context import Ctx

    root = Path("/tmp/proofws")
    root.mkdir(exist_ok=True)
    (root / "optlog.yaml").write_text(default_config_text("h200-proof", "glb5improvement"))
    ctx = Ctx(Workspace(root), actor="proof")
    ctx.on_notice = lambda t: log("  notice:", t)  # type: ignore[attr-defined]
    return ctx


CTX: Any = None


@part("optlog calibrate")
def calibrate() -> None:
    global CTX
    from optlog.service.calibrate import calibrate as cal

    CTX = make_ws()
    r = cal(CTX, device="cuda")
    log(json.dumps(r["measured"], indent=1))
    text = (CTX.ws.root / "optlog.yaml").read_text()
    log(text)
    (OUT / "optlog.yaml").write_text(text)
    RESULTS["calibrate"] = r["measured"]
    CTX.__dict__.pop("config", None)


def probe_cmd(args: list[str], min_time: float = 3.0) -> list[str]:
    return [sys.executable, "-m", "optlog.probes.gemm", *args, "--device", "cuda", "--min-time-s", str(min_time)]


def run_probe(args: list[str], min_time: float = 3.0) -> dict[str, Any]:
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="0")
    p = subprocess.run(probe_cmd(args, min_time), capture_output=True, text=True, env=env, timeout=300)
    if p.returncode != 0:
        raise RuntimeError(p.stderr[-2000:])
    return json.loads(p.stdout.strip().splitlines()[-1])


POINTS = [("gemm", ["--m", str(m), "--k", "8192", "--n", "8192", "--dtype", "bf16"], {"m": m}) for m in
          (16, 64, 256, 1024, 8192)] + [("copy", ["--copy-bytes", str(4 << 30)], {"m": "copy-4GiB"})]


@part("probe sweep with TelemetrySession at 10 Hz (GPM on), one run per point, diagnosis")
def sweep() -> None:
    from optlog.service.evidence import insert_run
    from optlog.store.models import Metric, Run
    from optlog.telemetry.session import open_session
    from optlog.telemetry.summary import run_telemetry

    ctx = CTX or make_ws()
    sess = open_session(ctx, launch_id=1, settings={"interval_s": 0.1, "warmup_s": 0.3, "gpm": True, "gpm_interval_s": 0.2},
                        env={"CUDA_VISIBLE_DEVICES": "0"}, executor=None)
    assert sess is not None
    sess.start()
    rows = []
    texts = []
    for op, args, lab in POINTS:
        labels = {"op": op, "dtype": "bf16", "k": 8192, "n": 8192, **lab}
        with ctx.db.write() as s:
            rid = insert_run(s, labels=labels, metrics={}, status="running", source="launched", launch_id=1)
        env = dict(os.environ, CUDA_VISIBLE_DEVICES="0")
        pr = subprocess.Popen(probe_cmd(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        for line in pr.stderr:  # the point starts when the probe's timed part does (not at torch import)
            if "optlog.probe: timing" in line:
                break
        sess.begin_point(rid)
        line = pr.stdout.readline()  # printed right after the timed part: the point ends here
        res = json.loads(line)
        met = {k: float(v) for k, v in res.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
        met["duration_s"] = float(res["wall_s"])
        extra = sess.end_point(rid, met)
        pr.communicate(timeout=120)
        met.update(extra)
        with ctx.db.write() as s:
            for k, v in met.items():
                if v == v:
                    s.add(Metric(run_id=rid, name=k, value=float(v)))
            r = s.get(Run, rid)
            r.status = "succeeded"
            s.add(r)
        tel = run_telemetry(ctx, rid, met)
        d = tel["diagnosis"]
        row = {"run": rid, "point": lab["m"], "tflops": res["tflops"], "gbps": res["gbps"],
               "gpu_util": met.get("gpu_util"), "power_w": met.get("gpu_power_w"), "power_p95_w": met.get("gpu_power_w_p95"),
               "tensor_active": met.get("tensor_active"), "dram_bw_util": met.get("dram_bw_util"),
               "sm_active": met.get("sm_active"), "sm_occupancy": met.get("sm_occupancy"),
               "energy_j": met.get("energy_j"), "bound": d["bound"], "basis": d["basis"],
               "samples": met.get("telemetry_samples"), "sw_power_cap_s": met.get("throttle_sw_power_cap_s")}
        rows.append(row)
        texts.append(f"--- run {rid} ({json.dumps(labels)}) ---\nprobe: {json.dumps(res)}\n{tel['text']}")
        log(texts[-1])
    RESULTS["sampler_during_sweep"] = {"cpu_ms_per_tick": sess.sample_cpu_s / max(1, sess.sample_ticks) * 1e3,
                                       "ticks": sess.sample_ticks}
    sess.stop()
    RESULTS["sweep"] = rows
    (OUT / "runs.txt").write_text("\n\n".join(texts) + "\n")
    log("\n| point | TFLOP/s | GB/s | util.gpu % | power W (p95) | tensor active % | DRAM BW % | SM active % | diagnosis |")
    log("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        f = lambda v, p=0: "-" if v is None else f"{v:.{p}f}"  # noqa: E731
        log(f"| {r['point']} | {f(r['tflops'])} | {f(r['gbps'])} | {f(r['gpu_util'])} | {f(r['power_w'])} ({f(r['power_p95_w'])}) "
            f"| {f(r['tensor_active'], 1)} | {f(r['dram_bw_util'], 1)} | {f(r['sm_active'], 1)} | {r['bound']} ({r['basis']}) |")


@part("probe throughput with the sampler on vs off (M=16 and M=8192, alternating, 3 each; 10 Hz, GPM every 0.2 s)")
def on_off() -> None:
    from optlog.telemetry.nvml import NvmlSampler

    out: dict[str, Any] = {}
    s = NvmlSampler(interval_s=0.1, env={"CUDA_VISIBLE_DEVICES": "0"}, gpm_interval_s=0.2)
    s.open()
    for m in (16, 8192):
        args = ["--m", str(m), "--k", "8192", "--n", "8192", "--dtype", "bf16"]
        on, off = [], []
        for i in range(3):
            for mode in ("off", "on"):
                stop = threading.Event()
                th = None
                if mode == "on":
                    th = threading.Thread(target=s.loop, args=(lambda b: None, stop), daemon=True)
                    th.start()
                r = run_probe(args, 2.0)
                if th is not None:
                    stop.set()
                    th.join()
                (on if mode == "on" else off).append(r["tflops"])
        out[f"m{m}"] = {"on": on, "off": off, "ratio_median_on_over_off": statistics.median(on) / statistics.median(off)}
        log(f"  M={m}: off {['%.1f' % x for x in off]} on {['%.1f' % x for x in on]} TFLOP/s; "
            f"median on/off = {out[f'm{m}']['ratio_median_on_over_off']:.4f}")
    s.close()
    RESULTS["on_off"] = out


@part("two GPUs: NVLink counters during a GPU0→GPU1 copy; CUDA_VISIBLE_DEVICES by UUID")
def nvlink() -> None:
    import torch

    from optlog.telemetry.nvml import NvmlSampler, select_devices

    if torch.cuda.device_count() < 2:
        log("  one GPU: skipped")
        return
    import pynvml as N

    N.nvmlInit()
    u1 = N.nvmlDeviceGetUUID(N.nvmlDeviceGetHandleByIndex(1))
    u1 = u1.decode() if isinstance(u1, bytes) else u1
    sel = select_devices(N, {"CUDA_VISIBLE_DEVICES": u1}, None, log)
    log(f"  CUDA_VISIBLE_DEVICES={u1} → NVML index {[d.index for d in sel]}")
    sel = select_devices(N, {"CUDA_VISIBLE_DEVICES": "1,0", "CUDA_DEVICE_ORDER": "PCI_BUS_ID"}, None, log)
    log(f"  CUDA_VISIBLE_DEVICES=1,0 → NVML indices {[d.index for d in sel]} labels {[d.label for d in sel]}")
    N.nvmlShutdown()
    s = NvmlSampler(interval_s=0.1, env={}, gpm_interval_s=0.2)
    s.open()
    samples: list[dict[str, Any]] = []
    stop = threading.Event()
    th = threading.Thread(target=s.loop, args=(samples.extend, stop), daemon=True)
    th.start()
    src = torch.rand((1 << 30) // 4, device="cuda:0")
    dst = torch.empty_like(src, device="cuda:1")
    t0 = time.time()
    n = 0
    while time.time() - t0 < 3.0:
        dst.copy_(src)
        n += 1
    torch.cuda.synchronize(0)
    torch.cuda.synchronize(1)
    dt = time.time() - t0
    stop.set()
    th.join()
    s.close()
    rate = n * (1 << 30) / dt / 1e9
    busy = [x for x in samples if t0 + 0.5 <= x["t"] <= t0 + dt - 0.2]
    g0 = [x.get("nvlink_tx_gbps") for x in busy if x["gpu"] == 0 and x.get("nvlink_tx_gbps") is not None]
    g1 = [x.get("nvlink_rx_gbps") for x in busy if x["gpu"] == 1 and x.get("nvlink_rx_gbps") is not None]
    log(f"  copy rate {rate:.1f} GB/s; sampler: GPU0 nvlink_tx median {statistics.median(g0) if g0 else None} GB/s, "
        f"GPU1 nvlink_rx median {statistics.median(g1) if g1 else None} GB/s")
    log("  one busy sample GPU0:", json.dumps(busy[len(busy) // 2] if busy else None))
    RESULTS["nvlink"] = {"copy_gbps": rate, "gpu0_tx_median": statistics.median(g0) if g0 else None,
                         "gpu1_rx_median": statistics.median(g1) if g1 else None}


@part("recorded streams: nvidia-smi query loop, dmon with GPM, optlog telemetry sample")
def streams() -> None:
    from optlog.telemetry import smi

    fields = smi.query_fields(smi.help_fields(sh("nvidia-smi --help-query-gpu")))
    cmd = " ".join(smi.query_cmd(200, fields))
    txt = sh(f"timeout 1.1 {cmd}")
    (OUT / "smi_query.txt").write_text(f"# {cmd}\n{txt}")
    log(f"  {cmd}\n{txt[:600]}")
    dm = sh("nvidia-smi dmon -h | grep -i -A3 gpm")
    d2 = sh("timeout 4 nvidia-smi dmon -s pucmt -c 2 --gpm-metrics 1,2,3,5,10")
    d3 = sh("timeout 4 nvidia-smi dmon -s pucmt -c 2")
    (OUT / "dmon.txt").write_text(f"# dmon -h (gpm)\n{dm}\n# nvidia-smi dmon -s pucmt -c 2 --gpm-metrics 1,2,3,5,10\n{d2}\n"
                                  f"# nvidia-smi dmon -s pucmt -c 2\n{d3}")
    log(dm, d2, d3)
    env = dict(os.environ)
    p = subprocess.run([sys.executable, "-m", "optlog", "telemetry", "sample", "--interval", "0.1", "--count", "3"],
                       capture_output=True, text=True, env=env, timeout=60)
    (OUT / "sample.jsonl").write_text(p.stdout + ("\n# stderr:\n" + p.stderr if p.stderr else ""))
    log(p.stdout[:1500], p.stderr[:500])


def main() -> None:
    import faulthandler

    faulthandler.enable()
    t0 = time.time()
    env_info()
    call_costs()
    sampler_idle()
    calibrate()
    sweep()
    on_off()
    nvlink()
    streams()
    RESULTS["total_s"] = time.time() - t0
    (OUT / "results.json").write_text(json.dumps(RESULTS, indent=1, default=str))
    log(f"\nDONE in {RESULTS['total_s']:.0f} s; errors: {RESULTS.get('errors')}")
    # the table last, for the reply's tail
    for r in RESULTS.get("sweep", []):
        log(json.dumps(r))


if __name__ == "__main__":
    main()
