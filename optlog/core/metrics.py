"""The metrics and labels registry (issue 46, item 4): one table of what optlog measures and what it
names runs by. Units, comparisons, reports, readers, `next` and verdicts read it; a new first-class
metric is one row here (or one `register(Metric(...))` line beside a reader, as
tests/fixtures/metrics/energy.py does).

* A `Metric` has its name, its unit (and the unit a person reads it in), which way is better, its
  group (throughput, latency, count, duration, goodput), whether every reader fills it in when its
  tool reports it (`canonical`), whether it identifies a measurement (`identity`), and the spellings
  peer tools give it (`aliases`: AIPerf, GuideLLM, vLLM bench, llmperf, llama-bench).
* A `Label` has its name, its role (`workload`: what was asked of the server; `config`: how it was
  set up and the load point; `software`: what it ran; `ignored`: what tells repeats apart; `flag`:
  how it was measured) and the names peer tools give the same setting (`aliases`).
* A name no row has (a telemetry counter `gpu_power_w_mean`, a tool's own `raw.` figure) has its
  unit and direction from its name's habits: `NAME_UNITS` (suffixes) and `HIGHER_WORDS`, also here
  and nowhere else.

Pure: no I/O. Registration is for start-up (optlog's own rows below) and tests.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Better = Literal["higher", "lower"]
Role = Literal["workload", "config", "software", "ignored", "flag"]


@dataclass(frozen=True)
class Metric:
    name: str
    unit: str | None
    better: Better | None
    group: str
    display_unit: str | None = None  # the unit a person reads (None: `unit`)
    # peer tools' spellings of the same figure, as (tool, spelling): `("aiperf", "output_token_throughput")`
    aliases: tuple[tuple[str, str], ...] = ()
    canonical: bool = True  # read by every reader under this name (`run import`'s generic reader too)
    identity: bool = False  # one of the figures that identify a measurement (ParsedResult.measurement)

    @property
    def shown_unit(self) -> str | None:
        return self.display_unit or self.unit


@dataclass(frozen=True)
class Label:
    name: str
    role: Role
    unit: str | None = None
    aliases: tuple[str, ...] = ()  # peer tools' names of the same setting (`max_concurrency`, `isl`)


METRICS: dict[str, Metric] = {}
LABELS: dict[str, Label] = {}
_ALIASES: dict[str, str] = {}  # a metric's peer spelling → its name
_LABEL_ALIASES: dict[str, str] = {}


def register(item: Metric | Label) -> Metric | Label:
    """Add (or replace) a metric or label by its name."""
    if isinstance(item, Metric):
        METRICS[item.name] = item
        _ALIASES.update({a: item.name for _, a in item.aliases})
    else:
        LABELS[item.name] = item
        _LABEL_ALIASES.update({a: item.name for a in item.aliases})
    return item


def unregister(name: str) -> None:
    m = METRICS.pop(name, None)
    for _, a in m.aliases if m else ():
        _ALIASES.pop(a, None)
    lab = LABELS.pop(name, None)
    for a in lab.aliases if lab else ():
        _LABEL_ALIASES.pop(a, None)


# ---- the metrics ----------------------------------------------------------------------------------

# optlog's latency names (SGLang's): `{mean,median,p90,p95,p99}_{tag}_ms`. Peer tools spell them as a
# tag and a statistic (AIPerf's `time_to_first_token` with `avg`, `p50`, …; vLLM bench's `e2el`): the
# readers map those structurally (aiperf._TAG_NAME, vllm._E2EL); the aliases name vLLM's own spelling.
_LATENCY = ("ttft", "tpot", "itl", "e2e_latency",
            # a request's latency over its output tokens, TTFT included (llmperf's inter_token_latency_s)
            "ntpot")
_IDENTITY = ("mean_ttft_ms", "median_ttft_ms", "p99_ttft_ms", "mean_e2e_latency_ms", "median_e2e_latency_ms",
             "mean_tpot_ms", "mean_itl_ms")

for _m in (
    Metric("completed", None, None, "count", identity=True,
           aliases=(("aiperf", "request_count"), ("guidellm", "successful"))),
    Metric("failed", None, None, "count", identity=True,
           aliases=(("aiperf", "error_request_count"), ("guidellm", "errored"))),
    Metric("duration_s", "s", "lower", "duration", identity=True,
           aliases=(("aiperf", "benchmark_duration"), ("vllm", "duration"), ("sglang", "duration"))),
    Metric("request_throughput", "req/s", "higher", "throughput",
           aliases=(("aiperf", "request_throughput"), ("guidellm", "requests_per_second"))),
    Metric("input_throughput", "tok/s", "higher", "throughput",
           aliases=(("aiperf", "input_token_throughput"), ("guidellm", "prompt_tokens_per_second"))),
    Metric("output_throughput", "tok/s", "higher", "throughput",
           aliases=(("aiperf", "output_token_throughput"), ("guidellm", "output_tokens_per_second"))),
    Metric("total_token_throughput", "tok/s", "higher", "throughput",
           aliases=(("aiperf", "total_token_throughput"), ("guidellm", "tokens_per_second"),
                    ("sglang", "total_throughput"))),
    Metric("mean_inflight", "requests", None, "count"),
    # the requests that met the run's limits (its `slo_*` labels: goodput means nothing without them)
    Metric("goodput", "req/s", "higher", "goodput"),
    Metric("good_requests", "requests", "higher", "goodput"),
    Metric("good_request_frac", "fraction", "higher", "goodput"),
):
    register(_m)
for _tag in _LATENCY:
    for _stat in ("mean", "median", "p90", "p95", "p99"):
        _name = f"{_stat}_{_tag}_ms"
        register(Metric(_name, "ms", "lower", "latency", identity=_name in _IDENTITY,
                        aliases=((("vllm", f"{_stat}_e2el_ms"),) if _tag == "e2e_latency" else ())))

# The headline figures, in the order a report, a launch's summary and a plot look for them.
HEADLINE_THROUGHPUT = ("output_throughput", "total_token_throughput", "request_throughput")
PLOT_THROUGHPUT = ("total_token_throughput", "output_throughput", "request_throughput")
REPORT_THROUGHPUT = ("total_token_throughput", "output_throughput", "input_throughput", "request_throughput")
REPORT_LATENCY = ("median_ttft_ms", "median_tpot_ms", "p99_ttft_ms", "p99_tpot_ms", "median_itl_ms",
                  "median_e2e_latency_ms")


def metric(name: str | None) -> Metric | None:
    """The registered metric `name` names (its own name or a peer's spelling), None when none."""
    if not name:
        return None
    return METRICS.get(name) or METRICS.get(_ALIASES.get(name, ""))


def canonical() -> tuple[str, ...]:
    """The figures every reader fills in under optlog's name (`CANONICAL` before the registry)."""
    return tuple(m.name for m in METRICS.values() if m.canonical)


def identity() -> tuple[str, ...]:
    """The figures that identify a measurement, whatever file of one tool it was read from."""
    return tuple(m.name for m in METRICS.values() if m.identity)


def known(name: str) -> bool:
    return name in METRICS


def group(name: str) -> tuple[str, ...]:
    return tuple(m.name for m in METRICS.values() if m.group == name)


def peer_names(tool: str) -> list[tuple[str, str]]:
    """(optlog's name, the tool's spelling) of every metric `tool` spells its own way, in table
    order: what a reader of that tool's files maps (`aiperf` → `("output_throughput",
    "output_token_throughput")`, …)."""
    return [(m.name, a) for m in METRICS.values() for t, a in m.aliases if t == tool]


def canonical_name(key: str) -> str | None:
    """A peer's spelling of a registered metric as optlog's name (`request_latency_avg` →
    `mean_e2e_latency_ms`), None when the key is no registered metric's."""
    m = metric(key)
    return m.name if m else None


# ---- a name's habits: the unit and direction of a name no row has ------------------------------------

# exact names first (their suffixes would mislead), then suffixes, longest first
NAME_UNITS_EXACT = {
    "request_throughput": "req/s",
    "goodput": "req/s",
    "good_requests": "requests",
    "mean_inflight": "requests",
    # model facts (core.modelfacts): what a launch's console line and a diagnosis name
    "active_params": "parameters",
    "total_params": "parameters",
    "expert_params": "parameters",
    "param_bytes": "bytes/parameter",
    "weight_bytes": "bytes",
    "kv_bytes_per_token": "bytes/token",
    "n_expert": "experts",
    "n_expert_used": "experts",
}
NAME_UNITS = (
    ("_throughput", "tok/s"), ("_tok_s", "tok/s"), ("tokens_per_joule", "tok/J"), ("_ms", "ms"), ("_us", "µs"),
    ("_s", "s"), ("_w", "W"), ("_j", "J"), ("_gbps", "GB/s"), ("_tflops", "TFLOPS"), ("tflops", "TFLOPS"),
    ("_gib", "GiB"), ("_mhz", "MHz"), ("_c", "°C"), ("_pct", "%"), ("_frac", "fraction"), ("_tokens", "tokens"),
)
STAT_SUFFIXES = ("_mean", "_max", "_min", "_p50", "_p90", "_p95", "_p99", "_std", "_median", "_count")
HIGHER_WORDS = ("throughput", "tok_s", "tokens_per_s", "tflops", "qps", "rps", "goodput", "good_request", "bw", "gbps")
TIME_UNITS = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0, "sec": 1.0, "min": 60.0}
_BOUNDED = ("_share", "_frac", "_fraction", "_prob", "_probability")
"""Name endings of quantities that are a part of a whole: a share, a fraction, a probability."""


def _base(n: str) -> tuple[str, str | None]:
    """`gpu_power_w_mean` → (`gpu_power_w`, `_mean`): a statistic's suffix taken off."""
    for st in STAT_SUFFIXES:
        if n.endswith(st) and len(n) > len(st):
            return n[: -len(st)], st
    return n, None


def _registered_unit(n: str) -> tuple[bool, str | None]:
    if n in METRICS:
        return True, METRICS[n].shown_unit
    if n in LABELS:
        return True, LABELS[n].unit
    if n in NAME_UNITS_EXACT:
        return True, NAME_UNITS_EXACT[n]
    return False, None


def unit(name: str | None) -> str | None:
    """The unit `name` is measured in, or None when neither the table nor its name says."""
    if not name:
        return None
    n = name.lower().removeprefix("raw.")
    found, u = _registered_unit(n)
    if found:
        return u
    n, st = _base(n)
    if st == "_count":
        return None
    found, u = _registered_unit(n)
    if found:
        return u
    for suf, u in NAME_UNITS:
        if n.endswith(suf):
            return u
    return None


def time_scale(name: str) -> float | None:
    """Seconds per unit of a metric in a time unit (`mean_ttft_ms` → 0.001, `duration_s` → 1.0), None
    when it is in no time unit: what `--key-map`'s `:UNIT` converts into."""
    m = METRICS.get(name)
    u = m.unit if m else ("ms" if name.endswith("_ms") else "s" if name.endswith("_s") else None)
    return TIME_UNITS.get(u) if u else None


def better(name: str | None) -> Better | None:
    """Which way `name` is better: the table's word; for another name, `higher` when its name says a
    rate (tokens/s, TFLOPS, goodput) and it is not a time (`_ms`, `_s`), else None."""
    m = METRICS.get(name or "")
    if m is not None:
        return m.better
    n = (name or "").lower()
    if any(w in n for w in HIGHER_WORDS) and not n.endswith("_ms") and not n.endswith("_s"):
        return "higher"
    return None


def higher_is_better(name: str | None) -> bool:
    """Whether more of `name` is better (tokens/s, TFLOPS); a time never is."""
    return better(name) == "higher"


def bounds(name: str | None) -> tuple[float, float] | None:
    """The range a metric named `name` can take when its name says (issue 45): a share, fraction or
    probability (`cpu_share`, `gpu_power_frac_mean`, `accept_probability`) lies in [0, 1]. None when
    the name does not say (a percentage may be summed over CPUs: `cpu_busy_pct` reaches 200)."""
    if not name:
        return None
    n, st = _base(name.lower().removeprefix("raw."))
    if st in ("_count", "_std"):
        return None
    if n in ("share", "fraction", "probability") or n.endswith(_BOUNDED):
        return (0.0, 1.0)
    return None


# ---- the labels -----------------------------------------------------------------------------------

for _l in (
    Label("concurrency", "config", "requests in flight",
          ("max_concurrency", "num_concurrent_requests", "streams")),
    Label("input_len", "workload", "tokens",
          ("random_input_len", "input_tokens", "prompt_tokens", "synthetic_input_tokens_mean", "isl", "n_prompt")),
    Label("output_len", "workload", "tokens",
          ("random_output_len", "output_tokens", "output_tokens_mean", "osl", "n_gen")),
    Label("model", "workload", None, ("model_id", "model_name", "served_model_name")),
    Label("dataset", "workload", None, ("dataset_name",)),
    Label("tp", "config", None, ("tensor_parallel_size", "tp_size")),
    Label("pp", "config", None, ("pipeline_parallel_size", "pp_size")),
    Label("dp", "config", None, ("data_parallel_size", "dp_size")),
    Label("ep", "config", None, ("expert_parallel_size", "ep_size")),
    Label("repeat", "ignored", None, ("run_number",)),
    Label("request_rate", "workload", None, ("qps", "rate")),
    Label("config", "config"),
    Label("gpus", "config"),
    Label("seed", "ignored"),
    Label("attempt", "ignored"),
    # a block the user measured a and b in together: verdicts pair on it (core.labels.BLOCK)
    Label("block", "ignored"),
    # how a run was measured, not what it ran: shown beside its numbers, never a reason to split
    Label("loaded", "flag"),
    *(Label(k, "software") for k in ("sglang", "vllm", "torch", "cuda", "driver", "flashinfer", "trtllm",
                                      "tensorrt_llm", "nccl", "triton", "commit", "image", "software", "python")),
    *(Label(k, "workload", "tokens") for k in ("random_input_len", "random_output_len")),
    # token counts a llama.cpp run names (`context`: the depth it ran at); not a workload key verdicts check
    *(Label(k, "config", "tokens") for k in ("prompt_len", "context")),
    Label("num_prompts", "workload", "prompts"),
    *(Label(k, "workload") for k in ("prompts", "prompt_count", "random_range_ratio", "workload", "tokenizer")),
):
    register(_l)

# the label a report's tables and plots take as the load point (their rows, their x axis): the client's
# concurrency cap; peers' names for it are its aliases (`max_concurrency`, `num_concurrent_requests`)
LOAD_POINT = "concurrency"
# the labels a report's tables are shaped by (a configuration and its load point), in this order
SHAPE_LABELS = ("config", "concurrency", "repeat", "tp", "pp", "ep", "dp", "gpus")
# labels that scale with the load point (SGLang's habit: prompts = concurrency × k)
LOAD_POINT_LABELS = frozenset({"num_prompts", "prompts", "prompt_count"})
# the labels that name a roofline dot beside its run's name (where they differ between dots)
POINT_LABELS = ("config", "concurrency", "size", "m", "batch", "tp", "model")


def role(name: str) -> Role | None:
    lab = LABELS.get(name)
    return lab.role if lab else None


def labels_with(r: Role) -> frozenset[str]:
    return frozenset(k for k, lab in LABELS.items() if lab.role == r)


def label_of_alias(key: str) -> str | None:
    """The label a peer tool's name of a setting is (`max_concurrency` → `concurrency`), None when
    no label has it as an alias (core.labels.setting_name cleans a key and asks here)."""
    return _LABEL_ALIASES.get(key)


def setting_aliases() -> dict[str, str]:
    return dict(_LABEL_ALIASES)


__all__ = ["HEADLINE_THROUGHPUT", "LABELS", "LOAD_POINT", "METRICS", "Label", "Metric", "REPORT_LATENCY", "REPORT_THROUGHPUT",
           "SHAPE_LABELS", "better", "bounds", "canonical", "canonical_name", "group", "higher_is_better", "identity",
           "known", "label_of_alias", "labels_with", "metric", "register", "role", "unit", "unregister"]
