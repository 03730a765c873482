"""One diagnosis, from known ceilings (issue 14.9), and calibration you can trust (14.10), through the
real CLI: a launched GEMM-probe run stores its diagnosis with the ceilings it used; when the ceilings
change (a hand edit, `optlog calibrate`) the stored diagnosis is redone and the verdicts that read it
re-judged, so `run show` and predictions never disagree; calibration reports median and spread over
trials, the host's threads and load, refuses unsteady figures and never writes the datasheet keys."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests._telemetry import fake_env

BLAS1 = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
GPU = {"gpus": [{"uuid": "GPU-aaaaaaaa-1111", "power_w": 300, "limit_w": 700, "util": 90, "tensor": 5, "dram": 20,
                 "sm_active": 80}]}


def _set_cpu_ceilings(ws: Any, fp32: float, bw: float) -> None:
    cfg = ws.root / "optlog.yaml"
    doc = cfg.read_text()
    start = doc.index("hardware:")
    end = doc.index("executors:")
    cfg.write_text(doc[:start] + f"hardware:\n  default: cpu\n  gpus:\n    cpu:\n      peak_tflops: {{fp32: {fp32}}}\n"
                   f"      mem_bw_gbps: {bw}\n" + doc[end:])


def _launch_probe(ws: Any) -> int:
    spec = ws.root / "runs" / "probe.yaml"
    spec.parent.mkdir(exist_ok=True)
    spec.write_text(f"""name: probe
params: {{python: "{sys.executable}"}}
matrix: {{m: [64]}}
bench:
  cmd: "{{{{ python }}}} -m optlog.probes.gemm --m {{{{ m }}}} --k 64 --n 64 --dtype fp32 --device cpu --repeats 3 --output {{{{ out }}}}/result.json"
  parser: probe
telemetry: {{interval_s: 0.05, gpm_interval_s: 0.1}}
""")
    d = ws.j("run", "launch", "runs/probe.yaml", env={**fake_env(GPU), **BLAS1})
    return int(d["runs"][0]["id"] if isinstance(d["runs"][0], dict) else d["runs"][0])


def _stored(ws: Any, rid: int) -> dict[str, float]:
    return {k: v for k, v in ws.j("run", "show", str(rid))["metrics"].items() if k.startswith(("roofline_", "bound_"))}


def test_stored_diagnosis_follows_a_ceiling_change_and_the_verdict_is_rejudged(ws: Any) -> None:
    _set_cpu_ceilings(ws, fp32=1.0, bw=1000.0)
    rid = _launch_probe(ws)
    before = _stored(ws, rid)
    assert before["roofline_peak_tflops"] == 1.0 and before["roofline_mem_bw_gbps"] == 1000.0  # ceilings kept
    ws.cli("hypothesis", "add", "The tiny GEMM is far from the compute ceiling", "--id", "tiny")
    ws.cli("prediction", "add", "tiny", "--expect", "a.roofline_compute_frac < 0.5", "--a", "op=gemm")
    v1 = ws.j("verdict", "tiny")
    assert v1["results"][0]["auto_status"] == "confirmed"
    # the datasheet figure is corrected by hand: a ceiling 10,000× lower makes the same run compute-bound
    _set_cpu_ceilings(ws, fp32=0.0001, bw=1000.0)
    pending = ws.j("run", "show", str(rid))["telemetry"]["diagnosis"]
    assert pending["stored_differs"] is True  # `run show` says the stored one is stale until it is redone
    r = ws.cli("--json", "verdict", "tiny")
    assert "re-diagnosed 1 run " in r.err and "peak_tflops 1 → 0.0001" in r.err
    v2 = json.loads(r.out)["results"][0]
    assert v2["auto_status"] == "falsified"
    after = _stored(ws, rid)
    assert after["roofline_peak_tflops"] == 0.0001 and after["bound_compute"] == 1.0
    assert after["roofline_compute_frac"] == pytest.approx(before["roofline_compute_frac"] * 10000, rel=1e-6)
    # stored and shown agree: `run show` diagnoses with the same ceiling it stored
    shown = ws.j("run", "show", str(rid))["telemetry"]["diagnosis"]
    assert shown["bound"] == "compute" and shown["numbers"]["peak_tflops"] == 0.0001
    assert "stored_differs" not in shown
    doc = yaml.safe_load((ws.root / "hypotheses" / "tiny.yaml").read_text())
    assert "re-diagnosed" in doc["verdicts"][-1]["cause"]
    # nothing changed since: a second verdict neither re-diagnoses nor commits
    n = ws.commits()
    r = ws.cli("verdict", "tiny")
    assert "re-diagnosed" not in r.err and ws.commits() == n


def test_calibrate_rediagnoses_stored_runs_and_rejudges(ws: Any) -> None:
    # a datasheet ceiling a million times too low (1 MFLOP/s): the GEMM looks thousands of times past its
    # peak, and the prediction holds; against the machine's own measured peak it is near 1, and even with
    # the calibration measured under heavier load than the probe ran (CI) nowhere near 100
    _set_cpu_ceilings(ws, fp32=0.000001, bw=1000.0)
    rid = _launch_probe(ws)
    assert _stored(ws, rid)["roofline_peak_tflops"] == 0.000001 and _stored(ws, rid)["roofline_compute_frac"] > 100
    ws.cli("hypothesis", "add", "near the compute ceiling", "--id", "cb")
    ws.cli("prediction", "add", "cb", "--expect", "a.roofline_compute_frac > 100", "--a", "op=gemm")
    assert ws.j("verdict", "cb")["results"][0]["auto_status"] == "confirmed"
    # the measured ceiling replaces it: the stored diagnosis is redone and the verdict re-judged with it
    d = ws.j("calibrate", "--quick", "--device", "cpu", "--max-spread", "100", env=BLAS1)
    meas = d["measured"]["peak_tflops"]["fp32"]
    assert [c["run"] for c in d["rediagnosed"]] == [rid]
    after = _stored(ws, rid)
    assert after["roofline_peak_tflops"] == pytest.approx(meas)  # measured beats datasheet
    assert after["roofline_compute_frac"] < 100, after
    assert d["rejudged"] == [{"hypothesis": "cb", "status": "falsified"}], d["rejudged"]


def test_reason_names_the_missing_ceilings_not_the_work_counts(ws: Any) -> None:
    rid = ws.j("run", "record", "--label", "op=gemm", "--metric", "flops=2e9", "--metric", "bytes=1e6",
               "--metric", "time_s=0.01")["id"]
    d = ws.j("run", "show", str(rid))["telemetry"]["diagnosis"]
    assert "no work counts" not in d["reason"]
    assert "work counts give 0.2 TFLOP/s, 0.1 GB/s" in d["reason"] and "optlog calibrate" in d["reason"]


def test_calibrate_reports_spread_threads_and_load_and_keeps_datasheet_keys(ws: Any) -> None:
    cfg = ws.root / "optlog.yaml"
    d = ws.j("calibrate", "--quick", "--device", "cpu", "--max-spread", "100", env=BLAS1)
    m = d["measured"]
    for key in ("peak_tflops.fp32", "peak_tflops.fp64", "mem_bw_gbps"):
        t = m["spread"][key]
        assert t["n"] == 3 and t["min"] <= t["median"] <= t["max"] and len(t["values"]) == 3
    assert m["host"]["threads"] == 1 and m["host"]["cpus"] >= 1 and "load_1m_before" in m["host"]
    cpu = yaml.safe_load(cfg.read_text())["hardware"]["gpus"]["cpu"]
    assert "peak_tflops" not in cpu or not cpu["peak_tflops"]      # no measurement in the datasheet keys
    assert "mem_bw_gbps" not in cpu
    assert cpu["measured"]["host"]["threads"] == 1 and cpu["measured"]["spread"]["mem_bw_gbps"]["n"] == 3
    # the plain ceiling names still resolve (from the measurement) for predictions
    ws.cli("hypothesis", "add", "h", "--id", "h")
    ws.cli("prediction", "add", "h", "--expect", "a.tflops < peak_tflops_fp32", "--a", "op=gemm")


def test_calibrate_refuses_an_unsteady_figure_and_keeps_the_previous_one(ws: Any) -> None:
    cfg = ws.root / "optlog.yaml"
    first = ws.j("calibrate", "--quick", "--device", "cpu", "--max-spread", "100", env=BLAS1)["measured"]
    kept = yaml.safe_load(cfg.read_text())["hardware"]["gpus"]["cpu"]["measured"]
    r = ws.cli("--json", "calibrate", "--quick", "--device", "cpu", "--max-spread", "1e-9", env=BLAS1, check=1)
    res = json.loads(r.out)
    assert set(res["refused"]) == {"peak_tflops.fp32", "peak_tflops.fp64", "mem_bw_gbps"}
    assert all("best trials disagree" in why and "busy throughout" in why for why in res["refused"].values())
    now = yaml.safe_load(cfg.read_text())["hardware"]["gpus"]["cpu"]["measured"]
    assert now["peak_tflops"] == kept["peak_tflops"] and now["mem_bw_gbps"] == kept["mem_bw_gbps"]
    assert set(now["refused"]) == set(res["refused"])
    assert first["peak_tflops"]["fp32"] > 0
    bad = ws.cli("--json", "calibrate", "--quick", "--device", "cpu", "--max-spread", "0", check=2)
    assert json.loads(bad.out)["error"]["field"] == "--max-spread"
