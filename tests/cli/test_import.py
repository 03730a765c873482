"""`optlog run import` through the real CLI on a real workspace (SQLite, or PostgreSQL in pass 2)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests._face import tool  # noqa: F401  (a fixture)
from tests.unit.test_parsers import SGLANG_NEW, SGLANG_OLD

PEERS = Path(__file__).resolve().parents[1] / "fixtures" / "peers"
GEN = PEERS / "generated"

pytestmark = pytest.mark.skipif(not PEERS.is_dir(), reason=f"peer fixtures not found at {PEERS}")


def _state(ws) -> tuple[list, list[str], str]:
    runs = ws.j("run", "list")["runs"]
    d = ws.root / ".optlog" / "runs" / "imported"
    files = sorted(str(p.relative_to(d)) for p in d.rglob("*")) if d.exists() else []
    return runs, files, ws.git("rev-parse", "HEAD")


def test_import_every_format_one_run_per_result(ws, tmp_path: Path) -> None:
    sg = tmp_path / "sglang.jsonl"
    sg.write_text(SGLANG_NEW + "\n" + SGLANG_OLD + "\n")
    files = [sg, GEN / "aiperf-A-c64.json", GEN / "aiperf-A-c1.csv", GEN / "guidellm-A-c64.json",
             PEERS / "guidellm" / "benchmarks_stripped.v0.3-legacy.json",
             PEERS / "sglang" / "bench_one_batch_server.result_te_tp4.jsonl"]
    head = ws.git("rev-parse", "HEAD")
    out = ws.j("run", "import", *map(str, files), "--label", "config=tp8")
    runs = out["runs"]
    assert len(runs) == 2 + 1 + 1 + 1 + 1 + 3
    assert all(r["status"] == "succeeded" and r["source"] == "imported" for r in runs)
    assert all(r["labels"]["config"] == "tp8" for r in runs)
    tools = [r["labels"]["tool"] for r in runs]
    assert tools == ["sglang", "sglang", "aiperf", "aiperf", "guidellm", "guidellm"] + ["sglang-one-batch"] * 3
    s0 = runs[0]
    assert s0["labels"]["concurrency"] == 256 and s0["labels"]["request_rate"] == "inf"
    assert s0["metrics"]["total_token_throughput"] == 31457.28 and s0["metrics"]["mean_inflight"] == 245.7
    assert runs[2]["labels"]["concurrency"] == 64
    assert runs[2]["metrics"]["median_ttft_ms"] == pytest.approx(70.64, abs=0.006)
    assert runs[4]["metrics"]["output_throughput"] == pytest.approx(3223.28, abs=0.006)
    # the same runs come back from run list, and --label selects them (typed: "64" == 64)
    listed = ws.j("run", "list", "--label", "concurrency=64")["runs"]
    assert [r["id"] for r in listed] == [runs[1]["id"], runs[2]["id"], runs[4]["id"], runs[8]["id"]]
    # run show: the file is kept as an artifact and its path in raw; no git commit for imports
    show = ws.j("run", "show", str(runs[4]["id"]))
    assert show["raw"]["file"] == str(GEN / "guidellm-A-c64.json")
    assert show["raw"]["where"] == "benchmark 1" and show["raw"]["format"] == "guidellm"
    assert show["raw"]["data"]["schema"] == "v2"
    assert [Path(a["path"]).name for a in show["artifacts"]] == ["guidellm-A-c64.json"]
    assert (ws.root / show["artifacts"][0]["path"]).read_bytes() == (GEN / "guidellm-A-c64.json").read_bytes()
    line2 = ws.j("run", "show", str(runs[1]["id"]))
    assert line2["raw"]["where"] == "2" and line2["name"] == "sglang.jsonl:2"
    assert ws.git("rev-parse", "HEAD") == head


def test_import_with_format_key_map_and_hypothesis(ws, tmp_path: Path) -> None:
    ws.cli("hypothesis", "add", "Communication-bound", "--id", "comm-bound")
    f = tmp_path / "custom.json"
    f.write_text(json.dumps([{"res": {"tps": 1867.0}, "c": 256}, {"res": {"tps": 2800.0}, "c": 512}]))
    out = ws.j("run", "import", str(f), "--format", "json", "--key-map", "total_token_throughput=res.tps",
               "--key-map", "label.concurrency=c", "--hypothesis", "comm-bound", "--label", "config=tp8")
    runs = out["runs"]
    assert [r["metrics"]["total_token_throughput"] for r in runs] == [1867.0, 2800.0]
    assert [r["labels"]["concurrency"] for r in runs] == [256, 512]
    assert all(r["hypothesis"] == "comm-bound" for r in runs)
    # --label wins over the file's label (another file: the same content is one measurement, imported once)
    f2 = tmp_path / "custom2.json"
    f2.write_text(json.dumps([{"res": {"tps": 1870.0}, "c": 256}, {"res": {"tps": 2790.0}, "c": 512}]))
    out = ws.j("run", "import", str(f2), "--format", "json", "--key-map", "total_token_throughput=res.tps",
               "--key-map", "label.concurrency=c", "--label", "concurrency=1")
    assert [r["labels"]["concurrency"] for r in out["runs"]] == [1, 1]


def test_human_output(ws) -> None:
    r = ws.cli("run", "import", str(GEN / "aiperf-A-c1.json"))
    assert r.out.startswith("imported 1 run\n")
    assert "concurrency=1" in r.out and "tool=aiperf" in r.out


BAD_CASES = [
    (["--format", "sglang", "{guidellm}"], "sglang: line 1: no output_throughput or completed key", None),
    (["--format", "aiperf", "{guidellm}"], "aiperf: no request_throughput, output_token_throughput or request_count", None),
    (["--format", "guidellm", "{aiperf}"], "guidellm: no \"benchmarks\" list", "benchmarks"),
    (["{bad_line}"], "sglang: line 3: no output_throughput or completed key", "output_throughput"),
    (["{unknown}"], "cannot tell which tool wrote this file; pass --format", "--format"),
    (["{missing}"], "no such file", "FILE"),
    (["--format", "json", "--key-map", "output_throughput=nope.x", "{aiperf}"],
     "json: line 1: key map output_throughput=nope.x", "--key-map"),
    (["--key-map", "bad name=x", "{aiperf}"], "bad label name", "--key-map"),
    (["--label", "novalue", "{aiperf}"], "expected KEY=VALUE", "--label"),
    (["--hypothesis", "nope", "{aiperf}"], "nope", None),
]


def test_bad_input_exit_2_names_parser_and_field_and_writes_nothing(ws, tmp_path: Path) -> None:
    """Each case puts a good file first: all or nothing, so it must not be imported either."""
    ws.cli("run", "import", str(GEN / "aiperf-A-c1.json"))  # something there already
    before = _state(ws)
    bad = tmp_path / "bad.jsonl"
    bad.write_text(SGLANG_OLD + "\n" + SGLANG_OLD + "\n" + '{"backend": "sglang", "duration": 3}\n')
    unknown = tmp_path / "what.json"
    unknown.write_text('{"hello": 1}')
    names = {"guidellm": str(GEN / "guidellm-A-c1.json"), "aiperf": str(GEN / "aiperf-A-c64.json"),
             "bad_line": str(bad), "unknown": str(unknown), "missing": str(tmp_path / "missing.jsonl")}
    for args, message, field in BAD_CASES:
        argv = [a.format(**names) for a in args]
        r = ws.cli("run", "import", str(GEN / "aiperf-A-c64.json"), *argv, "--json", check=2)
        err = r.json["error"]
        assert message in err["message"], (args, err)
        if field is not None:
            assert err["field"] == field, (args, err)
        assert message in r.err, (args, r.err)  # stderr says it too
    assert _state(ws) == before


def test_bad_line_reports_file_and_line(ws, tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text(SGLANG_OLD + "\n" + '{"backend": "sglang"}\n')
    err = ws.cli("run", "import", str(bad), "--json", check=2).json["error"]
    assert err["file"] == str(bad) and err["line"] == 2
    assert err["message"] == "sglang: line 2: no output_throughput or completed key"


def test_reimport_same_file_keeps_one_copy(ws) -> None:
    ws.cli("run", "import", str(GEN / "aiperf-A-c1.json"))
    r = ws.cli("run", "import", str(GEN / "aiperf-A-c1.json"), "--label", "repeat=2")  # one measurement: no new run
    assert "already imported" in r.err
    runs, files, _ = _state(ws)
    assert len(runs) == 1
    assert len([f for f in files if f.endswith(".json")]) == 1


@pytest.mark.parametrize("first", ["json", "csv"])
def test_a_rounded_export_imported_apart_from_its_run_is_that_run(ws, first: str) -> None:
    """AIPerf's and genai-perf's CSV repeats its JSON's figures rounded to 2 places. Imported in a
    second import, either one is the run the workspace already has (issue 29: each measurement
    once, in one import or already in the workspace); a CSV of another run is not."""
    real = Path(__file__).resolve().parents[1] / "fixtures" / "real" / "genai-perf"
    one = real / "0.0.16-concurrency2" / "profile_export_genai_perf"
    other = real / "0.0.12-concurrency1" / "profile_export_genai_perf"
    second = "csv" if first == "json" else "json"
    ws.cli("run", "import", str(one.with_suffix("." + first)))
    r = ws.j("run", "import", str(one.with_suffix("." + second)))
    assert r["runs"] == [] and len(r["repeated"]) == 1, r
    assert "rounded to 2 places" in r["repeated"][0]["why"], r
    assert len(ws.j("run", "list")["runs"]) == 1
    r = ws.j("run", "import", str(other.with_suffix(".csv")))
    assert len(r["runs"]) == 1 and not r.get("repeated"), r


def test_import_relative_path_from_another_folder(ws, tmp_path: Path) -> None:
    sub = tmp_path / "results"
    sub.mkdir()
    (sub / "r.jsonl").write_text(SGLANG_OLD + "\n")
    r = ws.cli("-C", str(ws.root), "run", "import", "r.jsonl", "--json", cwd=sub)
    run = r.json["runs"][0]
    show = ws.j("run", "show", str(run["id"]))
    assert show["raw"]["file"] == str(sub / "r.jsonl")


def test_import_over_mcp_takes_key_map_and_labels_as_objects(ws, tool, tmp_path: Path) -> None:
    f = tmp_path / "custom.json"
    f.write_text(json.dumps([{"res": {"tps": 1867.0}, "c": 256}, {"res": {"tps": 2800.0}, "c": 512}]))
    doc, err, code = tool("run_import", {"files": [str(f)], "format": "json", "detail": True,
                                         "key_map": {"total_token_throughput": "res.tps", "label.concurrency": "c"},
                                         "labels": {"config": "tp8", "gpus": 8}})
    assert (err, code) == (False, 0), doc
    assert [r["labels"] for r in doc["runs"]] == [{"concurrency": c, "config": "tp8", "gpus": 8, "tool": "json"} for c in (256, 512)]
    assert doc["runs"] == ws.j("run", "list")["runs"] and doc["already_imported"] == []
    # the CLI's K=V texts give the same runs from the same content (imported once: it says so)
    again = ws.j("run", "import", str(f), "--format", "json", "--key-map", "total_token_throughput=res.tps",
                 "--key-map", "label.concurrency=c", "--label", "config=tp8", "--label", "gpus=8")
    assert again["runs"] == [] and again["already_imported"][0]["runs"] == [r["id"] for r in doc["runs"]]
    before = _state(ws)
    for args, field in (({"key_map": {"total_token_throughput": ""}}, "key_map"),
                        ({"key_map": {"bad name": "x"}}, "key_map"), ({"labels": {"bad key": "x"}}, "labels")):
        doc, err, code = tool("run_import", {"files": [str(GEN / "aiperf-A-c64.json")], **args})
        assert err and code == 2 and doc["error"]["field"] == field, (args, doc)
    assert _state(ws) == before


def test_sweep_folder_each_measurement_once_failed_run_and_labels(ws, tmp_path: Path) -> None:
    """A `vllm bench sweep` point folder (run=0, run=1 and a summary repeating both) is 2 runs, labelled
    by the sweep's parameter so `compare --by` reads it; the summary again later imports nothing; a
    result with 0 completed requests is a failed run without placeholder figures."""
    from tests.unit.test_parsers import VLLM_NEW

    runs = [{**VLLM_NEW, "run_number": n, "max_num_seqs": 32 * (n + 1), "duration": 20.0 + n} for n in (0, 1)]
    d = tmp_path / "SERVE--max_num_seqs"
    d.mkdir()
    for n, o in enumerate(runs):
        (d / f"run={n}.json").write_text(json.dumps(o, indent=4))
    (d / "summary.json").write_text(json.dumps(runs, indent=4))
    zero = tmp_path / "failed.json"
    zero.write_text(json.dumps({**VLLM_NEW, "completed": 0, "failed": 5, "output_throughput": 0.0, "mean_ttft_ms": 0.0}))
    r = ws.cli("run", "import", *map(str, sorted(d.iterdir())), str(zero), "--json")
    out = r.json
    assert len(out["runs"]) == 3 and len(out["repeated"]) == 2
    assert r.err.count("the same measurement as") == 2
    by_status = {x["status"] for x in out["runs"]}
    assert by_status == {"succeeded", "failed"}
    failed = next(x for x in out["runs"] if x["status"] == "failed")
    assert "mean_ttft_ms" not in failed["metrics"] and failed["metrics"]["failed"] == 5
    cmp = ws.j("compare", "--by", "max_num_seqs", "--metric", "mean_ttft_ms")
    assert cmp
    again = ws.cli("run", "import", str(d / "summary.json"), "--json")
    assert again.json["runs"] == [] and "not imported again" in again.err


def test_import_reads_the_work_counts_of_the_model_the_file_names(ws, tmp_path: Path) -> None:
    """Issue 30: a result line whose `model` is a GGUF file here gets that file's facts as `model_*`
    metrics, the sources kept in raw; the diagnosis then has work counts nobody typed."""
    pytest.importorskip("gguf")
    from optlog.testing.gguf_model import PRESETS, write_model

    s = write_model(tmp_path / "m.gguf", PRESETS["tiny"])
    line = {"backend": "sglang", "dataset_name": "random", "model": s["path"], "max_concurrency": 1,
            "completed": 4, "duration": 2.0, "total_input_tokens": 64, "total_output_tokens": 64,
            "output_throughput": 32.0}
    f = tmp_path / "r.jsonl"
    f.write_text(json.dumps(line) + "\n")
    (run,) = ws.j("run", "import", str(f))["runs"]
    assert run["metrics"]["model_active_params"] == s["facts"]["active_params"]
    show = ws.j("run", "show", str(run["id"]))
    assert show["raw"]["model_facts"]["sources"]["active_params"] == f"GGUF header of {s['path']}"
    # no ceilings in this workspace: the estimate's rates are there, waiting for `optlog calibrate`
    assert "work counts give" in show["telemetry"]["diagnosis"]["reason"]
    assert "(roofline-estimate)" in show["telemetry"]["diagnosis"]["reason"]


def test_goodput_runs_held_to_other_limits_never_pool(ws) -> None:
    """Two real AIPerf runs of one workload with other --goodput limits: each run carries its goodput
    and its limits, and `compare` splits them by the limits (never one median of both)."""
    a, b = (str(GEN / f"aiperf-goodput-{n}.json") for n in ("ttft300-e2e250", "e2e200-itl12"))
    runs = ws.j("run", "import", a, b)["runs"]
    assert [r["metrics"]["good_requests"] for r in runs] == [32, 13]
    assert runs[0]["labels"]["slo_ttft_ms"] == 300 and runs[1]["labels"]["slo_tpot_ms"] == 12
    d = ws.j("compare", "--metric", "goodput", "--by", "concurrency")
    assert d["split_by"] == ["slo_e2e_latency_ms", "slo_tpot_ms", "slo_ttft_ms"], d
    got = sorted(row["values"]["4"] for row in d["rows"])
    assert got == pytest.approx(sorted(r["metrics"]["goodput"] for r in runs), rel=1e-5)
