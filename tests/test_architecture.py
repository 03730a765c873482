"""The architecture is a contract CI checks: import-linter's contracts in pyproject.toml (layers from
the faces down to `errors`, no cycles between the modules of a package) must all be kept."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _lint_imports() -> str:
    exe = Path(sys.executable).with_name("lint-imports")
    if exe.exists():
        return str(exe)
    found = shutil.which("lint-imports")
    if not found:
        pytest.skip("import-linter is not installed (pip install -e '.[test]')")
    return found


def test_import_contracts_are_kept() -> None:
    p = subprocess.run([_lint_imports(), "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout[-4000:] + p.stderr[-2000:]
    assert "0 broken" in p.stdout and "kept" in p.stdout


def test_a_broken_layer_is_caught(tmp_path: Path) -> None:
    """The check can fail: a copy of the package with one upward import (core → service) breaks it."""
    pkg = tmp_path / "optlog"
    shutil.copytree(ROOT / "optlog", pkg, ignore=shutil.ignore_patterns("__pycache__"))
    (pkg / "core" / "upward.py").write_text("from optlog.service import context  # noqa: F401\n")
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    p = subprocess.run([_lint_imports(), "--no-cache"], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                       env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"})
    assert p.returncode != 0, p.stdout
    assert "optlog.core.upward -> optlog.service.context" in p.stdout
