"""The first read after a change (issue 47): what it asks the database, counted, not timed.

A first read after a change (a hypothesis edited by hand or added by optlog, a run recorded, a todo
list written through the agent's hook, a `git pull` of hypothesis files) must not read the whole
run tables again: its statements, and the rows it fetches from the run-sized tables, are the same
on a workspace ten times as large. Every statement and every fetched row is counted at the driver
(sqlite3 / psycopg cursors), so the raw-cursor reads of `store.runrows` are counted too.

The first `status` after a run is recorded included: which verdicts are due is carried over the
new run (its labels read, `core.duestate.advance`), not worked out from all the runs again.

And never stale: after each kind of change, by this process or another one interleaving with it,
the first read shows it.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

READS = {"status": ("status",), "todo list": ("todo", "list"), "hypothesis list": ("hypothesis", "list"),
         "run list": ("run", "list", "--limit", "20")}
CHANGES = ("hypothesis edited by hand", "hypothesis added by optlog", "run recorded", "todo written (hook)",
           "git pull of 10 hypothesis files")
RUN_TABLES = {"run", "run_label", "metric", "evidence_link"}  # grow with the runs


class Tally:
    """Statements and fetched rows (by the table a statement reads first) while counting."""

    def __init__(self) -> None:
        self.on = False
        self.statements: list[str] = []
        self.rows: Counter[str] = Counter()
        self._last = ""

    def executed(self, sql: Any) -> None:
        if self.on:
            self._last = str(sql)
            self.statements.append(self._last)

    def fetched(self, n: int) -> None:
        if self.on:
            m = re.search(r'\bFROM\s+"?(\w+)', self._last, re.I)
            self.rows[m.group(1).lower() if m else "?"] += n

    def run_rows(self) -> int:
        return sum(n for t, n in self.rows.items() if t in RUN_TABLES)


@pytest.fixture
def tally(monkeypatch: pytest.MonkeyPatch) -> Tally:
    from optlog.store import readcache

    # the test writes and reads within a second: every change it makes changes a file's size or a
    # counter, so the read cache may store at once (backdating the files would re-index them all)
    monkeypatch.setattr(readcache, "RACY_S", 0.0)
    t = Tally()

    class Cur(sqlite3.Cursor):
        def execute(self, sql: str, *a: Any) -> Any:  # type: ignore[override]
            t.executed(sql)
            return super().execute(sql, *a)

        def executemany(self, sql: str, *a: Any) -> Any:  # type: ignore[override]
            t.executed(sql)
            return super().executemany(sql, *a)

        def fetchone(self) -> Any:
            r = super().fetchone()
            t.fetched(r is not None)
            return r

        def fetchmany(self, *a: Any) -> Any:
            r = super().fetchmany(*a)
            t.fetched(len(r))
            return r

        def fetchall(self) -> Any:
            r = super().fetchall()
            t.fetched(len(r))
            return r

        def __next__(self) -> Any:
            r = super().__next__()
            t.fetched(1)
            return r

    class Con(sqlite3.Connection):
        def cursor(self, *a: Any, **k: Any) -> Any:  # type: ignore[override]
            return super().cursor(Cur)

        def execute(self, sql: str, *a: Any) -> Any:  # type: ignore[override]
            return self.cursor().execute(sql, *a)

    real = sqlite3.connect

    def connect(*a: Any, **k: Any) -> Any:
        k.setdefault("factory", Con)
        return real(*a, **k)

    monkeypatch.setattr(sqlite3, "connect", connect)
    monkeypatch.setattr(sqlite3.dbapi2, "connect", connect)
    if os.environ.get("OPTLOG_TEST_PG"):
        import psycopg

        for cls in (psycopg.Cursor, psycopg.ClientCursor):
            ex = cls.execute

            def execute(self: Any, query: Any, *a: Any, _ex: Any = ex, **k: Any) -> Any:
                t.executed(query if isinstance(query, str) else getattr(query, "as_string", lambda _c: str(query))(None)
                           if not isinstance(query, bytes) else query.decode())
                return _ex(self, query, *a, **k)

            monkeypatch.setattr(cls, "execute", execute)
        for name in ("fetchone", "fetchmany", "fetchall"):
            f = getattr(psycopg.Cursor, name)

            def fetch(self: Any, *a: Any, _f: Any = f, **k: Any) -> Any:
                r = _f(self, *a, **k)
                t.fetched(len(r) if isinstance(r, list) else int(r is not None))
                return r

            monkeypatch.setattr(psycopg.Cursor, name, fetch)
        it = psycopg.Cursor.__iter__

        def iterate(self: Any, _it: Any = it) -> Any:
            for r in _it(self):
                t.fetched(1)
                yield r

        monkeypatch.setattr(psycopg.Cursor, "__iter__", iterate)
    return t


def _populate(ws: Any, n_hyp: int) -> None:
    """n_hyp hypotheses (committed files, indexed), 10 runs each with 4 labels and 3 metrics, every
    run linked; a verdict-free prediction on each, comparing two configs."""
    from sqlalchemy import insert

    from optlog.core.hypothesis import HypothesisDoc, Prediction
    from optlog.service import hypotheses
    from optlog.service.context import Ctx
    from optlog.store import hypfiles
    from optlog.store.models import EvidenceLink, Metric, Run, RunLabel
    from optlog.yamlio import write_atomic

    saved = dict(os.environ)
    os.environ.update(ws.env)
    try:
        ctx = Ctx.find(ws.root, actor="test")
        for i in range(n_hyp):
            doc = HypothesisDoc(id=f"h{i:04d}", title=f"Hypothesis {i}", statement="s" * 80, rationale="r" * 80,
                                created="2026-01-01T00:00:00.000Z",
                                predictions=[Prediction(id=f"h{i:04d}-p1", expect="a > b", metric="tput",
                                                        a={"config": "tp8"}, b={"config": "tp4"}, per="conc")])
            write_atomic(ctx.ws.hypothesis_file(doc.id), hypfiles.render(doc))
        ws.git("add", "hypotheses")
        ws.git("commit", "-qm", "hypotheses")
        hypotheses.sync(ctx)
        n_runs, now = 10 * n_hyp, "2026-01-01T00:00:00.000Z"
        with ctx.db.write() as s:
            c = s.connection()
            c.execute(insert(Run), [{"id": i + 1, "status": "succeeded", "source": "recorded", "repeat": 0,
                                     "created_at": now, "invalidated": False, "environment": {}, "raw": {},
                                     "hypothesis_id": f"h{i % n_hyp:04d}"} for i in range(n_runs)])
            c.execute(insert(RunLabel), [
                {"run_id": i + 1, "key": k, "value": v, "num": x} for i in range(n_runs)
                for k, v, x in (("config", "tp8" if i % 2 else "tp4", None), ("conc", str(2 ** (i % 4)), float(2 ** (i % 4))),
                                ("repeat", str(i % 5), float(i % 5)), ("model", "m", None))])
            c.execute(insert(Metric), [{"run_id": i + 1, "name": m, "value": float(i + j)}
                                       for i in range(n_runs) for j, m in enumerate(("tput", "ttft_ms", "power_w"))])
            c.execute(insert(EvidenceLink), [{"hypothesis_id": f"h{i % n_hyp:04d}", "run_id": i + 1, "kind": "linked",
                                              "created_at": now} for i in range(n_runs)])
        if not ctx.db.is_sqlite:
            from sqlalchemy import text

            with ctx.db.write() as s:
                s.connection().execute(text("SELECT setval(pg_get_serial_sequence('run', 'id'), :n)"), {"n": n_runs})
        ctx.close()
    finally:
        os.environ.clear()
        os.environ.update(saved)
    # the upstream clone a pull comes from
    up = ws.root.parent / f"{ws.root.name}-up"
    subprocess.run(["git", "clone", "-q", str(ws.root), str(up)], env=ws.env, check=True)
    ws.git("remote", "add", "origin", str(up))
    ws.git("fetch", "-q", "origin")
    ws.git("branch", "-q", f"--set-upstream-to=origin/{ws.git('branch', '--show-current').strip()}")
    ws.up = up


def _toggle(f: Path, c: str) -> None:
    t = f.read_text()
    f.write_text(t.replace(c * 80, c * 79 + "x") if c * 80 in t else t.replace(c * 79 + "x", c * 80))


def _change(ws: Any, kind: str, n: int) -> None:
    if kind == "hypothesis edited by hand":
        _toggle(ws.root / "hypotheses" / "h0005.yaml", "s")
    elif kind == "hypothesis added by optlog":
        ws.cli("hypothesis", "add", f"Added {n}", "--id", f"added-{n}")
    elif kind == "run recorded":
        ws.cli("run", "record", "--label", "config=tp8", "--label", "conc=2", "--metric", f"tput={n}")
    elif kind == "todo written (hook)":
        todos = [{"content": f"todo {i} {n}", "status": "pending", "activeForm": f"doing {i}"} for i in range(5)]
        ws.cli("todo", "write", "--queue", "-", input=json.dumps(todos))
    elif kind == "git pull of 10 hypothesis files":
        for i in range(10):
            _toggle(ws.up / "hypotheses" / f"h{i:04d}.yaml", "r")
        subprocess.run(["git", "commit", "-qam", f"upstream {n}"], cwd=ws.up, env=ws.env, check=True)
        ws.git("pull", "-q", "--no-edit", "--no-rebase")
    else:
        raise ValueError(kind)


def _counts(ws: Any, tally: Tally) -> dict[tuple[str, str], tuple[int, int]]:
    """(change, read) → (statements, rows fetched from the run tables) of the read right after it."""
    out = {}
    n = 0
    for kind in CHANGES:
        for name, args in READS.items():
            for a in READS.values():  # everything read once: only this change is new
                ws.cli(*a, "--json")
            for a in READS.values():  # ... and stored in the read cache
                ws.cli(*a, "--json")
            n += 1
            _change(ws, kind, n)
            tally.statements.clear()
            tally.rows.clear()
            tally.on = True
            try:
                ws.cli(*args, "--json")
            finally:
                tally.on = False
            out[(kind, name)] = (len(tally.statements), tally.run_rows())
            if os.environ.get("FIRST_READ_DEBUG"):
                top = Counter(re.sub(r"\d+", "N", s)[:90] for s in tally.statements).most_common(3)
                print(kind, name, out[(kind, name)], top, dict(tally.rows))
    return out


def test_a_first_read_after_a_change_reads_no_more_on_a_workspace_ten_times_larger(make_ws: Any, tally: Tally,
                                                                                    backend: str) -> None:
    small, large = make_ws("small"), make_ws("large")
    _populate(small, 20)
    _populate(large, 200)
    got_s, got_l = _counts(small, tally), _counts(large, tally)
    # statements: the same at 20 and at 200 hypotheses; rows from the run tables: far below the
    # 2,000 runs (whose labels, metrics and links are 16,000 rows more) of the larger workspace;
    # what scales with the hypotheses (each one's newest evidence, for `status`) is allowed
    grew = {k: (got_s[k], got_l[k]) for k in got_s
            if got_l[k][0] > got_s[k][0] + 2 or got_l[k][1] > 500}
    assert not grew, f"(statements, run-table rows) at 20 and at 200 hypotheses: {grew}"
    # a todo written through the hook leaves the reads that do not show todos in the read cache:
    # one statement (the read cache's stamp; the CLI's read cache is SQLite's)
    for name in ("hypothesis list", "run list"):
        assert backend == "postgresql" or got_l[("todo written (hook)", name)] == (1, 0)


# ------------------------------------------------------------------ never stale


def _fresh_setup(ws: Any) -> None:
    from tests._verdicts import repeats, seed_runs

    ws.cli("hyp", "add", "X beats Y", "--id", "h")
    ws.cli("predict", "h", "--expect", "a > b", "--metric", "t", "--a", "cfg=x", "--b", "cfg=y")
    ws.cli("hyp", "add", "Unrelated", "--id", "u")
    ws.cli("predict", "u", "--expect", "a > b", "--metric", "t", "--a", "cfg=p", "--b", "cfg=q")
    seed_runs(ws, repeats({"cfg": "x"}, "t", [10, 11, 12]) + repeats({"cfg": "y"}, "t", [5, 6, 7]))
    ws.git("add", "-A")
    ws.git("commit", "-qm", "setup", "--allow-empty")


def _read_all(ws: Any, **kw: Any) -> dict[str, Any]:
    """Every hot read, each twice (the second is the read cache's answer where it may give one)."""
    out = {}
    for name, args in READS.items():
        first = ws.j(*args, **kw)
        again = ws.j(*args, **kw)
        assert again == first, name  # the cached answer is the answer
        out[name] = first
    return out


def _due(st: dict[str, Any]) -> list[str]:
    return [d["id"] for d in st.get("verdict_due", [])]


def _titles(hl: Any) -> dict[str, str]:
    items = hl["hypotheses"] if isinstance(hl, dict) and "hypotheses" in hl else hl
    return {h["id"]: h["title"] for h in items}


def _runs(rl: Any) -> list[int]:
    items = rl["runs"] if isinstance(rl, dict) and "runs" in rl else rl
    return [r["id"] for r in items]


def _todos(tl: Any) -> list[str]:
    items = tl["todos"] if isinstance(tl, dict) and "todos" in tl else tl
    return [t["content"] for t in items]


def test_the_first_read_after_each_kind_of_change_shows_it(ws: Any, make_ws: Any, tally: Tally) -> None:
    _fresh_setup(ws)
    r = _read_all(ws)
    assert _due(r["status"]) == ["h"]  # evidence, no verdict yet
    # a verdict: no longer due, and the latest verdict shown
    ws.cli("verdict", "--all")
    r = _read_all(ws)
    assert _due(r["status"]) == [] and r["status"]["latest_verdicts"][0]["hypothesis"] == "h"
    # a hypothesis edited by hand: its title, everywhere
    f = ws.root / "hypotheses" / "u.yaml"
    f.write_text(f.read_text().replace("title: Unrelated", "title: Edited by hand"))
    r = _read_all(ws)
    assert _titles(r["hypothesis list"])["u"] == "Edited by hand"
    assert _due(r["status"]) == []  # the text changed, not what its judgement reads
    # a prediction edited by hand: what is due follows (the memo of what is due is per hypothesis)
    f = ws.root / "hypotheses" / "h.yaml"
    text = f.read_text()
    assert "expect: a > b" in text
    f.write_text(text.replace("expect: a > b", "expect: a >= b"))
    r = _read_all(ws)
    assert _due(r["status"]) == ["h"]
    ws.cli("verdict", "--all")
    assert _due(_read_all(ws)["status"]) == []
    # a run recorded that enters h's selection: due again; the run in run list
    rid = ws.j("run", "record", "--label", "cfg=y", "--metric", "t=100")["id"]
    r = _read_all(ws)
    assert _due(r["status"]) == ["h"] and rid in _runs(r["run list"])
    assert r["status"]["runs_total"] == 7
    # a hypothesis added by optlog
    ws.cli("hyp", "add", "Added", "--id", "added")
    r = _read_all(ws)
    assert "added" in _titles(r["hypothesis list"]) and r["status"]["hypotheses"]["total"] == 3
    # a todo list written through the agent's hook: the reads that show todos show it
    ws.cli("todo", "write", "--queue", "-", input=json.dumps([{"content": "from the hook", "status": "in_progress",
                                                                "activeForm": "hooking"}]))
    r = _read_all(ws)
    assert _todos(r["todo list"]) == ["from the hook"]
    assert [t["content"] for t in r["status"]["todos"]] == ["from the hook"]
    # a git pull from another clone bringing an edited hypothesis file
    other = make_ws("other", init=False)
    subprocess.run(["git", "clone", "-q", str(ws.root), str(other.root)], env=ws.env, check=True)
    g = other.root / "hypotheses" / "added.yaml"
    g.write_text(g.read_text().replace("title: Added", "title: Pulled"))
    subprocess.run(["git", "commit", "-qam", "edit elsewhere"], cwd=other.root, env=ws.env, check=True)
    ws.git("pull", "-q", "--no-rebase", str(other.root), ws.git("branch", "--show-current").strip())
    r = _read_all(ws)
    assert _titles(r["hypothesis list"])["added"] == "Pulled"


def test_two_processes_interleaving_writes_and_reads_never_read_stale(ws: Any, tally: Tally) -> None:
    """This process reads (the read cache on) while another process writes, and the other way round."""
    _fresh_setup(ws)
    _read_all(ws)
    for i in range(3):
        # the other process records a run: this one's first reads show it
        rid = ws.j("run", "record", "--label", "cfg=y", "--metric", f"t={200 + i}", subprocess=True)["id"]
        r = _read_all(ws)
        assert rid in _runs(r["run list"]) and _due(r["status"]) == ["h"]
        # this process judges; the other process's status says nothing is due
        ws.cli("verdict", "--all")
        st = ws.j("status", subprocess=True)
        assert _due(st) == [] and st["runs_total"] == 7 + i
        # the other process's hook queues a todo list; this process's reads show it
        ws.cli("todo", "write", "--queue", "-", subprocess=True,
               input=json.dumps([{"content": f"round {i}", "status": "pending", "activeForm": "r"}]))
        r = _read_all(ws)
        assert _todos(r["todo list"]) == [f"round {i}"]
        # this process edits a hypothesis by hand; the other process sees it
        f = ws.root / "hypotheses" / "u.yaml"
        f.write_text(re.sub(r"title: .*", f"title: Round {i}", f.read_text(), count=1))
        assert _titles(ws.j("hypothesis", "list", subprocess=True))["u"] == f"Round {i}"
        assert _titles(_read_all(ws)["hypothesis list"])["u"] == f"Round {i}"
