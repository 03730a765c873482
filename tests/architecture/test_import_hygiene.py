"""Import hygiene (issue 18, item 2), read from the source with `ast` (import-linter does not see
where an import sits, so a deferred import would hide a cycle from it):

* an import inside a function is only for a package on the HEAVY list below (what a plain command
  must not pay for), and says why on its line: `# deferred: <reason>`. optlog's own modules import
  each other at module level, so the import graph (and every cycle) is visible to import-linter;
* no `except ImportError` around an import of optlog's own modules (no build-era guards);
* no private name (`_x`) imported from another optlog module, or used through an imported one
  (`module._x`).

Files that are not clean yet are listed in NOT_YET_CLEAN. The list only shrinks: an entry whose file
is clean fails the test, so whoever cleans a file removes it (the lead empties it after merging).
The run-time half of the rule is `tests/cli/test_store_and_migrations.py::test_commands_do_not_import_tui_http_or_git`.
"""

from __future__ import annotations

import ast
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# Third-party packages worth deferring: a plain command (todo list, run record, status) does not
# load them, and each costs tens of milliseconds or more (or is optional).
HEAVY: dict[str, str] = {
    "sqlmodel": "the ORM; `todo list` reads without it",
    "sqlalchemy.orm": "the ORM",
    "sqlalchemy": "SQLAlchemy Core, ~130 ms: a read the read cache answers (store.readcache) never loads it",
    "alembic": "migrations, only when the schema is behind",
    "pydantic_settings": "~25-45 ms over pydantic: only where a typed setting is used (optlog.settings.load)",
    "pydantic": "~20 ms: only a command that validates a file (a changed optlog.yaml, a run spec) loads it",
    "psycopg": "PostgreSQL's driver, ~100 ms: only a workspace on PostgreSQL loads it",
    "socket": "~1-2 ms: every read, cached or first, loads store.faults (through store.plainread); only a "
              "PostgreSQL connection names its host there",
    "numpy": "~80 ms", "scipy": "~150 ms",
    "torch": "optional; seconds to import",
    "httpx": "HTTP client, ~60 ms", "anyio": "async runtime of httpx and mcp",
    "git": "GitPython",
    "textual": "the TUI", "textual_plotext": "TUI plots", "plotext": "TUI plots",
    "pynvml": "NVML",
    "mcp": "the MCP SDK", "mcp_types": "the MCP SDK",
    "optuna": "the tuner, ~0.5 s",
    "uvloop": "event loop for load generation",
    "pygal": "report plots", "markdown_it": "report parsing", "mdit_py_plugins": "report parsing",
    "prometheus_client": "scraping /metrics",
    "ruamel": "round-trip YAML edits",
    "filelock": "imports asyncio; only writers lock",
    "gguf": "optional extra [models]",
    "threadpoolctl": "optional, not a dependency",
}

# optlog's own modules that may be deferred, and only from the files (path prefixes) named: each is
# the doorway to a heavy package (checked below), not a way around an import cycle.
DEFERRABLE_OWN: dict[str, tuple[str, str]] = {
    "optlog.store.models": ("optlog/store/", "the SQLModel tables import sqlmodel at module level"),
    # the faces' doorways: a command that does not need the package behind one never loads it
    "optlog.cli.main": ("optlog/cli/__init__.py", "click and the command tree: a read-cache hit answers without them"),
    "optlog.api.session": ("optlog/cli/main.py", "the workspace (store, git): --version and --help skip it"),
    "optlog.store.plaintodos": ("optlog/api/firstread.py", "applying a queued todo list: only a read after the hook"),
    "optlog.store.plainstatus": ("optlog/api/firstread.py", "status's rules (core.statusdoc, core.discriminate, "
                                                               "~25 ms): a read the read cache answers never loads them"),
    "optlog.store.plaindue": ("optlog/store/plainstatus.py", "the verdict engine (core.due, core.verdict, ~30 ms): "
                                                              "only a status whose memo of what is due is stale"),
    "optlog.cli.statustext": ("optlog/cli/fast.py", "a person's status text (core.posthoc, core.expr): a --json read "
                                                    "never loads it"),
    "optlog.store.plainindex": ("optlog/store/plainread.py", "the hypothesis model (pydantic, YAML): only a first "
                                                              "read that finds a changed hypothesis file loads it"),
    "optlog.store.db": ("optlog/api/session.py", "SQLAlchemy: only an error of the database itself needs it"),
    "optlog.service.workspace": ("optlog/api/workspace.py", "init: the settings' pydantic models"),
    "optlog.tui": ("optlog/cli/dashboard.py", "Textual: only the dashboard"),
    "optlog.mcp.face": ("optlog/mcp/server.py", "the face (every verb, the workspace, SQLAlchemy): "
                                                "`initialize` answers before it"),
    "optlog.yamlio": ("optlog/api/arguments.py", "PyYAML: a JSON argument's parser lives beside the YAML one; `todo list` parses neither"),
    # opening a workspace (service.context): what it does only now and then loads only then
    "optlog.service.identity": ("optlog/service/context.py", "once per workspace on a shared database"),
    "optlog.service.recovery": ("optlog/service/context.py", "only when a launch is live (processes, executors)"),
    "optlog.service.journal": ("optlog/service/context.py", "only when an interrupted write left an intent (git, locks)"),
    "optlog.service.runfiles": ("optlog/service/context.py", "only when runs/evidence/ changed (YAML, pydantic, git)"),
    "optlog.settings.model": ("optlog/settings/__init__.py", "pydantic-settings (~25-45 ms over pydantic): the "
                                                          "hot reads take a setting's text without it"),
    "optlog.runs.executors.registry": ("optlog/service/context.py", "the executor kinds type optlog.yaml's "
                                                                    "executors: sections; loaded with the config"),
    "optlog.config": ("optlog/service/context.py", "the settings' pydantic models and YAML (~80 ms): a hot command "
                                                   "validates optlog.yaml only when the file changed"),
    "optlog.service": ("optlog/tui/", "the service layer (SQLAlchemy, pydantic; ~0.6 s) loads after the "
                                            "TUI's first frame, painted from the stdlib-only quick tree"),
    "optlog.api": ("optlog/tui/", "the verbs, and the service layer behind them, load after the TUI's first frame"),
}

# Not clean yet (shrink only; the file's owner cleans it, the lead empties the list after merging).
NOT_YET_CLEAN: frozenset[str] = frozenset()


def _module_of(node: ast.Import | ast.ImportFrom, rel: str) -> list[str]:
    """The absolute module names an import statement names (a relative import resolved from `rel`)."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if node.level:
        pkg = rel.removesuffix(".py").split("/")[:-node.level]
        return [".".join(pkg + ([node.module] if node.module else []))]
    return [node.module or ""]


def _matches(mod: str, prefix: str) -> bool:
    return mod == prefix or mod.startswith(prefix + ".")


def violations(root: Path) -> dict[str, list[str]]:
    """Every file under root/optlog with what breaks the rules, as 'line N: why'."""
    out: dict[str, list[str]] = {}
    for f in sorted((root / "optlog").rglob("*.py")):
        rel = f.relative_to(root).as_posix()
        src = f.read_text(encoding="utf-8")
        lines = src.splitlines()
        tree = ast.parse(src)
        bad: list[str] = []
        in_function: set[int] = set()
        for fn in ast.walk(tree):
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                in_function.update(id(n) for n in ast.walk(fn) if n is not fn)
        own_aliases = {(a.asname or a.name.split(".")[0]): (f"{m}.{a.name}" if isinstance(n, ast.ImportFrom) else m)
                       for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom)) for a in n.names
                       for m in _module_of(n, rel) if m.startswith("optlog")}
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in own_aliases \
                    and node.attr.startswith("_") and not node.attr.startswith("__"):
                bad.append(f"line {node.lineno}: private name {node.attr} used from {own_aliases[node.value.id]}")
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                mods = _module_of(node, rel)
                if isinstance(node, ast.ImportFrom) and any(m.startswith("optlog") for m in mods):
                    private = [a.name for a in node.names if a.name.startswith("_") and not a.name.startswith("__")]
                    if private:
                        bad.append(f"line {node.lineno}: private name {', '.join(private)} imported from {mods[0]}")
                if id(node) not in in_function:
                    continue
                text = " ".join(lines[node.lineno - 1:node.end_lineno])
                for m in mods:
                    own = next((k for k, (where, _) in DEFERRABLE_OWN.items() if _matches(m, k) and rel.startswith(where)), None)
                    if m.split(".")[0] == "optlog" and own is None:
                        bad.append(f"line {node.lineno}: optlog's own {m} imported inside a function")
                    elif own is None and not any(_matches(m, h) for h in HEAVY):
                        bad.append(f"line {node.lineno}: {m} imported inside a function but is not on the HEAVY list")
                    elif "# deferred:" not in text or not text.split("# deferred:", 1)[1].strip():
                        bad.append(f"line {node.lineno}: deferred import of {m} without a `# deferred: <reason>`")
            if isinstance(node, ast.Try):
                names = {ast.unparse(h.type) for h in node.handlers if h.type is not None}
                if any("ImportError" in n or "ModuleNotFoundError" in n for n in names):
                    for s in node.body:
                        for sub in ast.walk(s):
                            if isinstance(sub, (ast.Import, ast.ImportFrom)) and \
                                    any(m.startswith("optlog") for m in _module_of(sub, rel)):
                                bad.append(f"line {sub.lineno}: `except ImportError` around optlog's own import")
        if bad:
            out[rel] = sorted(bad, key=lambda v: int(v.split()[1].rstrip(":")))
    return out


def test_imports_follow_the_rules() -> None:
    found = violations(ROOT)
    dirty = {f: v for f, v in found.items() if f not in NOT_YET_CLEAN}
    assert not dirty, "\n".join(f"{f} {v}" for f, vs in dirty.items() for v in vs)


def test_the_allowlist_only_shrinks() -> None:
    """An allowlisted file that is clean now (or gone) must leave the list, so it cannot go back."""
    found = violations(ROOT)
    stale = sorted(f for f in NOT_YET_CLEAN if f not in found)
    assert not stale, f"clean now: remove from NOT_YET_CLEAN: {stale}"


@pytest.mark.parametrize(("module", "heavy"), [("optlog/store/models.py", "sqlmodel"), ("optlog/config.py", "pydantic")])
def test_each_deferrable_own_module_is_a_doorway_to_a_heavy_package(module: str, heavy: str) -> None:
    """A module is on DEFERRABLE_OWN because it imports a heavy package at module level; if it
    stopped doing that, deferring it would hide the graph for nothing."""
    tree = ast.parse((ROOT / module).read_text(encoding="utf-8"))
    top = {a.name if isinstance(n, ast.Import) else n.module for n in tree.body
           if isinstance(n, (ast.Import, ast.ImportFrom)) for a in n.names}
    assert heavy in top


def test_the_check_can_fail(tmp_path: Path) -> None:
    """A copy of the package with each kind of bad import is caught, line by line."""
    shutil.copytree(ROOT / "optlog", tmp_path / "optlog", ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "optlog/core/bad.py").write_text(
        "def a():\n"
        "    from optlog.core import stats  # deferred: hides a cycle\n"
        "def b():\n"
        "    import numpy\n"
        "def c():\n"
        "    import json  # deferred: stdlib is cheap\n"
        "try:\n"
        "    from optlog.core import expr\n"
        "except ImportError:\n"
        "    expr = None\n"
        "from optlog.core.expr import _parse\n"
        "from optlog.core import stats as S\n"
        "x = S._secret\n"
        "def d():\n"
        "    import numpy  # deferred: ~80 ms\n",
        encoding="utf-8")
    (tmp_path / "optlog/store/bad.py").write_text(
        "def e():\n    from optlog.service import todos  # deferred: not a face\n", encoding="utf-8")
    found = violations(tmp_path)
    assert found["optlog/core/bad.py"] == [
        "line 2: optlog's own optlog.core imported inside a function",
        "line 4: deferred import of numpy without a `# deferred: <reason>`",
        "line 6: json imported inside a function but is not on the HEAVY list",
        "line 8: `except ImportError` around optlog's own import",
        "line 11: private name _parse imported from optlog.core.expr",
        "line 13: private name _secret used from optlog.core.stats",
    ], found["optlog/core/bad.py"]
    assert found["optlog/store/bad.py"] == ["line 2: optlog's own optlog.service imported inside a function"]
    assert set(found) - {"optlog/core/bad.py", "optlog/store/bad.py"} == set(found) & NOT_YET_CLEAN


if __name__ == "__main__":  # python tests/architecture/test_import_hygiene.py: the list, by file
    for f, vs in violations(ROOT).items():
        print(f, *vs, sep="\n    ", file=sys.stdout)
