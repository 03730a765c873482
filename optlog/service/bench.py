"""`optlog bench`: the built-in load generator as a service verb.

`bench(opts, workspace, say)` is the command: where it records (a workspace, none, or the
launcher's run when inside a launch) and then `prepare` and `run`.
`prepare(opts)` checks every input (URL, levels, rate, lengths, dataset, headers, output file)
before anything runs or is written; `run(ctx, plan)` runs the sweep and, per level as it finishes,
records a run (source "bench") when a workspace is given and appends one SGLang-style JSONL line
to `--output-file`. Without a workspace (`ctx` None) it only measures and writes the file.

Headers and API keys come from the environment (`OPTLOG_BENCH_API_KEY`, else `OPENAI_API_KEY`;
`--header 'K: ${VAR}'` expands variables) and are never stored in runs or files.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import re
import secrets
import socket
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from optlog import __version__, settings
from optlog.core import labels as L
from optlog.core.limits import LIMITS
from optlog.core.numfmt import fmt_count
from optlog.core.text import check as check_text
from optlog.core.timeutil import now_iso
from optlog.errors import BadInput, Failed, param
from optlog.loadgen import core, runner, workload
from optlog.needs import Files, Index
from optlog.runs.inside import DEFAULT_RESULT, current
from optlog.service.evidence import insert_run
from optlog.service.refs import require
from optlog.telemetry import prometheus
from optlog.core import jsondoc

API_KEY_ENV = ("OPTLOG_BENCH_API_KEY", "OPENAI_API_KEY")
# Set by the launcher for each bench it runs: "1" for the first bench after the server (re)started,
# "0" after; the default warm-up runs only when it is not "0".
SERVER_FRESH_ENV = "OPTLOG_SERVER_FRESH"
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)")


@dataclass
class Options:
    url: str
    model: str | None = None
    api: str | None = None
    concurrency: str | None = None
    request_rate: str = "inf"
    num_prompts: int | None = None
    input_len: int | None = None
    output_len: int | None = None
    dataset: str | None = None
    ignore_eos: bool = False
    warmup: int | None = None            # None: warm-up at the first level after a server (re)start
    reuse_prompts: bool = False
    metrics_url: str | None = None       # None: the server's /metrics; "none": no server-side check
    seed: int = 0
    timeout: float = 600.0
    headers: list[str] = field(default_factory=list)
    extra_body: Any = None               # the parsed JSON value (a face parses its own text): an object

    max_failures: int | None = None
    output_file: str | None = None
    labels: dict[str, Any] = field(default_factory=dict)  # typed: {"config": "tp8"}
    hypothesis: str | None = None
    progress: bool = False
    tag: str | None = None


@dataclass
class Plan:
    opts: Options
    spec: Any                    # optlog.loadgen.runner.Spec
    labels: dict[str, Any]
    dataset_name: str
    output_file: Path | None
    prompt_nonce: int = 0


def _headers(opts: Options) -> dict[str, str]:
    out: dict[str, str] = {}
    for k in API_KEY_ENV:
        v = settings.environ().get(k)
        if v:
            out["Authorization"] = f"Bearer {v}"
            break
    for h in opts.headers:
        if ":" not in h:
            raise BadInput(f"expected K:V, got {h!r}", field="headers")
        k, v = h.split(":", 1)
        k = k.strip()
        if not k or not re.fullmatch(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+", k):
            raise BadInput(f"bad header name {k!r}", field="headers")

        def sub(m: re.Match[str]) -> str:
            name = m.group(1) or m.group(2)
            if name not in settings.environ():
                raise BadInput(f"the environment variable {name} (named in header {k}) is not set", field="headers")
            return settings.environ()[name]

        v = _VAR.sub(sub, v.strip())
        if "\r" in v or "\n" in v:
            raise BadInput(f"header {k} holds a line break", field="headers")
        out[k] = v
    return out


def _user_labels(labels: dict[str, Any]) -> dict[str, str]:
    """The extra labels as label text (a number an agent passes reads as the CLI's `K=8` would),
    each name and value checked by the rules a `--label` on the command line meets."""
    return {L.check_key(str(k), "labels"): check_text(v.strip() if isinstance(v, str) else L.canonical(v),
                                                        "labels", multiline=False)
            for k, v in labels.items()}


def _shown(v: int) -> str:
    """A number as given, cut short when it is huge (10**20 is said, not printed in full)."""
    t = str(v)
    return t if len(t) <= 24 else f"{t[:6]}… ({len(t)} digits)"


def prepare(opts: Options, ctx: Files | None = None) -> Plan:
    """Check everything; raise BadInput (exit 2) before anything is written."""

    try:
        target = runner.parse_target(opts.url, opts.api)
    except ValueError as e:
        raise BadInput(str(e), field="url") from None
    if opts.api not in (None, "completions", "chat"):
        raise BadInput(f"{param('api')} is completions or chat, got {opts.api!r}", field="api")
    levels: list[int | None]
    if opts.concurrency is None or str(opts.concurrency).strip().lower() in ("", "none", "inf"):
        levels = [None]
    else:
        try:
            levels = list(core.parse_levels(opts.concurrency))
        except ValueError as e:
            raise BadInput(f"bad concurrency list: {e}", field="concurrency") from None
        for lv in levels:
            if lv is not None and lv > LIMITS.bench_concurrency:
                raise BadInput(f"a concurrency level is at most {fmt_count(LIMITS.bench_concurrency)}, got {lv}",
                               field="concurrency", code="out_of_range")
    try:
        rate = core.parse_rate(opts.request_rate)
    except ValueError as e:
        raise BadInput(str(e), field="request_rate") from None
    # each number in its domain (docs/input-limits.md): every prompt is made before the first
    # request, so a num_prompts of 10**20 used to hold the command (and an MCP server) for good
    for name, v, most in (("input_len", opts.input_len, LIMITS.bench_tokens),
                          ("output_len", opts.output_len, LIMITS.bench_tokens),
                          ("num_prompts", opts.num_prompts, LIMITS.bench_prompts)):
        if v is not None and v < 1:
            raise BadInput(f"must be at least 1, got {v}", field=name)
        if v is not None and v > most:
            raise BadInput(f"must be at most {fmt_count(most)}, got {_shown(v)}", field=name, code="out_of_range")
    if (opts.num_prompts or 200) * (opts.input_len or 128) > LIMITS.bench_prompt_tokens:
        raise BadInput(f"{param('num_prompts')} × {param('input_len')} is at most {fmt_count(LIMITS.bench_prompt_tokens)} "
                       f"prompt tokens, got {fmt_count((opts.num_prompts or 200) * (opts.input_len or 128))}",
                       field="num_prompts", code="out_of_range")
    if opts.warmup is not None and opts.warmup < 0:
        raise BadInput(f"must be >= 0, got {opts.warmup}", field="warmup")
    if opts.warmup is not None and opts.warmup > LIMITS.bench_prompts:
        raise BadInput(f"must be at most {fmt_count(LIMITS.bench_prompts)}, got {_shown(opts.warmup)}", field="warmup",
                       code="out_of_range")
    if not (opts.timeout > 0) or math.isinf(opts.timeout):
        raise BadInput(f"must be > 0 seconds, got {opts.timeout}", field="timeout")
    if opts.timeout > LIMITS.bench_timeout_s:
        raise BadInput(f"must be at most {fmt_count(LIMITS.bench_timeout_s)} seconds, got {opts.timeout}", field="timeout",
                       code="out_of_range")
    if opts.max_failures is not None and opts.max_failures < 0:
        raise BadInput(f"must be >= 0, got {opts.max_failures}", field="max_failures")
    if opts.dataset and opts.input_len:
        raise BadInput(f"{param('input_len')} makes random prompts; it cannot be combined with {param('dataset')}", field="input_len")
    headers = _headers(opts)
    extra: Any = {} if opts.extra_body is None else opts.extra_body
    if not isinstance(extra, dict):
        raise BadInput("must be a JSON object", field="extra_body")
    user_labels = _user_labels(opts.labels)
    out_file: Path | None = None
    if opts.output_file:
        out_file = Path(opts.output_file)
        if out_file.is_dir():
            raise BadInput(f"{opts.output_file} is a folder", field="output_file")
        if out_file.exists() and not out_file.is_file():  # a FIFO nobody reads would block the append
            raise BadInput(f"{opts.output_file} is not a regular file", field="output_file", code="not_a_file")
        if not out_file.parent.exists():
            raise BadInput(f"no such folder: {out_file.parent}", field="output_file")
    if opts.hypothesis:
        if ctx is None:
            raise BadInput(f"{param('hypothesis')} needs a workspace", field="hypothesis")

        require(ctx, opts.hypothesis)
    n = opts.num_prompts
    nonce = 0 if opts.reuse_prompts else secrets.randbits(32)
    if opts.dataset:
        records = workload.load_dataset(opts.dataset, opts.output_len)
        prompts = workload.sample(records, n or len(records), opts.seed)
        dataset_name = Path(opts.dataset).name
    else:
        prompts = workload.random_prompts(n or 200, opts.input_len or 128, opts.output_len or 128, opts.seed)
        dataset_name = "random"
    sets = None if opts.reuse_prompts else [
        workload.fresh_prompts(prompts, dataset=bool(opts.dataset), input_len=opts.input_len or 128,
                               seed=opts.seed, nonce=nonce, level=i) for i in range(len(levels))]
    out_len = opts.output_len or 128
    warm = workload.random_prompts(8, min(opts.input_len or 128, 64), min(out_len, 16),
                                   workload.derived_seed(opts.seed, nonce or 1, -1))
    fresh = settings.read("server_fresh", "1") != "0"
    warmup_first = min(levels[0] or 4, 8) if (opts.warmup is None and fresh) else 0
    metrics_url: str | None
    if opts.metrics_url and opts.metrics_url.strip().lower() == "none":
        metrics_url = None
    elif opts.metrics_url:
        metrics_url = opts.metrics_url
    else:
        metrics_url = target.url.split("/v1/", 1)[0] + "/metrics"
    model = opts.model or _detect_model(target)
    spec = runner.Spec(target=target, model=model, prompts=prompts, levels=levels, request_rate=rate,
                       warmup=opts.warmup or 0, seed=opts.seed, timeout=opts.timeout, ignore_eos=opts.ignore_eos,
                       headers=headers, extra_body=extra, max_failures=opts.max_failures, progress=opts.progress,
                       prompt_sets=sets, warmup_prompts=warm, warmup_first=warmup_first,
                       count_prompt_tokens=not opts.dataset)
    if metrics_url:
        spec.probe = lambda: prometheus.scrape(metrics_url, timeout=5.0)
        spec.deltas = prometheus.token_deltas
    labels: dict[str, Any] = {"request_rate": "inf" if math.isinf(rate) else rate, "dataset": dataset_name,
                              "model": model, "api": target.api}
    if not opts.dataset:
        labels["input_len"] = opts.input_len or 128
    if opts.output_len or not opts.dataset:
        labels["output_len"] = opts.output_len or 128
    labels["num_prompts"] = len(prompts)
    labels.update(user_labels)
    return Plan(opts=opts, spec=spec, labels=labels, dataset_name=dataset_name, output_file=out_file,
                prompt_nonce=nonce)


def _detect_model(target: Any) -> str:
    """The first model the server lists at /v1/models (as SGLang's bench_serving does)."""

    base = target.url.split("/v1/", 1)[0]
    try:
        with urllib.request.urlopen(base + "/v1/models", timeout=10) as r:  # noqa: S310 (http/https checked)
            data = jsondoc.loads(r.read())
        return str(data["data"][0]["id"])
    except (OSError, urllib.error.URLError, ValueError, KeyError, IndexError, TypeError) as e:
        raise Failed(f"{param('model')} not given and {base}/v1/models could not tell it ({e}); pass {param('model')}") from None


def sglang_line(plan: Plan, lv: Any) -> dict[str, Any]:
    """One JSONL line in SGLang bench_serving's keys (plus optlog's own: failed, errors, labels)."""
    m = lv.metrics
    o = plan.opts

    line: dict[str, Any] = {
        "tool": "optlog", "optlog_version": __version__,
        "tag": o.tag, "backend": "optlog", "dataset_name": plan.dataset_name,
        "request_rate": lv.request_rate, "max_concurrency": lv.concurrency,
        "sharegpt_output_len": o.output_len if o.dataset else None,
        "random_input_len": None if o.dataset else (o.input_len or 128),
        "random_output_len": None if o.dataset else (o.output_len or 128),
        "random_range_ratio": 0.0 if not o.dataset else None,
        "model": plan.spec.model, "num_prompts": len(plan.spec.prompts), "api": plan.spec.target.api,
    }
    keys = ["duration", "completed", "failed", "total_input_tokens", "total_output_tokens", "request_throughput",
            "input_throughput", "output_throughput", "total_throughput", "total_token_throughput"]
    for name in ("e2e_latency", "ttft", "tpot", "itl"):
        keys += [f"{s}_{name}_ms" for s in ("mean", "median", "std", "p90", "p95", "p99")]
    keys += ["concurrency", "mean_inflight", "max_concurrent_requests"]
    keys += [k for k in m if k not in keys]   # optlog's own: short, output lengths, cache, server counters
    for k in keys:
        line[k] = m.get(k)
    line["total_output_tokens_retokenized"] = m.get("total_output_tokens")
    line["accept_length"] = None
    line["errors"] = lv.errors
    line["aborted"] = lv.aborted
    line["warnings"] = list(lv.warnings)
    if getattr(lv, "windows", None):
        line["windows"] = lv.windows  # the measured phase for telemetry (runs.launcher → telemetry.session)
    line["prompt_nonce"] = plan.prompt_nonce
    line["reuse_prompts"] = o.reuse_prompts
    line["input_tokens_source"] = ("unknown" if m.get("total_input_tokens") is None
                                   else "client" if m.get("input_tokens_client_counted") else "server")
    line["labels"] = _level_labels(plan, lv)
    return line


def json_safe(v: Any) -> Any:
    """Strict JSON (PostgreSQL's json type refuses Infinity/NaN): non-finite numbers become text."""
    if isinstance(v, float) and not math.isfinite(v):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")
    if isinstance(v, dict):
        return {k: json_safe(x) for k, x in v.items()}
    if isinstance(v, list):
        return [json_safe(x) for x in v]
    return v


def _level_labels(plan: Plan, lv: Any) -> dict[str, Any]:
    lab = dict(plan.labels)
    if lv.concurrency is not None:
        lab = {"concurrency": lv.concurrency, **lab}
    return lab


def _metrics(lv: Any) -> dict[str, float]:
    out: dict[str, float] = {}
    for k, v in lv.metrics.items():
        if isinstance(v, (int, float)) and not isinstance(v, bool) and v is not None:
            out[k] = float(v)
    for kind, n in lv.errors.items():
        out[f"failed_{kind}"] = float(n)
    return out


def run(ctx: Index | None, plan: Plan, notice: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Run the sweep; record each level (if ctx) and append its JSONL line (if --output-file)."""

    say = notice or (lambda _t: None)
    out: list[dict[str, Any]] = []
    env = {"tool": "optlog bench", "url": plan.spec.target.url, "api": plan.spec.target.api,
           "seed": plan.opts.seed, "warmup": plan.opts.warmup, "timeout_s": plan.opts.timeout,
           "ignore_eos": plan.opts.ignore_eos, "reuse_prompts": plan.opts.reuse_prompts,
           "prompt_nonce": plan.prompt_nonce, "warmup_first": plan.spec.warmup_first}

    def on_level(lv: Any) -> None:
        labels = _level_labels(plan, lv)
        metrics = _metrics(lv)
        warnings = core.length_warnings(lv.results, None if plan.opts.dataset else (plan.opts.input_len or 128),
                                        plan.opts.output_len or (None if plan.opts.dataset else 128))
        warnings = [*warnings, *lv.warnings]
        for w in warnings:
            say(f"c={lv.concurrency or 'inf'}: {w}")
        if lv.errors:
            say(f"c={lv.concurrency or 'inf'}: {lv.metrics['failed']} failed: "
                + ", ".join(f"{k} {n}" for k, n in lv.errors.items()))
        status = "failed" if (lv.aborted or lv.metrics["completed"] == 0) else "succeeded"
        error = None
        if lv.aborted:
            error = f"aborted: more than --max-failures {plan.opts.max_failures} requests failed"
        elif lv.metrics["completed"] == 0:
            error = "every request failed: " + ", ".join(f"{k} {n}" for k, n in lv.errors.items())
        first_err = next((r for r in lv.results if r.error), None)
        line = sglang_line(plan, lv)
        if plan.output_file is not None:
            with open(plan.output_file, "a", encoding="utf-8") as f:
                f.write(json.dumps(line) + "\n")
        rid = None
        if ctx is not None:
            def iso(t: float) -> str:
                return _dt.datetime.fromtimestamp(t, _dt.timezone.utc).isoformat(
                    timespec="milliseconds").replace("+00:00", "Z")

            with ctx.db.write() as s:
                rid = insert_run(s, labels=labels, metrics=metrics, status=status, source="bench",
                                 hypothesis_id=plan.opts.hypothesis, raw=json_safe(line), environment=env,
                                 name=f"bench c={lv.concurrency or 'inf'}", host=socket.gethostname(),
                                 started_at=iso(lv.started_at), finished_at=iso(lv.finished_at), error=error)
        out.append({"id": rid, "status": status, "labels": labels, "metrics": lv.metrics, "errors": lv.errors,
                    "warnings": warnings, "aborted": lv.aborted, "error": error,
                    "example_error": (f"{first_err.error}: {first_err.detail}" if first_err else None),
                    "recorded_at": now_iso()})

    runner.run_sweep(plan.spec, on_level=on_level, notice=say)
    return {"runs": out, "recorded": ctx is not None,
            "output_file": str(plan.output_file) if plan.output_file else None}


def bench(opts: Options, workspace: Callable[[], Any] | None, say: Callable[[str], None]) -> dict[str, Any]:
    """The `bench` command's document: measure the sweep and record each level where that belongs.

    `workspace` makes the service context (None: measure only, `--no-record`). Inside a launch the
    launcher records the one run of this measurement, so this writes its result file (`--output-file`,
    else the point's `optlog-bench.jsonl`) and records nothing; outside a workspace it measures anyway."""
    launched = current()
    if launched is not None and workspace is not None:
        if not opts.output_file and launched["out"]:
            opts.output_file = str(Path(launched["out"]) / DEFAULT_RESULT)
        say(f"inside launch L{launched['launch']} (run {launched['run']}): writing {opts.output_file or 'no file'}, "
            "recording nothing (the launcher records the run)")
        workspace = None
    ctx = None
    if workspace is not None:
        try:
            ctx = workspace()
        except BadInput as e:
            if e.code != "no_workspace":
                raise
            say("no optlog workspace here (run `optlog init`, or pass -C); measuring without recording")
    return run(ctx, prepare(opts, ctx), say)
