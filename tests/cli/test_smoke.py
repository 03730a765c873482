"""End-to-end smoke of the foundation through the real CLI."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.cli_process  # the foundation through real `optlog` processes (tests/conftest.py)


def test_hypothesis_pivot_and_todos(ws):
    ws.cli("hypothesis", "add", "Communication-bound", "--id", "comm-bound")
    h = ws.j("hyp", "add", "Compute-bound: FP4 GEMM kernels", "--parent", "comm-bound", "--rival", "comm-bound")
    assert h["parent"] == "comm-bound" and h["rivals"] == ["comm-bound"]
    parent = ws.j("hypothesis", "show", "comm-bound")
    assert parent["children"] == [h["id"]]
    assert (ws.root / "hypotheses" / f"{h['id']}.yaml").is_file()
    todos = ws.j("todo", "write", "-", input='{"todos":[{"content":"a","status":"pending","activeForm":"doing a"}]}')
    assert todos["todos"][0]["activeForm"] == "doing a"
    assert ws.j("todo", "list")["todos"] == todos["todos"]


def test_bad_input_writes_nothing(ws):
    before = ws.commits()
    r = ws.cli("run", "record", "--label", "x", "--metric", "a=1", "--json", check=2)
    assert r.json["error"]["field"] == "--label"
    assert ws.j("run", "list")["runs"] == []
    assert ws.commits() == before
