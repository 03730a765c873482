"""Load as a number (issue 28 item 6), measured on real processes: a measured child that spins
alone on one CPU gets (nearly) all the CPU it asks for; the same child with real CPU hogs pinned to
its CPU gets a clearly smaller share, and the `loaded` flag follows the number. Other processes on
the run's GPUs are counted through the fake NVML. The group comparison the verdict engine calls is
tested on plain numbers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from types import SimpleNamespace

import pytest

from optlog.core.loadshare import group_difference
from optlog.runs import hostload
from optlog.runs.treeshare import TreeLoad

SPIN = "import time\nt = time.monotonic() + {s}\nwhile time.monotonic() < t: pass\n"


def _pin(cpu: int) -> None:
    os.sched_setaffinity(0, {cpu})


def _spin(seconds: float, cpu: int) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", SPIN.format(s=seconds)], preexec_fn=lambda: _pin(cpu))


def _measure(cpu: int, hogs: int) -> dict[str, float]:
    burners = [subprocess.Popen([sys.executable, "-c", "while True: pass"], preexec_fn=lambda: _pin(cpu))
               for _ in range(hogs)]
    try:
        child = _spin(1.2, cpu)
        tl = TreeLoad(lambda: [child.pid], gpus=False, interval_s=0.2).start()
        child.wait(30)
        return tl.stop()
    finally:
        for b in burners:
            b.kill()
            b.wait()


@pytest.mark.skipif(not os.path.exists("/proc/self/schedstat"), reason="needs Linux schedstat")
def test_a_real_hog_on_the_child_cpu_shows_as_a_smaller_share_and_flags_the_run():
    cpu = sorted(os.sched_getaffinity(0))[-1]
    quiet = _measure(cpu, hogs=0)
    hogged = _measure(cpu, hogs=3)  # three spinning processes on the child's one CPU: about a quarter for it
    for m in (quiet, hogged):
        assert m["cpu_threads"] == 1  # pinned to one CPU: that is what it was given
        assert 0 < m["cpu_share"] <= 1 and 0 < m["cpu_util"] <= 1
        # a child that spins all the time: the share it got and its use of its one CPU agree
        assert abs(m["cpu_util"] - m["cpu_share"]) < 0.25, m
    # three hogs on its CPU: at most about a quarter for it, whatever else runs there
    assert hogged["cpu_share"] < 0.35, hogged
    # and less than it got without them: with k other jobs on that CPU at most (1 + k)/(4 + k) of it
    # (plain fair scheduling), about a quarter where the kernel shares a CPU between sessions first
    # (autogroup: a shared CI machine can leave even the quiet child a quarter of its CPU)
    assert hogged["cpu_share"] < 0.9 * quiet["cpu_share"], (quiet, hogged)
    settings = SimpleNamespace(min_cpu_share=0.9, busy_cpus_fraction=None, gpu_processes=True)
    why = hostload.loaded({}, settings, hogged)
    assert why and "of the CPU time they asked for" in why[0]
    # the machine's busy CPUs alone no longer flag a run (off by default), its own share does
    busy = {"load": {"busy_cpus": 2.0, "cpus": 2}}
    assert hostload.loaded(busy, settings, {"cpu_share": 0.99}) == []


def test_other_processes_on_the_run_gpus_are_counted_and_its_own_are_not(monkeypatch):
    child = _spin(0.6, sorted(os.sched_getaffinity(0))[0])
    try:
        fake = {"gpus": [{"uuid": "GPU-aaaa", "processes": [{"pid": child.pid, "used_mib": 4096},
                                                            {"pid": 999999, "used_mib": 512}]},
                         {"uuid": "GPU-bbbb", "processes": [{"pid": 999998, "used_mib": 64}]}]}
        monkeypatch.setenv("OPTLOG_FAKE_NVML", json.dumps(fake))
        tl = TreeLoad(lambda: [child.pid], gpu_env={"CUDA_VISIBLE_DEVICES": "0"}, interval_s=0.2).start()
        time.sleep(0.3)
        m = tl.stop()
    finally:
        child.wait(30)
    # GPU 1 is not the run's; the child's own use of GPU 0 is not "other"
    assert m["gpu_other_procs"] == 1 and m["gpu_other_mem_mib"] == 512 and m["gpu_other_frac"] == 1.0
    why = hostload.loaded({}, SimpleNamespace(min_cpu_share=None, busy_cpus_fraction=None, gpu_processes=True), m)
    assert why and "other process(es) on its GPUs" in why[0]


def test_no_gpu_no_gpu_numbers(monkeypatch):
    monkeypatch.setenv("OPTLOG_FAKE_NVML", json.dumps({"no_driver": True, "gpus": []}))
    tl = TreeLoad(lambda: [os.getppid()], interval_s=0.2).start()
    m = tl.stop()
    assert not any(k.startswith("gpu_") for k in m) and tl.gpu_error


def test_group_difference_says_clearly_different_shares_only():
    quiet = [{"cpu_share": x} for x in (0.97, 0.99, 0.95)]
    starved = [{"cpu_share": x} for x in (0.52, 0.61, 0.48)]
    said = group_difference(quiet, starved)
    assert said == "CPU share differs: a got 97%, b 54% of the CPU time they asked for"
    # overlapping groups, or a small gap, say nothing; nor do runs without the number
    assert group_difference(quiet, [{"cpu_share": 0.96}, {"cpu_share": 0.5}]) is None
    assert group_difference(quiet, [{"cpu_share": 0.92}]) is None
    assert group_difference(quiet, [{}]) is None
    gpu_a = [{"gpu_other_frac": 0.5}, {"gpu_other_frac": 1.0}]
    gpu_b = [{"gpu_other_frac": 0.0}, {"gpu_other_frac": 0.0}]
    assert group_difference(gpu_a, gpu_b) == "other processes used a's GPUs, not b's"
    assert group_difference(gpu_b, gpu_a, ("tp8", "tp4pp2")) == "other processes used tp4pp2's GPUs, not tp8's"
