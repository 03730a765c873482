"""`optlog tune` on llama.cpp's real `llama-server` (Gemma 3 270M; see tests/_realserver.py for where
they come from and when this skips: never on CI). Issue 21's proof on a real server, with a small budget.

The space is designed so that one configuration usually wins: at concurrency 4, `--parallel 4`
batches the four requests where `--parallel 1` queues them, and `-b 4` splits every prompt into
4-token steps. Measured on the shared 2-core machine (load 5): `--parallel 4 -b 512` 15.4 tokens/s,
p99 TTFT 0.72 s; `-b 4` 7.0 tokens/s, 3.7 s; `--parallel 1` 8.6 tokens/s, 3.0 s. But which one wins is
a measurement, and under load (CI at load 4-12) it flipped once: so the test checks what optlog does
with the measurements (the best is the feasible trial with the highest value, each launch is labelled,
no configuration is launched twice), recomputed from the trials it reports, never which one won.
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
BEST = {"parallel": 4, "batch": 512, "threads": 1}  # the labels a trial's run carries
SPACE_THREADS = {"threads": 1}


def _best(trials: list[dict]) -> list[dict]:
    """[the parameters of the feasible trial with the highest value] (ties: the first), or [] when
    no trial met the constraints (a loaded machine can push every p99 TTFT past the limit)."""
    ok = [t for t in trials if t["state"] == "complete" and t["feasible"] and "same_as" not in t]
    return [max(ok, key=lambda t: t["values"][0])["params"]] if ok else []


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
    # the grid's own reading of the space: the best is the feasible trial with the highest value, as
    # recomputed here from the trials it reports (which configuration that is depends on the machine:
    # on an idle one batching wins by ~1.8x, but a test may not depend on a measurement under load)
    assert all(isinstance(t["feasible"], bool) for t in by.values())
    assert [b["params"] for b in grid["best"]] == _best(grid["trials"]), grid["trials"]
    # a study with a budget the size of the grid launches no configuration twice (seeded: TPE's first
    # trials are its random start-up, independent of the values: with seed 2 it proposes 1/4, 1/512,
    # 1/4 again, then 4/512, so 3 launches) and picks its best by the same rule
    tpe = ws.j("tune", rel, *CONSTRAINED, "--trials", "4", "--seed", "2", "--study", "tpe", timeout=900)
    assert tpe["sampler"] == "tpe" and len(tpe["trials"]) == 4
    launched = [t for t in tpe["trials"] if "same_as" not in t]
    assert len({tuple(sorted(t["params"].items())) for t in launched}) == len(launched) == 3
    assert {tuple(sorted(t["params"].items())) for t in launched} == {
        tuple(sorted({**SPACE_THREADS, "parallel": p, "batch": b}.items())) for p, b in ((1, 4), (1, 512), (4, 512))}
    assert [b["params"] for b in tpe["best"]] == _best(launched), tpe["trials"]
    # each trial is a launched run of the real server, labelled with its parameters
    for trial in launched:
        run = ws.j("run", "show", str(trial["run"]))
        assert run["status"] == "succeeded" and run["labels"]["study"] == "tpe"
        assert {k: run["labels"][k] for k in BEST} == trial["params"] and run["metrics"]["completed"] == 4
    assert_no_survivors(str(ws.root), timeout=15)
