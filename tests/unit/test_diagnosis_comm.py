"""Communication-bound (issue 43, multi-GPU): the link counters of a multi-GPU run against the link's
calibrated bandwidth, on metrics of the shape a launch stores (`telemetry.summary`: per-GPU means
pooled over the run's GPUs, `<field>_steady` over the measured phase, `telemetry_gpus`)."""

from __future__ import annotations

from optlog.core import bounds as B
from optlog.core.diagnosis import diagnose

# calibrate on an 8-GPU NVSwitch host: a peer-to-peer copy per direction, and NCCL's all-reduce
CAL = {"measured_link_gbps": 390.0, "measured_allreduce_busbw_gbps": 360.0, "measured_mem_bw_gbps": 3000.0,
       "mem_bw_gbps": 3000.0, "measured_peak_tflops_bf16": 700.0, "peak_tflops_bf16": 700.0, "peak_tflops": 700.0}


def _links(gpus: float, tx: float, rx: float, **gpm: float) -> dict[str, float]:
    """A point's telemetry: NVLink per GPU over the measured phase (and the whole point), GPM counters."""
    m = {"telemetry_gpus": gpus, "telemetry_window_s": 12.0, "telemetry_steady_s": 10.0, "telemetry_steady_windows": 0.0,
         "nvlink_tx_gbps": tx * 0.9, "nvlink_rx_gbps": rx * 0.9, "nvlink_tx_gbps_steady": tx, "nvlink_rx_gbps_steady": rx,
         "pcie_tx_gbps": 0.5, "pcie_rx_gbps": 0.5, "pcie_tx_gbps_steady": 0.5, "pcie_rx_gbps_steady": 0.5}
    for k, v in gpm.items():
        m[k] = v
        m[k + "_steady"] = v
    return m


def test_an_allreduce_loop_with_busy_links_and_waiting_sms_is_communication_bound() -> None:
    # TP8's all-reduces: NVLink at 370 of 390 GB/s per direction, the SMs mostly waiting (NCCL's few blocks)
    d = diagnose(_links(8, 371.0, 369.0, sm_active=21.0, tensor_active=0.5, dram_bw_util=6.0), CAL)
    assert d.bound == "communication", d.text()
    assert 0.9 < (d.efficiency or 0) < 1.0
    assert d.headline() == "communication-bound at 95% of the link bandwidth"
    assert "NVLink" in d.reason and "sm_active 21%" in d.reason, d.reason
    assert "390 GB/s" in d.scale and "peer-to-peer copy" in d.scale and "all-reduce" in d.scale, d.scale
    assert "8 GPUs" in d.scale, d.scale
    assert d.change and "SMs" in d.change and d.lever.endswith(B.BY_NAME["communication"].lever)
    m = d.metrics()
    assert m["bound_communication"] == 1.0 and m["bound_latency"] == 0.0 and m["bound_compute"] == 0.0
    assert m["roofline_link_frac"] == d.efficiency
    assert "communication-bound" in d.text() and "would change its mind" in d.text()


def test_idle_links_with_busy_tensor_cores_are_compute_bound_and_the_links_are_among_the_others() -> None:
    # the GEMM-only run beside it on the same GPUs: its own work counts, the tensor cores busy
    m = {**_links(2, 4.0, 4.0, sm_active=97.0, tensor_active=70.0, dram_bw_util=20.0),
         "flops": 2 * 8192.0 ** 3 * 50, "bytes": 3 * 8192.0 ** 2 * 2 * 50, "time_s": 0.0785 * 50 / 50}
    m["time_s"] = m["flops"] / 560e12  # 560 TFLOP/s of a 700 peak
    d = diagnose(m, CAL)
    assert d.bound == "compute", d.text()
    assert "NVLink 1%" in d.reason, d.reason  # the link share is named among the others


def test_busy_links_while_the_sms_work_are_not_communication_bound() -> None:
    # compute overlapped with communication: links 80 %, but the SMs busy 95 % of the time
    m = {**_links(4, 312.0, 300.0, sm_active=95.0, tensor_active=60.0, dram_bw_util=20.0),
         "flops": 1e15, "bytes": 1e12}
    m["time_s"] = m["flops"] / 420e12
    d = diagnose(m, CAL)
    assert d.bound == "compute", d.text()
    assert "NVLink 80%" in d.reason and "communication-bound" in d.change, d.change


def test_a_single_gpu_run_says_nothing_about_links() -> None:
    d = diagnose(_links(1, 371.0, 369.0, sm_active=21.0, tensor_active=0.5, dram_bw_util=6.0), CAL)
    assert d.bound != "communication"
    assert "link" not in d.text().lower().replace("the kernels", ""), d.text()
    assert not any(k.startswith(("nvlink", "pcie", "link")) for k in d.counters), d.counters


def test_without_a_link_ceiling_the_links_are_shown_not_compared() -> None:
    ceil = {k: v for k, v in CAL.items() if "link" not in k and "allreduce" not in k}
    d = diagnose(_links(4, 371.0, 369.0, sm_active=21.0, tensor_active=0.5, dram_bw_util=6.0), ceil)
    assert d.bound != "communication", d.text()
    assert "no link ceiling" in d.scale and "interconnect_gbps" in d.scale and "optlog calibrate" in d.scale, d.scale
    assert "link_util" not in d.counters and "roofline_link_frac" not in d.metrics()


def test_pcie_where_no_nvlink_against_the_datasheet_interconnect() -> None:
    m = _links(2, 0.0, 0.0, sm_active=12.0, tensor_active=0.0, dram_bw_util=3.0)
    for k in [k for k in m if k.startswith("nvlink")]:
        del m[k]
    m.update(pcie_tx_gbps_steady=46.0, pcie_rx_gbps_steady=44.0)
    ceil = {"interconnect_gbps": 54.0, "mem_bw_gbps": 3000.0, "peak_tflops": 700.0}
    d = diagnose(m, ceil)
    assert d.bound == "communication", d.text()
    assert d.headline() == "communication-bound at 85% of the link bandwidth"
    assert "PCIe" in d.reason and "datasheet interconnect_gbps" in d.scale, (d.reason, d.scale)
    assert "the host's transfers too" in d.reason  # PCIe carries host ↔ GPU copies as well as peer traffic


def test_a_trickle_on_the_links_with_idle_sms_is_not_called_communication() -> None:
    # the links barely used and the SMs idle: the time goes elsewhere (host, launches), not to the links
    d = diagnose(_links(2, 8.0, 8.0, sm_active=12.0, tensor_active=0.0, dram_bw_util=2.0), CAL)
    assert d.bound != "communication", d.text()


def test_a_bench_with_work_counts_waiting_on_the_links_is_communication_bound() -> None:
    # a tensor-parallel step's GEMMs at 10 % of the peak, the links at 85 %, the SMs busy 30 %
    m = {**_links(4, 330.0, 320.0, sm_active=30.0, tensor_active=8.0, dram_bw_util=10.0), "flops": 7e13, "bytes": 5e10}
    m["time_s"] = 1.0
    d = diagnose(m, CAL)
    assert d.bound == "communication", d.text()
    assert "the others:" in d.reason and "tensor cores" in d.reason, d.reason
    assert d.metrics()["roofline_efficiency"] == d.efficiency


def test_calibrate_keeps_the_fastest_peer_copy_per_direction_as_the_link_ceiling() -> None:
    import yaml

    from optlog.config import config_model
    from optlog.service.calibrate import write_measured
    from optlog.telemetry.calibrate import link_ceiling

    p2p = [[2900.0, 371.5, 120.0], [368.0, 2890.0, 119.0], [121.0, 118.0, 2910.0]]
    got = link_ceiling(p2p)
    assert got["link_gbps"] == 371.5 and "GPU 0 → GPU 1" in got["link_method"] and "6 directed pairs" in got["link_method"]
    assert link_ceiling([[2900.0]]) == {}  # one GPU: no link
    m = {"kind": "h100", "device": "NVIDIA H100", "count": 3, "backend": "torch", "peak_tflops": {"bf16": 700.0},
         "mem_bw_gbps": 3000.0, "p2p_gbps": p2p, "allreduce_busbw_gbps": 240.0, **got}
    text = write_measured("hardware:\n  gpus:\n    h100:\n      interconnect_gbps: 450   # NVLink, per direction\n",
                          m, "2026-12-06T06:00:00Z")
    assert "# NVLink, per direction" in text
    ceil = config_model({}).model_validate(yaml.safe_load(text)).ceilings()
    assert ceil["measured_link_gbps"] == 371.5 and ceil["measured_allreduce_busbw_gbps"] == 240.0
    assert ceil["interconnect_gbps"] == 450.0
    # the calibrated figure is the ceiling the diagnosis uses, the datasheet only where none was measured
    d = diagnose(_links(3, 330.0, 330.0, sm_active=20.0, tensor_active=0.0, dram_bw_util=4.0), ceil)
    assert "371.5 GB/s" in d.scale or "372 GB/s" in d.scale, d.scale
    del ceil["measured_link_gbps"]
    d = diagnose(_links(3, 330.0, 330.0, sm_active=20.0, tensor_active=0.0, dram_bw_util=4.0), ceil)
    assert "450 GB/s" in d.scale and "datasheet" in d.scale and d.bound == "communication", d.scale


def test_the_busiest_gpus_links_decide_where_a_pipeline_stage_boundary_carries_the_traffic() -> None:
    """TP4+PP2's shape: the stage boundary's GPUs move the activations, the others little. The summary
    keeps each GPU's mean link rate (the busiest as `*_gpu_max`) and the diagnosis holds that against the
    ceiling, not the mean over all GPUs."""
    import numpy as np

    from optlog.telemetry.store import TIME_FIELD
    from optlog.telemetry.summary import steady, summarize

    t = np.array([100.0 + 0.5 * i for i in range(21)])
    cols = {f"GPU-{i}": {TIME_FIELD: t, "nvlink_tx_gbps": np.full(21, 360.0 if i in (3, 4) else 20.0),
                         "nvlink_rx_gbps": np.full(21, 350.0 if i in (3, 4) else 20.0), "sm_active": np.full(21, 25.0)}
            for i in range(8)}
    s = steady(cols, [(102.0, 109.0)], 100.0, decode=False)
    assert s["nvlink_tx_gbps_steady"] == 105.0 and s["nvlink_tx_gbps_steady_gpu_max"] == 360.0, s
    assert "sm_active_steady_gpu_max" not in s  # only the links
    w = summarize(cols)
    assert w["nvlink_tx_gbps_gpu_max"] == 360.0 and w["nvlink_rx_gbps_gpu_max"] == 350.0
    one = steady({"GPU-0": cols["GPU-0"]}, [(102.0, 109.0)], 100.0, decode=False)
    assert "nvlink_tx_gbps_steady_gpu_max" not in one  # one GPU: no busiest among several
    m = {**_links(8, 105.0, 102.5, sm_active=25.0, tensor_active=3.0, dram_bw_util=5.0),
         "nvlink_tx_gbps_steady_gpu_max": 360.0, "nvlink_rx_gbps_steady_gpu_max": 350.0}
    d = diagnose(m, CAL)
    assert d.bound == "communication" and abs((d.efficiency or 0) - 360 / 390) < 1e-9, d.text()
    assert "busiest GPU" in d.scale, d.scale
    # the mean over all eight GPUs would say 27 % of the link: the boundary's saturated links hidden
    del m["nvlink_tx_gbps_steady_gpu_max"], m["nvlink_rx_gbps_steady_gpu_max"]
    assert abs((diagnose(m, CAL).efficiency or 0) - 105 / 390) < 1e-9


def test_the_seeds_question_tp4_pp2_against_tp8_meets_the_hypotheses_in_the_report() -> None:
    """The seed: "TP4+PP2 is ~2× slower — communication-bound or compute-bound?". Its runs' calls meet
    the hypotheses that name a bound (core.bounds words) in the report's bounds section."""
    from types import SimpleNamespace

    from optlog.core import report as C

    def run(rid: int, config: str, link: float, sm: float, tensor: float, tflops: float, hyp: str) -> dict:
        m = {**_links(8, link, link, sm_active=sm, tensor_active=tensor, dram_bw_util=15.0),
             "flops": tflops * 1e12 * 20.0, "bytes": 5e11, "time_s": 20.0}
        return {"id": rid, "name": "seed", "labels": {"config": config}, "metrics": m, "status": "succeeded",
                "invalidated": False, "hypothesis": hyp}

    runs = [run(1, "tp4pp2", 45.0, 93.0, 30.0, 210.0, "pp-comm"),   # GEMMs at 30 % of the peak, links idle
            run(2, "tp8", 340.0, 28.0, 9.0, 60.0, "tp8-comm")]      # all-reduces, SMs waiting
    rows = C.diagnoses(runs, CAL)
    # the report's telemetry table reads the same link share as the diagnosis
    names, trows = C.telemetry_groups(runs, None, {"measured_link_gbps": 390.0})
    assert "link_util" in names and [round(t["link_util"]) for _lab, t, _n in trows] == [12, 87], trows
    assert "link_util" not in C.telemetry_groups(runs)[0]  # no ceiling: no share
    calls = {r["labels"]["config"]: r["diagnosis"] for r in rows}
    assert calls["tp4pp2"]["bound"] == "compute" and "NVLink 12% of the link bandwidth" in calls["tp4pp2"]["reason"]
    assert calls["tp8"]["bound"] == "communication" and calls["tp8"]["headline"].startswith("communication-bound at 87%")
    docs = {"pp-comm": SimpleNamespace(title="TP4+PP2 is slower because it is communication-bound", statement="",
                                       verdicts=[]),
            "tp8-comm": SimpleNamespace(title="TP8 is comm-bound on the all-reduce", statement="", verdicts=[])}
    bv = {v["hypothesis"]: v for v in C.bound_verdicts(docs, rows)}
    assert bv["pp-comm"]["named"] == "communication" and not bv["pp-comm"]["agrees"]
    assert bv["pp-comm"]["disagrees"][0]["call"].startswith("compute-bound on the tensor cores")
    assert [a["run"] for a in bv["tp8-comm"]["agrees"]] == [2]
