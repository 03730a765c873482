"""Issue 14: a result file with several results is never silently cut to one.

A launched point whose bench writes several results (`optlog bench --concurrency 1,2` as the bench
command, a JSONL with several lines, a GuideLLM file with several benchmarks) used to keep only the
last one and say nothing. Every result is now its own run, told apart by the labels that differ
between the results, each with the point's labels; results that no label tells apart, or that
differ in a label the point itself sets, are refused with the file named. Through the real CLI, the
real launcher and the test server."""

from __future__ import annotations

import json

from _launch import bench_cmd, free_port, spec

ITL_SERVER = ("{{ py }} {{ tests }}/testserver.py --port {{ port }} --ttft-ms 1 --itl-ms {{ itl_ms }} "
              "--tokens 8 --model {{ marker }}")
SERVER = {"cmd": ITL_SERVER, "ready": {"url": "http://127.0.0.1:{{ port }}/health", "timeout_s": 15, "interval_s": 0.05},
          "stop": {"timeout_s": 3}}
OPTLOG_BENCH = "{{ py }} -m optlog bench {{ server_url }} --concurrency 1,2 --num-prompts 2 --input-len 4 --output-len 4"
JSONL_BENCH = "{{ py }} {{ tests }}/_launch_bench.py --url {{ server_url }} --out {{ out }} --jsonl"


def test_optlog_bench_with_two_levels_gives_one_run_per_level_with_the_points_labels(ws):
    rel = spec(ws, "levels", server=SERVER, params={"itl_ms": 1, "port": free_port()}, matrix=None, repeats=2,
               labels={"model": "test"}, bench={"cmd": OPTLOG_BENCH, "parser": "optlog"})
    res = ws.j("run", "launch", rel)
    assert res["status"] == "succeeded", res
    runs = res["runs"]
    # 2 repeats × 2 levels: 4 runs, not 2 runs of the last level
    assert sorted((r["labels"]["concurrency"], r["labels"]["repeat"]) for r in runs) == [(1, 0), (1, 1), (2, 0), (2, 1)]
    assert all(r["labels"]["model"] == "test" and r["status"] == "succeeded" for r in runs)
    assert all(r["metrics"].get("output_throughput", 0) > 0 for r in runs)
    assert len(ws.j("run", "list")["runs"]) == 4
    # each run says which result of which file it is
    shows = [ws.j("run", "show", str(r["id"])) for r in runs]
    where = sorted((s["raw"]["result_of"]["index"], s["raw"]["result_of"]["of"]) for s in shows)
    assert where == [(0, 2), (0, 2), (1, 2), (1, 2)]
    assert all(s["raw"]["result_of"]["file"].endswith("optlog-bench.jsonl") for s in shows)
    # the two runs of one point share its output folder and its rendered commands
    by_dir: dict[str, set[int]] = {}
    for r in runs:
        by_dir.setdefault(r["artifacts_dir"], set()).add(r["labels"]["concurrency"])
    assert list(by_dir.values()) == [{1, 2}, {1, 2}]
    log = ws.cli("run", "logs", f"L{res['launch']}").out
    assert "2 results" in log and "concurrency" in log
    # compare and verdict see two levels of two repeats each, comparable
    cmp = ws.j("compare", "--metric", "output_throughput", "--by", "concurrency")
    (row,) = cmp["rows"]
    assert row["n"] == {"1": 2, "2": 2} and not row.get("not_comparable"), row
    ws.cli("hyp", "add", "Two in flight, more throughput", "--id", "lv")
    ws.cli("predict", "add", "lv", "--expect", "a > 0.1 * b", "--metric", "output_throughput",
           "--a", "concurrency=2", "--b", "concurrency=1")
    pred = ws.j("verdict", "lv")["results"][0]["predictions"][0]
    used = {i for lv in pred["levels"] for ids in lv["runs"].values() for i in ids}
    assert used == {r["id"] for r in runs} and not pred.get("not_comparable"), json.dumps(pred, indent=1)
    # run import of the point's file: already the launched runs' measurement, nothing imported
    art = ws.root / runs[0]["artifacts_dir"] / "optlog-bench.jsonl"
    out = ws.cli("run", "import", str(art), "--json")
    assert out.json["runs"] == [] and "already imported" in out.err


def test_several_results_no_label_tells_apart_are_refused_naming_the_file(ws):
    # two lines with the same labels: a repeat, or a stale line appended earlier? optlog cannot tell
    rel = spec(ws, "same", server=SERVER, params={"itl_ms": 1, "port": free_port()}, matrix=None,
               bench={"cmd": JSONL_BENCH + " --concurrency 4,4", "parser": "sglang"})
    res = ws.j("run", "launch", rel, check=False)
    assert res["status"] == "failed"
    (run,) = res["runs"]
    assert run["status"] == "failed" and run["cause"] == "ambiguous_result" and "output_throughput" not in run["metrics"], run
    assert "result.jsonl" in run["error"] and "2 results" in run["error"] and "cannot tell" in run["error"], run
    assert "lines 1 and 2" in run["error"] or "results 1 and 2" in run["error"], run["error"]
    assert len(ws.j("run", "list")["runs"]) == 1
    # a JSONL of plain numbers (parser json): no label at all, refused the same way
    rel = spec(ws, "plain", server=False, matrix=None,
               bench={"cmd": JSONL_BENCH + " --concurrency 1,2 --bare --requests 0", "parser": "json"})
    res = ws.j("run", "launch", rel, check=False)
    (run,) = res["runs"]
    assert run["cause"] == "ambiguous_result" and "result.jsonl" in run["error"], run


def test_several_results_that_differ_in_a_label_the_point_sets_are_refused(ws):
    # the point says concurrency=1, its bench measured 1 and 2: both runs would be stored as concurrency=1
    rel = spec(ws, "clash", server=SERVER, params={"itl_ms": 1, "port": free_port()}, matrix={"concurrency": [1]},
               bench={"cmd": JSONL_BENCH + " --concurrency 1,2", "parser": "sglang"})
    res = ws.j("run", "launch", rel, check=False)
    (run,) = res["runs"]
    assert run["status"] == "failed" and run["cause"] == "ambiguous_result", run
    err = run["error"]
    assert "result.jsonl" in err and "concurrency" in err and "the point sets concurrency=1" in err, err
    # the same file with a bench whose levels the point does not set: two runs
    rel = spec(ws, "ok", server=SERVER, params={"itl_ms": 1, "port": free_port()}, matrix=None,
               bench={"cmd": JSONL_BENCH + " --concurrency 1,2", "parser": "sglang"})
    res = ws.j("run", "launch", rel)
    assert sorted(r["labels"]["concurrency"] for r in res["runs"]) == [1, 2]


def test_a_single_result_is_stored_as_before(ws):
    rel = spec(ws, "one", server=SERVER, params={"itl_ms": 1, "port": free_port()},
               bench={"cmd": bench_cmd(), "parser": "json"})
    res = ws.j("run", "launch", rel)
    (run,) = res["runs"]
    assert run["status"] == "succeeded" and "output_throughput" in run["metrics"]
    raw = ws.j("run", "show", str(run["id"]))["raw"]
    assert raw["result_of"]["of"] == 1 and raw["result_of"]["file"].endswith("result.json")


def test_result_files_the_launcher_leaves_out_are_named(ws):
    # no bench.results: the parser's usual file (result.json) is read; the others are named, not dropped silently
    rel = spec(ws, "two", server=False, matrix=None,
               bench={"cmd": "{{ py }} {{ tests }}/_launch_bench.py --out {{ out }} --requests 1 --concurrency 1",
                      "parser": "json"})
    res = ws.j("run", "launch", rel)
    (run,) = res["runs"]
    raw = ws.j("run", "show", str(run["id"]))["raw"]
    assert raw["result_of"]["file"].endswith("result.json") and raw["result_of"]["left_out"] == [
        run["artifacts_dir"] + "/argv.json"]
    assert "left out " + run["artifacts_dir"] + "/argv.json" in ws.cli("run", "logs", f"L{res['launch']}").out


def test_run_import_of_the_same_content_under_two_names_says_it_imported_it_once(ws, tmp_path):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps({"output_throughput": 100.0}))
    b.write_bytes(a.read_bytes())
    r = ws.cli("run", "import", str(a), str(b), "--format", "json", "--json")
    assert len(r.json["runs"]) == 1
    assert f"{b}: the same content as {a}; imported once" in r.err
