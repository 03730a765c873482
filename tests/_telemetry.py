"""Helpers for the telemetry tests: a fake-NVML spec, the real test server, an in-process Ctx."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

ROOT = Path(__file__).resolve().parents[1]
PROOF = ROOT / "docs" / "gpu-proof"

TWO_GPUS = {"gpus": [
    {"uuid": "GPU-aaaaaaaa-1111", "power_w": 600, "limit_w": 700, "util": 95, "tensor": 5, "dram": 72, "sm_active": 80,
     "throttle": 4, "nvlinks": 2, "nvlink_gbps_per_dir": 50, "minor": 0},
    {"uuid": "GPU-bbbbbbbb-2222", "power_w": 100, "limit_w": 700, "util": 0, "unsupported": ["power_instant", "power_samples", "gpm"],
     "minor": 1},
]}


@contextmanager
def run_test_server(*args: str) -> Iterator[str]:
    p = subprocess.Popen([sys.executable, str(ROOT / "tests" / "testserver.py"), "--port", "0", *args],
                         stdout=subprocess.PIPE, text=True)
    try:
        assert p.stdout is not None
        line = p.stdout.readline()
        assert line.startswith("READY "), line
        yield line.split()[1]
    finally:
        p.terminate()
        p.wait(timeout=10)


def complete(base: str, prompt: str = "hello world", n: int = 1) -> None:
    for _ in range(n):
        body = json.dumps({"model": "test-model", "prompt": prompt, "max_tokens": 4, "stream": False}).encode()
        req = urllib.request.Request(base + "/v1/completions", data=body, headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=10) as r:
            r.read()


@contextmanager
def ctx_for(ws: Any, monkeypatch: Any) -> Iterator[Any]:
    """An in-process service context on the test workspace (its SQLite file or PostgreSQL database)."""
    from optlog.paths import Workspace
    from optlog.service.context import Ctx

    if "OPTLOG_DB_URL" in ws.env:
        monkeypatch.setenv("OPTLOG_DB_URL", ws.env["OPTLOG_DB_URL"])
    else:
        monkeypatch.delenv("OPTLOG_DB_URL", raising=False)
    c = Ctx(Workspace(ws.root), actor="tester")
    notes: list[str] = []
    c.on_notice = notes.append  # type: ignore[attr-defined]
    c.test_notices = notes  # type: ignore[attr-defined]
    try:
        yield c
    finally:
        c.close()


def fake_env(spec: dict[str, Any]) -> dict[str, str]:
    return {"OPTLOG_FAKE_NVML": json.dumps(spec)}


def clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in ("CUDA_VISIBLE_DEVICES", "SLURM_JOB_GPUS", "SLURM_STEP_GPUS")}
