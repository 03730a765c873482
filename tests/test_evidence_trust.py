"""Issue 14: a run names everything it was rendered with, nothing typed is ignored, one run per
measurement. Each trap as the agent hit it, through the real CLI, the real launcher and the test
server (optlog.testing.fakeserver via tests/testserver.py)."""

from __future__ import annotations

import json

import yaml

from _launch import PY, TESTS, bench_cmd, free_port, spec

ITL_SERVER = ("{{ py }} {{ tests }}/testserver.py --port {{ port }} --ttft-ms 1 --itl-ms {{ itl_ms }} "
              "--tokens 8 --model {{ marker }}")


def _itl_spec(ws, port, name="itl", **top):
    srv = {"cmd": ITL_SERVER, "ready": {"url": "http://127.0.0.1:{{ port }}/health", "timeout_s": 15, "interval_s": 0.05},
           "stop": {"timeout_s": 3}}
    return spec(ws, name, server=srv, params={"itl_ms": 10, "port": port}, labels={"model": "test"},
                bench={"cmd": bench_cmd("--requests 2")}, **top)


def test_set_values_are_stored_and_never_pooled_in_compare_verdict_and_diff(ws):
    port = free_port()
    rel = _itl_spec(ws, port, matrix={"concurrency": [1, 2]}, repeats=2)
    l10 = ws.j("run", "launch", rel, "--set", "itl_ms=10")
    l5 = ws.j("run", "launch", rel, "--set", "itl_ms=5")
    assert l10["status"] == l5["status"] == "succeeded"
    # the run keeps the values and the commands it was rendered with
    show = ws.j("run", "show", str(l5["runs"][0]["id"]))
    assert show["raw"]["values"]["itl_ms"] == 5 and show["raw"]["config"]["itl_ms"] == "5"
    argv = show["raw"]["commands"]["server"]["argv"]
    assert argv[argv.index("--itl-ms") + 1] == "5"
    assert show["raw"]["commands"]["bench"]["argv"][0] == PY
    # compare: the two launches are not pooled into one mean (the issue: 557.5, n=6)
    cmp = ws.j("compare", "--metric", "output_throughput", "--by", "model", "--per", "concurrency")
    for row in cmp["rows"]:
        assert row["values"] == {} and row["n"] == {}, row
        (nc,) = row["not_comparable"]
        assert nc["group"] == "test" and nc["keys"] == ["itl_ms"]
        by_itl = {v["names"]["itl_ms"]: v for v in nc["variants"]}
        assert set(by_itl) == {"10", "5"} and all(v["n"] == 2 for v in by_itl.values())
        assert by_itl["5"]["value"] > by_itl["10"]["value"]  # shorter ITL, more tokens per second
    assert any("itl_ms differs (10, 5)" in w for w in cmp["warnings"])
    human = ws.cli("compare", "--metric", "output_throughput", "--by", "model").out
    assert "not comparable" in human and "itl_ms=10" in human and "itl_ms=5" in human
    # run diff names the differing key and the rendered difference
    a, b = l10["runs"][0]["id"], l5["runs"][0]["id"]
    d = ws.j("run", "diff", str(a), str(b))
    assert d["comparable"] is False and d["not_comparable"] == [{"key": "itl_ms", "a": "10", "b": "5"}]
    assert d["rendered"]["values.itl_ms"] == {"a": 10, "b": 5}
    assert "not comparable: differ in itl_ms" in ws.cli("run", "diff", str(a), str(b)).out
    same = ws.j("run", "diff", str(a), str(l10["runs"][1]["id"]))
    assert same["comparable"] is True and same["not_comparable"] == []
    # verdict: the runs of the other itl_ms are listed as not comparable with the key, not pooled
    ws.cli("hyp", "add", "More concurrency, more throughput", "--id", "conc")
    ws.cli("predict", "add", "conc", "--expect", "a > b", "--metric", "output_throughput",
           "--a", "concurrency=2", "--b", "concurrency=1")
    res = ws.j("verdict", "conc")["results"][0]["predictions"][0]
    assert res["not_comparable"] and all("itl_ms=" in x["reason"] for x in res["not_comparable"]), res
    used = {i for lv in res["levels"] for ids in lv["runs"].values() for i in ids}
    noted = {x["run"] for x in res["not_comparable"]}
    assert used and not (used & noted) and len(used | noted) == 8


def test_values_that_vary_in_a_launch_are_labels_and_an_edited_template_differs(ws):
    port = free_port()
    rel = spec(ws, "inc", params={"pp": 1, "port": port, "concurrency": 1}, matrix=None,
               include=[{"config": "tp8", "tp": 8}, {"config": "tp4pp2", "tp": 4, "pp": 2}],
               bench={"cmd": bench_cmd("--echo {{ tp }} {{ pp }}")})
    res = ws.j("run", "launch", rel)
    labels = {r["labels"]["config"]: r["labels"] for r in res["runs"]}
    assert labels["tp8"]["pp"] == 1 and labels["tp4pp2"]["pp"] == 2  # pp=1 came from params, still a label
    # the same spec with its bench command edited: the runs name a different bench.cmd
    d = yaml.safe_load((ws.root / rel).read_text())
    d["bench"]["cmd"] += " --requests 2"
    (ws.root / rel).write_text(yaml.safe_dump(d, sort_keys=False, width=10000))
    res2 = ws.j("run", "launch", rel)
    diff = ws.j("run", "diff", str(res["runs"][0]["id"]), str(res2["runs"][0]["id"]))
    assert [x["key"] for x in diff["not_comparable"]] == ["bench.cmd"], diff["not_comparable"]
    assert json.dumps(diff["rendered"]).count("--requests") >= 1
