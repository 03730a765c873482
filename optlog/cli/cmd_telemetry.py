"""telemetry sample, calibrate."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import threading
from typing import Any

import click

from optlog.cli.binding import Call, verb
from optlog.cli.main import agent, notice
from optlog.core.numfmt import fmt_num, fmt_share, fmt_sig
from optlog.errors import BadInput, Failed
from optlog.service import calibrate
from optlog.telemetry import smi
from optlog.telemetry.nvml import NvmlSampler, NvmlUnavailable


@click.group("telemetry")
def telemetry() -> None:
    """GPU telemetry: what the sampler beside every launched run reads."""


def _print(samples: list[dict[str, Any]]) -> None:
    out = sys.stdout
    for s in samples:
        out.write(json.dumps(s, separators=(",", ":")) + "\n")
    out.flush()


@telemetry.command("sample")
@click.option("--interval", "interval", type=float, default=0.5, show_default=True, help="Seconds between samples.")
@click.option("--count", type=int, default=None, help="Stop after N samples (default: until interrupted).")
@click.option("--gpus", default=None, metavar="LIST", help="NVML indices or UUIDs (default: CUDA_VISIBLE_DEVICES, else all).")
@click.option("--source", type=click.Choice(["auto", "nvml", "nvidia-smi"]), default="auto", show_default=True,
              help="Where samples come from: NVML, nvidia-smi, or NVML with nvidia-smi as the fallback.")
@click.option("--no-gpm", is_flag=True, help="Do not read GPM metrics.")
@click.option("--gpm-interval", type=float, default=10.0, show_default=True,
              help="Seconds per GPM window (≥ 0.1; each read costs ~2.3 ms of CPU on an H200).")
@agent(skip="a stream of JSON lines until interrupted (the sampler beside launched runs)")
def sample_cmd(interval: float, count: int | None, gpus: str | None, source: str, no_gpm: bool,
               gpm_interval: float) -> None:
    """Print samples as JSON lines, one per GPU per sample (no workspace needed: runs on remote hosts)."""
    if interval <= 0:
        raise BadInput("--interval must be > 0", field="--interval")
    if count is not None and count < 1:
        raise BadInput("--count must be at least 1", field="--count")
    if source in ("auto", "nvml"):
        s = NvmlSampler(gpus=gpus, interval_s=interval, gpm=not no_gpm, notice=notice, gpm_interval_s=gpm_interval,
                        energy_every_s=max(interval, 5.0),
                        # a line per tick as it happens: the reader on the other end cuts points by
                        # time, so it cannot wait for the driver's power buffer to be drained
                        power_drain_s=0.0)
        try:
            s.open()
        except NvmlUnavailable as e:
            if source == "nvml" or shutil.which("nvidia-smi") is None:
                raise Failed(f"no GPU telemetry here: {e}") from None
            notice(f"telemetry: NVML not usable ({e}); falling back to nvidia-smi")
        else:
            try:
                s.loop(_print, threading.Event(), count=count)
            except KeyboardInterrupt:
                pass
            finally:
                s.close()
            return
    _smi_stream(interval, count, gpus)


def _smi_stream(interval: float, count: int | None, gpus: str | None) -> None:
    if shutil.which("nvidia-smi") is None:
        raise Failed("nvidia-smi is not on PATH")
    try:
        help_text = subprocess.run(["nvidia-smi", "--help-query-gpu"], capture_output=True, text=True, timeout=20).stdout
        fields = smi.query_fields(smi.help_fields(help_text) or None)
    except Exception:
        fields = smi.QUERY_SAFE
    notice(smi.missing_notice(fields, gpm=False))
    p = subprocess.Popen(smi.query_cmd(int(interval * 1000), fields, gpus), stdout=subprocess.PIPE, text=True)
    n = 0
    try:
        assert p.stdout is not None
        for line in p.stdout:
            s = smi.parse_query_line(line, fields)
            if s is None:
                continue
            _print([s])
            n += 1
            if count is not None and n >= count:
                break
    finally:
        p.terminate()
        p.wait(timeout=5)


def _calibrate_human(r: dict[str, Any]) -> str:
    m = r["measured"]
    out = [f"{m['kind']} ({m.get('device')}, {m.get('count')} device(s), {m.get('backend')}):"]
    sp = m.get("spread") or {}

    def spread(key: str) -> str:
        t = sp.get(key)
        return f"  (median of {t['n']}, spread {fmt_share(t['spread'], places=1)})" if t else ""

    out += [f"  peak {dt:<5} {fmt_sig(v):>10} TFLOP/s{spread('peak_tflops.' + dt)}" for dt, v in m["peak_tflops"].items()]
    out.append(f"  memory bandwidth {fmt_num(m['mem_bw_gbps'])} GB/s{spread('mem_bw_gbps')}")
    if m.get("dram_counter_full_gbps"):  # the scale the diagnosis reads GPM's DRAM % on (issue 30)
        out.append(f"  DRAM counter scale {fmt_num(m['dram_counter_full_gbps'])} GB/s = 100 % of GPM dram_bw_util "
                   f"({m.get('dram_counter_method')})")
    elif m.get("dram_counter_error"):
        out.append(f"  DRAM counter scale not measured: {m['dram_counter_error']}")
    h = m.get("host") or {}
    if h:
        out.append(f"  host: {h.get('threads')} thread(s), {h.get('cpus')} CPU(s), load average "
                   f"{h.get('load_1m_before')} before, {h.get('load_1m_after')} after")
    for k, why in (r.get("refused") or {}).items():
        out.append(f"  REFUSED {k}: {why}")
    if m.get("p2p_gbps"):
        out.append("  copy GB/s (row → column):")
        out += ["    " + " ".join(f"{x:>8}" for x in row) for row in m["p2p_gbps"]]
    if m.get("allreduce_busbw_gbps") is not None:
        out.append(f"  allreduce bus bandwidth {m['allreduce_busbw_gbps']} GB/s")
    out.append(("written to " if r["written"] else "not written (--dry-run): ") + r["file"])
    if r.get("rediagnosed"):
        out.append(f"  re-diagnosed {len(r['rediagnosed'])} run(s) with the new ceilings; re-judged: "
                   + (", ".join(f"{x['hypothesis']} ({x['status']})" for x in r["rejudged"]) or "none changed"))
    return "\n".join(out)


@click.command("calibrate")
@click.option("--quick", is_flag=True, help="Smaller problems (seconds, less precise).")
@click.option("--device", type=click.Choice(["auto", "cpu", "cuda"]), default="auto", show_default=True,
              help="Measure the GPUs (cuda), the CPU, or whatever is there (auto).")
@click.option("--dry-run", is_flag=True, help="Measure and print, write nothing.")
@click.option("--max-spread", type=float, default=0.10, show_default=True,
              help="Refuse to store a figure whose (max - min) / median over its trials exceeds this.")
# some figure was too unsteady to store: the calibration is incomplete (exit 1)
@verb(_calibrate_human, exit=lambda r, _a: 1 if r.get("refused") else 0)
def calibrate_cmd(call: Call, quick: bool, device: str, dry_run: bool, max_spread: float) -> Any:
    """Measure this machine's ceilings (matmul TFLOP/s per dtype, memory bandwidth, GPU links) into optlog.yaml."""
    return calibrate.calibrate(call.ctx, quick=quick, device=device, dry_run=dry_run, max_spread=max_spread)
