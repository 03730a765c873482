"""GuideLLM `benchmarks.json` (`--output kind=json` / `--output-path`): one run per benchmark.

Schemas read: legacy (≤ v0.3: `{"benchmarks": [{args, run_stats, worker, request_loader, metrics,
request_totals, duration, …}]}`) and current (v0.4 … v0.8: `metadata`, `args` or `config`,
`benchmarks: [{config: {strategy …}, scheduler_metrics, metrics, duration, …}]}`). Each metric is
`{successful, errored, incomplete, total}` → `{mean, median, std_dev, min, max, count, total_sum,
percentiles{p50?, p90, p95, p99, …}}`; the `successful` side is read.

Canonical metrics:
- `completed`/`failed` ← request totals successful/errored; `duration_s` ← `duration`;
- rates take `.mean` (what GuideLLM prints; `.median` of a rate is a time-series statistic):
  `request_throughput` ← `requests_per_second`, `output_throughput` ← `output_tokens_per_second`,
  `input_throughput` ← `prompt_tokens_per_second` (else prompt tokens / duration),
  `total_token_throughput` ← `tokens_per_second` (else (prompt + output tokens) / duration); a rate
  more than 1.5× away from the file's own token count over its duration is corrected to that
  quotient, with the reason in the result's notes (GuideLLM's time-series mean of a short run);
- latency statistics (mean, median (← `percentiles.p50` where `median` is absent), p90, p95, p99):
  `ttft` ← `time_to_first_token_ms`; `e2e_latency` ← `request_latency` (seconds → ms);
  `tpot` and `itl` ← `inter_token_latency_ms` (GuideLLM defines it as (latency − TTFT)/(tokens − 1),
  SGLang's TPOT, and weights it per token like SGLang's ITL); `ntpot` ← `time_per_output_token_ms`
  (GuideLLM's own, TTFT included: in its per-request records exactly (TTFT + (N − 1) × ITL) / N, the
  time to the last token over the output tokens, as llmperf's `inter_token_latency_s`);
- `mean_inflight` ← GuideLLM's own `request_concurrency.mean`, else sum of request latencies /
  duration (SGLang's definition, which GuideLLM's duration makes exceed 1 for a synchronous run).

The tool's own keys: per metric `raw.<name>` = successful mean, plus `raw.<name>.median`, `.p90`,
`.p99`, `.max`; `raw.incomplete`. The benchmark's configuration and scheduler figures stay in `raw`
(per-request records, distributions and time series are not kept).

Labels: `concurrency` (← strategy `streams` or `max_concurrency`; 1 for synchronous), `request_rate`
(← strategy `rate` for constant/poisson), `strategy`, `model`, `input_len`/`output_len` (synthetic
data prompt/output tokens), `dataset`, `num_prompts` (a max_requests constraint), `tool_version`.
"""

from __future__ import annotations

import re
from typing import Any

from optlog.runs.parsers._common import (Doc, ParsedResult, clean, csv_rows, fail, finite, load_json, load_yaml, loads,
                                         metric_key, obj, put, rate_check, set_label)
from optlog.runs.parsers.keymap import apply_key_map
from optlog.core import jsondoc
from optlog.core import metrics as M

TOOL = "guidellm"
DROP = {"requests", "request_samples", "pdf", "cumulative_distribution_function"}


def parse(doc: Doc) -> list[ParsedResult]:
    if doc.data.lstrip()[:8] == b"Run Info" or doc.path.lower().endswith(".csv"):
        return parse_csv(doc)
    if doc.path.lower().endswith((".yaml", ".yml")) or not doc.data.lstrip()[:1] in (b"{", b"["):
        d = load_yaml(doc, TOOL)  # `--output kind=yaml`: the JSON's tree
    else:
        d = load_json(doc, TOOL)
    if not isinstance(d, dict) or not isinstance(d.get("benchmarks"), list):
        raise fail(TOOL, doc.path, "no \"benchmarks\" list at the top level (is this GuideLLM's benchmarks.json?)",
                   field_="benchmarks")
    if not d["benchmarks"]:
        raise fail(TOOL, doc.path, "the \"benchmarks\" list is empty", field_="benchmarks")
    meta = obj(d, "metadata")
    top = obj(d, "config") if isinstance(d.get("config"), dict) else obj(d, "args")
    out: list[ParsedResult] = []
    for i, b in enumerate(d["benchmarks"]):
        where = f"benchmark {i + 1}"
        if not isinstance(b, dict) or not isinstance(b.get("metrics"), dict):
            raise fail(TOOL, doc.path, f"{where}: no metrics object", field_="metrics")
        m = b["metrics"]
        if not any(isinstance(m.get(k), dict) for k in ("requests_per_second", "output_tokens_per_second", "request_latency")):
            raise fail(TOOL, doc.path, f"{where}: no requests_per_second, output_tokens_per_second or request_latency metric",
                       field_="metrics.requests_per_second")
        notes: list[str] = []
        metrics = _metrics(b, m, notes)
        labels = _labels(b, top)
        labels["tool"] = TOOL
        set_label(labels, "tool_version", meta.get("guidellm_version"))
        apply_key_map(doc, TOOL, b, metrics, labels)
        raw = {k: _strip(v) for k, v in b.items() if k not in ("metrics",) and k not in DROP}
        raw["schema"] = "legacy" if "run_stats" in b or "args" in b else f"v{meta.get('version', 0)}"
        if meta:
            raw["metadata"] = meta
        out.append(ParsedResult(labels=labels, metrics=metrics, raw=clean(raw), tool=TOOL,
                                source=f"{doc.path}#benchmark {i + 1}", file=doc.path, index=i, notes=notes))
    return out


def _strip(v: Any) -> Any:
    if isinstance(v, dict):
        return {k: _strip(x) for k, x in v.items() if k not in DROP}
    if isinstance(v, list):
        return [_strip(x) for x in v]
    return v


def _succ(m: dict[str, Any], name: str) -> dict[str, Any] | None:
    x = m.get(name)
    if isinstance(x, dict):
        s = x.get("successful")
        if isinstance(s, dict):
            return s
        if "mean" in x:  # already a distribution (e.g. root_dispatch_delay)
            return x
    return None


def _stat(s: dict[str, Any], st: str) -> float | None:
    if st == "mean":
        return finite(s.get("mean"))
    pct = obj(s, "percentiles")
    if st == "median":
        v = finite(s.get("median"))
        return v if v is not None else finite(pct.get("p50"))
    return finite(pct.get(st))


def _metrics(b: dict[str, Any], m: dict[str, Any], notes: list[str]) -> dict[str, float]:
    out: dict[str, float] = {}
    totals = m.get("request_totals") if isinstance(m.get("request_totals"), dict) else b.get("request_totals")
    if isinstance(totals, dict):
        for dst, k in (("completed", "successful"), ("failed", "errored"), ("raw.incomplete", "incomplete")):
            v = finite(totals.get(k))
            if v is not None:
                out[dst] = v
    dur = finite(b.get("duration"))
    if dur is not None:
        out["duration_s"] = dur
    for dst, name in M.peer_names("guidellm"):
        if M.METRICS[dst].group != "throughput":
            continue  # the counts are totals (above)
        s = _succ(m, name)
        if s is not None and finite(s.get("mean")) is not None:
            out[dst] = finite(s.get("mean"))  # type: ignore[assignment]
    pin = _succ(m, "prompt_token_count")
    pout = _succ(m, "output_token_count")
    tin = finite(pin.get("total_sum")) if pin else None
    tout = finite(pout.get("total_sum")) if pout else None
    if dur:
        # GuideLLM's token rates are means of a time series, which for short runs can be far from the
        # tokens it counted over the benchmark's duration (1.4 M prompt tok/s for 396 tokens in 25 s):
        # a rate that contradicts its own file is corrected to tokens / duration, said in `notes`
        rate_check(out, "input_throughput", tin, dur, "prompt tokens", notes)
        rate_check(out, "output_throughput", tout, dur, "output tokens", notes)
        rate_check(out, "total_token_throughput", None if tin is None or tout is None else tin + tout, dur,
                   "prompt + output tokens", notes)
    for short, name, scale in (("ttft", "time_to_first_token_ms", 1.0), ("e2e_latency", "request_latency", 1000.0),
                               ("tpot", "inter_token_latency_ms", 1.0), ("itl", "inter_token_latency_ms", 1.0),
                               ("ntpot", "time_per_output_token_ms", 1.0)):
        s = _succ(m, name)
        if s is None:
            continue
        for st in ("mean", "median", "p90", "p95", "p99"):
            v = _stat(s, st)
            if v is not None:
                out[f"{st}_{short}_ms"] = v * scale
    rc = _succ(m, "request_concurrency")
    lat = _succ(m, "request_latency")
    lat_sum = finite(lat.get("total_sum")) if lat else None
    if rc is not None and finite(rc.get("mean")) is not None:
        out["mean_inflight"] = finite(rc.get("mean"))  # type: ignore[assignment]  # GuideLLM's own measurement
    elif lat_sum is not None and dur:
        out["mean_inflight"] = lat_sum / dur
    for name in m:
        s = _succ(m, name)
        if s is None:
            continue
        base = "raw." + metric_key(name)
        for st, suffix in (("mean", ""), ("median", ".median"), ("p90", ".p90"), ("p99", ".p99")):
            v = _stat(s, st)
            if v is not None:
                out[base + suffix] = v
        mx = finite(s.get("max"))
        if mx is not None:
            out[base + ".max"] = mx
    return out


def _labels(b: dict[str, Any], top: dict[str, Any]) -> dict[str, Any]:
    labels: dict[str, Any] = {}
    cfg = obj(b, "config")
    args = obj(b, "args")
    strat = cfg.get("strategy") if isinstance(cfg.get("strategy"), dict) else args.get("strategy")
    strat = strat if isinstance(strat, dict) else {}
    kind = strat.get("type_") or strat.get("kind")
    set_label(labels, "strategy", kind)
    if kind == "synchronous":
        labels["concurrency"] = 1
    else:
        set_label(labels, "concurrency", strat.get("streams") if strat.get("streams") is not None else strat.get("max_concurrency"))
    if kind in ("constant", "poisson", "async", "throughput_rate"):
        set_label(labels, "request_rate", strat.get("rate"))
    backend = obj(cfg, "backend")
    worker = obj(b, "worker")
    spec = obj(top, "spec") if isinstance(top.get("spec"), dict) else top
    model = backend.get("model") or worker.get("backend_model")
    if not model and isinstance(spec.get("backend"), dict):
        model = spec["backend"].get("model")
    if not model and isinstance(spec.get("model"), str):
        model = spec.get("model")
    set_label(labels, "model", model)
    data = spec.get("data")
    d0 = data[0] if isinstance(data, list) and data else data
    if isinstance(d0, dict):
        set_label(labels, "input_len", d0.get("prompt_tokens"))
        set_label(labels, "output_len", d0.get("output_tokens"))
        set_label(labels, "dataset", d0.get("kind") or d0.get("type_"))
    else:
        loader = obj(b, "request_loader")
        text = loader.get("data") if isinstance(loader.get("data"), str) else (d0 if isinstance(d0, str) else None)
        if text:
            kv = dict(re.findall(r"(\w+)=([^,\s]+)", text))
            if kv:
                set_label(labels, "input_len", kv.get("prompt_tokens"))
                set_label(labels, "output_len", kv.get("output_tokens"))
                set_label(labels, "dataset", "synthetic" if "prompt_tokens" in kv else None)
            else:
                set_label(labels, "dataset", text)
    cons = obj(cfg, "constraints")
    mr = cons.get("max_requests") if isinstance(cons.get("max_requests"), dict) else None
    if mr:
        set_label(labels, "num_prompts", (mr.get("args") or {}).get("count") if isinstance(mr.get("args"), dict) else mr.get("count"))
    elif args.get("max_number") is not None:
        set_label(labels, "num_prompts", args.get("max_number"))
    return labels


# ----------------------------------------------------------------------------------------- CSV

# (group, header) of GuideLLM's CSV → canonical latency name and its scale to ms
_CSV_LAT = {("Time to First Token", "Successful ms"): ("ttft", 1.0),
            ("Inter Token Latency", "Successful ms"): ("itl", 1.0),
            ("Time per Output Token", "Successful ms"): ("ntpot", 1.0),
            ("Request Latency", "Successful Sec"): ("e2e_latency", 1000.0)}
_CSV_RATE = {("Server Throughput", "Successful Requests/Sec"): "request_throughput",
             ("Token Throughput", "Successful Input Tokens/Sec"): "input_throughput",
             ("Token Throughput", "Successful Output Tokens/Sec"): "output_throughput",
             ("Token Throughput", "Successful Total Tokens/Sec"): "total_token_throughput"}


def parse_csv(doc: Doc) -> list[ParsedResult]:
    """GuideLLM's `--output kind=csv` (v0.4+): three header rows (group, status and unit, statistic),
    then one row per benchmark. The percentile cells are lists whose last four items are p90, p95,
    p99, p99.9. Read as the JSON is, from the same names; the CSV carries no prompt/output lengths."""
    rows = csv_rows(doc, TOOL, heads=3)
    if len(rows) < 4 or not rows[0] or rows[0][0] != "Run Info":
        raise fail(TOOL, doc.path, "not GuideLLM's CSV (three header rows starting with Run Info)", line=1)
    heads = [(rows[0][i], rows[1][i], rows[2][i]) for i in range(len(rows[0]))]
    out: list[ParsedResult] = []
    for n, row in enumerate(rows[3:], 4):
        if not any(c.strip() for c in row):
            continue
        cell = {h: (row[i] if i < len(row) else "") for i, h in enumerate(heads)}

        def get(group: str, head: str, stat: str = "") -> str:
            return cell.get((group, head, stat), "")

        metrics: dict[str, float] = {}
        notes: list[str] = []
        for dst, key in (("completed", "Successful"), ("failed", "Errored"), ("raw.incomplete", "Incomplete")):
            put(metrics, dst, get("Request Counts", key))
        put(metrics, "duration_s", get("Timings", "Duration", "Sec"))
        for (g, h), dst in _CSV_RATE.items():
            put(metrics, dst, get(g, h, "Mean"))
        put(metrics, "mean_inflight", get("Server Throughput", "Successful Concurrency", "Mean"))
        for (g, h), (short, scale) in _CSV_LAT.items():
            targets = [short] + (["tpot"] if short == "itl" else [])
            vals = {"mean": finite(get(g, h, "Mean")), "median": finite(get(g, h, "Median"))}
            try:
                pct = loads(get(g, h, "Percentiles") or "[]", TOOL, doc.path, n, f"{g} / {h} / Percentiles")
            except ValueError:
                pct = []
            if isinstance(pct, list) and len(pct) >= 4:
                vals.update({"p90": finite(pct[-4]), "p95": finite(pct[-3]), "p99": finite(pct[-2])})
            for st, v in vals.items():
                if v is not None:
                    for t in targets:
                        metrics[f"{st}_{t}_ms"] = v * scale
        done, dur = metrics.get("completed"), metrics.get("duration_s")
        if done and dur:
            tin = finite(get("Token Metrics", "Successful Input Tokens", "Mean"))
            tout = finite(get("Token Metrics", "Successful Output Tokens", "Mean"))
            rate_check(metrics, "input_throughput", None if tin is None else tin * done, dur, "prompt tokens", notes)
            rate_check(metrics, "output_throughput", None if tout is None else tout * done, dur, "output tokens", notes)
            if tin is not None and tout is not None:
                rate_check(metrics, "total_token_throughput", (tin + tout) * done, dur, "prompt + output tokens", notes)
        labels: dict[str, Any] = {}
        strat = get("Benchmark", "Strategy")
        kind, _at, val = strat.partition("@")
        set_label(labels, "strategy", kind or None)
        if kind == "synchronous":
            labels["concurrency"] = 1
        elif kind in ("concurrent", "throughput") and val:
            set_label(labels, "concurrency", val)
        elif kind in ("constant", "poisson") and val:
            set_label(labels, "request_rate", val)
        set_label(labels, "model", _json_cell(get("Run Info", "Backend")).get("model"))
        set_label(labels, "tool_version", _json_cell(get("Runtime Info", "Metadata")).get("guidellm_version"))
        labels["tool"] = TOOL
        apply_key_map(doc, TOOL, {f"{g}.{h}.{s}".strip("."): v for (g, h, s), v in cell.items()}, metrics, labels, n)
        out.append(ParsedResult(labels=labels, metrics=metrics, raw={"format": "csv", "strategy": strat}, tool=TOOL,
                                source=f"{doc.path}:{n}", file=doc.path, index=len(out), notes=notes))
    if not out:
        raise fail(TOOL, doc.path, "no benchmark row under the three header rows", line=4)
    return out


def _json_cell(text: str | None) -> dict[str, Any]:
    """A CSV cell GuideLLM fills with a JSON object (backend, metadata); {} when empty or not one."""
    try:
        v = jsondoc.loads(text or "{}")
    except jsondoc.DuplicateKey as e:  # (its line is the cell's: parse_bytes names the file)
        raise jsondoc.DuplicateKey(e.key, e.path) from None
    except ValueError:
        return {}
    return v if isinstance(v, dict) else {}
