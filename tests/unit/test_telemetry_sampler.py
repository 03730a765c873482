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
    (sm,) = s.sample(flush=True)
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
        got.append(s.sample(flush=True)[0].get("tensor_active"))
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
        rows = s.sample(flush=True)
    e1 = s.read_energy()
    a = {r["gpu"]: r for r in rows}[0]
    assert e1["GPU-aaaaaaaa-1111"] - e0["GPU-aaaaaaaa-1111"] == pytest.approx(600 * 2.0, rel=0.01)
    assert a["nvlink_gbps"] == pytest.approx(100.0, rel=0.01)  # GPM totals, both directions


# ------------------------------------------------------------------ power from the driver's buffer


def test_power_comes_from_the_driver_buffer_as_window_means_drained_once_a_second() -> None:
    f = _fake({"gpus": [{"power_w": 200, "limit_w": 700}]})
    s, notes = _sampler(f, interval_s=0.1, slow_every_s=1.0, power_drain_s=1.0)
    s.open()
    f.calls.clear()
    got: list[dict] = []
    for i in range(25):
        f.gpus[0]["power_w"] = 200 if i < 12 else 500
        f.now += 0.1
        got.extend(s.sample())
    assert 10 <= len(got) < 25  # ticks wait for their power; the last ones are still held
    got.extend(s.flush())
    assert len(got) == 25 and [r["t"] for r in got] == sorted(r["t"] for r in got)
    powers = [r["gpu_power_w"] for r in got]
    assert powers[:12] == [200.0] * 12 and powers[12:] == [500.0] * 13
    assert got[0]["gpu_power_frac"] == pytest.approx(200 / 700)
    # the point of the buffer: one drain a second instead of a power read per tick
    assert f.calls["nvmlDeviceGetSamples"] == 3
    assert f.calls.get("nvmlDeviceGetFieldValues", 0) <= 3  # HBM temperature on slow ticks only
    assert notes == []


def test_a_tick_between_driver_samples_takes_the_nearest_one() -> None:
    f = _fake({"gpus": [{"power_w": 300}]})
    s, _ = _sampler(f, interval_s=0.01, power_drain_s=1.0)  # ticks closer than the driver's 20 ms
    s.open()
    for _ in range(5):
        f.now += 0.01
        s.sample()
    rows = s.flush()
    assert len(rows) == 5 and all(r["gpu_power_w"] == 300.0 for r in rows)


def test_a_failing_buffer_falls_back_to_polling_with_one_notice() -> None:
    f = _fake({"gpus": [{"power_w": 250}]})
    s, notes = _sampler(f, interval_s=0.1, power_drain_s=0.5)
    s.open()
    assert s.devices[0].power_buf
    f.gpus[0]["unsupported"] = ["power_samples"]
    rows: list[dict] = []
    for _ in range(12):
        f.now += 0.1
        rows.extend(s.sample())
    rows.extend(s.flush())
    assert len(rows) == 12
    assert not s.devices[0].power_buf
    assert len([n for n in notes if "power sample buffer" in n]) == 1
    assert all(r["gpu_power_w"] == 250.0 for r in rows[6:])  # polled from the instantaneous field


def test_telemetry_sample_loop_emits_every_tick_by_its_end() -> None:
    import threading

    f = _fake({"gpus": [{"power_w": 420}]})
    s, _ = _sampler(f, interval_s=0.001, power_drain_s=1.0)
    s.clock = lambda: f.now  # deterministic ticks
    s.open()
    out: list[dict] = []

    def on(batch: list[dict]) -> None:
        f.now += 0.001
        out.extend(batch)

    s.loop(on, threading.Event(), count=7)
    assert len(out) == 7


def test_a_points_end_takes_a_gpm_reading_even_inside_a_long_window() -> None:
    f = _fake({"gpus": [{"tensor": 33}]})
    s, _ = _sampler(f, interval_s=0.1, gpm_interval_s=10.0)
    s.open()
    f.now += 0.05
    assert "tensor_active" not in s.sample(flush=True)[0]  # < 100 ms: GPM would read zeros, so none
    f.now += 0.5
    (r,) = s.sample(flush=True)
    assert r["tensor_active"] == 33
