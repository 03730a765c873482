"""A new executor is one file plus one registration line (issue 46, item 4): the `wrapped` kind of
tests/fixtures/executors/wrapped.py, registered here with `registry.register(wrapped.KIND)`, is seen by
optlog.yaml's validation (its `executors.wrapped` section, typed by its model), by a spec's
`executor:` (its target syntax, and the message that lists every kind), by `run launch` (a real
launch whose server and bench run under its wrapper) and by the executors' listing docs/executors.md
is generated from. Without the line, none of them knows it."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from _launch import assert_no_survivors, bench_cmd, spec
from optlog.runs.executors import registry

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "executors" / "wrapped.py"


def _load_fixture() -> Any:
    s = importlib.util.spec_from_file_location("optlog_test_wrapped_executor", FIXTURE)
    assert s is not None and s.loader is not None
    mod = importlib.util.module_from_spec(s)
    sys.modules[s.name] = mod  # pydantic resolves the section model's annotations through it
    s.loader.exec_module(mod)
    return mod


@pytest.fixture
def wrapped() -> Iterator[Any]:
    mod = _load_fixture()
    registry.register(mod.KIND)  # the one registration line
    try:
        yield mod
    finally:
        registry.unregister(mod.KIND.name)


# optlog's own entry point with the one registration line before it: `run launch` runs as a process
# (it becomes a child subreaper and handles signals), so the kind is registered in that process too
ENTRY = f"""
import importlib.util, sys
from optlog.runs.executors import registry
s = importlib.util.spec_from_file_location("optlog_test_wrapped_executor", {str(FIXTURE)!r})
mod = sys.modules[s.name] = importlib.util.module_from_spec(s)
s.loader.exec_module(mod)
registry.register(mod.KIND)
from optlog.cli import entry
sys.argv[0] = "optlog"
entry()
"""


def _optlog(ws: Any, *args: str, check: int | None = 0) -> Any:
    """`optlog ARGS` as a process with the wrapped kind registered."""
    p = subprocess.run([sys.executable, "-c", ENTRY, *args], cwd=ws.root, env=ws.env, capture_output=True,
                       text=True, timeout=300)
    if check is not None:
        assert p.returncode == check, f"optlog {' '.join(args)} exited {p.returncode}\n{p.stdout}\n{p.stderr}"
    return p


def _configure(ws: Any, section: dict[str, Any]) -> None:
    p = ws.root / "optlog.yaml"
    doc = yaml.safe_load(p.read_text())
    doc.setdefault("executors", {})["wrapped"] = section
    p.write_text(yaml.safe_dump(doc, sort_keys=False))


def test_a_kind_not_registered_is_unknown_everywhere(ws: Any) -> None:
    assert "wrapped" not in registry.KINDS and "wrapped" not in registry.listing()
    _configure(ws, {"w1": {"tag": "abc"}})
    r = ws.cli("run", "launch", spec(ws, "nowrap", executor="wrapped:w1", server=False), "--json", check=2)
    assert "executors.wrapped" in r.out + r.err  # optlog.yaml's section is refused: no kind has it


def test_config_validation_reads_the_kind_section_model(ws: Any, wrapped: Any) -> None:
    _configure(ws, {"w1": {"tag": "-oProxyCommand=x"}})  # its model's Word refuses an option-like value
    r = _optlog(ws, "run", "launch", spec(ws, "badtag", executor="wrapped:w1", server=False), "--json", check=2)
    text = r.stdout + r.stderr
    assert "optlog.yaml" in text and "executors.wrapped.w1.tag" in text and "not a plain name" in text, text
    assert "Traceback" not in text
    _configure(ws, {"w1": {"tag": "abc", "colour": "red"}})  # unknown keys are errors, as in every section
    r = _optlog(ws, "run", "launch", spec(ws, "extra", executor="wrapped:w1", server=False), "--json", check=2)
    assert "executors.wrapped.w1.colour" in r.stdout + r.stderr
    _configure(ws, {"w1": {"tag": "abc"}})
    assert json.loads(_optlog(ws, "run", "list", "--json").stdout)["runs"] == []  # nothing was written


def test_a_spec_names_it_by_its_target_syntax(ws: Any, wrapped: Any) -> None:
    _configure(ws, {"w1": {"tag": "abc"}})
    r = _optlog(ws, "run", "launch", spec(ws, "bogus", executor="nowhere:x", server=False), "--json", check=2)
    msg = json.loads(r.stdout)["error"]["message"]
    assert msg.endswith('"wrapped:NAME" (a wrapper of optlog.yaml executors.wrapped)') and '"ssh:HOST"' in msg, msg
    r = _optlog(ws, "run", "launch", spec(ws, "nosuch", executor="wrapped:nope", server=False), "--json", check=None)
    assert r.returncode != 0 and "no such wrapper" in r.stdout + r.stderr
    assert json.loads(_optlog(ws, "run", "list", "--json").stdout)["runs"] == []


def test_run_launch_goes_through_it(ws: Any, wrapped: Any) -> None:
    _configure(ws, {"w1": {"tag": "abc123"}})
    rel = spec(ws, "wrapok", executor="wrapped:w1", matrix={"concurrency": [1, 2]},
               bench={"cmd": bench_cmd(), "results": ["result.json"]})
    doc = json.loads(_optlog(ws, "run", "launch", rel, "--json").stdout)
    assert doc["status"] == "succeeded", doc
    assert len(doc["runs"]) == 2
    for r in doc["runs"]:
        assert r["metrics"]["output_throughput"] > 0 and r["exit_code"] == 0
        out = Path(r["artifacts_dir"]) if Path(r["artifacts_dir"]).is_absolute() else ws.root / r["artifacts_dir"]
        assert "wrapped by abc123" in (out / "bench.stderr.log").read_text()  # the bench ran under the wrapper
    logs = list((ws.root / ".optlog").rglob("server-*.stderr.log"))
    assert logs and all("wrapped by abc123" in p.read_text() for p in logs)  # and so did the server
    assert_no_survivors(str(ws.root))


def test_the_listing_and_its_messages_name_it(wrapped: Any, tmp_path: Path) -> None:
    """docs/executors.md's table is the registry's listing: with the kind registered, the page as
    committed is stale (cog --check), and the listing has its row."""
    cogapp = pytest.importorskip("cogapp", reason="cog is not installed (pip install -e '.[test]')")
    page = tmp_path / "executors.md"
    page.write_text((Path(__file__).resolve().parents[2] / "docs" / "executors.md").read_text())
    assert int(cogapp.Cog().main(["cog", "--check", str(page)])) == 5  # cog's "--check found a change"
    table = registry.listing()
    row = next(ln for ln in table.splitlines() if ln.startswith("| wrapped |"))
    assert '"wrapped:NAME"' in row and "`executors.wrapped`" in row and "this machine" in row
    assert [k.name for k in registry.kinds()][-1] == "wrapped"
    assert registry.config_sections()["wrapped"] == wrapped.KIND.section
    assert registry.on_this_machine("wrapped:w1") and registry.lock_target("wrapped:w1").startswith("local:")
