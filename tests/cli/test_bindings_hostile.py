"""Hostile arguments at every MCP tool: an MCP call is input like any other (BRIEF: bad input gets a
clear message, exit 2, writes nothing, never a traceback).

Each tool of `optlog.mcp.tools.tools()` is called through the MCP face in-process
(`optlog.mcp.face.Face.call`) with, for each of its parameters in turn, values a confused or hostile
agent sends: a wrong JSON type, a control character in a string, an object for a scalar, a string
over `LIMITS.arg_chars`, a nested or bad-key `K=V` object; and an unknown parameter. Every call must
give an error document (is_error, exit 2, `field` naming the tool parameter, never internal_error),
and the tool's calls together must leave the database rows, the commit count and the work tree as
they were. The other parameters get plausible values, so the error is the hostile one's.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from optlog.mcp.tools import Param, tools
from optlog.core.limits import LIMITS

TOOLS = tools()
HUGE = "x" * (LIMITS.arg_chars + 1)
PLAUSIBLE = "http://127.0.0.1:9"  # a string every string parameter's click type takes (a URL for bench)
UNKNOWN = "no_such_parameter"


def _plausible(p: Param) -> Any:
    s = p.schema
    t = s.get("type")
    if "enum" in s:
        return s["enum"][0]
    if not isinstance(t, str):  # K=V pairs
        return [f"k={PLAUSIBLE}"]
    return {"integer": 1, "number": 1.0, "boolean": False, "array": [PLAUSIBLE]}.get(t, PLAUSIBLE)


def _hostile(p: Param) -> dict[str, Any]:
    """The hostile values for one parameter, by the kind of value its schema asks for."""
    t = p.schema.get("type")
    if p.json:  # a JSON value the agent passes itself (an object, a todowrite list)
        item: Any = {"k": "a\x1bb"} if t == "object" else [{"content": "a\x1bb", "status": "pending"}]
        big: Any = {"k": HUGE} if t == "object" else [{"content": HUGE, "status": "pending"}]
        return {"wrong type": 5, "control character": item, "huge string": big,
                "object for a scalar": {"x": {"y": 1}} if t == "array" else [1]}
    if isinstance(t, list):  # K=V pairs: an object, or the CLI's ["K=V"]
        return {"wrong type": True, "control character": {"k": "a\x1bb"}, "object for a scalar": {"k": {"x": 1}},
                "huge string": {"k": HUGE}, "bad key": {"bad key": "v"}, "no =": ["novalue"]}
    if t == "array":
        return {"wrong type": [True], "control character": ["a\x1bb"], "object for a scalar": {"x": 1},
                "huge string": [HUGE], "object item": [{"x": 1}]}
    if t == "boolean":
        return {"wrong type": "yes", "number": 1, "object for a scalar": {"x": 1}}
    if t in ("integer", "number"):
        return {"wrong type": "many", "boolean": True, "object for a scalar": {"x": 1},
                "control character": "1\x1b", "huge string": "1" * (LIMITS.arg_chars + 1)}
    return {"wrong type": True, "control character": "a\x1bb", "NUL": "a\x00b", "object for a scalar": {"x": 1},
            "array for a scalar": ["a"], "huge string": HUGE}


def _names_param(field: Any, name: str, p: Param | None) -> bool:
    if p is not None and p.json:  # a place inside the value: todos[0].content, extra_body.k
        return isinstance(field, str) and (field == name or field.startswith((name + ".", name + "[")))
    return field == name


@pytest.fixture(scope="module")
def notebook(tmp_path_factory: pytest.TempPathFactory, db_env_module: dict[str, str]) -> Iterator[tuple[Any, Path]]:
    """One workspace (a hypothesis, a todo, a run in it) and one MCP face for every tool, with the
    backend under test (its own PostgreSQL database when OPTLOG_TEST_PG is set)."""
    from optlog.mcp.face import Face

    tmp = tmp_path_factory.mktemp("hostile")
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.pop("OPTLOG_DB_URL", None)
    env.update(OPTLOG_ACTOR="tester", GIT_CONFIG_GLOBAL=str(tmp / "gitconfig"), XDG_RUNTIME_DIR=str(tmp))
    (tmp / "gitconfig").write_text("[user]\n\tname = Test User\n\temail = test@example.com\n"
                                   "[init]\n\tdefaultBranch = main\n")
    env.update(db_env_module)
    root = tmp / "ws"

    def cli(*a: str) -> None:
        subprocess.run([sys.executable, "-m", "optlog", *a], cwd=tmp, env=env, check=True, capture_output=True)

    cli("init", str(root))
    cli("-C", str(root), "hypothesis", "add", "Comm-bound", "--id", "h")
    cli("-C", str(root), "todo", "add", "look at NCCL")
    cli("-C", str(root), "run", "record", "--label", "config=tp8", "--metric", "tput=1")
    with pytest.MonkeyPatch.context() as mp:
        for k in ("OPTLOG_ACTOR", "GIT_CONFIG_GLOBAL", "XDG_RUNTIME_DIR", "OPTLOG_DB_URL"):
            if k in env:
                mp.setenv(k, env[k])
            else:
                mp.delenv(k, raising=False)
        mp.chdir(tmp)  # a relative path that slipped through would land here, not in the repository
        face = Face(str(root))
        try:
            yield face, root
        finally:
            face.close()


def _footprint(root: Path) -> tuple[dict[str, int], str, str]:
    """Rows per table, commits, and the work tree's state: what a refused call must not change."""
    from sqlalchemy import inspect, text

    from optlog.paths import find_workspace
    from optlog.store.db import workspace_engine

    engine = workspace_engine(find_workspace(root))
    try:
        with engine.connect() as c:
            rows = {t: int(c.execute(text(f'SELECT COUNT(*) FROM "{t}"')).scalar() or 0)
                    for t in inspect(c).get_table_names()}
    finally:
        engine.dispose()

    def git(*a: str) -> str:
        return subprocess.run(["git", *a], cwd=root, capture_output=True, text=True, check=True).stdout

    return rows, git("rev-list", "--count", "HEAD").strip(), git("status", "--porcelain")


@pytest.mark.parametrize("name", sorted(TOOLS))
def test_hostile_arguments_are_refused_naming_the_parameter(notebook: tuple[Any, Path], name: str) -> None:
    face, root = notebook
    tool = TOOLS[name]
    base = {n: _plausible(p) for n, p in tool.params.items() if p.required}
    cases: list[tuple[str, Param | None, str, Any]] = [(UNKNOWN, None, "unknown parameter", 1)]
    cases += [(n, p, what, v) for n, p in tool.params.items() for what, v in _hostile(p).items()]
    before = _footprint(root)
    wrong = []
    for pname, p, what, value in cases:
        doc, is_error, code = face.call(name, {**base, pname: value})
        err = doc.get("error") if isinstance(doc, dict) else None
        assert is_error and isinstance(err, dict), (name, pname, what, doc)
        assert err["code"] != "internal_error" and code == 2, (name, pname, what, err)
        assert "Traceback" not in str(err.get("message")), err
        if not _names_param(err.get("field"), pname, p):
            wrong.append(f"{pname} ({what}): field {err.get('field')!r}: {err.get('message')}")
    assert not wrong, f"{name}: errors that do not name the parameter:\n" + "\n".join(wrong)
    assert _footprint(root) == before, f"{name}: a refused call wrote something"
