"""Environment capture: git state of a real repository, the server's own report from real HTTP
servers on 127.0.0.1, package versions read without importing, secrets never stored, caching.

No NVIDIA GPU exists here: the GPU part is exercised through a stand-in `nvidia-smi` script on PATH
(a real subprocess printing what the real tool prints); pynvml finds no driver and falls back to it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Iterator

import pytest

from optlog.paths import Workspace
from optlog.runs import environment as E
from optlog.runs.environment import capture

ROOT = Path(__file__).resolve().parents[2]
SECRETS = ("sk-live-123456", "hf_abcdefSECRET", "pa55w0rd-xyz", "tok-9f8e7d", "s3cr3t-value", "keyval-777")


class _Ctx:
    def __init__(self, root: Path) -> None:
        self.ws = Workspace(root)


@pytest.fixture(autouse=True)
def _fresh_cache() -> Iterator[None]:
    E.clear_cache()
    yield
    E.clear_cache()


def _git(root: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@e"}
    return subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, text=True, env=env).stdout.strip()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    _git(root, "init", "-q", "-b", "main")
    (root / "optlog.yaml").write_text("name: t\n")
    _git(root, "add", ".")
    _git(root, "commit", "-q", "-m", "init")
    return root


class _InfoHandler(BaseHTTPRequestHandler):
    report: dict[str, Any] = {}
    paths: tuple[str, ...] = ("/server_info",)

    def do_GET(self) -> None:  # noqa: N802
        if self.path in self.paths:
            body = json.dumps(self.report).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
        else:
            body = b'{"detail": "Not Found"}'
            self.send_response(404)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *a: Any) -> None:
        pass


def _serve(report: dict[str, Any], paths: tuple[str, ...]) -> tuple[ThreadingHTTPServer, str]:
    handler = type("H", (_InfoHandler,), {"report": report, "paths": paths})
    srv = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv, f"http://127.0.0.1:{srv.server_address[1]}"


SGLANG_REPORT = {
    "model_path": "/models/GLM-5-NVFP4", "tokenizer_path": "/models/GLM-5-NVFP4", "tp_size": 4, "pp_size": 2,
    "ep_size": 1, "dp_size": 1, "attention_backend": "flashinfer", "moe_runner_backend": "flashinfer_cutlass",
    "fp4_gemm_backend": "flashinfer_cutlass", "quantization": "modelopt_fp4", "cuda_graph_max_bs": 512,
    "cuda_graph_bs": [1, 2, 4, 8, 16, 32], "max_total_num_tokens": 812345, "version": "0.5.9",
    "api_key": SECRETS[0], "admin_api_key": SECRETS[0], "ssl_keyfile_password": SECRETS[2],
    "hf_token": SECRETS[1], "internal_states": [{"avg_spec_accept_length": 1.0, "auth": {"bearer_token": SECRETS[3]}}],
    "download_dir": "https://user:" + SECRETS[2] + "@mirror.example/models",
}


def test_secrets_never_stored_anywhere(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    srv, url = _serve(SGLANG_REPORT, ("/server_info",))
    try:
        monkeypatch.setenv("SGLANG_API_KEY", SECRETS[0])
        monkeypatch.setenv("NCCL_DEBUG", "INFO")
        monkeypatch.setenv("HF_TOKEN", SECRETS[1])  # not a captured prefix anyway
        env = {"VLLM_API_KEY": SECRETS[0], "SGLANG_AUTH_TOKEN": SECRETS[3], "CUDA_PASSWORD": SECRETS[2],
               "NCCL_SECRET_X": SECRETS[4], "vllm_lower_token": SECRETS[3], "NCCL_IB_PKEY": SECRETS[5],
               "NCCL_IB_HCA": "mlx5", "CUDA_VISIBLE_DEVICES": "0,1,2,3", "SGLANG_ENABLE_JIT_DEEPGEMM": "1",
               "UNRELATED": "x"}
        commands = {
            "server": ["python", "-m", "sglang.launch_server", "--model-path", "/m", "--api-key", SECRETS[0],
                       "--hf-token=" + SECRETS[1], "--tp-size", "4"],
            "bench": ["env", "OPENAI_API_KEY=" + SECRETS[0], "aiperf", "profile", "--url",
                      "http://bob:" + SECRETS[2] + "@127.0.0.1:8000", "--header", "x"],
        }
        doc = capture(_Ctx(repo), server_url=url + "/health", commands=commands, env=env)
    finally:
        srv.shutdown()
    text = json.dumps(doc)
    for s in SECRETS:
        assert s not in text, s
    # the settings that are not secrets are all there
    assert doc["env"] == {"CUDA_VISIBLE_DEVICES": "0,1,2,3", "NCCL_DEBUG": "INFO", "NCCL_IB_HCA": "mlx5",
                          "SGLANG_ENABLE_JIT_DEEPGEMM": "1"}
    assert doc["commands"]["server"] == ["python", "-m", "sglang.launch_server", "--model-path", "/m", "--api-key",
                                         "<redacted>", "--hf-token=<redacted>", "--tp-size", "4"]
    assert doc["commands"]["bench"][1] == "OPENAI_API_KEY=<redacted>"
    assert doc["commands"]["bench"][5] == "http://bob:<redacted>@127.0.0.1:8000"
    rep = doc["server"]["report"]
    assert rep["max_total_num_tokens"] == 812345 and rep["tokenizer_path"] == "/models/GLM-5-NVFP4"
    assert "api_key" not in rep and "hf_token" not in rep and "ssl_keyfile_password" not in rep
    assert doc["secrets_dropped"] >= 10
    json.dumps(doc, allow_nan=False)


def test_secret_name_rules() -> None:
    for name in ("HF_TOKEN", "SGLANG_API_KEY", "NCCL_SECRET", "CUDA_PASSWORD", "sglang_token_x", "VLLM_KEYS",
                 "NCCL_IB_PKEY", "SGLANG_MAX_TOKENS"):
        assert E.is_secret_env(name), name
    for name in ("NCCL_DEBUG", "CUDA_VISIBLE_DEVICES", "VLLM_ATTENTION_BACKEND"):
        assert not E.is_secret_env(name), name
    for key in ("api_key", "--api-key", "hf_token", "ssl_keyfile_password", "apiKey", "bearer_token", "secret"):
        assert E.is_secret_key(key), key
    for key in ("max_total_num_tokens", "tokenizer_path", "ssl_keyfile", "kv_cache_dtype", "--tp-size",
                "speculative_num_draft_tokens", "keyword"):
        assert not E.is_secret_key(key), key


def test_server_report_from_the_real_test_server(repo: Path, tmp_path: Path) -> None:
    port_file = tmp_path / "port"
    p = subprocess.Popen([sys.executable, str(ROOT / "tests" / "testserver.py"), "--port", "0", "--port-file",
                          str(port_file), "--model", "tiny"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         start_new_session=True)
    try:
        deadline = time.monotonic() + 30
        while not (port_file.exists() and port_file.read_text().strip()) and time.monotonic() < deadline:
            assert p.poll() is None, "test server died"
            time.sleep(0.02)
        url = f"http://127.0.0.1:{port_file.read_text().strip()}"
        doc = capture(_Ctx(repo), server_url=url)
    finally:
        p.terminate()
        p.wait(10)
    s = doc["server"]
    assert s["endpoint"] == "/server_info" and s["url"] == url
    assert s["effective"]["tp"] == 1 and s["effective"]["pp"] == 1 and s["effective"]["ep"] == 1
    assert s["effective"]["attention_backend"] == "none"
    assert s["effective"]["cuda_graph_bs"] == [1, 2, 4, 8]
    assert s["effective"]["model_path"] == "tiny"


def test_old_sglang_path_and_vllm_version(repo: Path) -> None:
    srv, url = _serve({**SGLANG_REPORT, "tp_size": 8, "pp_size": 1}, ("/get_server_info",))
    try:
        d = capture(_Ctx(repo), server_url=url)["server"]
    finally:
        srv.shutdown()
    assert d["endpoint"] == "/get_server_info" and d["effective"]["tp"] == 8
    assert d["effective"]["fp4_gemm_backend"] == "flashinfer_cutlass"
    srv, url = _serve({"version": "0.11.0"}, ("/version",))
    try:
        d = capture(_Ctx(repo), server_url=url + "/v1")["server"]
    finally:
        srv.shutdown()
    assert d["endpoint"] == "/version" and d["effective"] == {"version": "0.11.0"}


def test_server_that_is_not_there_is_reported_not_raised(repo: Path) -> None:
    import socket

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    t = time.monotonic()
    d = capture(_Ctx(repo), server_url=f"http://127.0.0.1:{port}")["server"]
    assert time.monotonic() - t < E.SERVER_TIMEOUT_S * 2 + 1
    assert "ConnectError" in d["error"] and d["url"] == f"http://127.0.0.1:{port}"


def test_git_commit_and_dirty_flag(repo: Path) -> None:
    head = _git(repo, "rev-parse", "HEAD")
    ws = capture(_Ctx(repo))["workspace"]
    assert ws == {"git_commit": head, "git_dirty": False, "git_branch": "main"}
    (repo / "optlog.yaml").write_text("name: changed\n")
    (repo / "untracked.txt").write_text("x")
    E.clear_cache()
    assert capture(_Ctx(repo))["workspace"]["git_dirty"] is True


def test_versions_and_host(repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # a torch and an NCCL wheel, as importlib.metadata sees them (metadata + torch/version.py; nothing imported)
    site = tmp_path / "site"
    (site / "torch").mkdir(parents=True)
    (site / "torch" / "version.py").write_text("__version__ = '2.8.0+cu128'\ncuda: Optional[str] = '12.8'\n")
    for name, ver in (("torch", "2.8.0+cu128"), ("nvidia_nccl_cu12", "2.27.3"), ("sglang", "0.5.9")):
        di = site / f"{name}-{ver}.dist-info"
        di.mkdir()
        (di / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name.replace('_', '-')}\nVersion: {ver}\n")
    monkeypatch.syspath_prepend(str(site))
    doc = capture(_Ctx(repo), commands={"server": [sys.executable, "-m", "sglang.launch_server"]})
    assert doc["packages"]["torch"] == "2.8.0+cu128" and doc["packages"]["sglang"] == "0.5.9"
    assert doc["cuda"]["torch_cuda"] == "12.8" and doc["cuda"]["nccl"] == "2.27.3"
    assert "torch" not in sys.modules and "sglang" not in sys.modules  # read from metadata, never imported
    assert doc["optlog"]["version"]
    assert doc["python"]["version"] == ".".join(map(str, sys.version_info[:3]))
    assert doc["host"]["name"] and doc["host"]["platform"] == "Linux"
    assert doc["host"]["memory_mib"] > 0  # what a CPU target's batch must fit (next, issue 45)
    assert doc["commands"]["server"] == [sys.executable, "-m", "sglang.launch_server"]


def test_versions_of_another_interpreter_come_from_it(repo: Path, tmp_path: Path) -> None:
    other = Path(sys.base_prefix) / "bin" / "python3"
    if not other.exists() or os.path.dirname(sys.executable) == str(other.parent):
        pytest.skip("no second interpreter to compare with")
    doc = capture(_Ctx(repo), commands={"server": [str(other), "-m", "sglang.launch_server"]})
    assert doc["python"]["executable"] != sys.executable
    assert "version" in doc["python"] and isinstance(doc["packages"], dict)
    doc = capture(_Ctx(repo), commands={"server": ["/nonexistent/python3", "-m", "x"]})
    assert "could not run /nonexistent/python3" in doc["python"]["error"] and doc["packages"] == {}


FAKE_SMI = r'''#!/bin/sh
case "$*" in
  *query-gpu*) printf '0, NVIDIA RTX PRO 6000 Blackwell Server Edition, 580.95.05, 97887\n1, NVIDIA RTX PRO 6000 Blackwell Server Edition, 580.95.05, 97887\n' ;;
  "topo -m") printf '\tGPU0\tGPU1\nGPU0\t X \tSYS\nGPU1\tSYS\t X \n' ;;
  *) exit 1 ;;
esac
'''


def test_gpu_model_driver_and_topology(repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bindir = tmp_path / "bin"
    bindir.mkdir()
    smi = bindir / "nvidia-smi"
    smi.write_text(FAKE_SMI)
    smi.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    doc = capture(_Ctx(repo))
    if doc["gpus"] and doc.get("cuda", {}).get("driver") and "RTX PRO" not in doc["gpus"][0]["name"]:
        pytest.skip("a real NVIDIA driver answered through NVML")
    assert doc["gpus"] == [
        {"index": 0, "name": "NVIDIA RTX PRO 6000 Blackwell Server Edition", "driver": "580.95.05", "memory_mib": 97887},
        {"index": 1, "name": "NVIDIA RTX PRO 6000 Blackwell Server Edition", "driver": "580.95.05", "memory_mib": 97887},
    ]
    assert doc["cuda"]["driver"] == "580.95.05"
    assert "GPU0\t X \tSYS" in doc["topology"]


def test_no_gpu_no_nvidia_smi(repo: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no nvidia-smi, no git: both degrade, nothing raises
    doc = capture(_Ctx(repo))
    if doc["gpus"]:
        pytest.skip("a real NVIDIA driver answered through NVML")
    assert doc["gpus"] == [] and "topology" not in doc


def test_second_call_is_cheap(repo: Path) -> None:
    t0 = time.perf_counter()
    first = capture(_Ctx(repo), commands={"server": ["python3", "-m", "x"]})
    t1 = time.perf_counter()
    times = []
    for _ in range(5):
        s = time.perf_counter()
        again = capture(_Ctx(repo), commands={"server": ["python3", "-m", "x"], "bench": ["b"]})
        times.append(time.perf_counter() - s)
    assert min(times) < 0.02, (t1 - t0, times)
    assert again["packages"] == first["packages"] and again["workspace"] == first["workspace"]
    assert again["commands"]["bench"] == ["b"]
