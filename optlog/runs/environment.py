"""Environment capture for a run: what software, hardware and settings produced the numbers.

    from optlog.runs.environment import capture
    env = capture(ctx, server_url="http://127.0.0.1:30000", commands={"server": argv, "bench": argv},
                  env=server_env, executor=executor)

The document (stored in `Run.environment`, shown by `run show`):

    optlog       {"version"}
    workspace    {"git_commit", "git_dirty", "git_branch"}   (dirty: tracked files changed)
    host         {"name", "platform", "kernel", "machine", "cpus", "memory_mib"}   (cpus and memory_mib:
                 this machine's; not read on a remote executor)
    python       {"version", "executable"}   of the interpreter that runs the server command when
                 that is a Python (`python -m sglang.launch_server …`), else optlog's own
    packages     {"sglang": "0.5.2", "torch": "2.8.0", "flashinfer-python": …}   only those present,
                 read with importlib.metadata (nothing is imported)
    cuda         {"torch_cuda", "nccl", "cuda_runtime", "driver"}   where known (torch's CUDA version
                 from its version.py file; NCCL and CUDA runtime from the nvidia-* wheels)
    gpus         [{"index", "name", "driver", "memory_mib"}]   pynvml, else nvidia-smi; [] without GPUs
    topology     text of `nvidia-smi topo -m` where present
    commands     {"server": [argv…], "bench": [argv…]}   secret values redacted (a caller that adds
                 a command later should pass it through `redact_argv`)
    env          NCCL_*, SGLANG_*, VLLM_*, CUDA_* (and TORCH_NCCL_*, FLASHINFER_*,
                 PYTORCH_CUDA_ALLOC_CONF) from `env` (default: this process's environment)
    server       {"url", "endpoint", "effective": {tp, pp, ep, dp, attention_backend, …,
                 cuda_graph_bs, cuda_graph_max_bs, version}, "report": {…}}   from SGLang's
                 `/server_info` (or `/get_server_info`), else vLLM's `/version`; {"error": …} when
                 the server does not answer within the short timeout
    secrets_dropped  how many variables, report keys and flag values were left out as secrets

Secrets are never stored: an environment variable whose name contains token, key, secret, password
or passwd (case-insensitive, anywhere in the name: `HF_TOKEN`, `VLLM_API_KEY`,
`NCCL_IB_PKEY`, and also harmless ones such as `SGLANG_MAX_TOKENS` — a lost setting is cheaper
than a leaked credential) is left out; in the server's report and in command lines, a key or flag
is a secret when one of its words (split at `_`, `-`, `.`) ends with token, key, secret, password or
passwd (`api_key`, `--api-key`, `hf_token`, `ssl_keyfile_password`), so configuration such as
`max_total_num_tokens` or `tokenizer_path` is kept; the value of such a flag is replaced by
`<redacted>`, as are `KEY=VALUE` arguments with a secret KEY and passwords inside URLs.

Per-host facts (host, Python and packages, GPUs, topology) and the workspace's git state are cached
for ten minutes per host and interpreter, so the launcher's per-run call costs microseconds after
the first; the server report and the environment variables are read on every call.
"""

from __future__ import annotations

import json
import os
import platform
import re
import shlex
import shutil
import socket
import subprocess
import sys
import threading
import time
from typing import Any
from urllib.parse import urlsplit

ENV_PREFIXES = ("NCCL_", "SGLANG_", "VLLM_", "CUDA_", "TORCH_NCCL_", "FLASHINFER_")
ENV_NAMES = ("PYTORCH_CUDA_ALLOC_CONF",)
from optlog import __version__, settings
from optlog.needs import Launches
from optlog.runs import redact as R  # noqa: E402  (one redaction for all of optlog)
from optlog.runs.server_version import identify
from optlog.telemetry.nvml import load_pynvml
from optlog.core import jsondoc

SECRET_WORDS = R.SECRET_WORDS
REDACTED = R.REDACTED
CACHE_TTL_S = 600.0
SERVER_TIMEOUT_S = 2.0
CMD_TIMEOUT_S = 10.0
EFFECTIVE_KEYS = (
    "tp_size", "pp_size", "ep_size", "dp_size", "enable_dp_attention", "moe_a2a_backend", "moe_runner_backend",
    "attention_backend", "prefill_attention_backend", "decode_attention_backend", "sampling_backend",
    "fp4_gemm_backend", "fp8_gemm_backend", "quantization", "kv_cache_dtype", "dtype", "cuda_graph_max_bs",
    "cuda_graph_bs", "disable_cuda_graph", "enable_piecewise_cuda_graph", "mem_fraction_static",
    "max_running_requests", "max_total_num_tokens", "chunked_prefill_size", "speculative_algorithm",
    "speculative_num_steps", "speculative_num_draft_tokens", "enable_mscclpp", "disable_custom_all_reduce",
    "model_path", "served_model_name", "version",
)
PACKAGES = (
    "sglang", "sgl-kernel", "vllm", "flashinfer-python", "flashinfer", "flashinfer-cubin", "flashinfer-jit-cache",
    "torch", "triton", "transformers", "xformers", "tensorrt_llm", "deep_gemm", "mscclpp",
    "nvidia-nccl-cu12", "nvidia-nccl-cu13", "nvidia-cuda-runtime-cu12", "nvidia-cuda-runtime-cu13",
    "nvidia-cuda-runtime", "nvidia-cudnn-cu12", "nvidia-cudnn-cu13", "nvidia-cublas-cu12", "nvidia-cublas-cu13",
    "nvidia-cutlass-dsl", "cuda-python", "nvidia-ml-py", "aiperf", "guidellm", "genai-perf",
)

# Runs in the server's interpreter (a subprocess, or in-process when it is optlog's own): stdlib only.
_PY_PROBE = r'''
import json, platform, re, sys
from importlib import metadata

def collect(names):
    pk = {}
    for n in names:
        try:
            pk[n] = metadata.version(n)
        except Exception:
            pass
    cuda = {}
    if "torch" in pk:
        try:
            f = metadata.distribution("torch").locate_file("torch/version.py")
            m = re.search(r"^cuda\s*(?::[^=]*)?=\s*['\"]([^'\"]+)['\"]", open(f, encoding="utf-8").read(), re.M)
            if m:
                cuda["torch_cuda"] = m.group(1)
        except Exception:
            pass
    for n in ("nvidia-nccl-cu13", "nvidia-nccl-cu12"):
        if n in pk:
            cuda["nccl"] = pk[n]
            break
    for n in ("nvidia-cuda-runtime-cu13", "nvidia-cuda-runtime-cu12", "nvidia-cuda-runtime"):
        if n in pk:
            cuda["cuda_runtime"] = pk[n]
            break
    return {"python": {"version": platform.python_version(), "executable": sys.executable}, "packages": pk, "cuda": cuda}

if __name__ == "__main__":
    print(json.dumps(collect(json.loads(sys.argv[1]))))
'''
_probe_ns: dict[str, Any] = {"__name__": "optlog_env_probe"}
exec(compile(_PY_PROBE, "<optlog-env-probe>", "exec"), _probe_ns)

_cache: dict[tuple[str, ...], tuple[float, Any]] = {}
_lock = threading.Lock()


def _cached(key: tuple[str, ...], fn: Any) -> Any:
    now = time.monotonic()
    with _lock:
        hit = _cache.get(key)
        if hit is not None and now - hit[0] < CACHE_TTL_S:
            return hit[1]
    value = fn()
    with _lock:
        _cache[key] = (now, value)
    return value


def clear_cache() -> None:
    with _lock:
        _cache.clear()


# ------------------------------------------------------------------------------------ secrets

def is_secret_env(name: str) -> bool:
    """An environment variable name that may hold a credential (see optlog.runs.redact)."""
    return R.secret_env_name(name)


def is_secret_key(name: str) -> bool:
    """A config key / flag name that holds a credential (see optlog.runs.redact)."""
    return R.secret_name(name)


_redact_url = R.redact_url


def redact_argv(argv: list[str], dropped: set[str] | None = None) -> list[str]:
    out = R.redact_argv(argv)
    if dropped is not None:
        dropped.update(f"argv:{i}" for i, (a, b) in enumerate(zip(argv, out)) if str(a) != b)
    return out


def scrub(obj: Any, dropped: set[str] | None = None, path: str = "") -> Any:
    """A copy of a JSON-like object without secret keys (recursively) and without URL passwords."""
    if isinstance(obj, dict):
        out = {}
        for k, v in obj.items():
            ks = str(k)
            if is_secret_key(ks):
                if dropped is not None:
                    dropped.add(f"{path}{ks}")
                continue
            out[ks] = scrub(v, dropped, f"{path}{ks}.")
        return out
    if isinstance(obj, list):
        return [scrub(v, dropped, path) for v in obj]
    if isinstance(obj, str):
        return _redact_url(obj)
    if isinstance(obj, float) and obj != obj:  # NaN: not valid in PostgreSQL JSON
        return None
    if isinstance(obj, float) and obj in (float("inf"), float("-inf")):
        return "inf" if obj > 0 else "-inf"
    return obj


def filter_env(env: dict[str, str], dropped: set[str] | None = None) -> dict[str, str]:
    out: dict[str, str] = {}
    for k, v in env.items():
        if not (k.startswith(ENV_PREFIXES) or k in ENV_NAMES):
            continue
        if is_secret_env(k):
            if dropped is not None:
                dropped.add(k)
            continue
        out[k] = _redact_url(str(v))
    return dict(sorted(out.items()))


# ------------------------------------------------------------------------------------ pieces

def _run(argv: list[str], executor: Any = None, timeout: float = CMD_TIMEOUT_S) -> str | None:
    """stdout of a short command, locally or through a remote executor; None when it fails."""
    if _is_remote(executor):
        try:
            h = executor.stream(argv, role="environment")
            out = h.stdout.read() if getattr(h, "stdout", None) is not None else b""
            rc = h.wait(timeout)
            if rc is None:
                executor.kill(h, grace_s=1.0)
                return None
            text = out.decode("utf-8", "replace") if isinstance(out, bytes) else str(out)
            return text if rc == 0 else None
        except Exception:
            return None
    if shutil.which(argv[0]) is None and not os.path.isabs(argv[0]):
        return None
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return None
    return p.stdout if p.returncode == 0 else None


def _is_remote(executor: Any) -> bool:
    return executor is not None and not executor.on_this_machine


def _host_key(executor: Any) -> str:
    return str(getattr(executor, "host", None) or socket.gethostname()) if _is_remote(executor) else "local:" + socket.gethostname()


def host_facts(executor: Any = None) -> dict[str, Any]:
    if _is_remote(executor):
        text = _run(["uname", "-snrm"], executor) or ""
        parts = text.split()
        return {"name": getattr(executor, "host", None) or (parts[1] if len(parts) > 1 else None),
                "platform": parts[0] if parts else None, "kernel": parts[2] if len(parts) > 2 else None,
                "machine": parts[3] if len(parts) > 3 else None}
    u = platform.uname()
    return {"name": socket.gethostname(), "platform": u.system, "kernel": u.release, "machine": u.machine,
            "cpus": os.cpu_count(), "memory_mib": _host_memory_mib()}


def _host_memory_mib() -> int | None:
    """This host's physical memory in MiB (what a CPU target's KV cache and weights must fit); None where
    the system does not say (sysconf without SC_PHYS_PAGES)."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // (1024 * 1024)) or None
    except (ValueError, OSError, AttributeError):
        return None


def _server_python(commands: dict[str, list[str]] | None) -> str | None:
    """The interpreter of the server command when it is a Python other than optlog's own."""
    argv = (commands or {}).get("server") or []
    if not argv:
        return None
    exe = os.path.basename(str(argv[0]))
    if not re.match(r"^python(\d+(\.\d+)?)?$", exe):
        return None
    return str(argv[0])


def python_facts(commands: dict[str, list[str]] | None = None, executor: Any = None) -> dict[str, Any]:
    """Python and package versions of the interpreter that runs the server (optlog's own when the
    server command is not a Python, or is optlog's interpreter: then read in-process)."""
    py = _server_python(commands)
    if _is_remote(executor) or (py is not None and not _same_python(py)):
        exe = py or "python3"
        out = _run([exe, "-c", _PY_PROBE, json.dumps(PACKAGES)], executor, timeout=30.0)
        if out:
            try:
                d = jsondoc.loads(out.strip().splitlines()[-1])
                if isinstance(d, dict):
                    return d
            except (json.JSONDecodeError, IndexError):
                pass
        where = f" on {getattr(executor, 'host', '?')}" if _is_remote(executor) else ""
        return {"python": {"executable": exe, "error": f"could not run {exe}{where} to read its versions"},
                "packages": {}, "cuda": {}}
    return _probe_ns["collect"](PACKAGES)


def _same_python(py: str) -> bool:
    """Whether `py` is optlog's own interpreter: the same bin folder (a venv's python3 and python are
    both symlinks to the base interpreter, so resolving links would confuse a venv with its base)."""
    w = shutil.which(py) if not os.path.isabs(py) else py
    if not w:
        return False
    return os.path.dirname(os.path.abspath(w)) == os.path.dirname(os.path.abspath(sys.executable))


def gpu_facts(executor: Any = None) -> dict[str, Any]:
    """GPUs (model, driver, memory) and the NVLink/PCIe topology matrix, where an NVIDIA driver exists."""
    gpus: list[dict[str, Any]] = []
    driver: str | None = None
    if not _is_remote(executor):
        try:
            pynvml = load_pynvml()  # the one home of NVML (and its test double)
            pynvml.nvmlInit()
            try:
                driver = _s(pynvml.nvmlSystemGetDriverVersion())
                for i in range(pynvml.nvmlDeviceGetCount()):
                    h = pynvml.nvmlDeviceGetHandleByIndex(i)
                    mem = pynvml.nvmlDeviceGetMemoryInfo(h)
                    gpus.append({"index": i, "name": _s(pynvml.nvmlDeviceGetName(h)), "driver": driver,
                                 "memory_mib": int(mem.total // (1024 * 1024))})
                try:
                    cv = pynvml.nvmlSystemGetCudaDriverVersion_v2()
                    driver_cuda = f"{cv // 1000}.{(cv % 1000) // 10}"
                except Exception:
                    driver_cuda = None
            finally:
                pynvml.nvmlShutdown()
            out: dict[str, Any] = {"gpus": gpus, "driver": driver, "source": "nvml"}
            if driver_cuda:
                out["driver_cuda"] = driver_cuda
            topo = _run(["nvidia-smi", "topo", "-m"], executor)
            if topo:
                out["topology"] = topo.rstrip()
            return out
        except Exception:
            pass
    text = _run(["nvidia-smi", "--query-gpu=index,name,driver_version,memory.total",
                 "--format=csv,noheader,nounits"], executor)
    if text:
        for line in text.strip().splitlines():
            f = [c.strip() for c in line.split(",")]
            if len(f) >= 3:
                g: dict[str, Any] = {"index": int(f[0]) if f[0].isdigit() else f[0], "name": f[1], "driver": f[2]}
                if len(f) > 3 and f[3].replace(".", "").isdigit():
                    g["memory_mib"] = int(float(f[3]))
                gpus.append(g)
                driver = driver or f[2]
    out = {"gpus": gpus, "driver": driver, "source": "nvidia-smi" if text else None}
    if text:
        topo = _run(["nvidia-smi", "topo", "-m"], executor)
        if topo:
            out["topology"] = topo.rstrip()
    return out


def _s(v: Any) -> str:
    return v.decode() if isinstance(v, bytes) else str(v)


def git_facts(root: Any) -> dict[str, Any]:
    def g(*args: str) -> str | None:
        try:
            p = subprocess.run(["git", *args], cwd=str(root), capture_output=True, text=True, timeout=10,
                               stdin=subprocess.DEVNULL)
        except (OSError, subprocess.SubprocessError):
            return None
        return p.stdout.strip() if p.returncode == 0 else None

    commit = g("rev-parse", "HEAD")
    status = g("status", "--porcelain", "--untracked-files=no")
    return {"git_commit": commit, "git_dirty": bool(status) if status is not None else None,
            "git_branch": g("rev-parse", "--abbrev-ref", "HEAD")}


def _base_url(url: str) -> str:
    u = urlsplit(url if "://" in url else "http://" + url)
    return f"{u.scheme}://{u.netloc}"


def server_report(url: str, dropped: set[str] | None = None, timeout: float = SERVER_TIMEOUT_S) -> dict[str, Any]:
    """The server's own account of its configuration: SGLang `/server_info` (new) or
    `/get_server_info` (old), else vLLM's `/version`, else llama.cpp's `/props` (its `build_info`,
    slots, model and default generation settings)."""
    import httpx  # deferred: httpx only to ask a server

    base = _base_url(url)
    errors: list[str] = []
    try:
        with httpx.Client(timeout=timeout, trust_env=False) as c:
            for path in ("/server_info", "/get_server_info", "/version", "/props"):
                try:
                    r = c.get(base + path)
                except httpx.HTTPError as e:
                    errors.append(f"{path}: {type(e).__name__}")
                    if isinstance(e, (httpx.ConnectError, httpx.TimeoutException)):
                        break  # nobody there: the other paths will not answer either
                    continue
                if r.status_code != 200:
                    errors.append(f"{path}: HTTP {r.status_code}")
                    continue
                try:
                    data = r.json()
                except ValueError:
                    errors.append(f"{path}: not JSON")
                    continue
                if not isinstance(data, dict):
                    errors.append(f"{path}: not a JSON object")
                    continue
                report = scrub(data, dropped, "server.")
                return {"url": base, "endpoint": path, "effective": effective(report), "report": report}
    except Exception as e:  # never let the report break a run
        errors.append(f"{type(e).__name__}: {e}")
    return {"url": base, "error": "; ".join(errors) or "no answer"}


SERVER_BINARIES = ("llama-server",)  # native servers that answer `--version` (llama.cpp's)


def server_binary_version(argv: Any, executor: Any = None) -> str | None:
    """`<server binary> --version` for a native server (llama.cpp prints its build there, on stderr)."""
    if not argv:
        return None
    exe = str(argv[0] if isinstance(argv, (list, tuple)) else shlex.split(str(argv))[0])
    if os.path.basename(exe) not in SERVER_BINARIES:
        return None

    def read() -> str | None:
        if _is_remote(executor):
            return _run([exe, "--version"], executor)
        try:
            p = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=CMD_TIMEOUT_S,
                               stdin=subprocess.DEVNULL)
        except (OSError, subprocess.SubprocessError):
            return None
        text = (p.stdout + p.stderr).strip()
        return text[:500] if p.returncode == 0 and text else None

    return _cached(("binary", _host_key(executor), exe), read)


def effective(report: dict[str, Any]) -> dict[str, Any]:
    """The settings that decide performance, from a server report (SGLang names; PD: decode side)."""
    src = report
    if isinstance(report.get("decode"), list) and report["decode"] and isinstance(report["decode"][0], dict):
        src = report["decode"][0]
    out = {k: src[k] for k in EFFECTIVE_KEYS if k in src}
    if "build_info" in src:  # llama.cpp's /props
        out["build_info"] = src["build_info"]
        if "total_slots" in src:
            out["parallel"] = src["total_slots"]
        dgs = src.get("default_generation_settings")
        if isinstance(dgs, dict) and isinstance(dgs.get("n_ctx"), int):
            out["n_ctx_slot"] = dgs["n_ctx"]
    for short in ("tp", "pp", "ep", "dp"):
        if f"{short}_size" in out:
            out[short] = out[f"{short}_size"]
    return out


# ------------------------------------------------------------------------------------ capture

def capture(ctx: Launches, *, server_url: str | None = None, commands: dict[str, list[str]] | None = None,
            env: dict[str, str] | None = None, executor: Any = None) -> dict[str, Any]:
    """The environment document of one run (see the module docstring). Never raises for a missing
    tool, GPU or server: those parts say what was missing instead."""
    dropped: set[str] = set()
    hk = _host_key(executor)
    doc: dict[str, Any] = {"optlog": {"version": __version__}}
    root = getattr(getattr(ctx, "ws", None), "root", None)
    if root is not None:
        doc["workspace"] = _cached(("git", str(root)), lambda: git_facts(root))
    doc["host"] = _cached(("host", hk), lambda: host_facts(executor))
    py = _server_python(commands) or ""
    pyf = _cached(("python", hk, py), lambda: python_facts(commands, executor))
    doc["python"] = pyf.get("python", {})
    doc["packages"] = pyf.get("packages", {})
    cuda = dict(pyf.get("cuda", {}))
    gf = _cached(("gpu", hk), lambda: gpu_facts(executor))
    doc["gpus"] = gf.get("gpus", [])
    if gf.get("driver"):
        cuda["driver"] = gf["driver"]
    if gf.get("driver_cuda"):
        cuda["driver_cuda"] = gf["driver_cuda"]
    doc["cuda"] = cuda
    if gf.get("topology"):
        doc["topology"] = gf["topology"]
    if commands:
        doc["commands"] = {k: redact_argv([str(a) for a in v] if isinstance(v, (list, tuple)) else shlex.split(str(v)),
                                          dropped)
                           for k, v in commands.items() if v}
    doc["env"] = filter_env(dict(settings.environ()) if env is None else {**{k: v for k, v in settings.environ().items()
                                                                      if k.startswith(ENV_PREFIXES) or k in ENV_NAMES},
                                                                   **env}, dropped)
    if server_url:
        doc["server"] = server_report(server_url, dropped)
    build = server_binary_version((commands or {}).get("server"), executor)
    if build:
        doc.setdefault("server", {})["binary_version"] = build

    sv = identify(doc)
    if sv:
        doc["server_version"] = sv
    if dropped:
        doc["secrets_dropped"] = len(dropped)
    facts = getattr(executor, "environment_facts", None)  # a remote executor's own record (Slurm job id, GPUs)
    if callable(facts):
        try:
            doc["executor"] = facts()
        except Exception:
            pass
    return doc
