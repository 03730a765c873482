"""The JSON contract lives in the repository, written once: docs/json.md is generated from the typed
documents (optlog/service/documents.py) and must match them; the MCP output schemas are derived
from the same classes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_json_page_is_generated_from_the_documents() -> None:
    p = subprocess.run([sys.executable, "scripts/json_docs.py", "--check"], cwd=ROOT, capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 0, p.stderr


def test_a_stale_page_is_caught(tmp_path, monkeypatch) -> None:
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import json_docs
    finally:
        sys.path.pop(0)
    page = tmp_path / "json.md"
    page.write_text(json_docs.render().replace("| `workspace` | string | always |", "| `workspace` | integer | always |"))
    monkeypatch.setattr(json_docs, "PAGE", page)
    monkeypatch.setattr(json_docs, "ROOT", tmp_path)
    monkeypatch.setattr(sys, "argv", ["json_docs.py", "--check"])
    assert json_docs.main() == 1
    monkeypatch.setattr(sys, "argv", ["json_docs.py"])
    assert json_docs.main() == 0 and "| `workspace` | string | always |" in page.read_text()


def test_every_document_key_is_on_the_page() -> None:
    from optlog.service import documents

    text = (ROOT / "docs" / "json.md").read_text()
    for title, cls in documents.DOCUMENTS.items():
        assert f"## {title}\n" in text
        for key in cls.__annotations__:
            assert f"| `{key}` |" in text, (title, key)
