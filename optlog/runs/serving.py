"""A server one group of a launch's points runs against, and how a point fails (runs.launcher and
runs.readiness share them)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from optlog.core.failure import classify, tail


class PointFailure(Exception):
    def __init__(self, message: str, cause: str | None = None, exit_code: int | None = None,
                 status: str = "failed") -> None:
        super().__init__(message)
        self.message = message
        self.cause = cause
        self.exit_code = exit_code
        self.status = status


class Cancelled(Exception):
    pass


def read_tail(path: Path, lines: int = 20, max_bytes: int = 16384) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            n = f.tell()
            f.seek(max(0, n - max_bytes))
            data = f.read().decode("utf-8", "replace")
    except OSError:
        return ""
    return tail(data, lines)


class Server:
    """A started (or external) server of one group."""

    def __init__(self, index: int, rendered: dict[str, Any] | None, handle: Any = None,
                 stdout: Path | None = None, stderr: Path | None = None, url: str | None = None) -> None:
        self.index = index
        self.rendered = rendered
        self.handle = handle
        self.stdout = stdout
        self.stderr = stderr
        self.url = url
        self.environment: dict[str, Any] | None = None
        self.model_facts: Any = None  # core.modelfacts.ModelFacts read once the server is ready
        self.benched = False  # a bench ran against it since it (re)started: the next needs no warm-up

    def log_tail(self, lines: int = 20) -> str:
        parts = []
        for p in (self.stderr, self.stdout):
            if p is not None:
                t = read_tail(p, lines)
                if t:
                    parts.append(t)
        return "\n".join(parts)

    def fileno(self) -> int | None:
        return self.handle.fileno() if self.handle is not None else None


def server_died(server: Server, when: str) -> PointFailure:
    rc = server.handle.poll()
    log = server.log_tail()
    return PointFailure(f"server exited with code {rc} {when}\n--- server log tail ---\n{log}",
                        cause=classify(log, rc) or "server_died", exit_code=rc)
