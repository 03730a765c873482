"""Helpers for the real-server tests: llama.cpp's `llama-server` (built by scripts/llama-server.sh)
and the Gemma 3 270M model, found through `optlog.runs.llamacpp`.

Tests that need them skip with the reason when they are not here; on CI (scripts/test.sh sets
OPTLOG_TEST_REQUIRE_REALSERVER=1) they fail instead, so CI cannot pass without running them.
Kept cheap for 2-core CI: 1 thread (llama.cpp's threads spin-wait for each other: on a loaded 2-core machine
-t 2 measured 0.4 tok/s against 5.4 tok/s for -t 1), small contexts, short max_tokens, few requests.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path
from collections.abc import Iterator
from typing import Any

import pytest

from optlog.runs import llamacpp

REQUIRED = os.environ.get("OPTLOG_TEST_REQUIRE_REALSERVER") == "1"


def need_real_server() -> tuple[Path, Path]:
    why = llamacpp.missing_reason()
    if why is not None:
        if REQUIRED:
            pytest.fail(f"OPTLOG_TEST_REQUIRE_REALSERVER=1 but {why}")
        pytest.skip(why)
    return llamacpp.find_binary(), llamacpp.find_model()  # type: ignore[return-value]


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def get(url: str, timeout: float = 5.0) -> tuple[int, Any]:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            body = r.read()
            status = r.status
    except urllib.error.HTTPError as e:
        body, status = e.read(), e.code
    try:
        return status, json.loads(body)
    except ValueError:
        return status, body.decode("utf-8", "replace")


def post(url: str, doc: dict[str, Any], timeout: float = 60.0) -> tuple[int, Any]:
    req = urllib.request.Request(url, data=json.dumps(doc).encode(), headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode("utf-8", "replace")


class LlamaServer:
    """llama-server as a real subprocess in its own session, ready when /health says ok."""

    def __init__(self, binary: Path, model: Path | str, *, parallel: int = 1, ctx: int = 1024, threads: int = 1,
                 extra: tuple[str, ...] = (), wait: bool = True) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.argv = [str(binary), "-m", str(model), "--host", "127.0.0.1", "--port", str(self.port),
                     "-t", str(threads), "-c", str(ctx), "--parallel", str(parallel), "--metrics", *extra]
        import tempfile

        # a file, not a pipe: llama-server logs a lot, and a full pipe would stall it
        self.log = tempfile.NamedTemporaryFile(prefix="llama-server-", suffix=".log", delete=False)
        self.proc = subprocess.Popen(self.argv, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)
        self.health: list[int] = []   # every /health status seen while waiting
        if wait:
            self.wait_ready()

    def wait_ready(self, timeout: float = 120.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"llama-server exited {self.proc.returncode}: {self.log_text()[-2000:]}")
            try:
                status, _ = get(self.url + "/health", timeout=2.0)
                self.health.append(status)
                if status == 200:
                    return
            except OSError:
                pass
            time.sleep(0.01)
        self.stop()
        raise RuntimeError("llama-server not ready in time")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()

    def log_text(self) -> str:
        return Path(self.log.name).read_text(encoding="utf-8", errors="replace")


def small_model_server(tmp_path_factory: pytest.TempPathFactory, binary: Path) -> Iterator[tuple[LlamaServer, dict[str, Any]]]:
    """A llama-server on a small dense F16 model written by optlog.testing.gguf_model (4 layers, 512
    wide: big enough that each token is a separate stream event on a CPU, so decode windows exist;
    written in a second), and what `write_model` said of it (its path and facts). For a module-scoped
    fixture that also takes `real_server` (which marks its tests `realserver`)."""
    from optlog.testing.gguf_model import ModelShape, write_model

    shape = ModelShape(n_embd=512, n_layer=4, n_ff=1024, n_head=8, n_head_kv=4, n_vocab=2048, n_ctx_train=512)
    s = write_model(tmp_path_factory.mktemp("model") / "small.gguf", shape)
    srv = LlamaServer(binary, s["path"], ctx=512)
    try:
        yield srv, s
    finally:
        srv.stop()
