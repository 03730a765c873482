"""Helpers for the foundation tests: a snapshot of everything a command could have written."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

ERROR_KEYS = {"code", "message", "file", "line", "column", "field"}


def files(root: Path) -> list[str]:
    """Every file in the workspace outside .git and .optlog (what a user would see or commit)."""
    out = []
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root)
        if rel.parts[0] in (".git", ".optlog") or not p.is_file():
            continue
        out.append(f"{rel}:{p.stat().st_size}:{p.read_bytes().__hash__()}")
    return out


def snapshot(ws: Any) -> dict[str, Any]:
    """Commits, files, and every list the database answers: equal before and after = nothing written."""
    return {
        "commits": ws.commits(),
        "files": files(ws.root),
        "todos": ws.j("todo", "list")["todos"],
        "runs": ws.j("run", "list")["runs"],
        "notes": ws.j("note", "list")["notes"],
        "hypotheses": ws.j("hypothesis", "list")["hypotheses"],
        "git_status": ws.git("status", "--porcelain"),
    }


def bad(ws: Any, *args: str, input: str | None = None, field: str | None = None, cwd: Path | None = None,
        env: dict[str, str] | None = None) -> dict[str, Any]:
    """Run a command that must be refused as bad input: exit 2, one JSON error document on stdout,
    the message on stderr; returns the error object."""
    r = ws.cli(*args, "--json", input=input, check=2, cwd=cwd, env=env)
    doc = r.json
    assert set(doc) == {"error"}, doc
    err = doc["error"]
    assert ERROR_KEYS <= set(err), err
    assert err["message"], err
    assert "Traceback" not in r.err, r.err
    assert "error:" in r.err, r.err
    if field is not None:
        assert err["field"] == field, err
    return err


def run_py(code: str, cwd: Path, env: dict[str, str], *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """Run Python code in a fresh interpreter; `args` become sys.argv[1:]."""
    return subprocess.run([sys.executable, "-c", code, *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout)
