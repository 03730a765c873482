"""Items 3, 4 and 5 of issue 13, through the real CLI on real git repositories: a hostile or broken
file is refused (exit 2, file/line/field, fast, nothing written), never committed, never a traceback.
"""

from __future__ import annotations

import json
import resource
import subprocess
import time
from pathlib import Path

import pytest

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "hostile"
BENCH_SPEC = "name: s\nbench:\n  cmd: 'true'\n"


def snapshot(ws) -> tuple[str, str, list[dict]]:
    """What must not change on exit 2: HEAD, the work tree's status, and the database's rows."""
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ws.root, capture_output=True, text=True).stdout
    st = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=ws.root,
                        capture_output=True, text=True).stdout
    return head, st


def _cpu_s() -> float:
    """CPU seconds of this process and its waited-for children: what a refusal costs, however busy
    the machine (wall time on a loaded 2-core machine is several times that)."""
    ch = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + ch.ru_utime + ch.ru_stime


def refused(ws, *args, input=None, field=None, file=None, line=None, within=None):
    """Run a command that must be refused: exit 2, one JSON error document, no traceback; `within`
    bounds the CPU seconds it may take (a blow-up burns CPU; a hang runs into ws.cli's timeout)."""
    t0 = _cpu_s()
    r = ws.cli(*args, "--json", check=2, input=input)
    took = _cpu_s() - t0
    assert "Traceback" not in r.err
    doc = json.loads(r.out)
    err = doc["error"]
    assert err["code"] != "internal_error", err
    if field is not None:
        assert err["field"] == field, err
    if file is not None:
        assert err["file"] == file, err
    if line is not None:
        assert err["line"] == line, err
    if within is not None:
        assert took < within, f"took {took:.2f} s of CPU"
    return err


def hand_write(ws, name: str, text: str | bytes) -> Path:
    p = ws.root / "hypotheses" / f"{name}.yaml"
    if isinstance(text, bytes):
        p.write_bytes(text)
    else:
        p.write_text(text)
    return p


# ---------------------------------------------------------------- item 3: bounded


def test_billion_laughs_hypothesis_is_refused_fast(ws):
    (ws.root / "hypotheses" / "laughs.yaml").write_bytes((FIX / "laughs.yaml").read_bytes())
    before = snapshot(ws)
    db = ws.root / ".optlog" / "optlog.db"
    size = db.stat().st_size if db.exists() else 0
    for cmd in (["sync"], ["hypothesis", "list"], ["status"]):
        err = refused(ws, *cmd, file="hypotheses/laughs.yaml", within=10)
        assert "expands" in err["message"] and err["line"]
    assert snapshot(ws) == before
    if db.exists():
        assert db.stat().st_size <= size + 64 * 1024


def test_billion_laughs_in_run_spec_params_is_refused(ws):
    lol = (FIX / "laughs.yaml").read_text().split("\n", 2)[2]
    spec = ws.root / "runs" / "lol.yaml"
    spec.write_text("name: lol\nparams:\n" + "".join("  " + ln + "\n" for ln in lol.splitlines())
                    + "bench:\n  cmd: 'true'\n")
    before = snapshot(ws)
    refused(ws, "run", "launch", "runs/lol.yaml", file="runs/lol.yaml", within=10)
    assert snapshot(ws) == before
    assert not list((ws.root / ".optlog").glob("launches/*"))


def test_huge_title_in_a_hand_edit_is_refused(ws):
    ws.cli("hypothesis", "add", "H", "--id", "h")
    f = ws.root / "hypotheses" / "h.yaml"
    f.write_text(f.read_text().replace("title: H", "title: " + "x" * 2_000_000))
    before = snapshot(ws)
    err = refused(ws, "sync", file="hypotheses/h.yaml", field="title", line=2, within=10)
    assert "too long" in err["message"]
    assert snapshot(ws) == before


def test_file_over_the_size_limit_is_refused_before_reading(ws):
    hand_write(ws, "big", "id: big\ntitle: big\nstatement: |\n" + ("  " + "y" * 1000 + "\n") * 5000)
    refused(ws, "sync", file="hypotheses/big.yaml", within=10)


def test_deep_nesting_yaml_and_json(ws):
    hand_write(ws, "deep", "id: deep\ntitle: d\nverdicts: " + "[" * 5000 + "]" * 5000 + "\n")
    refused(ws, "sync", file="hypotheses/deep.yaml", line=3, within=10)
    (ws.root / "hypotheses" / "deep.yaml").unlink()
    refused(ws, "todo", "write", "-", input='{"todos": ' + "[" * 100_000 + "]" * 100_000 + "}", within=10)


def test_matrix_too_large_is_refused_before_planning(ws):
    axes = "".join(f"  m{i}: [{', '.join(str(j) for j in range(12))}]\n" for i in range(6))  # 2.99 M points
    (ws.root / "runs" / "big.yaml").write_text("name: big\nmatrix:\n" + axes + "bench:\n  cmd: 'echo {{ m0 }}'\n")
    before = snapshot(ws)
    err = refused(ws, "run", "launch", "runs/big.yaml", file="runs/big.yaml", field="matrix", line=2, within=10)
    assert "10,000" in err["message"]
    assert snapshot(ws) == before


def test_long_expression_is_refused(ws):
    ws.cli("hypothesis", "add", "H", "--id", "h")
    before = snapshot(ws)
    refused(ws, "prediction", "add", "h", "--expect", "a" + " + a" * 20_000 + " > b", field="--expect", within=10)
    refused(ws, "prediction", "add", "h", "--expect", "a" + " + a" * 300 + " > b", field="--expect", within=10)
    assert snapshot(ws) == before


# ---------------------------------------------------------------- item 4: refused, not committed

GOOD = "id: {id}\ntitle: T\n"


@pytest.mark.parametrize("name,text,field,line", [
    ("dup", "id: dup\ntitle: T\ntitle: U\n", "title", 3),
    ("selfp", "id: selfp\ntitle: T\nparent: selfp\n", "parent", 3),
    ("dangp", "id: dangp\ntitle: T\nparent: nobody\n", "parent", 3),
    ("selfr", "id: selfr\ntitle: T\nrivals: [selfr]\n", "rivals.0", 3),
    ("dangr", "id: dangr\ntitle: T\nrivals:\n- h\n- nobody\n", "rivals.1", 5),
    ("badexp", "id: badexp\ntitle: T\npredictions:\n- id: badexp.p1\n  expect: a >>> b\n", "predictions.0.expect", 5),
    ("badwhere", "id: badwhere\ntitle: T\npredictions:\n- id: badwhere.p1\n  expect: a > b\n  where: import os\n",
     "predictions.0.where", 6),
    ("trav", "id: trav\ntitle: T\nparent: ../optlog\n", "parent", 3),
])
def test_bad_hand_edit_is_refused_not_committed(ws, name, text, field, line):
    ws.cli("hypothesis", "add", "H", "--id", "h")
    hand_write(ws, name, text)
    before = snapshot(ws)
    n = ws.commits()
    refused(ws, "sync", file=f"hypotheses/{name}.yaml", field=field, line=line)
    assert ws.commits() == n and snapshot(ws) == before


def test_parent_cycle_is_refused(ws):
    ws.cli("hypothesis", "add", "A", "--id", "a")
    ws.cli("hypothesis", "add", "B", "--id", "b", "--parent", "a")
    f = ws.root / "hypotheses" / "a.yaml"
    f.write_text(f.read_text() + "parent: b\n")
    n = ws.commits()
    err = refused(ws, "sync", file="hypotheses/a.yaml", field="parent")
    assert "cycle" in err["message"] and "a → b → a" in err["message"]
    assert ws.commits() == n


@pytest.mark.parametrize("text,field,line", [
    ("name: x\nname: y\n", "name", 2),
    ("name: t\ntelemetry:\n  interval_s: .inf\n", "telemetry.interval_s", 3),
    ("name: t\nhardware:\n  gpus:\n    h200: {peak_tflops: {bf16: -989}}\n", "hardware.gpus.h200.peak_tflops.bf16", 4),
    ("name: t\nexecutors:\n  ssh:\n    box: {host: box, port: 99999}\n", "executors.ssh.box.port", 4),
    ("name: t\nexecutors:\n  ssh:\n    box: {host: -oProxyCommand=touch /tmp/pwn}\n", "executors.ssh.box.host", 4),
    ("name: t\nexecutors:\n  ssh:\n    box: {host: box, user: -lroot}\n", "executors.ssh.box.user", 4),
    ("name: t\nexecutors:\n  slurm:\n    gpu: {partition: --uid=0}\n", "executors.slurm.gpu.partition", 4),
])
def test_impossible_settings_are_refused(ws, text, field, line):
    (ws.root / "optlog.yaml").write_text(text)
    n = ws.commits()
    refused(ws, "status", file="optlog.yaml", field=field, line=line)
    refused(ws, "hypothesis", "add", "H", file="optlog.yaml", field=field, line=line)
    assert ws.commits() == n


@pytest.mark.parametrize("args", [
    ["run", "record", "--metric", "tps=1", "--hypothesis", "../optlog"],
    ["note", "add", "n", "--hypothesis", "../optlog"],
    ["todo", "add", "t", "--hypothesis", "../optlog"],
    ["todo", "add", "t", "--hypothesis", "../hypotheses/h"],
    ["log", "--hypothesis", "../optlog"],
])
def test_hypothesis_path_traversal_is_refused(ws, args):
    ws.cli("hypothesis", "add", "H", "--id", "h")
    before = snapshot(ws)
    todos = ws.j("todo", "list")
    refused(ws, *args, field="--hypothesis")
    assert snapshot(ws) == before and ws.j("todo", "list") == todos


# ---------------------------------------------------------------- item 5: never a traceback


@pytest.mark.parametrize("where", ["hypothesis", "config", "spec", "todowrite"])
def test_invalid_utf8_names_file_and_line(ws, where):
    bad = b"id: u\ntitle: caf\xe9\n"
    if where == "hypothesis":
        hand_write(ws, "u", bad)
        refused(ws, "sync", file="hypotheses/u.yaml", line=2)
    elif where == "config":
        (ws.root / "optlog.yaml").write_bytes((ws.root / "optlog.yaml").read_bytes() + b"# \xff\n")
        refused(ws, "status", file="optlog.yaml")
    elif where == "spec":
        (ws.root / "runs" / "u.yaml").write_bytes(b"name: u\nbench:\n  cmd: 'echo \xe9'\n")
        refused(ws, "run", "launch", "runs/u.yaml", file="runs/u.yaml", line=3)
    elif where == "todowrite":
        (ws.root / "t.json").write_bytes(b'{"todos": [{"content": "\xe9", "status": "pending"}]}')
        refused(ws, "todo", "write", "t.json", file="t.json", line=1)


@pytest.mark.parametrize("expr", ["int(1e400)", "floor(1e400)", "ceil(-1e400)", "1e6 ** 64", "round(1e400)"])
def test_out_of_range_template_is_refused(ws, expr):
    (ws.root / "runs" / "t.yaml").write_text("name: t\nbench:\n  cmd: 'echo {{ %s }}'\n" % expr)
    before = snapshot(ws)
    refused(ws, "run", "launch", "runs/t.yaml", file="runs/t.yaml", field="bench.cmd", line=3)
    assert snapshot(ws) == before


def test_empty_title_on_edit(ws):
    ws.cli("hypothesis", "add", "H", "--id", "h")
    before = snapshot(ws)
    refused(ws, "hypothesis", "edit", "h", "--title", "", field="--title")
    refused(ws, "hypothesis", "edit", "h", "--title", "two\nlines", field="--title")
    assert snapshot(ws) == before


COMMANDS = [
    ["status"], ["hypothesis", "list"], ["hypothesis", "show", "h"], ["todo", "list"], ["todo", "add", "x"],
    ["note", "list"], ["note", "add", "x"], ["run", "list"], ["run", "record", "--metric", "tps=1"],
    ["verdict", "--all"], ["log"], ["sync"], ["plan", "list"], ["prediction", "list"],
]


@pytest.mark.sqlite_only
@pytest.mark.parametrize("kind", ["garbage", "foreign", "empty", "torn"])
def test_corrupt_database_is_a_clear_error_on_every_command(ws, kind):
    import sqlite3

    ws.cli("hypothesis", "add", "H", "--id", "h")
    db = ws.root / ".optlog" / "optlog.db"
    for p in db.parent.glob("optlog.db-*"):
        p.unlink()
    if kind == "garbage":
        db.write_bytes(b"this is not a database\n" * 200)
    elif kind == "foreign":
        db.unlink()
        c = sqlite3.connect(db)
        c.execute("CREATE TABLE photos (id INTEGER PRIMARY KEY, path TEXT)")
        c.commit()
        c.close()
    elif kind == "empty":
        db.write_bytes(b"")
    else:  # a good header, then garbage: SQLite finds out when it reads the pages
        raw = bytearray(db.read_bytes())
        raw[100:] = b"\xa5" * (len(raw) - 100)
        db.write_bytes(bytes(raw))
    before = db.read_bytes()
    for cmd in COMMANDS:
        r = ws.cli(*cmd, "--json", check=False)
        assert "Traceback" not in r.err, (cmd, r.err)
        doc = json.loads(r.out)
        if r.code == 0 and cmd[0] in ("log", "plan"):
            continue  # reads git only
        assert r.code == 1, (cmd, r.code, r.out, r.err)  # the file is at fault, not the command (issue 34)
        assert doc["error"]["code"] == "bad_database", (cmd, doc)
        assert str(db) in doc["error"]["message"] and "move it aside" in doc["error"]["message"]
    assert db.read_bytes() == before  # not recreated, not repaired behind the user's back


@pytest.mark.parametrize("fmt", [None, "json", "vllm"])
def test_deeply_nested_result_file_import_is_refused(ws, fmt):
    f = ws.root / "deep.json"
    f.write_text("[" * 100_000 + "]" * 100_000)
    before = snapshot(ws)
    refused(ws, "run", "import", str(f), *(["--format", fmt] if fmt else []), within=20)
    assert snapshot(ws) == before


def test_deeply_nested_inline_todos_is_refused(ws):
    before = snapshot(ws)
    refused(ws, "todo", "write", "--todos", '{"todos": ' + "[" * 20_000 + "]" * 20_000 + "}", field="--todos",
            within=20)
    assert snapshot(ws) == before
