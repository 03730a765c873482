"""telemetry sample: a stream, not a verb (issue 35). It has no document: it prints JSON lines, one
per GPU per sample, until interrupted or --count (the sampler beside launched runs reads them, on
this host or over SSH); `--json` changes nothing but an error's form. So it is a click command of
the CLI's own, as the faces (`tui`, `mcp`) are, and no MCP tool (`skip`)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import threading
from typing import Any

import click

from optlog.cli.main import agent, notice
from optlog.errors import BadInput, Failed
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
