"""One JSON reader (issue 42): every JSON text optlog reads goes through `optlog.core.jsondoc.loads`,
which refuses an object that says a key twice — Python's `json.loads` keeps the last one without a
word, and an agent's `metrics: {"m": 1, "m": 2}`, a result file or a todo list lost a value so.

This test reads the source with `ast` and fails on a call of `json.loads` or `json.load` outside
core/jsondoc.py. ALLOWED names the reads of JSON that optlog wrote itself in the same process or
database, each with its reason; an entry that no longer matches fails the test, so the list only
shrinks."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PKG = ROOT / "optlog"

ALLOWED = {
    "optlog/store/todorows.py": "a JSON column optlog wrote (json.dumps of a dict)",
    "optlog/store/plainread.py": "JSON columns optlog wrote (status: the index's documents, a plan's needs, the memo of what is due); read on every status",
    "optlog/store/plainstatus.py": "the briefs of the index's documents optlog kept itself (store.readcache.keep_rows), joined and read in one call on a first status",
    "optlog/store/runrows.py": "a run's environment column optlog wrote; read per run on every list",
    "optlog/store/readcache.py": "the ceilings optlog noted itself beside the read cache (stdlib only: read before anything loads)",
    "optlog/store/evidencerows.py": "a run's config column optlog wrote; read per run on every verdict",
    "optlog/mcp/face.py": "the face's own answer, cached as text and read back",
    "optlog/mcp/tools.py": "json.loads(json.dumps(doc)): a copy of optlog's own document",
    "optlog/core/shape.py": "json.loads(json.dumps(doc)): a copy of optlog's own document",
    "optlog/loadgen/core.py": "a server's stream events, one per token: the hook's cost would be measured",
}


def calls(source: str) -> list[int]:
    """Lines of `json.loads(…)` / `json.load(…)` calls in one module's source."""
    out = []
    for node in ast.walk(ast.parse(source)):
        f = node.func if isinstance(node, ast.Call) else None
        if (isinstance(f, ast.Attribute) and f.attr in ("loads", "load") and isinstance(f.value, ast.Name)
                and f.value.id == "json"):
            out.append(node.lineno)
    return out


def test_every_json_reader_goes_through_jsondoc():
    found = {}
    for path in sorted(PKG.rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel == "optlog/core/jsondoc.py":
            continue
        lines = calls(path.read_text(encoding="utf-8"))
        if lines:
            found[rel] = lines
    bad = {k: v for k, v in found.items() if k not in ALLOWED}
    assert not bad, f"json.loads outside optlog.core.jsondoc (use jsondoc.loads: it refuses a key said twice): {bad}"
    stale = set(ALLOWED) - set(found)
    assert not stale, f"ALLOWED names modules that no longer call json.loads: remove them: {stale}"


def test_the_check_can_fail():
    assert calls("import json\nx = json.loads('{}')\ny = json.load(f)\n") == [2, 3]
    assert calls("from optlog.core import jsondoc\nx = jsondoc.loads('{}')\n") == []
