"""Generated documentation cannot go stale: the pages built from the code with cog are checked
against what the code declares now (`cog -r FILE` regenerates one)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
GENERATED = ["docs/cli-reference.md", "docs/executors.md"]


def _cog_check(path: Path) -> int:
    cogapp = pytest.importorskip("cogapp", reason="cog is not installed (pip install -e '.[test]')")
    return int(cogapp.Cog().main(["cog", "--check", str(path)]))


@pytest.mark.parametrize("page", GENERATED)
def test_generated_pages_are_current(page: str) -> None:
    assert _cog_check(ROOT / page) == 0, f"{page} is stale: run `cog -r {page}`"


def test_a_stale_page_is_caught(tmp_path: Path) -> None:
    """The check can fail: a copy of the reference that lacks one option is stale."""
    page = tmp_path / "cli-reference.md"
    shutil.copy(ROOT / "docs" / "cli-reference.md", page)
    text = page.read_text()
    line = next(ln for ln in text.splitlines() if ln.startswith("| `--rival`"))
    page.write_text(text.replace(line + "\n", ""))
    assert _cog_check(page) == 5  # cog's exit status for "--check found a change"


def test_the_reference_names_each_tool_parameter_as_the_tool_takes_it() -> None:
    """An agent reads the MCP tool sections too (issue 31): `plan_add` takes `steps`, not `--step`."""
    import re

    from optlog.mcp.tools import tools

    by_name = tools()
    text = (ROOT / "docs" / "cli-reference.md").read_text()
    seen = 0
    for sec in text.split("\n### ")[1:]:
        m = re.search(r"^MCP tool: `(\w+)`", sec, re.M)
        if not m:
            continue
        params = set(by_name[m.group(1)].params)
        named = re.findall(r"^\| `--[^|]*\| `(\w+)` \|", sec, re.M)
        args = re.findall(r"`(\w+)`", sec.split("arguments:")[1].split(";")[0]) if "arguments:" in sec else []
        assert set(named) | set(args) == params, (m.group(1), named, args, params)
        seen += 1
    assert seen > 40
    assert "| `--step` | `steps` |" in text and "| `--risk` | `risks` |" in text
