"""Recorded evidence (run record/list/show, notes) and the status digest."""

from __future__ import annotations

from tests._face import tool  # noqa: F401  (a fixture)
from _foundation import bad, snapshot


def test_run_record_list_show(ws):
    ws.cli("hypothesis", "add", "Comm-bound", "--id", "comm-bound")
    r = ws.j("run", "record", "--label", "config=tp8", "--label", "concurrency=256", "--label", "model=glm-5",
             "--metric", "total_token_throughput=1867", "--metric", "mean_ttft_ms=812.5",
             "--hypothesis", "comm-bound", "--note", "from the seed")
    assert r["status"] == "succeeded" and r["source"] == "recorded" and r["hypothesis"] == "comm-bound"
    assert r["labels"] == {"config": "tp8", "concurrency": 256, "model": "glm-5"}
    assert r["metrics"] == {"total_token_throughput": 1867.0, "mean_ttft_ms": 812.5}
    for k in ("artifacts", "telemetry", "environment", "exit_code", "error", "invalidated"):
        assert k in r, k
    assert r["note"] == "from the seed" and r["invalidated"] is False
    r2 = ws.j("run", "record", "--label", "config=tp4pp2", "--label", "concurrency=256.0",
              "--metric", "total_token_throughput=727")
    r3 = ws.j("run", "record", "--label", "config=tp8", "--label", "concurrency=1024",
              "--metric", "total_token_throughput=3740")
    runs = ws.j("run", "list")["runs"]
    assert [x["id"] for x in runs] == [r["id"], r2["id"], r3["id"]]
    for x in runs:
        assert {"id", "status", "labels", "metrics"} <= set(x)
    assert runs[1]["labels"]["concurrency"] == 256  # typed: 256.0 and "256" are the same value
    sel = ws.j("run", "list", "--label", "concurrency=256")["runs"]
    assert [x["id"] for x in sel] == [r["id"], r2["id"]]
    assert [x["id"] for x in ws.j("run", "list", "--hypothesis", "comm-bound")["runs"]] == [r["id"]]
    assert ws.j("run", "show", str(r["id"])) == {**r}
    assert [x["id"] for x in ws.j("hypothesis", "show", "comm-bound")["runs"]] == [r["id"]]
    out = ws.cli("run", "list").out
    assert "tp4pp2" in out and "3,740" in out
    assert "total_token_throughput" in ws.cli("run", "show", str(r["id"])).out


def test_notes_and_status(ws):
    ws.cli("hypothesis", "add", "Compute-bound FP4 GEMM", "--id", "compute-bound")
    ws.cli("hypothesis", "add", "Comm-bound", "--id", "comm-bound")
    ws.cli("hypothesis", "set", "comm-bound", "--status", "falsified", "--why", "TP4+PP2 2x slower")
    n = ws.j("note", "add", "FlashInfer mm_fp4 returns zeros on SM120", "--hypothesis", "compute-bound",
             "--link", "https://github.com/flashinfer-ai/flashinfer/issues/2577")
    assert n["link"].endswith("/2577") and n["hypothesis"] == "compute-bound" and n["by"] == "tester"
    n2 = ws.j("note", "add", "autotune crashes for M128/M256 tiles")
    assert ws.j("note", "list")["notes"] == [n, n2]
    show = ws.j("hypothesis", "show", "compute-bound")
    assert [x["id"] for x in show["notes"]] == [n["id"]]
    ws.j("todo", "write", "-", input='{"todos": [{"content": "Investigate FP4 GEMM", "status": "pending"},'
                                     ' {"content": "done thing", "status": "completed"}]}')
    st = ws.j("status")
    assert [h["id"] for h in st["hypotheses"]["open"]] == ["compute-bound"]
    assert st["hypotheses"]["total"] == 2
    assert [t["content"] for t in st["todos"]] == ["Investigate FP4 GEMM"]
    assert st["live_runs"] == [] and st["runs_total"] == 0
    assert st["latest_verdicts"][0]["hypothesis"] == "comm-bound" and st["latest_verdicts"][0]["status"] == "falsified"
    human = ws.cli("status").out
    assert "compute-bound" in human and "Investigate FP4 GEMM" in human and "falsified" in human


def test_bad_evidence_input_writes_nothing(ws):
    ws.cli("hypothesis", "add", "H", "--id", "h")
    ws.j("run", "record", "--label", "config=tp8", "--metric", "x=1")
    before = snapshot(ws)
    err = bad(ws, "run", "record", "--label", "config=tp8", "--metric", "total_token_throughput=fast", field="--metric")
    assert "number" in err["message"] and "fast" in err["message"]
    bad(ws, "run", "record", "--label", "config=tp8", "--metric", "x=inf", field="--metric")
    bad(ws, "run", "record", "--label", "config=tp8", "--metric", "x=nan", field="--metric")
    err = bad(ws, "run", "record", "--label", "config", "--metric", "x=1", field="--label")
    assert "=" in err["message"]
    bad(ws, "run", "record", "--label", "=tp8", "--metric", "x=1", field="--label")
    bad(ws, "run", "record", "--label", "bad key=1", "--metric", "x=1", field="--label")
    bad(ws, "run", "record", "--label", "config=tp8", field="--metric")
    bad(ws, "run", "record", "--label", "config=tp8", "--metric", "x=1", "--hypothesis", "nope", field="--hypothesis")
    bad(ws, "run", "show", "999", field="ID")
    bad(ws, "run", "show", "abc", field="ID")
    bad(ws, "run", "list", "--status", "done", field="--status")
    bad(ws, "run", "list", "--label", "novalue", field="--label")
    bad(ws, "note", "add", "x", "--link", "not a url", field="--link")
    bad(ws, "note", "add", "x", "--link", "github.com/x", field="--link")
    bad(ws, "note", "add", "x", "--hypothesis", "nope", field="--hypothesis")
    bad(ws, "note", "add", "   ", field="TEXT")
    bad(ws, "note", "add", "x", "--run", "999", field="--run")  # the option that named the run (was "ID", an argument the command does not have)
    assert snapshot(ws) == before


def test_run_record_and_list_over_mcp_take_objects_and_return_the_cli_documents(ws, tool):
    """labels/metrics as objects with typed values: the binding gets typed pairs, nothing becomes
    `K=V` text again, and the documents are the CLI's."""
    r, err, code = tool("run_record", {"labels": {"config": "tp8", "concurrency": 256},
                                       "metrics": {"total_token_throughput": 1867, "ttft_ms": "35.5"}})
    assert (err, code) == (False, 0), r
    assert r["labels"] == {"config": "tp8", "concurrency": 256}
    assert r["metrics"] == {"total_token_throughput": 1867.0, "ttft_ms": 35.5}
    assert r == ws.j("run", "show", str(r["id"]))
    ws.j("run", "record", "--label", "config=tp4", "--label", "concurrency=256.0", "--metric", "total_token_throughput=700")
    agent = ["--fields", "id,status,hypothesis,invalidated,labels,metrics", "--limit", "10", "--order", "newest"]
    for args, argv in (({"labels": {"concurrency": 256}}, ["--label", "concurrency=256", *agent]),
                       ({"labels": {"config": "tp8", "concurrency": "256"}, "limit": 5, "order": "oldest",
                         "fields": "id,labels"},
                        ["--label", "config=tp8", "--label", "concurrency=256", "--limit", "5", "--fields", "id,labels"])):
        doc, err, _ = tool("run_list", args)
        assert not err, doc
        assert doc == ws.j("run", "list", *argv)
    # bad typed values: the error names the tool's parameter, exit 2, nothing written
    for args, field in (({"labels": {"config": "tp8"}, "metrics": {"x": "fast"}}, "metrics"),
                        ({"labels": {"bad key": 1}, "metrics": {"x": 1}}, "labels"),
                        ({"labels": {"config": "tp8"}, "metrics": {"x": True}}, "metrics")):
        doc, err, code = tool("run_record", args)
        assert err and code == 2 and doc["error"]["field"] == field, doc
    assert len(ws.j("run", "list")["runs"]) == 2
    doc, err, _ = tool("run_list", {"labels": {"Config": "tp8"}})
    assert err and doc["error"]["code"] == "not_found" and doc["error"]["did_you_mean"] == ["config"]
