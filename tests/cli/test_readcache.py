"""The read cache (optlog.store.readcache): the hot reads answered from it print byte for byte what
the full CLI prints, and no change by another process is ever answered with the old document —
through the CLI (a fresh process each call) and through the long-lived MCP face."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

READS = [("status",), ("todo", "list"), ("hypothesis", "list"), ("run", "list", "--limit", "20"),
         ("hyp", "list"), ("run", "list")]


def _backdate(root: Path, seconds: float = 60) -> None:
    """Every file the stamp stats is older than the racy window (a test writes and reads at once)."""
    t = time.time() - seconds
    for p in [root / "optlog.yaml", root / "runs" / "evidence", *(root / "hypotheses").glob("*.yaml")]:
        if p.exists():
            os.utime(p, (t, t))


def _cli(ws, *args: str, cache: bool = True, probe: bool = False) -> subprocess.CompletedProcess:
    env = dict(ws.env)
    if not cache:
        env["OPTLOG_READ_CACHE"] = "0"
    pre = ["-X", "importtime"] if probe else []
    p = subprocess.run([sys.executable, *pre, "-m", "optlog", *args], cwd=ws.root, env=env,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    return p


def _served_from_cache(p: subprocess.CompletedProcess) -> bool:
    loaded = {ln.split("|")[-1].strip() for ln in p.stderr.splitlines() if ln.startswith("import time:")}
    return "click" not in loaded and "sqlalchemy" not in loaded


def _fill(ws) -> None:
    ws.cli("hypothesis", "add", "Comm-bound", "--id", "comm-bound")
    ws.cli("hypothesis", "add", "Wider TP", "--id", "wider-tp", "--parent", "comm-bound")
    for cfg, c, v in (("tp8", 64, 700), ("tp4pp2", 64, 213)):
        ws.cli("run", "record", "--label", f"config={cfg}", "--label", f"concurrency={c}", "--metric",
               f"tput={v}", "--hypothesis", "comm-bound")
    ws.j("prediction", "add", "comm-bound", "--expect", "a > b", "--metric", "tput", "--a", "config=tp4pp2",
         "--b", "config=tp8", "--per", "concurrency")
    ws.j("todo", "write", "-", input=json.dumps({"todos": [
        {"content": "Start TP4+PP2 — ünïcode", "status": "in_progress", "activeForm": "Starting"},
        {"content": "Investigate FP4 GEMM", "status": "pending"}]}))


def _settle(ws, args: tuple[str, ...]) -> str:
    """Run `args` until its document is stored; return it (asserting the cache then serves it)."""
    _backdate(ws.root)
    out = [_cli(ws, *args, "--json").stdout for _ in range(2)]  # a miss may index (a write): then stored
    hit = _cli(ws, *args, "--json", probe=True)
    assert out[0] == out[1] == hit.stdout
    assert _served_from_cache(hit), args
    return hit.stdout


@pytest.mark.sqlite_only
def test_cached_reads_print_what_the_full_cli_prints(ws, tmp_path):
    _fill(ws)
    for args in READS:
        full = _cli(ws, *args, "--json", cache=False).stdout
        assert _settle(ws, args) == full, args  # byte for byte
        json.loads(full)
    # -C in front of the command, from another folder: the same document, from the cache
    _settle(ws, ("status",))  # (the reads above re-indexed the backdated files: a write, so a miss)
    p = subprocess.run([sys.executable, "-X", "importtime", "-m", "optlog", "-C", str(ws.root), "status", "--json"],
                       cwd=tmp_path, env=ws.env, capture_output=True, text=True)
    assert p.stdout == _cli(ws, "status", "--json", cache=False).stdout and _served_from_cache(p)
    # a plain `status` (a person's text) is printed from the same document, as the full CLI prints it
    text = _cli(ws, "status", probe=True)
    assert _served_from_cache(text) and text.stdout == _cli(ws, "status", cache=False).stdout
    # other commands never come from the cache
    assert not _served_from_cache(_cli(ws, "hypothesis", "show", "comm-bound", "--json", probe=True))


@pytest.mark.sqlite_only
def test_no_change_by_another_process_is_answered_from_the_cache(ws):
    _fill(ws)

    def changed(args: tuple[str, ...], change) -> None:
        before = _settle(ws, args)
        change()
        after = _cli(ws, *args, "--json").stdout
        assert after == _cli(ws, *args, "--json", cache=False).stdout
        assert after != before, (args, "stale")

    todo = json.dumps({"todos": [{"content": "only one now", "status": "pending"}]})
    changed(("todo", "list"), lambda: ws.j("todo", "write", "-", input=todo))
    changed(("status",), lambda: ws.cli("run", "record", "--label", "config=tp8", "--metric", "tput=1"))
    changed(("run", "list", "--limit", "20"), lambda: ws.cli("run", "invalidate", "1", "--why", "bad node"))
    changed(("hypothesis", "list"), lambda: ws.cli("hypothesis", "add", "Third", "--id", "third"))

    def hand_edit() -> None:  # same size, in place (same inode): only the mtime tells
        f = ws.root / "hypotheses" / "wider-tp.yaml"
        text = f.read_text()
        assert "Wider TP" in text
        with open(f, "r+", encoding="utf-8") as fh:
            fh.write(text.replace("Wider TP", "Wider XP"))

    changed(("hypothesis", "list"), hand_edit)
    changed(("status",), lambda: (ws.root / "hypotheses" / "third.yaml").unlink())


def test_nothing_is_stored_while_something_is_live_or_just_changed(ws, monkeypatch):
    from optlog.paths import find_workspace
    from optlog.service.context import Ctx
    from optlog.store import readcache

    for k, v in ws.env.items():
        monkeypatch.setenv(k, v)  # the in-process context reads the workspace's database settings
    ws.cli("hypothesis", "add", "H", "--id", "h")
    ctx = Ctx.find(ws.root)
    facts = lambda: readcache.db_facts(ctx.db)  # noqa: E731
    os.utime(ws.root / "hypotheses" / "h.yaml")  # "just now", however slow the machine was since
    st = readcache.stamp(ws=find_workspace(ws.root), facts=facts)
    assert st is not None and not st.settled  # the file was written just now: not stored
    assert not readcache.put(ctx.ws, "k", st, "{}")
    _backdate(ws.root)
    st = readcache.stamp(ctx.ws, facts=facts)
    assert st is not None and st.settled and readcache.put(ctx.ws, "k", st, "{}")
    assert readcache.get(ctx.ws, "k", st) == "{}"
    from sqlalchemy import text

    with ctx.db.write() as s:  # a launch is running: recovery must look, nothing is served
        s.execute(text("INSERT INTO launch (status, created_at, spec, progress) "
                       "VALUES ('running', '2026-01-01T00:00:00Z', '{}', '{}')"))
    assert readcache.stamp(ctx.ws, facts=facts) is None
    ctx.close()


def test_hypothesis_list_outlives_database_writes_but_never_a_live_run(ws, monkeypatch):
    """`hypothesis list` reads the hypothesis files (and their index) only: a run recorded or a
    todo list written leaves its stamp as it was (readcache.reads_of), while `run list`'s and
    `status`'s move; and while a run of an open hypothesis is live (it reads `testing`) nothing
    is answered from the cache, so the list shows it, and `open` again once the run ended."""
    from optlog.paths import find_workspace
    from optlog.service.context import Ctx
    from optlog.store import readcache

    for k, v in ws.env.items():
        monkeypatch.setenv(k, v)
    ws.cli("hypothesis", "add", "H", "--id", "h")
    _backdate(ws.root)
    ctx = Ctx.find(ws.root)
    w = find_workspace(ws.root)
    facts = lambda: readcache.db_facts(ctx.db)  # noqa: E731

    def keys() -> dict[str, str]:
        return {r: readcache.stamp(w, facts=facts, reads=r).key for r in ("files", "data", "all")}

    before = keys()
    ws.cli("run", "record", "--label", "config=tp8", "--metric", "tput=1")
    after = keys()
    assert after["files"] == before["files"] and after["data"] != before["data"] and after["all"] != before["all"]
    ws.j("todo", "write", "-", input=json.dumps({"todos": [{"content": "x", "status": "pending"}]}))
    assert keys()["files"] == after["files"] and keys()["data"] == after["data"]

    ctx.close()
    from _launch import bench_cmd, spec, wait_for

    listed = lambda: {h["id"]: h["status"] for h in json.loads(_cli(ws, "hypothesis", "list", "--json").stdout)["hypotheses"]}  # noqa: E731
    _settle(ws, ("hypothesis", "list"))
    assert listed() == {"h": "open"}
    rel = spec(ws, "slow", bench={"cmd": bench_cmd(f"--until {ws.root.parent / 'never'}")})  # runs until cancelled
    d = ws.j("run", "launch", rel, "--detach", "--hypothesis", "h")
    wait_for(lambda: ws.j("run", "show", str(d["runs"][0]))["status"] == "running", 60, "the run to start")
    assert listed() == {"h": "testing"}
    ws.j("run", "cancel", d["ref"])
    assert listed() == {"h": "open"}


def test_mcp_reads_are_reused_until_another_process_changes_the_workspace(ws, monkeypatch):
    """The long-lived MCP face answers a repeated read from memory, and sees a change made by
    another process (the CLI) at the next call (SQLite and PostgreSQL)."""
    for k, v in ws.env.items():
        monkeypatch.setenv(k, v)
    from optlog.mcp.face import Face

    _fill(ws)
    _backdate(ws.root)
    face = Face(str(ws.root))
    try:
        def call(name: str, args: dict) -> dict:
            doc, err, _code = face.call(name, args)
            assert not err, doc
            return doc

        for name, args in (("status", {}), ("todo_list", {}), ("hypothesis_list", {}), ("run_list", {"limit": 20})):
            first = call(name, args)
            assert call(name, args) == first  # (the first may re-index the backdated files: a write)
            hits = face.read_hits
            assert call(name, args) == first and face.read_hits == hits + 1, name
        todos = call("todo_list", {})
        ws.j("todo", "write", "-", input=json.dumps({"todos": [{"content": "from the CLI", "status": "pending"}]}))
        assert call("todo_list", {}) != todos and call("todo_list", {})["todos"][0]["content"] == "from the CLI"
        hyps = call("hypothesis_list", {"limit": 50})
        _backdate(ws.root)
        call("hypothesis_list", {"limit": 50})
        ws.cli("hypothesis", "add", "From the CLI", "--id", "from-cli")
        assert "from-cli" in {h["id"] for h in call("hypothesis_list", {"limit": 50})["hypotheses"]}
        assert "from-cli" not in {h["id"] for h in hyps["hypotheses"]}
        st = call("status", {})
        ws.cli("run", "record", "--label", "config=tp8", "--metric", "tput=5")
        assert call("status", {})["runs_total"] == st["runs_total"] + 1
    finally:
        face.close()


def test_only_the_hot_json_reads_have_a_cache_key():
    from optlog.cli.fast import read_key

    assert read_key(["status", "--json"]) == (None, '["status"]')
    assert read_key(["-C", "/w", "hyp", "list", "--json"]) == ("/w", '["hypothesis", "list"]')
    assert read_key(["run", "list", "--limit", "20", "--json"])[1] == '["run", "list", "--limit", "20"]'
    for args in (["status"], ["todo", "write", "--json"], ["run", "show", "1", "--json"], ["--json"],
                 ["run", "list", "--label", "-C", "--json"], ["status", "-C", "/w", "--json"],
                 ["status", "--json", "--help"], ["run", "list", "--json", "--", "x"]):
        assert read_key(args) is None, args


def test_kept_rows_come_back_as_kept_and_a_row_that_cannot_be_a_line_is_left_out(ws):
    """`keep_rows` writes a line per row (tab-separated) under this optlog's layout head; a row
    whose id or field holds a tab or a newline is left out (it is worked out again), the others
    come back from `kept_rows` field for field, U+2028 and all; a file under another head is not
    read (a row of another layout never reaches a document)."""
    from optlog.paths import find_workspace
    from optlog.store import readcache

    w = find_workspace(str(ws.root))
    rows = {"a": ["h1", '{"t":"x\u2028y"}'], "b\tc": ["h2", "{}"], "d": ["h3", "t\tu"], "e": ["h4", "l\nm"],
            "f": ["h5", "ünï"]}
    readcache.keep_rows(w, "test-rows", rows)
    assert readcache.kept_rows(w, "test-rows", 2) == {"a": rows["a"], "f": rows["f"]}
    assert readcache.kept_rows(w, "test-rows", 3) == {}  # another width: not these rows
    readcache.keep_rows(w, "test-rows", {"a": rows["a"], "f": rows["f"]})  # the plain case: one count
    path = w.state_dir / readcache.CACHE_DIR / "test-rows"
    head, _, body = path.read_text(encoding="utf-8").partition("\n")
    assert head == readcache.ROWS_HEAD and body == 'a\th1\t{"t":"x\u2028y"}\nf\th5\tünï\n'
    path.write_text("0.1.0\n" + body, encoding="utf-8")  # the layout before (list entries not yet as printed)
    assert readcache.kept_rows(w, "test-rows", 2) == {}
    readcache.keep_rows(w, "test-rows", {})
    assert path.read_text(encoding="utf-8") == readcache.ROWS_HEAD + "\n"


def test_rows_worked_out_since_go_beside_the_whole_file_until_it_is_written_again(ws):
    """`keep_rows(..., fresh)` writes the rows worked out since to the small file of newer rows
    (`readcache.NEWER`), which `kept_rows` reads over the whole file's; past an eighth of the rows
    (or without `fresh`: a row gone) the whole file is written again and the newer one is gone."""
    from optlog.paths import find_workspace
    from optlog.store import readcache

    w = find_workspace(str(ws.root))
    path = w.state_dir / readcache.CACHE_DIR / "test-rows"
    newer = path.with_name(path.name + readcache.NEWER)
    rows = {f"h{i:03d}": [f"x{i}", "{}"] for i in range(1000)}
    readcache.keep_rows(w, "test-rows", rows)
    whole = path.read_text(encoding="utf-8")
    assert not newer.exists() and whole.count("\n") == 1001
    for i in range(5):
        rows[f"h{i:03d}"] = [f"y{i}", "{}"]
        readcache.keep_rows(w, "test-rows", rows, [f"h{i:03d}"])
        assert path.read_text(encoding="utf-8") == whole  # the whole file untouched
        assert readcache.kept_rows(w, "test-rows", 2) == rows  # the newer rows over it
    assert newer.read_text(encoding="utf-8").count("\n") == 6  # the head and the five newer rows
    for i in range(5, 200):
        rows[f"h{i:03d}"] = [f"y{i}", "{}"]
    readcache.keep_rows(w, "test-rows", rows, [f"h{i:03d}" for i in range(5, 200)])  # 200 > 1000 / 8
    assert not newer.exists() and path.read_text(encoding="utf-8").count("\ty") == 200
    assert readcache.kept_rows(w, "test-rows", 2) == rows
    rows["h999"] = ["z", "{}"]
    readcache.keep_rows(w, "test-rows", rows, ["h999"])
    del rows["h000"]
    readcache.keep_rows(w, "test-rows", rows)  # a row gone: written whole
    assert not newer.exists() and readcache.kept_rows(w, "test-rows", 2) == rows


def test_the_listing_digest_moves_with_any_file_and_only_with_the_hypothesis_files(tmp_path):
    """`readcache._hypothesis_files`, which every read's stamp takes: each file's id and
    modification time; a digest that a file's name, modification time, size or inode moving
    moves, and that other names in the folder leave as it was."""
    from optlog.store.readcache import _hypothesis_files

    class W:  # what the listing reads of a workspace
        def __init__(self, d: Path) -> None:
            self.hypotheses_dir = d

    def listing(d: Path) -> tuple[dict[str, int], str]:
        files, digest, _newest = _hypothesis_files(W(d), 0.0)  # type: ignore[arg-type]
        return files, digest

    one = tmp_path / "one"
    one.mkdir()
    for n in ("b", "a", "c"):
        (one / f"{n}.yaml").write_text(f"id: {n}\n")
        os.utime(one / f"{n}.yaml", ns=(1_000_000_000, 1_000_000_000))
    files, base = listing(one)
    assert files == {"a": 1_000_000_000, "b": 1_000_000_000, "c": 1_000_000_000}
    assert listing(one) == (files, base)  # nothing moved, nothing moves
    (one / "notes.txt").write_text("x")
    (one / ".a.yaml.swp").write_text("x")
    (one / ".hidden.yaml").write_text("x")
    assert listing(one) == (files, base)  # not hypothesis files
    seen = {base}
    os.utime(one / "b.yaml", ns=(2_000_000_000, 2_000_000_000))
    seen.add(listing(one)[1])
    with open(one / "b.yaml", "a", encoding="utf-8") as fh:  # longer, its mtime put back
        fh.write("# more\n")
    os.utime(one / "b.yaml", ns=(2_000_000_000, 2_000_000_000))
    assert listing(one)[1] not in seen
    seen.add(listing(one)[1])
    (one / "b.new").write_text((one / "b.yaml").read_text())  # the same bytes and mtime, another inode
    os.utime(one / "b.new", ns=(2_000_000_000, 2_000_000_000))
    os.replace(one / "b.new", one / "b.yaml")
    assert listing(one)[1] not in seen
    seen.add(listing(one)[1])
    (one / "d.yaml").write_text("id: d\n")
    assert "d" in listing(one)[0] and listing(one)[1] not in seen
    (one / "d.yaml").unlink()
    assert "d" not in listing(one)[0]
    files, digest = listing(tmp_path / "missing")
    assert files == {} and digest != listing(one)[1]


def test_the_stamp_moves_with_a_migration_and_not_with_the_interpreters_cache(ws, tmp_path, monkeypatch):
    """The stamp's base names the schema's migrations (a new one changes what every read may
    answer); the `__pycache__` the interpreter writes beside them comes with a checkout and a first
    import, and changes nothing optlog answers, so it moves neither the stamp nor its base."""
    import shutil

    from optlog.service.context import Ctx
    from optlog.store import readcache

    for k, v in ws.env.items():
        monkeypatch.setenv(k, v)  # the in-process context reads the workspace's database settings
    ws.cli("hypothesis", "add", "H", "--id", "h")
    _backdate(ws.root)
    versions = tmp_path / "versions"
    shutil.copytree(readcache.MIGRATIONS_VERSIONS, versions, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(readcache, "MIGRATIONS_VERSIONS", str(versions))
    ctx = Ctx.find(ws.root)
    facts = lambda: readcache.db_facts(ctx.db)  # noqa: E731
    before = readcache.stamp(ctx.ws, facts=facts)
    assert before is not None
    (versions / "__pycache__").mkdir()
    (versions / "__pycache__" / "0001_initial_schema.cpython-311.pyc").write_bytes(b"\0")
    after = readcache.stamp(ctx.ws, facts=facts)
    assert after is not None and (after.key, after.base) == (before.key, before.base)
    (versions / "0099_another.py").write_text("revision = '0099'\n")
    moved = readcache.stamp(ctx.ws, facts=facts)
    assert moved is not None and moved.base != before.base and moved.key != before.key
    ctx.close()
