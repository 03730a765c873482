"""The NVML sampler's logic against the fake NVML (CI has no GPU; the real path ran on an H200:
docs/gpu-proof/)."""

from __future__ import annotations

import copy

import pytest

from optlog.telemetry.fakenvml import FakeNvml
from optlog.telemetry.nvml import NvmlSampler, NvmlUnavailable, select_devices
from tests._telemetry import TWO_GPUS


def _fake(spec: dict | None = None) -> FakeNvml:
    f = FakeNvml(copy.deepcopy(spec or TWO_GPUS))
    f.now = 1000.0
    return f


def _sampler(f: FakeNvml, **kw) -> tuple[NvmlSampler, list[str]]:
    notes: list[str] = []
    kw.setdefault("env", {})
    s = NvmlSampler(f, notice=notes.append, clock=lambda: f.now, **kw)
    return s, notes


# ------------------------------------------------------------------ device mapping


def test_cuda_visible_devices_indices_keep_cuda_order_and_map_by_uuid() -> None:
    f = _fake()
    devs = select_devices(f, {"CUDA_VISIBLE_DEVICES": "1,0", "CUDA_DEVICE_ORDER": "PCI_BUS_ID"})
    assert [d.uuid for d in devs] == ["GPU-bbbbbbbb-2222", "GPU-aaaaaaaa-1111"]
    assert [d.label for d in devs] == ["cuda:0", "cuda:1"]


def test_cuda_visible_devices_uuid_prefix_and_invalid_entry_stops_like_cuda() -> None:
    f = _fake()
    notes: list[str] = []
    devs = select_devices(f, {"CUDA_VISIBLE_DEVICES": "GPU-bbbb,GPU-nope,0"}, notice=notes.append)
    assert [d.index for d in devs] == [1]  # CUDA ignores the bad entry and everything after it
    assert len(notes) == 1 and "GPU-nope" in notes[0]


def test_fastest_first_order_with_mixed_models_is_flagged() -> None:
    spec = copy.deepcopy(TWO_GPUS)
    spec["gpus"][1]["name"] = "NVIDIA L4"
    notes: list[str] = []
    select_devices(_fake(spec), {"CUDA_VISIBLE_DEVICES": "0"}, notice=notes.append)
    assert any("CUDA_DEVICE_ORDER" in n for n in notes)
    notes.clear()
    select_devices(_fake(spec), {"CUDA_VISIBLE_DEVICES": "0", "CUDA_DEVICE_ORDER": "PCI_BUS_ID"}, notice=notes.append)
    assert notes == []


def test_mig_devices_by_uuid_and_legacy_form() -> None:
    spec = copy.deepcopy(TWO_GPUS)
    spec["gpus"][0]["mig"] = [{"uuid": "MIG-1111-aaaa", "gi": 1, "mem_used_gib": 3}, {"uuid": "MIG-2222-bbbb", "gi": 2}]
    f = _fake(spec)
    d = select_devices(f, {"CUDA_VISIBLE_DEVICES": "MIG-2222-bbbb"})
    assert [(x.uuid, x.mig, x.gi_id, x.index) for x in d] == [("MIG-2222-bbbb", True, 2, 0)]
    d = select_devices(f, {"CUDA_VISIBLE_DEVICES": "MIG-GPU-aaaaaaaa-1111/1/0"})
    assert [x.uuid for x in d] == ["MIG-1111-aaaa"]
    # sampling a MIG device: memory is the instance's, power the whole GPU's (said once)
    s, notes = _sampler(f, env={"CUDA_VISIBLE_DEVICES": "MIG-1111-aaaa"})
    s.open()
    f.now += 1.0
    (sm,) = s.sample()
    assert sm["uuid"] == "MIG-1111-aaaa" and sm["mem_used_gib"] == pytest.approx(3.0)
    assert sm["gpu_power_w"] == pytest.approx(600.0) and "gpu_util" not in sm  # util is not offered for MIG
    assert any("MIG device" in n for n in notes)


def test_slurm_gpus_map_by_minor_number_and_explicit_list_wins() -> None:
    spec = copy.deepcopy(TWO_GPUS)
    spec["gpus"][0]["minor"], spec["gpus"][1]["minor"] = 5, 4
    f = _fake(spec)
    assert [d.index for d in select_devices(f, {"SLURM_JOB_GPUS": "4"})] == [1]
    assert [d.index for d in select_devices(f, {"SLURM_STEP_GPUS": "5,4", "SLURM_JOB_GPUS": "4"})] == [0, 1]
    assert [d.index for d in select_devices(f, {"CUDA_VISIBLE_DEVICES": "0"}, gpus="GPU-bbbbbbbb-2222")] == [1]
    assert [d.index for d in select_devices(f, {})] == [0, 1]


# ------------------------------------------------------------------ sampling


def test_unsupported_fields_are_absent_with_one_notice_each_and_gpm_is_per_device() -> None:
    f = _fake()
    s, notes = _sampler(f, interval_s=0.5, gpm_interval_s=0.5)
    s.open()
    rows = []
    for _ in range(4):
        f.now += 0.5
        rows.append({r["gpu"]: r for r in s.sample()})
    a, b = rows[-1][0], rows[-1][1]
    assert a["tensor_active"] == 5 and a["dram_bw_util"] == 72 and a["gpu_power_w"] == 600
    assert "tensor_active" not in b and "sm_occupancy" not in b  # device 1 has no GPM
    assert b["gpu_power_w"] == pytest.approx(100.0)  # fell back to the 1-s average, said once
    gpm_notes = [n for n in notes if "GPM" in n]
    inst_notes = [n for n in notes if "instantaneous power" in n]
    assert len(gpm_notes) == 1 and "GPU-bbbb" in gpm_notes[0]
    assert len(inst_notes) == 1 and "1-s average" in inst_notes[0]
    assert f.calls.get("nvmlDeviceGetPcieThroughput", 0) == 0  # never the blocking call
    s.close()
    assert f.initialised == 0


def test_gpm_never_reads_closer_than_100ms_apart() -> None:
    f = _fake({"gpus": [{"tensor": 40, "dram": 30}]})
    # the fake, like the real GPM, reads zeros for samples < 100 ms apart
    a, b = f.nvmlGpmSampleAlloc(), f.nvmlGpmSampleAlloc()
    h = f.nvmlDeviceGetHandleByIndex(0)
    f.nvmlGpmSampleGet(h, a)
    f.now += 0.05
    f.nvmlGpmSampleGet(h, b)
    mg = f.c_nvmlGpmMetricsGet_t()
    mg.numMetrics, mg.sample1, mg.sample2 = 1, a, b
    mg.metrics[0].metricId = 5
    assert f.nvmlGpmMetricsGet(mg).metrics[0].value == 0.0
    # the sampler at 20 Hz asks GPM only when its window is >= 100 ms, so it never records those zeros
    s, _ = _sampler(f, interval_s=0.05, gpm_interval_s=0.05)
    s.open()
    got = []
    for _ in range(10):
        f.now += 0.05
        got.append(s.sample()[0].get("tensor_active"))
    vals = [g for g in got if g is not None]
    assert vals and all(v == 40 for v in vals)
    assert 4 <= len(vals) <= 5


def test_gpm_busy_with_a_profiler_is_not_available_not_a_crash() -> None:
    f = _fake({"gpus": [{"tensor": 40, "gpm_in_use": True}]})
    s, notes = _sampler(f)
    s.open()
    f.now += 3
    r = s.sample()[0]
    assert "tensor_active" not in r and "gpu_power_w" in r
    assert len([n for n in notes if "in use" in n]) == 1


def test_no_driver_raises_nvml_unavailable() -> None:
    f = _fake({"gpus": [{}], "no_driver": True})
    s, _ = _sampler(f)
    with pytest.raises(NvmlUnavailable, match="driver"):
        s.open()


def test_energy_counter_deltas_and_nvlink_rates() -> None:
    f = _fake()
    s, _ = _sampler(f, interval_s=0.1, energy_every_s=1.0)
    s.open()
    e0 = s.read_energy()
    for _ in range(20):
        f.now += 0.1
        rows = s.sample()
    e1 = s.read_energy()
    a = {r["gpu"]: r for r in rows}[0]
    assert e1["GPU-aaaaaaaa-1111"] - e0["GPU-aaaaaaaa-1111"] == pytest.approx(600 * 2.0, rel=0.01)
    assert a["nvlink_gbps"] == pytest.approx(100.0, rel=0.01)  # GPM totals, both directions
