"""The dashboard's first frame: the hypothesis tree read from the SQLite index with the standard
library only, trusted only while every file matches what the index recorded."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from optlog.paths import Workspace as Paths
from optlog.service.context import Ctx
from optlog.service.dashboard import hypotheses_view, quick_tree

pytestmark = pytest.mark.sqlite_only  # the quick path exists for SQLite; PostgreSQL takes the full load


def _shape(nodes):
    return [(n["id"], n["title"], n["status"], len(n["predictions"]), _shape(n["children_nodes"])) for n in nodes]


def _seed(ws) -> None:
    ws.cli("hypothesis", "add", "Communication-bound", "--id", "comm-bound")
    ws.cli("hypothesis", "add", "Compute-bound", "--id", "compute-bound", "--parent", "comm-bound")
    ws.cli("hypothesis", "add", "Pipeline bubbles", "--id", "bubbles", "--parent", "comm-bound")
    ws.cli("predict", "add", "comm-bound", "--expect", "a > b", "--metric", "total_token_throughput", "--a", "config=tp4pp2",
           "--b", "config=tp8", "--per", "concurrency")
    ws.cli("hypothesis", "set", "bubbles", "--status", "inconclusive", "--why", "no discriminating run yet")


def test_quick_tree_equals_the_full_view_while_the_files_are_unchanged(ws, monkeypatch):
    monkeypatch.delenv("OPTLOG_DB_URL", raising=False)
    _seed(ws)
    paths = Paths(Path(ws.root))
    quick = quick_tree(paths)
    assert quick is not None
    ctx = Ctx(paths, actor="tester")
    try:
        full, _docs = hypotheses_view(ctx)
    finally:
        ctx.close()
    assert _shape(quick) == _shape(full)
    assert _shape(quick)[0][0] == "comm-bound" and _shape(quick)[0][3] == 1


def test_quick_tree_steps_aside_on_any_file_change(ws, monkeypatch):
    monkeypatch.delenv("OPTLOG_DB_URL", raising=False)
    _seed(ws)
    paths = Paths(Path(ws.root))
    f = paths.hypotheses_dir / "bubbles.yaml"
    st = f.stat()
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))  # a hand edit (or a touch)
    assert quick_tree(paths) is None
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert quick_tree(paths) is not None
    (paths.hypotheses_dir / "new-one.yaml").write_text("id: new-one\ntitle: New\n")  # a file the index lacks
    assert quick_tree(paths) is None
    (paths.hypotheses_dir / "new-one.yaml").unlink()
    monkeypatch.setenv("OPTLOG_DB_URL", "postgresql://nowhere/none")
    assert quick_tree(paths) is None
