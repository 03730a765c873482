"""`optlog tune` on llama.cpp's real `llama-server` (Gemma 3 270M; see tests/_realserver.py for where
they come from and when this skips: never on CI). Issue 21's proof on a real server, with a small budget.

The space is designed so that one configuration clearly wins, whatever the machine's load: at
concurrency 4, `--parallel 4` batches the four requests where `--parallel 1` queues them, and `-b 4`
splits every prompt into 4-token steps. Measured on the shared 2-core machine (load 5):
`--parallel 4 -b 512` 15.4 tokens/s, p99 TTFT 0.72 s; `-b 4` 7.0 tokens/s, 3.7 s; `--parallel 1`
8.6 tokens/s, 3.0 s (unloaded: about twice as fast, the same order). The winner leads the runner-up
by about 1.8x, and the TTFT limit (1.5 s) holds for it with a 2x margin, so the brute-force grid and
the study agree unless two independent measurements are off by that much.
Threads stay at 1: on a shared 2-core runner llama.cpp's `-t 2` threads spin-wait for each other
(tests/_realserver.py), which would make a trial last minutes, not seconds.
"""

from __future__ import annotations

import sys

import pytest
import yaml

from _launch import assert_no_survivors, free_port

pytestmark = pytest.mark.slow
CONSTRAINED = ("--maximize", "output_throughput", "--constraint", "p99_ttft_ms <= 1500",
               "--constraint", "failed == 0", "--remeasure", "0")
SPACE = {"parallel": {"choices": [1, 4]}, "batch": {"choices": [4, 512]}, "threads": {"choices": [1]}}
BEST = {"parallel": 4, "batch": 512, "threads": 1}


def _spec(ws, binary, model) -> str:
    d = {"name": "llama-tune",
         "params": {"bin": str(binary), "model": str(model), "port": free_port(), "marker": str(ws.root),
                    "py": sys.executable},
         "search": SPACE,
         "server": {"cmd": "{{ bin }} -m {{ model }} --host 127.0.0.1 --port {{ port }} -t {{ threads }} "
                           "-c {{ 256 * parallel }} --parallel {{ parallel }} -b {{ batch }} --alias {{ marker }}",
                    "ready": {"url": "http://127.0.0.1:{{ port }}/health", "timeout_s": 120, "interval_s": 0.05},
                    "check": {"prompts": ["1, 2, 3, 4, 5,"], "expect_regex": r"^\s*6", "max_tokens": 4},
                    "stop": {"timeout_s": 10}},
         "bench": {"cmd": "{{ py }} -m optlog.loadgen http://127.0.0.1:{{ port }} --concurrency 4 --num-prompts 4 "
                          "--input-len 16 --output-len 8 --ignore-eos --metrics-url none "
                          "--output-file {{ out }}/result.jsonl",
                   "parser": "optlog", "timeout_s": 300},
         "telemetry": False,
         "labels": {"server": "llama.cpp", "model": "gemma3-270m"}}
    (ws.root / "runs" / "llama-tune.yaml").write_text(yaml.safe_dump(d, sort_keys=False, width=10000))
    return "runs/llama-tune.yaml"


def test_constrained_study_on_llama_server_finds_the_grid_best(ws, real_server):
    binary, model = real_server
    rel = _spec(ws, binary, model)
    grid = ws.j("tune", rel, *CONSTRAINED, "--sampler", "grid", "--study", "grid", timeout=900)
    assert len(grid["trials"]) == 4 and all(t["state"] == "complete" for t in grid["trials"]), grid["trials"]
    by = {(t["params"]["parallel"], t["params"]["batch"]): t for t in grid["trials"]}
    assert set(by) == {(1, 4), (1, 512), (4, 4), (4, 512)}
    # the grid's own reading of the space: batching wins, within the TTFT limit
    assert [b["params"] for b in grid["best"]] == [BEST], grid["trials"]
    assert by[(4, 512)]["feasible"] is True and all(isinstance(t["feasible"], bool) for t in by.values())
    assert by[(4, 512)]["values"][0] > max(t["values"][0] for k, t in by.items() if k[0] == 1)
    # a study with a budget the size of the grid reaches the same configuration, launching no
    # configuration twice (seeded: TPE's first trials are its random start-up, which with seed 2
    # proposes 1/4, 1/512, 1/4 again, then 4/512, so the winner comes last and costs 3 launches)
    tpe = ws.j("tune", rel, *CONSTRAINED, "--trials", "4", "--seed", "2", "--study", "tpe", timeout=900)
    assert tpe["sampler"] == "tpe" and len(tpe["trials"]) == 4
    assert [b["params"] for b in tpe["best"]] == [BEST], tpe["trials"]
    launched = [t for t in tpe["trials"] if "same_as" not in t]
    assert len({tuple(sorted(t["params"].items())) for t in launched}) == len(launched) < 4
    # each trial is a launched run of the real server, labelled with its parameters
    run = ws.j("run", "show", str(tpe["best"][0]["run"]))
    assert run["status"] == "succeeded" and run["labels"]["study"] == "tpe"
    assert {k: run["labels"][k] for k in BEST} == BEST and run["metrics"]["completed"] == 4
    assert_no_survivors(str(ws.root), timeout=15)
