"""The environment is read in one place (issue 46): `optlog.settings`. Every `OPTLOG_*` variable
optlog reads is a documented field of `optlog.settings.model.Settings` (or of `TestHooks`); nothing
outside `optlog/settings/` touches `os.environ`, `os.getenv` or their kin; every name given to the
light reader `settings.read` is a declared field; and the read cache's front door does not pay for
pydantic-settings. Read with `ast`; no exceptions."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HOME = "optlog/settings/"
ENV_NAMES = {"environ", "environb", "getenv", "getenvb", "putenv", "unsetenv"}


def env_reads(source: str, name: str) -> list[str]:
    """Each use of the process environment: `os.environ...`, `os.getenv(...)`, `from os import environ`."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and node.attr in ENV_NAMES and isinstance(node.value, ast.Name) \
                and node.value.id == "os":
            out.append(f"{name}:{node.lineno}: os.{node.attr}")
        elif isinstance(node, ast.ImportFrom) and node.module == "os":
            out += [f"{name}:{node.lineno}: from os import {a.name}" for a in node.names if a.name in ENV_NAMES]
    return out


def read_names(source: str) -> list[tuple[int, str]]:
    """The names passed to `settings.read(...)` (a literal, or '?' for anything else)."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "read" \
                and isinstance(node.func.value, ast.Name) and node.func.value.id == "settings":
            a = node.args[0] if node.args else None
            out.append((node.lineno, a.value if isinstance(a, ast.Constant) and isinstance(a.value, str) else "?"))
    return out


def _sources() -> list[tuple[str, str]]:
    return [(p.relative_to(ROOT).as_posix(), p.read_text(encoding="utf-8"))
            for p in sorted((ROOT / "optlog").rglob("*.py"))]


def test_the_environment_is_read_only_in_settings() -> None:
    found = [r for name, src in _sources() if not name.startswith(HOME) for r in env_reads(src, name)]
    assert not found, "read the environment through optlog.settings:\n" + "\n".join(found)


def test_the_rule_can_fail() -> None:
    snippet = ("import os\nfrom os import environ, path\n"
               "a = os.environ.get('OPTLOG_X')\nb = os.getenv('HOME')\nc = dict(os.environ)\nd = os.path.sep\n")
    assert sorted(env_reads(snippet, "x.py")) == [
        "x.py:2: from os import environ", "x.py:3: os.environ", "x.py:4: os.getenv", "x.py:5: os.environ"]


def _model() -> None:
    # a dependency since issue 46; a worktree made before it lacks the package until `pip install -e .`
    pytest.importorskip("pydantic_settings", reason="pip install -e . (pydantic-settings is a dependency)")


def test_every_setting_read_is_declared_and_documented() -> None:
    _model()
    from optlog.settings.model import Settings, TestHooks

    fields = {**Settings.model_fields, **TestHooks.model_fields}
    assert not set(Settings.model_fields) & set(TestHooks.model_fields)
    undocumented = [n for n, f in fields.items() if not (f.description or "").strip()]
    assert not undocumented, undocumented
    bad = [f"{name}:{line}: settings.read({n!r})" for name, src in _sources() for line, n in read_names(src)
           if n not in fields]
    assert not bad, "declare these in optlog/settings/model.py (a literal name):\n" + "\n".join(bad)
    assert read_names("settings.read('nope')\nsettings.read(x)\nother.read('y')") == [(1, "nope"), (2, "?")]


def test_settings_are_read_from_the_prefixed_environment_and_keep_their_defaults() -> None:
    _model()
    from optlog import settings

    s = settings.load({"OPTLOG_DB_CONNECT_TIMEOUT": "abc", "OPTLOG_READ_CACHE": "0", "OPTLOG_TUNE_WORKER": "3",
                       "OPTLOG_LOCK_TIMEOUT": "-1", "OPTLOG_ACTOR": "agent:x", "HOME": "/h"})
    assert (s.db_connect_timeout, s.read_cache, s.tune_worker, s.lock_timeout, s.actor) == (10, False, 3, None, "agent:x")
    assert settings.load({}).read_cache and settings.load({}).db_url is None


def test_the_read_cache_front_door_does_not_import_pydantic_settings() -> None:
    code = "import sys, optlog.cli.fast, optlog.core.timeutil; print('pydantic_settings' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
