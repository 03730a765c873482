"""Communication-bound through the real launch path (issue 43, multi-GPU): `optlog run launch` samples
optlog's fake NVML stand-in for several GPUs with NVLink, the point's link counters reach the
diagnosis with the calibrated link bandwidth from optlog.yaml, and the stored call and `run show` say
communication-bound where the links are busy and the SMs wait, compute where the tensor cores work."""

from __future__ import annotations

import json

import yaml

from tests._launch import spec


def _gpus(n: int, **kw: float) -> str:
    return json.dumps({"gpus": [{"uuid": f"GPU-{i:04d}-comm", "minor": i, "nvlinks": 18, "power_w": 300,
                                 "limit_w": 700, "util": 100, **kw} for i in range(n)]})


def _ceilings(ws, measured: dict) -> None:
    cfg = ws.root / "optlog.yaml"
    d = yaml.safe_load(cfg.read_text()) or {}
    d["hardware"] = {"default": "h100", "gpus": {"h100": {"count": 8, "measured": measured}}}
    cfg.write_text(yaml.safe_dump(d, sort_keys=False))


def _launch(ws, fake: str) -> dict:
    rel = spec(ws, "comm", server=False, bench={"cmd": "{{ py }} {{ tests }}/_launch_bench.py --out {{ out }} --sleep 1.0"},
               telemetry={"interval_s": 0.1, "gpm_interval_s": 0.2})
    res = ws.j("run", "launch", rel, env={"OPTLOG_FAKE_NVML": fake})
    return ws.j("run", "show", str(res["runs"][0]["id"]))


def test_busy_links_and_waiting_sms_on_four_gpus_are_communication_bound_and_idle_links_are_not(ws) -> None:
    _ceilings(ws, {"link_gbps": 390.0, "allreduce_busbw_gbps": 360.0,
                   "link_method": "peer-to-peer copy GPU 0 → GPU 1"})
    # an all-reduce loop: NVLink at 350 of 390 GB/s per direction on every GPU, the SMs mostly idle
    r = _launch(ws, _gpus(4, nvlink_gbps_per_dir=350.0, sm_active=20.0, tensor=0.0, dram=5.0))
    m, dg = r["metrics"], r["telemetry"]["diagnosis"]
    assert m["telemetry_gpus"] == 4 and 300 < m["nvlink_tx_gbps"] < 400, m
    assert 300 < m["nvlink_tx_gbps_gpu_max"] < 400 and 300 < m["nvlink_rx_gbps_gpu_max"] < 400, m  # each GPU's
    assert m["bound_communication"] == 1.0 and m["bound_latency"] == 0.0, {k: v for k, v in m.items() if "bound" in k}
    assert dg["bound"] == "communication" and dg["headline"].startswith("communication-bound at "), dg
    assert 0.8 < dg["efficiency"] < 1.0 and "390 GB/s" in dg["scale"] and "4 GPUs" in dg["scale"], dg
    assert dg["would_change_its_mind"] and "NVLink" in dg["reason"], dg
    assert "communication-bound at" in ws.cli("run", "show", str(r["id"])).out
    # the GEMM-only run beside it: the tensor cores busy, the links idle → compute, the links among the others
    r = _launch(ws, _gpus(2, nvlink_gbps_per_dir=2.0, sm_active=97.0, tensor=85.0, dram=20.0))
    m, dg = r["metrics"], r["telemetry"]["diagnosis"]
    assert m["bound_compute"] == 1.0 and m["bound_communication"] == 0.0, m
    assert dg["bound"] == "compute" and "NVLink 1% of the link bandwidth" in dg["reason"], dg

