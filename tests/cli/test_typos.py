"""Typos are caught with the names optlog knows (issue 48 item 4): a command the CLI has, an option
(click's own suggestion), the workspace's own metrics and labels. A prediction on a metric no run has,
when a run has a close one, is a typo far more often than a new metric: refused with the suggestion
(exit 2, nothing committed); `--new-metric` says it is meant."""

from __future__ import annotations

from tests._verdicts import repeats, seed_runs


def test_an_unknown_command_gets_did_you_mean_at_every_level(ws):
    r = ws.cli("hypothsis", "add", "x", check=2)
    assert "No such command 'hypothsis'. Did you mean 'hypothesis'?" in r.err, r.err
    doc = ws.cli("hypothsis", "add", "x", "--json", check=2).json["error"]
    assert doc["code"] == "usage" and doc["did_you_mean"] == ["hypothesis"], doc
    assert "Did you mean 'add'?" in ws.cli("hypothesis", "ad", "x", check=2).err
    assert "Did you mean 'launch'?" in ws.cli("run", "lanch", "x.yaml", check=2).err  # a verb in another module
    opt = ws.cli("prediction", "add", "h", "--expect", "a > b", "--metrc", "m", "--json", check=2).json["error"]
    assert opt["did_you_mean"][0] == "--metric", opt


def test_a_prediction_on_a_misspelt_metric_is_refused_with_the_workspaces_own_name(ws):
    seed_runs(ws, repeats({"parallel": 4}, "output_throughput", [10, 11]) + repeats({"parallel": 1}, "output_throughput", [5, 6]))
    ws.cli("hyp", "add", "Batching pays", "--id", "batching")
    before = ws.commits()
    r = ws.cli("prediction", "add", "batching", "--expect", "a > b", "--metric", "output_througput",
               "--a", "parallel=4", "--b", "parallel=1", "--json", check=2)
    err = r.json["error"]
    assert err["field"] == "--metric" and err["did_you_mean"] == ["output_throughput"], err
    assert "--new-metric" in err["message"] and ws.commits() == before  # nothing committed
    # said to be new: accepted, with the warning and the suggestion
    ok = ws.cli("prediction", "add", "batching", "--expect", "a > b", "--metric", "output_througput",
                "--a", "parallel=4", "--b", "parallel=1", "--new-metric")
    assert "no run has metric 'output_througput' yet (did you mean 'output_throughput'" in ok.err, ok.err
    # a metric far from every known name (or an optlog metric) needs no flag: a warning, as before
    new = ws.cli("prediction", "add", "batching", "--expect", "a.gpu_power_w < 300", "--a", "parallel=4")
    assert "no run has metric 'gpu_power_w' yet" in new.err
    ws.cli("prediction", "add", "batching", "--expect", "a < b", "--metric", "p99_ttft_ms", "--a", "parallel=4",
           "--b", "parallel=1")
    # a label selector the runs do not have is named with the nearest label they do have
    lab = ws.cli("prediction", "add", "batching", "--expect", "a > b", "--metric", "output_throughput",
                 "--a", "paralel=4", "--b", "parallel=1")
    assert "no run has label 'paralel' yet (--a paralel=4) (did you mean 'parallel'?)" in lab.err, lab.err


def test_compare_where_on_a_misspelt_label_names_the_workspaces_own_label(ws):
    """`compare --where "confg == tp8"` matched no run and said only that no run matched; a label no
    counting run has is named with the nearest label the runs do have (exit 2), in text and JSON."""
    seed_runs(ws, repeats({"config": "tp8", "parallel": 4}, "output_throughput", [10, 11])
              + repeats({"config": "tp4", "parallel": 1}, "output_throughput", [5, 6]))
    r = ws.cli("compare", "--metric", "output_throughput", "--by", "parallel", "--where", "confg == tp8", check=2)
    assert "no label (on a counting run) 'confg' (did you mean 'config'?)" in r.err, r.err
    err = ws.cli("compare", "--metric", "output_throughput", "--by", "parallel", "--where",
                 "parallel >= 1 and not (confg == tp8)", "--json", check=2).json["error"]
    assert err["did_you_mean"] == ["config"] and err["field"] == "--where", err
    # the right label still filters
    ok = ws.cli("compare", "--metric", "output_throughput", "--by", "parallel", "--where", "config == tp8", "--json").json
    assert ok
