"""Helpers for the load generator's tests: the test server as a real subprocess, and running
`python -m optlog.loadgen` (no workspace) or `optlog bench` (in a workspace)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SERVER = ROOT / "tests" / "testserver.py"


class LiveServer:
    def __init__(self, *args: str) -> None:
        self.proc = subprocess.Popen([sys.executable, str(SERVER), "--port", "0", *args], stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, start_new_session=True)
        deadline = time.monotonic() + 20
        line = ""
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()  # type: ignore[union-attr]
            if line.startswith("READY ") or not line:
                break
        if not line.startswith("READY "):
            self.stop()
            raise RuntimeError(f"test server did not start: {line!r} {self.proc.stderr.read()}")  # type: ignore[union-attr]
        self.url = line.split()[1]

    def metrics(self) -> dict[str, float]:
        import urllib.request

        out = {}
        with urllib.request.urlopen(self.url + "/metrics", timeout=5) as r:
            for ln in r.read().decode().splitlines():
                if ln and not ln.startswith("#"):
                    k, v = ln.rsplit(" ", 1)
                    out[k.split("{")[0]] = float(v)
        return out

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


class Res:
    def __init__(self, p: subprocess.CompletedProcess[str]) -> None:
        self.code, self.out, self.err = p.returncode, p.stdout, p.stderr

    @property
    def json(self) -> Any:
        return json.loads(self.out)


def loadgen(*args: str, env: dict[str, str] | None = None, timeout: float = 120, cwd: str | None = None) -> Res:
    """`python -m optlog.loadgen ARGS --json` (measures only; records nothing)."""
    e = dict(os.environ)
    e.pop("OPTLOG_DB_URL", None)
    if env:
        e.update(env)
    p = subprocess.run([sys.executable, "-m", "optlog.loadgen", *args, "--json"], capture_output=True, text=True,
                       timeout=timeout, env=e, cwd=cwd)
    return Res(p)
