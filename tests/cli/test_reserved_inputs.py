"""Issue 42.7: result paths stay inside the run's output folder; reserved names (a matrix key
`env`, Windows device names as ids) are refused; duplicates (labels, metrics, prediction ids) are
refused with the field, file and line; a committed hypothesis link to a file outside the workspace
is not followed. Each refusal is exit 2 before anything is written."""

from __future__ import annotations

import os

import yaml

from _launch import spec


def _refused(ws, r, field: str | None = None) -> dict:
    assert r.code == 2, r.out + r.err
    assert "Traceback" not in r.err and "internal" not in r.out + r.err
    err = r.json["error"]
    if field is not None:
        assert err["field"] == field, err
    return err


def test_result_globs_cannot_leave_the_output_folder(ws, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "result.json").write_text('{"completed": 99}')
    before = ws.git("rev-parse", "HEAD")
    for glob in ("../../elsewhere/result.json", "/etc/*", "~/result.json", "a/../../x.json"):
        rel = spec(ws, "res", server=False, bench={"cmd": "true", "results": [glob]})
        err = _refused(ws, ws.cli("run", "launch", rel, "--json", check=False), "bench.results")
        assert err["file"] == rel and err["line"] and "output folder" in err["message"], err
    assert ws.git("rev-parse", "HEAD") == before and ws.cli("run", "list", "--json").json["runs"] == []
    # a link the bench leaves that leads outside is not read as its result
    rel = spec(ws, "lnk", server=False, bench={"cmd": ["ln", "-s", str(elsewhere / "result.json"), "{{ out }}/result.json"],
                                               "results": ["result.json"]})
    (run,) = ws.cli("run", "launch", rel, "--json", check=False).json["runs"]
    assert run["status"] == "failed" and run["cause"] == "no_result" and "completed" not in run["metrics"], run
    rel = spec(ws, "lnk2", server=False, bench={"cmd": ["ln", "-s", str(elsewhere / "result.json"), "{{ out }}/r.json"]})
    (run,) = ws.cli("run", "launch", rel, "--json", check=False).json["runs"]
    assert run["status"] == "failed" and run["cause"] == "no_result", run


def test_env_is_a_reserved_name(ws):
    rel = spec(ws, "menv", server=False, matrix={"env": ["a", "b"]}, bench={"cmd": "echo {{ env }}"})
    err = _refused(ws, ws.cli("run", "launch", rel, "--json", check=False), "matrix.env")
    assert "reserved" in err["message"] and err["line"]
    rel = spec(ws, "penv", server=False, params={"env": "x"}, bench={"cmd": "echo hi"})
    _refused(ws, ws.cli("run", "launch", rel, "--json", check=False), "params.env")
    rel = spec(ws, "senv", server=False, bench={"cmd": "echo hi"})
    _refused(ws, ws.cli("run", "launch", rel, "--set", "env=x", "--json", check=False), "--set")


def test_duplicate_labels_metrics_and_prediction_ids(ws):
    r = ws.cli("run", "record", "--label", "a=1", "--label", "a=2", "--metric", "m=1", "--json", check=False)
    assert "--label a is given twice" in _refused(ws, r, "--label")["message"]
    r = ws.cli("run", "record", "--label", "a=1", "--metric", "m=1", "--metric", "m=2", "--json", check=False)
    _refused(ws, r, "--metric")
    assert ws.cli("run", "list", "--json").json["runs"] == []
    ws.cli("hypothesis", "add", "Dup", "--id", "dup")
    ws.cli("prediction", "add", "dup", "--expect", "a.m > 0", "--a", "a=1")
    f = ws.root / "hypotheses" / "dup.yaml"
    data = yaml.safe_load(f.read_text())
    data["predictions"].append(dict(data["predictions"][0]))  # a hand edit: the prediction copied
    f.write_text(yaml.safe_dump(data, sort_keys=False))
    dup_lines = [i + 1 for i, line in enumerate(f.read_text().splitlines()) if line.strip() in ("- id: dup.p1", "id: dup.p1")]
    assert len(dup_lines) == 2, f.read_text()
    err = _refused(ws, ws.cli("hypothesis", "show", "dup", "--json", check=False))
    assert err["file"] == "hypotheses/dup.yaml" and err["line"] == dup_lines[1], (err, dup_lines)
    assert err["field"] == "predictions.1.id" and "dup.p1" in err["message"]


def test_windows_device_names_are_no_ids(ws, tmp_path):
    for hid in ("con", "nul", "com1", "lpt9", "aux", "prn"):
        err = _refused(ws, ws.cli("hypothesis", "add", "T", "--id", hid, "--json", check=False), "--id")
        assert "Windows" in err["message"]
    doc = ws.j("hypothesis", "add", "Con")  # an id made from a title avoids them
    assert doc["id"] not in ("con",) and doc["id"].startswith("con")
    assert not (ws.root / "hypotheses" / "con.yaml").exists()
    r = ws.cli("init", str(tmp_path / "w2"), "--plan-prefix", "NUL", "--json", check=False)
    _refused(ws, r, "--plan-prefix")


def test_a_hypothesis_link_to_a_file_outside_is_not_followed(ws, tmp_path):
    outside = tmp_path / "private.yaml"
    outside.write_text("id: leak\ntitle: PRIVATE-MARKER-7\n")
    os.symlink(outside, ws.root / "hypotheses" / "leak.yaml")
    for cmd in (["hypothesis", "show", "leak"], ["hypothesis", "list"]):
        r = ws.cli(*cmd, "--json", check=False)
        err = _refused(ws, r)
        assert err["file"] == "hypotheses/leak.yaml" and str(outside) in err["message"], err
        assert "PRIVATE-MARKER-7" not in r.out + r.err


def test_json_with_a_key_said_twice_is_refused_naming_it(ws):
    """Python's JSON reader keeps the last of two equal keys without a word (YAML's were refused
    already): a result file's `{"output_throughput": 10, …, "output_throughput": 99}` imported 99, a
    todo list's item kept its second status. Every JSON reader goes through one (`core/jsondoc`):
    exit 2 naming the key, its path and line, nothing written."""
    (ws.root / "r.json").write_text('{"output_throughput": 10,\n "duration": 5,\n "output_throughput": 99,\n'
                                    ' "max_concurrency": 1}\n')
    (ws.root / "r.jsonl").write_text('{"output_throughput": 1, "duration": 1}\n'
                                     '{"output_throughput": 1, "duration": 1, "duration": 2}\n')
    for name, line, key in (("r.json", 3, "output_throughput"), ("r.jsonl", 2, "duration")):
        for given in ((), ("--format", "sglang")):
            err = _refused(ws, ws.cli("run", "import", name, *given, "--json", check=False), field=key)
            assert (err["file"], err["line"], err["code"]) == (name, line, "duplicate_key"), err
            assert f"duplicate key '{key}'" in err["message"], err
    assert ws.j("run", "list")["runs"] == []
    todos = '{"todos": [{"content": "a", "status": "pending", "activeForm": "A", "status": "completed"}]}'
    (ws.root / "todos.json").write_text(todos)
    for args, given in ((("todo", "write", "todos.json"), None), (("todo", "write", "-"), todos)):
        err = _refused(ws, ws.cli(*args, "--json", input=given, check=False), field="todos.0.status")
        assert "duplicate key 'status'" in err["message"], err
    assert ws.j("todo", "list")["todos"] == []
