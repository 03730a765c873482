"""A proposed run spec checked against what it edits, and sized to the machine (issue 45) — pure.

`optlog next` writes a spec from the launch that produced the evidence; what it writes must do what
its notes say. This module holds the rules, on plain data (the spec as a dict, each planned point's
labels and rendered commands), so that every rule is testable without a launch:

- **an axis reaches a command**: a matrix axis the proposal varies or raises is named by a `{{ }}`
  placeholder of the server or bench section (`reads`), else it is only a label and changing it
  changes nothing that runs; and where it has several levels, the commands of points that differ
  only in it differ (`axis_problems`);
- **the workload fills the batch**: at each point the bench sends at least `ROUNDS` requests per
  slot (prompts >= slots × rounds) and the client concurrency is at least the batch tested
  (`workload_problems`), read from the rendered commands' flags (`--num-prompts`, `--concurrency`,
  `--parallel`, …);
- **sized to the machine**: a thread axis never past the target's CPUs, a tensor-parallel split never
  past its GPUs (`fit_levels`), from the environment optlog captured with the runs already measured
  (`resources_of`); a batch level (slots, parallel, concurrency) never past the memory its KV cache and
  the weights need (`fit_memory`: GPU memory, or the host's for a CPU target), from the model facts
  (`MemoryNeed`).

`rewrite_flag` changes a command template (a flag's value) where the workload needs it; the
caller says so in the proposal's notes.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

from optlog.core import template as T
from optlog.core.numfmt import fmt_value

# ---------------------------------------------------------------- vocabularies (one place)

# Labels that set how many CPU threads the server uses (sized by the target's CPUs).
THREAD_AXES = frozenset({"threads", "t", "n_threads", "nthreads", "num_threads", "threads_batch", "omp_num_threads",
                         "cpu_threads", "cores"})
# Labels that set how many GPUs one model instance spans (sized by the target's GPUs).
GPU_AXES = frozenset({"tp", "tp_size", "tensor_parallel", "tensor_parallel_size", "gpus", "num_gpus"})
_SPLIT_RE = re.compile(r"^tp(\d+)(?:[-_]?pp(\d+))?$", re.I)
# Flags of common benches and servers that say what a point's workload is.
PROMPT_FLAGS = ("--num-prompts", "--num-requests", "--requests")
CLIENT_CONCURRENCY_FLAGS = ("--concurrency", "--max-concurrency")
SLOT_FLAGS = ("--parallel", "-np", "--n-parallel", "--max-num-seqs", "--max-running-requests")
THREAD_FLAGS = ("-t", "--threads")
# How many times the workload fills every slot at least: once is only a ramp up and down.
ROUNDS = 2


# ---------------------------------------------------------------- the machine


@dataclass(frozen=True)
class Resources:
    """What the target has, as optlog's environment capture recorded it (None: unknown)."""

    cpus: int | None = None
    gpus: int | None = None
    gpu_memory_mib: int | None = None  # the smallest GPU's
    host_memory_mib: int | None = None  # the smallest host's

    def as_dict(self) -> dict[str, Any]:
        return {"cpus": self.cpus, "gpus": self.gpus, "gpu_memory_mib": self.gpu_memory_mib,
                "host_memory_mib": self.host_memory_mib}

    def text(self) -> str:
        parts = []
        if self.cpus is not None:
            parts.append(f"{self.cpus} CPU{'s' if self.cpus != 1 else ''}")
        if self.gpus is not None:
            parts.append(f"{self.gpus} GPU{'s' if self.gpus != 1 else ''}"
                         + (f" of {fmt_value(self.gpu_memory_mib)} MiB" if self.gpus and self.gpu_memory_mib else ""))
        return ", ".join(parts) or "unknown"


def resources_of(environments: list[dict[str, Any]]) -> Resources:
    """The target's resources from the environments of the runs already measured (run.environment:
    host.cpus, gpus[].memory_mib): the smallest seen, so that no proposal outgrows any of them."""
    cpus: list[int] = []
    gpus: list[int] = []
    mems: list[int] = []
    host_mems: list[int] = []
    for env in environments:
        if not isinstance(env, dict):
            continue
        host = env.get("host")
        n = host.get("cpus") if isinstance(host, dict) else None
        if isinstance(n, int) and not isinstance(n, bool) and n > 0:
            cpus.append(n)
        hm = host.get("memory_mib") if isinstance(host, dict) else None
        if isinstance(hm, (int, float)) and not isinstance(hm, bool) and hm > 0:
            host_mems.append(int(hm))
        g = env.get("gpus")
        if isinstance(g, list):
            gpus.append(len(g))
            mems += [int(x["memory_mib"]) for x in g if isinstance(x, dict)
                     and isinstance(x.get("memory_mib"), (int, float)) and x["memory_mib"] > 0]
    return Resources(min(cpus) if cpus else None, min(gpus) if gpus else None, min(mems) if mems else None,
                     min(host_mems) if host_mems else None)


def _num(v: Any) -> float | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, (int, float)):
        return float(v) if math.isfinite(v) else None
    if isinstance(v, str):
        try:
            x = float(v)
        except ValueError:
            return None
        return x if math.isfinite(x) else None
    return None


def gpus_of(level: Any) -> int | None:
    """How many GPUs a split level spans: `tp4pp2` → 8, a number → itself."""
    if isinstance(level, str):
        m = _SPLIT_RE.match(level)
        if m:
            return int(m.group(1)) * int(m.group(2) or 1)
    n = _num(level)
    return int(n) if n is not None and n > 0 else None


def fit_levels(axis: str, levels: list[Any], res: Resources) -> tuple[list[Any], str | None]:
    """The levels of `axis` this machine can run, and what was dropped and why (None: all fit)."""
    k = axis.lower()
    if k in THREAD_AXES and res.cpus is not None:
        kept = [x for x in levels if (_num(x) or 0) <= res.cpus]
        limit = f"the machine has {res.text()}"
    elif (k in GPU_AXES or any(isinstance(x, str) and _SPLIT_RE.match(x) for x in levels)) and res.gpus:
        kept = [x for x in levels if (gpus_of(x) or 0) <= max(res.gpus, 1)]
        limit = f"the machine has {res.text()}"
    else:
        return list(levels), None
    dropped = [x for x in levels if x not in kept]
    if not dropped:
        return kept, None
    return kept, f"{axis} {', '.join(fmt_value(x) for x in dropped)} left out: {limit}"


# ---------------------------------------------------------------- a batch level fits the memory

# The memory a level needs beyond weights + KV cache (activations, compute buffers, the allocator's
# slack, the runtime itself): a stated margin, not a measurement.
MEMORY_MARGIN = 0.2
GIB = 1024 ** 3
# Flags that say how many tokens a server keeps per slot (a sequence's context) …
SEQ_CONTEXT_FLAGS = ("--max-model-len", "--context-length", "--max-seq-len", "--max-seq-length")
# … and llama.cpp's context, which is the whole cache, shared out among its slots (-c / --parallel).
TOTAL_CONTEXT_FLAGS = ("-c", "--ctx-size")
# the bench's request size (input + output tokens): what a slot holds at least
INPUT_LEN_FLAGS = ("--input-len", "--random-input-len", "--prompt-len", "--isl")
OUTPUT_LEN_FLAGS = ("--output-len", "--random-output-len", "--max-tokens", "--osl")


@dataclass(frozen=True)
class MemoryNeed:
    """What one server instance holds, from the model facts optlog has (core.modelfacts:
    `weight_bytes`, `kv_bytes_per_token` = 2 · layers · kv heads · head dim · bytes) and the context
    a slot keeps (`tokens_per_slot`, read from the measured runs' commands, `context_from` says
    where); `unknown` says why the check cannot be made (None: it can)."""

    weight_bytes: float | None = None
    kv_bytes_per_token: float | None = None
    tokens_per_slot: float | None = None
    context_from: str = ""
    gpus_per_instance: int = 1
    unknown: str | None = None

    def need(self, slots: float) -> float:
        """Bytes for `slots` slots: (weights + KV per token × tokens per slot × slots) × (1 + margin)."""
        return ((self.weight_bytes or 0.0) + (self.kv_bytes_per_token or 0.0) * (self.tokens_per_slot or 0.0)
                * slots) * (1 + MEMORY_MARGIN)

    def most_slots(self, capacity: float) -> int:
        """The most slots whose need fits `capacity` bytes (0: not even the weights)."""
        per = (self.kv_bytes_per_token or 0.0) * (self.tokens_per_slot or 0.0)
        room = capacity / (1 + MEMORY_MARGIN) - (self.weight_bytes or 0.0)
        if room <= 0:
            return 0
        return int(room // per) if per > 0 else 1 << 30


def combine(needs: list[MemoryNeed]) -> MemoryNeed:
    """One need for the runs a candidate derives from: the largest weights, KV per token, context per
    slot and GPU span among those whose facts are known; unknown (the first reason) when none is."""
    known = [m for m in needs if not m.unknown]
    if not known:
        return needs[0] if needs else MemoryNeed(unknown="no run measured to read the model facts from")
    big = max(known, key=lambda m: m.need(1))
    return MemoryNeed(max(m.weight_bytes or 0.0 for m in known), max(m.kv_bytes_per_token or 0.0 for m in known),
                      max(m.tokens_per_slot or 0.0 for m in known), big.context_from,
                      max(m.gpus_per_instance for m in known))


def need_of(facts: dict[str, Any], server: list[str], bench: list[str], slots: float | None,
            gpus_per_instance: int = 1) -> MemoryNeed:
    """A run's memory need from its model facts (core.modelfacts.effective: `weight_bytes`, else
    `total_params` × `param_bytes`; `kv_bytes_per_token`) and its rendered commands."""
    w = _num(facts.get("weight_bytes"))
    if w is None and _num(facts.get("total_params")) and _num(facts.get("param_bytes")):
        w = float(_num(facts["total_params"]) or 0) * float(_num(facts["param_bytes"]) or 0)
    kv = _num(facts.get("kv_bytes_per_token"))
    lack = [n for n, v in (("weight_bytes", w), ("kv_bytes_per_token", kv)) if v is None]
    if lack:
        return MemoryNeed(w, kv, unknown=f"no {' or '.join(lack)} model fact on the runs (optlog reads them from "
                                         "the GGUF header or config.json of the server's model at launch)")
    tokens, where = context_per_slot(server, bench, slots)
    if tokens is None:
        return MemoryNeed(w, kv, unknown="the context per slot is unknown (no -c, --max-model-len in the server "
                                         "command, no --input-len and --output-len in the bench's)")
    return MemoryNeed(w, kv, tokens, where, max(1, gpus_per_instance))


def context_per_slot(server: list[str], bench: list[str], slots: float | None) -> tuple[float | None, str]:
    """The tokens one slot keeps, from a run's rendered commands: a per-sequence context flag of the
    server (`--max-model-len`), else llama.cpp's whole context over its slots (`-c` / `--parallel`),
    else the bench's request size (`--input-len` + `--output-len`); (tokens, where it came from)."""
    seq = flag_value(server, SEQ_CONTEXT_FLAGS)
    if seq and seq > 0:
        return seq, "the server's context per sequence"
    total = flag_value(server, TOTAL_CONTEXT_FLAGS)
    n = flag_value(server, SLOT_FLAGS) or slots or 1.0
    if total and total > 0:
        return total / n, "the server's -c over its slots"
    i, o = flag_value(bench, INPUT_LEN_FLAGS), flag_value(bench, OUTPUT_LEN_FLAGS)
    if i is not None and o is not None:
        return i + o, "the bench's input + output tokens"
    return None, ""


def _gib(b: float) -> str:
    return fmt_value(round(b / GIB, 1 if b < 100 * GIB else 0))


def capacity_of(res: Resources, gpus_per_instance: int = 1) -> tuple[float | None, str]:
    """The memory one server instance has: its GPUs' (the smallest seen × the GPUs it spans), or the
    host's for a CPU target (no GPU); (bytes, what it is) or (None, why unknown)."""
    if res.gpus:
        if res.gpu_memory_mib is None:
            return None, "the GPUs' memory is unknown (no gpus[].memory_mib in the runs' environment)"
        n = max(1, gpus_per_instance)
        what = "the GPU has" if n == 1 else f"its {n} GPUs have"
        b = res.gpu_memory_mib * 1024 * 1024 * n
        return b, f"{what} {_gib(b)} GiB"
    if res.gpus == 0 or res.host_memory_mib is not None:
        if res.host_memory_mib is None:
            return None, "the host's memory is unknown (no host.memory_mib in the runs' environment)"
        b = res.host_memory_mib * 1024 * 1024
        return b, f"the host has {_gib(b)} GiB (no GPU)"
    return None, "the target's memory is unknown (no environment captured with the runs)"


def fit_memory(axis: str, levels: list[Any], measured: list[float], res: Resources,
               mem: MemoryNeed) -> tuple[list[Any], str | None]:
    """The batch levels of `axis` whose KV cache and weights fit the target's memory, and what was
    dropped or capped and why, with the figures; when a fact is unknown, every level is kept and the
    note says the check was not made and why. A level past the fit is capped at the most slots that
    fit when that is still past the largest measured (× 1.2), else dropped."""
    shown = ", ".join(fmt_value(x) for x in levels)
    if mem.unknown:
        return list(levels), f"memory not checked for {axis} {shown}: {mem.unknown}"
    cap, what = capacity_of(res, mem.gpus_per_instance)
    if cap is None:
        return list(levels), f"memory not checked for {axis} {shown}: {what}"
    nums = [(x, _num(x)) for x in levels]
    kept = [x for x, n in nums if n is not None and mem.need(n) <= cap]
    dropped = [(x, n) for x, n in nums if x not in kept and n is not None]
    if not dropped:
        return kept, None
    most = mem.most_slots(cap)
    top = max(measured) if measured else 0.0
    if most > max([top * 1.2, *[n for x, n in nums if x in kept and n is not None]]) and most not in kept:
        kept.append(most)
        kept.sort(key=lambda x: _num(x) or 0)
    x, n = dropped[0]
    kv = (mem.kv_bytes_per_token or 0.0) * (mem.tokens_per_slot or 0.0) * n
    head = (f"{axis} {fmt_value(x)} needs ~{_gib(mem.need(n))} GiB of KV + weights ({_gib(kv)} GiB of KV cache for "
            f"{fmt_value(n)} slots × {fmt_value(round(mem.tokens_per_slot or 0))} tokens, {mem.context_from}, + "
            f"{_gib(mem.weight_bytes or 0.0)} GiB of weights, + {fmt_value(round(MEMORY_MARGIN * 100))} % margin)")
    if len(dropped) > 1:
        head += f" ({', '.join(fmt_value(d) for d, _ in dropped[1:])} more)"
    if kept:
        return kept, f"{head}; {what}: capped at {fmt_value(max(kept, key=lambda v: _num(v) or 0))}"
    return kept, (f"{head}; {what}: left out (at most {fmt_value(most)} slots fit, no level past the "
                  f"{fmt_value(top)} measured)")


# ---------------------------------------------------------------- an axis reaches a command


def names_read(spec: dict[str, Any]) -> set[str]:
    """The names the server and bench sections' placeholders read (commands, env, cwd, check, URLs)."""
    return T.names_used(spec, ("server", "bench"))


def reads(spec: dict[str, Any], name: str) -> bool:
    """Whether changing `name` changes what runs: a server or bench placeholder names it."""
    return name in names_read(spec)


@dataclass
class PointView:
    """One planned point as the checks read it: its labels and its rendered argv."""

    labels: dict[str, Any]
    server: list[str] = field(default_factory=list)
    bench: list[str] = field(default_factory=list)


def _key(labels: dict[str, Any], drop: str) -> str:
    return repr(sorted((k, repr(v)) for k, v in labels.items() if k not in (drop, "repeat")))


def axis_problems(spec: dict[str, Any], axes: list[str], points: list[PointView]) -> list[str]:
    """Each axis in `axes` that does not reach a command: not read by any placeholder, or (with two
    or more levels) points that differ only in it run the same commands."""
    out: list[str] = []
    for axis in axes:
        if not reads(spec, axis):
            out.append(f"{axis} is only a label: no server or bench placeholder reads it ({{{{ {axis} }}}})")
            continue
        groups: dict[str, dict[str, tuple[list[str], list[str]]]] = {}
        for p in points:
            if axis in p.labels:
                groups.setdefault(_key(p.labels, axis), {})[repr(p.labels[axis])] = (p.server, p.bench)
        for g in groups.values():
            if len(g) >= 2 and len({repr(c) for c in g.values()}) < len(g):
                out.append(f"{axis}: points that differ only in {axis} run the same commands")
                break
    return out


# ---------------------------------------------------------------- the workload fills the batch


def flag_value(argv: list[str], flags: tuple[str, ...]) -> float | None:
    """The number after the first of `flags` in an argv (`--flag N` or `--flag=N`); None if absent."""
    for i, a in enumerate(argv):
        for f in flags:
            if a == f and i + 1 < len(argv):
                return _num(argv[i + 1].split(",")[0])
            if a.startswith(f + "="):
                return _num(a[len(f) + 1:].split(",")[0])
    return None


@dataclass
class Workload:
    """What one point asks and sends: the batch it tests, the server's slots, the bench's requests
    and client concurrency (None: not read from the commands)."""

    batch: float | None
    slots: float | None
    prompts: float | None
    concurrency: float | None


def workload_of(p: PointView, batch_axis: str | None) -> Workload:
    batch = _num(p.labels.get(batch_axis)) if batch_axis else None
    return Workload(batch, flag_value(p.server, SLOT_FLAGS), flag_value(p.bench, PROMPT_FLAGS),
                    flag_value(p.bench, CLIENT_CONCURRENCY_FLAGS))


@dataclass
class Problem:
    kind: str  # prompts | concurrency
    labels: dict[str, Any]
    have: float
    need: float

    def text(self) -> str:
        at = ", ".join(f"{k}={fmt_value(v)}" for k, v in self.labels.items() if k != "repeat")
        if self.kind == "prompts":
            return (f"at {at} the bench sends {fmt_value(self.have)} requests, fewer than {fmt_value(self.need)} "
                    f"({ROUNDS} per slot): the batch is never filled")
        return f"at {at} the client concurrency {fmt_value(self.have)} is below the batch tested ({fmt_value(self.need)})"


def workload_problems(points: list[PointView], batch_axis: str | None) -> list[Problem]:
    """Points whose bench cannot fill what they ask: prompts < slots × ROUNDS, or a client
    concurrency below the batch tested (the batch axis's level, else the server's slots)."""
    out: list[Problem] = []
    seen: set[tuple[str, str]] = set()
    for p in points:
        w = workload_of(p, batch_axis)
        batch = w.batch if w.batch is not None else w.slots
        width = max(x for x in (w.batch, w.slots, 1.0) if x is not None)
        key = _key(p.labels, "")
        if w.prompts is not None and w.prompts < width * ROUNDS and ("prompts", key) not in seen:
            seen.add(("prompts", key))
            out.append(Problem("prompts", p.labels, w.prompts, width * ROUNDS))
        if w.concurrency is not None and batch is not None and w.concurrency < batch and ("c", key) not in seen:
            seen.add(("c", key))
            out.append(Problem("concurrency", p.labels, w.concurrency, batch))
    return out


_FLAG_ARG = r"(?P<flag>{flag})(?P<sep>\s+|=)(?P<val>\{{\{{.*?\}}\}}|\S+)"


def rewrite_flag(cmd: Any, flags: tuple[str, ...], value: str) -> tuple[Any, str | None]:
    """`cmd` (a template: text or a list) with the value of the first of `flags` it has replaced by
    `value`; (cmd, the old value) or (cmd, None) when it has none of them."""
    if isinstance(cmd, list):
        for i, a in enumerate(cmd):
            s = str(a)
            if s in flags and i + 1 < len(cmd):
                old = str(cmd[i + 1])
                return [*cmd[:i + 1], value, *cmd[i + 2:]], old
            for f in flags:
                if s.startswith(f + "="):
                    return [*cmd[:i], f"{f}={value}", *cmd[i + 1:]], s[len(f) + 1:]
        return cmd, None
    if not isinstance(cmd, str):
        return cmd, None
    for f in flags:
        m = re.search(r"(?<![\w-])" + _FLAG_ARG.format(flag=re.escape(f)), cmd)
        if m:
            return cmd[:m.start("val")] + value + cmd[m.end("val"):], m.group("val")
    return cmd, None
