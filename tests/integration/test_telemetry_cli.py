"""The faces and the launcher's entry point: `telemetry sample`, `calibrate`, the GEMM probe, and a
TelemetrySession bracketing points (local NVML through the fake; remote hosts through real
subprocesses standing in for ssh), with `run show` reading what it stored."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests._face import use_env
from _launch import wait_for
from tests._telemetry import PROOF, TWO_GPUS, complete, ctx_for, fake_env, run_test_server

BLAS1 = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


# ------------------------------------------------------------------ telemetry sample


def test_sample_prints_json_lines_for_the_run_gpus_only(ws) -> None:
    r = ws.cli("telemetry", "sample", "--interval", "0.05", "--count", "3", env=fake_env(TWO_GPUS))
    rows = [json.loads(l) for l in r.out.splitlines()]
    assert len(rows) == 6 and {x["gpu"] for x in rows} == {0, 1}
    assert all("gpu_power_w" in x and "t" in x for x in rows)
    assert r.err.count("instantaneous power not available") == 1  # one notice, on stderr
    r = ws.cli("telemetry", "sample", "--interval", "0.05", "--count", "2",
               env={**fake_env(TWO_GPUS), "CUDA_VISIBLE_DEVICES": "GPU-bbbbbbbb-2222"})
    rows = [json.loads(l) for l in r.out.splitlines()]
    assert [x["uuid"] for x in rows] == ["GPU-bbbbbbbb-2222"] * 2


def test_sample_without_a_driver_fails_cleanly_and_bad_input_is_exit_2(ws) -> None:
    r = ws.cli("telemetry", "sample", "--source", "nvml", "--count", "1",
               env=fake_env({"gpus": [{}], "no_driver": True}), check=1)
    assert "no GPU telemetry here" in r.err and "Traceback" not in r.err
    r = ws.cli("telemetry", "sample", "--interval", "0", "--json", check=2)
    assert json.loads(r.out)["error"]["field"] == "--interval"


def test_sample_falls_back_to_an_nvidia_smi_stream_when_nvml_is_unusable(ws, tmp_path: Path) -> None:
    lines = [l for l in (PROOF / "smi_query.txt").read_text().splitlines()[1:] if l.strip()]
    help_text = Path(__file__).resolve().parents[1] / "fixtures" / "nvidia-smi" / "nvidia-smi-help-query-gpu-580.159.txt"
    bindir = tmp_path / "bin"
    bindir.mkdir()
    smi_bin = bindir / "nvidia-smi"
    smi_bin.write_text("#!%s\nimport sys, time\nif '--help-query-gpu' in sys.argv:\n    print(%r)\n    sys.exit(0)\n"
                       "for l in %r * 50:\n    print(l, flush=True)\n    time.sleep(0.01)\n"
                       % (sys.executable, help_text.read_text() if help_text.exists() else "", lines))
    smi_bin.chmod(0o755)
    env = {**fake_env({"gpus": [{}], "no_driver": True}), "PATH": f"{bindir}:/usr/bin:/bin"}
    r = ws.cli("telemetry", "sample", "--interval", "0.2", "--count", "3", env=env)
    rows = [json.loads(l) for l in r.out.splitlines()]
    assert len(rows) == 3 and rows[0]["uuid"].startswith("GPU-") and rows[0]["gpu_power_w"] > 0
    assert "falling back to nvidia-smi" in r.err and "not available" in r.err


# ------------------------------------------------------------------ calibrate


def test_calibrate_on_cpu_writes_measured_values_and_keeps_comments_and_datasheet(ws) -> None:
    cfg = ws.root / "optlog.yaml"
    text = cfg.read_text().replace(
        "  gpus: {}", "  gpus:   # my machines\n    cpu:\n      peak_tflops:\n        fp32: 99.0   # datasheet, keep me\n")
    cfg.write_text(text)
    d = ws.j("calibrate", "--quick", "--device", "cpu", "--max-spread", "100", env=BLAS1)
    assert d["kind"] == "cpu" and d["written"] and d["measured"]["mem_bw_gbps"] > 0
    out = cfg.read_text()
    assert "# optlog workspace settings. Unknown keys are errors." in out
    assert "fp32: 99.0   # datasheet, keep me" in out and "# my machines" in out
    assert "plans render to" in out  # other comments untouched
    import yaml

    doc = yaml.safe_load(out)
    cpu = doc["hardware"]["gpus"]["cpu"]
    # the datasheet value stays and no measurement is written into the datasheet keys (issue 14.10)
    assert cpu["peak_tflops"] == {"fp32": 99.0} and "mem_bw_gbps" not in cpu
    assert cpu["measured"]["peak_tflops"]["fp32"] > 0 and cpu["measured"]["source"].startswith("measured ")
    assert doc["hardware"]["default"] == "cpu"
    ws.cli("run", "list")  # the file is still valid settings


def test_calibrate_with_a_malformed_settings_file_is_exit_2_and_writes_nothing(ws) -> None:
    cfg = ws.root / "optlog.yaml"
    cfg.write_text(cfg.read_text() + "telemetry_typo: 1\n")
    before = cfg.read_text()
    r = ws.cli("calibrate", "--quick", "--device", "cpu", "--json", check=2)
    assert json.loads(r.out)["error"]["file"] == "optlog.yaml"
    assert cfg.read_text() == before


def test_the_calibrate_tool_gives_the_cli_document_and_exit_1_when_a_figure_is_refused(ws, monkeypatch) -> None:
    """The MCP tool calls the same binding: the document has the CLI's shape (the figures are measured
    anew), a refused figure is exit 1 with the document (not an error), a bad --max-spread names the
    tool's parameter, and a dry run writes nothing."""
    from optlog.mcp.face import Face

    use_env(ws, monkeypatch)
    for k, v in BLAS1.items():
        monkeypatch.setenv(k, v)
    cli = ws.j("calibrate", "--quick", "--device", "cpu", "--max-spread", "100", "--dry-run", env=BLAS1)
    before, commits = (ws.root / "optlog.yaml").read_text(), ws.commits()
    face = Face(str(ws.root))
    try:
        doc, is_error, code = face.call("calibrate", {"quick": True, "device": "cpu", "max_spread": 100,
                                                      "dry_run": True})
        assert not is_error and code == 0, doc
        refused, is_error, code = face.call("calibrate", {"quick": True, "device": "cpu", "max_spread": 1e-9,
                                                          "dry_run": True})
        assert not is_error and code == 1 and set(refused["refused"]) >= {"mem_bw_gbps"}, refused
        bad, is_error, code = face.call("calibrate", {"quick": True, "device": "cpu", "max_spread": 0})
        assert is_error and code == 2 and bad["error"]["field"] == "max_spread", bad
    finally:
        face.close()
    assert set(doc) == set(cli) and set(doc["measured"]) == set(cli["measured"])
    assert {k: v for k, v in doc.items() if k != "measured"} == {k: v for k, v in cli.items() if k != "measured"}
    assert (ws.root / "optlog.yaml").read_text() == before
    for spread in ("inf", "nan", "1" * 400):  # no bound at all is not a bound (float("1" * 400) is inf)
        bad = ws.cli("--json", "calibrate", "--quick", "--device", "cpu", "--max-spread", spread, check=2)
        assert json.loads(bad.out)["error"]["field"] == "--max-spread"
    assert (ws.root / "optlog.yaml").read_text() == before and ws.commits() == commits


# ------------------------------------------------------------------ probe


def test_gemm_probe_on_cpu_prints_work_counts() -> None:
    p = subprocess.run([sys.executable, "-m", "optlog.probes.gemm", "--m", "32", "--k", "64", "--n", "48",
                        "--dtype", "fp32", "--device", "cpu", "--repeats", "3"], capture_output=True, text=True,
                       env={**BLAS1, "PATH": "/usr/bin:/bin"}, timeout=60)
    assert p.returncode == 0, p.stderr
    d = json.loads(p.stdout)
    assert d["op"] == "gemm" and d["device"] == "cpu" and d["dtype"] == "fp32"
    assert d["flops"] == 2 * 32 * 64 * 48 and d["bytes"] == 4 * (32 * 64 + 64 * 48 + 32 * 48)
    assert d["tflops"] == pytest.approx(d["flops"] / d["time_s"] / 1e12)
    assert d["gbps"] == pytest.approx(d["bytes"] / d["time_s"] / 1e9)
    p = subprocess.run([sys.executable, "-m", "optlog.probes.gemm", "--copy-bytes", "4000000", "--device", "cpu"],
                       capture_output=True, text=True, env={**BLAS1, "PATH": "/usr/bin:/bin"}, timeout=60)
    c = json.loads(p.stdout)
    assert c["op"] == "copy" and c["bytes"] == 8_000_000 and c["flops"] == 0
    p = subprocess.run([sys.executable, "-m", "optlog.probes.gemm", "--m", "0"], capture_output=True, text=True)
    assert p.returncode != 0 and "--m" in p.stderr


# ------------------------------------------------------------------ the launcher's entry point


def test_session_local_point_with_scrape_stores_chunks_and_metrics_and_run_show_reads_them(ws, monkeypatch) -> None:
    from optlog.service.evidence import insert_run
    from optlog.store.models import Metric
    from optlog.telemetry.session import open_session

    monkeypatch.setenv("OPTLOG_FAKE_NVML", json.dumps(TWO_GPUS))
    with run_test_server("--ttft-ms", "20", "--itl-ms", "1", "--tokens", "4") as base, ctx_for(ws, monkeypatch) as ctx:
        assert open_session(ctx, launch_id=None, settings={"enabled": False}, env={}) is None
        sess = open_session(ctx, launch_id=3, settings={"interval_s": 0.05, "gpm_interval_s": 0.1, "warmup_s": 0.1,
                                                        "scrape": base + "/metrics", "scrape_interval_s": 0.1},
                            env={"CUDA_VISIBLE_DEVICES": "0"}, executor=None)
        assert sess is not None
        sess.start()
        with ctx.db.write() as s:
            rid = insert_run(s, labels={"config": "tp8"}, metrics={}, status="running", launch_id=3)
        sess.begin_point(rid)
        complete(base, "a b c", n=5)
        time.sleep(0.6)
        extra = sess.end_point(rid, {"output_throughput": 100.0, "duration_s": 0.7})
        sess.stop()
        with ctx.db.write() as s:
            for k, v in {"output_throughput": 100.0, "duration_s": 0.7, **extra}.items():
                s.add(Metric(run_id=rid, name=k, value=v))
    assert extra["telemetry_gpus"] == 1  # only the run's GPU (CUDA_VISIBLE_DEVICES=0)
    assert extra["gpu_power_w_mean"] == pytest.approx(600.0) and extra["gpu_power_w"] == extra["gpu_power_w_mean"]
    assert extra["tensor_active"] == pytest.approx(5.0) and extra["dram_bw_util"] == pytest.approx(72.0)
    assert extra["energy_j"] == pytest.approx(600 * extra["telemetry_window_s"], rel=0.1)  # the counter's delta
    assert extra["tokens_per_joule"] == pytest.approx(70.0 / extra["energy_j"])
    assert extra["throttle_sw_power_cap_s"] > 0.3
    assert extra["srv_num_requests_delta"] == 5 and 10 <= extra["srv_ttft_ms_p50"] <= 50  # 20 ms, loaded CI
    assert extra["bound_memory"] == 1.0 and extra["bound_compute"] == 0.0  # util 95 %, tensor 5 %: not compute
    shown = ws.j("run", "show", str(rid))
    tel = shown["telemetry"]
    assert tel["diagnosis"]["bound"] == "memory" and tel["diagnosis"]["basis"] == "telemetry-only"
    assert "tensor_active" in tel["fields"] and tel["fields"]["gpu_power_w"]["samples"] >= 5
    text = ws.cli("run", "show", str(rid)).out
    assert "diagnosis: memory-bound (telemetry-only)" in text and "gpu_power_w" in text
    assert any(ch in text for ch in "▁▂▃▄▅▆▇█") and "sw_power_cap" in text


class _Exec:
    """A stand-in executor for a remote host: runs the command as a local subprocess (no ssh here)."""

    telemetry = "stream"  # a sampler command on its host (optlog.runs.executors.base)

    def __init__(self, kind: str, replace: Any) -> None:
        self.kind = kind
        self.host = "gpu-box"
        self.replace = replace
        self.argv: list[str] | None = None

    def popen(self, argv: list[str]) -> subprocess.Popen:
        self.argv = argv
        return subprocess.Popen(self.replace(argv), stdout=subprocess.PIPE, text=True, env=self.env)


def _window_has(sess: Any, gpus: int, power: int, gpm: int) -> bool:
    """The point's window holds, for each of `gpus` GPUs, `power` samples with a power reading and
    `gpm` with a GPM one (what the assertions on its summary need)."""
    with sess.lock:
        mine = [s for s in sess.samples if s["t"] >= sess.points[sess.active]["t0"]]
    by: dict[str, list[int]] = {}
    for s in mine:
        c = by.setdefault(str(s.get("uuid") or s.get("gpu")), [0, 0])
        c[0] += "gpu_power_w" in s
        c[1] += "tensor_active" in s
    return len(by) >= gpus and all(p >= power and g >= gpm for p, g in by.values())


def _point(ws: Any, monkeypatch: Any, settings: dict[str, Any], ex: _Exec, seconds: float,
           gpus: int) -> tuple[dict[str, float], list[str]]:
    """One point of at least `seconds` that ends once the remote source has delivered what the
    summary needs (two power samples and a GPM sample per GPU): the remote command's start-up takes
    as long as the machine's load makes it, so a fixed window could hold nothing."""
    from optlog.service.evidence import insert_run
    from optlog.telemetry.session import open_session

    with ctx_for(ws, monkeypatch) as ctx:
        sess = open_session(ctx, launch_id=9, settings=settings, env={}, executor=ex)
        sess.start()
        with ctx.db.write() as s:
            rid = insert_run(s, labels={}, metrics={}, status="running", launch_id=9)
        sess.begin_point(rid)
        time.sleep(seconds)
        wait_for(lambda: _window_has(sess, gpus, power=2, gpm=1), 120, "the remote samples of the point")
        out = sess.end_point(rid, {"total_output_tokens": 1000.0})
        sess.stop()
        return out, list(ctx.test_notices)


def test_remote_host_without_optlog_streams_nvidia_smi(ws, monkeypatch, tmp_path: Path) -> None:
    lines = [l for l in (PROOF / "smi_query.txt").read_text().splitlines()[1:] if l.strip()]
    feeder = tmp_path / "feed.py"
    feeder.write_text("import sys, time\nlines = %r\nfor i in range(1200):\n    print(lines[i %% len(lines)], flush=True)\n"
                      "    time.sleep(0.025)\n" % lines)
    dmon = tmp_path / "dmon.py"  # a driver whose dmon offers GPM columns
    dmon.write_text("import time\nprint('# gpu pwr smutil smocc mmaact dram', flush=True)\n"
                    "print('# Idx W GPM:% GPM:% GPM:% GPM:%', flush=True)\nfor i in range(400):\n"
                    "    print('0 150 80 12 7 75', flush=True)\n    print('1 150 90 13 88 20', flush=True)\n"
                    "    time.sleep(0.05)\n")
    cmds: list[list[str]] = []

    def replace(argv: list[str]) -> list[str]:
        cmds.append(argv)
        return [sys.executable, str(dmon if "dmon" in argv else feeder)]

    ex = _Exec("ssh", replace)
    ex.env = None  # type: ignore[attr-defined]
    out, notes = _point(ws, monkeypatch, {"interval_s": 0.2, "remote": "auto"}, ex, 1.0, gpus=2)
    assert cmds[0][0] == "nvidia-smi" and any(a.startswith("-lms") for a in cmds[0])
    assert cmds[1][:2] == ["nvidia-smi", "dmon"] and "--gpm-metrics" in cmds[1]
    assert out["telemetry_gpus"] == 2 and 100 < out["gpu_power_w_mean"] < 200
    assert out["energy_j"] > 0 and out["tokens_per_joule"] == pytest.approx(1000.0 / out["energy_j"])
    assert out["tensor_active"] == pytest.approx((7 + 88) / 2, abs=5)  # dmon rows matched to the GPUs by index
    assert any("nvidia-smi" in n and "not available" in n for n in notes)


def test_remote_host_with_optlog_runs_telemetry_sample_there(ws, monkeypatch) -> None:
    ex = _Exec("ssh", lambda argv: [sys.executable, "-m", "optlog", *argv[1:]])
    ex.env = {**ws.env, **fake_env(TWO_GPUS), "CUDA_VISIBLE_DEVICES": ""}  # type: ignore[attr-defined]
    out, _ = _point(ws, monkeypatch, {"interval_s": 0.1, "gpm_interval_s": 0.3, "optlog": "optlog", "gpus": "0"}, ex, 0.5,
                    gpus=1)
    assert ex.argv[:3] == ["optlog", "telemetry", "sample"] and "--gpus" in ex.argv
    assert out["telemetry_gpus"] == 1 and out["gpu_power_w_mean"] == pytest.approx(600.0)
    assert out["tensor_active"] == pytest.approx(5.0)
