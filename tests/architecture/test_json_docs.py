"""The JSON contract lives in the repository, written once: docs/json.md is generated from the typed
documents (optlog/service/documents.py) and must match them; the MCP output schemas are derived
from the same classes."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _json_docs(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """scripts/json_docs.py as anyone runs it, on the tree at `root` (it imports optlog from there)."""
    return subprocess.run([sys.executable, str(root / "scripts" / "json_docs.py"), *args], cwd=root,
                          capture_output=True, text=True, timeout=120)


def test_json_page_is_generated_from_the_documents() -> None:
    p = _json_docs(ROOT, "--check")
    assert p.returncode == 0, p.stderr


def test_a_stale_page_is_caught(tmp_path: Path) -> None:
    """The check can fail: on a copy of the tree whose page says `workspace` is an integer, `--check`
    exits 1 and names the page; regenerating it makes the check pass again."""
    for part in ("optlog", "scripts"):
        shutil.copytree(ROOT / part, tmp_path / part, ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "docs").mkdir()
    page = tmp_path / "docs" / "json.md"
    current = (ROOT / "docs" / "json.md").read_text()
    row = "| `workspace` | string | always |"
    assert row in current
    page.write_text(current.replace(row, "| `workspace` | integer | always |"))
    stale = _json_docs(tmp_path, "--check")
    assert stale.returncode == 1 and "docs/json.md is stale" in stale.stderr, stale
    assert _json_docs(tmp_path).returncode == 0 and page.read_text() == current
    assert _json_docs(tmp_path, "--check").returncode == 0


def test_every_document_key_is_on_the_page() -> None:
    from optlog.service import documents

    text = (ROOT / "docs" / "json.md").read_text()
    for title, cls in documents.DOCUMENTS.items():
        assert f"## {title}\n" in text
        for key in cls.__annotations__:
            assert f"| `{key}` |" in text, (title, key)
