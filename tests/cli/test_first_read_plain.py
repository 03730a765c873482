"""The first read after a change on plain SQL (issue 47, optlog.api.firstread): the same bytes as
the full path, for each read and each kind of change, and no SQLAlchemy, SQLModel or pydantic
imported by the process that answers it. Counted and compared, never timed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest

from tests.cli.test_first_read import CHANGES, _change, _populate

READS = {"todo list": ("todo", "list"), "hypothesis list": ("hypothesis", "list"),
         "run list": ("run", "list", "--limit", "20")}
FULL = {"OPTLOG_READ_CACHE": "0"}  # the full path: no read cache, no first read on plain SQL
# (change, read) that the plain path answers (SQLite and PostgreSQL); the others: the full path reads (a
# hypothesis file changed since it was indexed, a queued todo list to apply) or the read cache
# answers (a todo list written leaves the reads that do not show todos alone)
PLAIN = {(c, r) for c in CHANGES for r in READS} - {
    ("hypothesis edited by hand", "hypothesis list"), ("git pull of 10 hypothesis files", "hypothesis list"),
    ("todo written (hook)", "todo list"), ("todo written (hook)", "hypothesis list"), ("todo written (hook)", "run list")}
HEAVY = ("sqlalchemy", "sqlmodel", "pydantic", "click", "yaml")

PROBE = """
import json, sys
from optlog.cli import fast
ok = fast.serve(sys.argv[1:])
sys.stdout.flush()
print(json.dumps([ok, sorted(m for m in {heavy!r} if m in sys.modules)]), file=sys.stderr)
"""


def _probe(ws: Any, args: tuple[str, ...]) -> tuple[bool, list[str], str]:
    """A real process's front door (optlog.cli.fast.serve) on this read: whether it answered,
    which heavy packages it imported, what it printed."""
    p = subprocess.run([sys.executable, "-c", PROBE.format(heavy=HEAVY), *args, "--json"], cwd=ws.root,
                       env={**ws.env, "OPTLOG_READ_CACHE": "1"}, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    ok, heavy = json.loads(p.stderr.strip().splitlines()[-1])
    return ok, heavy, p.stdout


@pytest.fixture
def settled(monkeypatch: pytest.MonkeyPatch) -> None:
    from optlog.store import readcache

    monkeypatch.setattr(readcache, "RACY_S", 0.0)  # the test changes files within a second


def _prime(ws: Any) -> None:
    """Every read once through the full path and once more (the read cache holds each)."""
    for a in READS.values():
        ws.cli(*a, "--json")
        ws.cli(*a, "--json")


def test_the_first_read_on_plain_sql_prints_the_full_paths_bytes(ws: Any, settled: None,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    from optlog.api import firstread

    _populate(ws, 12)
    # more than the bench's shapes: a parent, rivals, a manual status, todos linked and with extra keys
    ws.cli("hyp", "add", "Child", "--id", "kid", "--parent", "h0010", "--rival", "h0011")
    ws.cli("hyp", "set", "h0011", "--status", "falsified", "--why", "by hand")
    ws.cli("todo", "write", "-", input=json.dumps([
        {"content": "one", "status": "pending", "priority": "low", "activeForm": "x", "hypothesis": "kid"},
        {"content": "two ünï", "status": "in_progress"}]))
    answered: list[tuple[str, bool]] = []
    real = firstread.answer

    def spy(*a: Any, **k: Any) -> Any:
        r = real(*a, **k)
        answered.append((json.loads(a[1])[0], r is not None))
        return r

    monkeypatch.setattr(firstread, "answer", spy)
    seen = set()
    n = 0
    for kind in CHANGES:
        for name, args in READS.items():
            if kind.startswith("git pull"):
                ws.git("checkout", "--", "hypotheses")  # a pull needs a clean tree
            _prime(ws)
            n += 1
            _change(ws, kind, n)
            answered.clear()
            first = ws.cli(*args, "--json")
            if any(ok for _w, ok in answered):
                seen.add((kind, name))
            full = ws.cli(*args, "--json", env=FULL)
            assert first.out == full.out, (kind, name)
    assert seen == PLAIN


def test_a_first_read_imports_no_orm(ws: Any, settled: None) -> None:
    """A regression to the full path fails here: after a run is recorded (and after a hypothesis
    added by optlog) each read is answered by a process that imported none of SQLAlchemy,
    SQLModel, pydantic or click, with the full path's bytes."""
    _populate(ws, 5)
    n = 0
    for kind in ("run recorded", "hypothesis added by optlog"):
        for name, args in READS.items():
            _prime(ws)
            n += 1
            _change(ws, kind, n)
            ok, heavy, out = _probe(ws, args)
            assert ok and heavy == [], (kind, name, heavy)
            assert out == ws.cli(*args, "--json", env=FULL).out, (kind, name)

