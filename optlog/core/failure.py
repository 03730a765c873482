"""Read a likely cause from the tail of a failed process's output. Pure: text in, a word out.

Causes: `out_of_memory`, `nccl_timeout`, `cuda_graph_capture`, `port_in_use`, `nccl_error`,
`cuda_error`, `import_error`, `not_found`,
`killed` (SIGKILL, often the kernel's OOM killer), `segfault`.
The first rule that matches wins; rules are ordered from most to least specific.
"""

from __future__ import annotations

import re

RULES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("cuda_graph_capture", re.compile(
        r"cuda ?graph[^\n]{0,80}captur|captur[^\n]{0,40}cuda ?graph|cudaErrorStreamCapture|"
        r"operation not permitted when stream is capturing|StreamCaptureInvalidated", re.I)),
    ("out_of_memory", re.compile(
        r"out of memory|OutOfMemoryError|CUBLAS_STATUS_ALLOC_FAILED|cudaErrorMemoryAllocation|"
        r"failed to allocate|not enough memory|std::bad_alloc|MemoryError|"
        r"KV cache .{0,40}(too small|insufficient)|Not enough memory", re.I)),
    ("nccl_timeout", re.compile(
        r"(NCCL|ProcessGroupNCCL|collective|watchdog)[^\n]{0,120}time[d ]?\s?out|"
        r"Watchdog caught collective operation timeout|NCCL[^\n]{0,40}timeout", re.I)),
    ("port_in_use", re.compile(
        r"address already in use|EADDRINUSE|Errno 98|port \d+ is (already )?in use|"
        r"bind\(\) to [^\n]* failed|port is already (in use|occupied)", re.I)),
    ("nccl_error", re.compile(r"NCCL (error|WARN)|ncclInternalError|ncclSystemError|ncclUnhandledCudaError", re.I)),
    ("cuda_error", re.compile(r"CUDA error|cudaError\w+|illegal memory access|device-side assert", re.I)),
    ("import_error", re.compile(r"ModuleNotFoundError|ImportError", re.I)),
    ("not_found", re.compile(r"command not found|No such file or directory", re.I)),
)


def classify(text: str | None, returncode: int | None = None) -> str | None:
    """The most likely cause named by `text` (the tail of stderr and stdout), else by the exit code."""
    if text:
        for cause, rx in RULES:
            if rx.search(text):
                return cause
    if returncode is not None:
        if returncode in (-9, 137):
            return "killed"
        if returncode in (-11, 139):
            return "segfault"
    return None


def tail(text: str, lines: int = 20, chars: int = 4000) -> str:
    """The last `lines` lines of `text`, at most `chars` characters."""
    t = text.rstrip("\n").splitlines()[-lines:]
    out = "\n".join(t)
    return out[-chars:]
