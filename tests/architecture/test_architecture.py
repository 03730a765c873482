"""The architecture is a contract CI checks: import-linter's contracts in pyproject.toml (layers from
the faces down to `errors`, no cycles between the modules of a package) must all be kept."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


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
    """The check can fail: a copy of the package with one upward import (core → service) breaks it, and
    one face reaching past the API (tui → store: allowed by the layers) breaks "faces only through the api"."""
    pkg = tmp_path / "optlog"
    shutil.copytree(ROOT / "optlog", pkg, ignore=shutil.ignore_patterns("__pycache__"))
    (pkg / "core" / "upward.py").write_text("from optlog.service import context  # noqa: F401\n")
    (pkg / "tui" / "past.py").write_text("from optlog.store import readcache  # noqa: F401\n")
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    p = subprocess.run([_lint_imports(), "--no-cache"], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                       env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"})
    assert p.returncode != 0, p.stdout
    assert "optlog.core.upward -> optlog.service.context" in p.stdout
    assert "faces only through the api BROKEN" in p.stdout and "optlog.tui.past -> optlog.store.readcache" in p.stdout


def _sql_contract() -> dict:
    import tomllib

    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]["contracts"]
    return next(c for c in contracts if c["name"] == "SQL only in store")


def test_the_sql_contract_covers_all_of_optlog_but_store() -> None:
    """SQL only in store/, with no exception: the contract names every top-level module of the
    package but optlog.store (a new package must be added to it, or this fails) and ignores nothing."""
    pkg = ROOT / "optlog"
    top = {f"optlog.{p.stem}" for p in pkg.glob("*.py") if p.stem != "__init__"}
    top |= {f"optlog.{d.name}" for d in pkg.iterdir() if (d / "__init__.py").is_file()}
    c = _sql_contract()
    assert sorted(c["source_modules"]) == sorted(top - {"optlog.store"})
    assert {"sqlalchemy", "sqlmodel"} <= set(c["forbidden_modules"])
    assert not c.get("ignore_imports")


def test_sql_outside_store_is_caught(tmp_path: Path) -> None:
    """The check can fail: a copy of the package with a new service module that imports sqlmodel breaks it."""
    pkg = tmp_path / "optlog"
    shutil.copytree(ROOT / "optlog", pkg, ignore=shutil.ignore_patterns("__pycache__"))
    (pkg / "service" / "foo.py").write_text("import sqlmodel  # noqa: F401\n")
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    env = {"PYTHONPATH": os.pathsep.join([str(tmp_path), *sys.path[1:]]), "PATH": "/usr/bin:/bin"}
    p = subprocess.run([_lint_imports(), "--no-cache"], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                       env=env)
    assert p.returncode != 0, p.stdout
    assert "SQL only in store BROKEN" in p.stdout
    assert "optlog.service.foo -> sqlmodel" in p.stdout


# ---------------------------------------------------------------- types

def _mypy(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    pytest.importorskip("mypy", reason="mypy is not installed (pip install -e '.[test]')")
    return subprocess.run([sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"), *args],
                          cwd=cwd, capture_output=True, text=True, timeout=600)


def test_the_package_type_checks() -> None:
    """`mypy` with the settings in pyproject.toml passes on the whole package (no error, no unused
    `type: ignore`). Its cache (.mypy_cache, git-ignored) makes a re-run take about a second."""
    p = _mypy([], ROOT)
    assert p.returncode == 0, p.stdout[-6000:] + p.stderr[-2000:]
    assert "Success: no issues found" in p.stdout


def test_a_type_error_is_caught(tmp_path: Path) -> None:
    """The check can fail: the same settings report a wrong type and a `type: ignore` that hides nothing."""
    bad = tmp_path / "bad.py"
    bad.write_text('x: int = "a"\ny: int = 1  # type: ignore\n')
    p = _mypy([str(bad)], tmp_path)
    assert p.returncode == 1, p.stdout
    assert "bad.py:1: error: Incompatible types in assignment" in p.stdout
    assert 'bad.py:2: error: Unused "type: ignore" comment' in p.stdout
