"""NVIDIA AIPerf `profile_export_aiperf.json` / `.csv` and genai-perf `profile_export_genai_perf.json`.

One run per file. The JSON has one top-level key per metric tag → `{unit, avg, p1 … p99, min, max,
std}` (AIPerf "mimics" genai-perf's layout, so one parser reads both; the tool is told apart by
`aiperf_version`). Units are read from the file and converted (time → ms, duration → s).

Canonical metrics:
- `request_throughput` ← `request_throughput.avg`; `output_throughput` ← `output_token_throughput.avg`;
  `input_throughput` ← `input_token_throughput.avg` (else total_isl / duration);
  `total_token_throughput` ← `total_token_throughput.avg` (else (total_isl + total_osl) / duration);
  `completed` ← `request_count.avg`; `failed` ← `error_request_count.avg` (else the counts in
  `error_summary`, 0 when that list is empty); `duration_s` ← `benchmark_duration`.
- latency statistics (`avg`→mean, `p50`→median, p90, p95, p99): `ttft` ← `time_to_first_token`,
  `e2e_latency` ← `request_latency`, `tpot` ← `inter_token_latency` (AIPerf/genai-perf define it
  per request as (latency − TTFT)/(OSL − 1), which is SGLang's TPOT), `itl` ← `inter_chunk_latency`
  (the gaps between streamed chunks, SGLang's ITL) or, where a file lacks it (genai-perf, older
  AIPerf), `inter_token_latency`.
- `mean_inflight` ← `effective_concurrency.avg` (AIPerf ≥ 0.13), else
  request_latency.avg × request_throughput (Little's law: the same as Σ latency / duration).
- `goodput` (req/s) ← `goodput.avg` (genai-perf: `request_goodput`), `good_requests` ←
  `good_request_count.avg`, `good_request_frac` ← `good_request_fraction.avg`, with the run's
  `--goodput` limits (`input_config.slos`) as labels `slo_ttft_ms`, `slo_e2e_latency_ms`,
  `slo_tpot_ms` (AIPerf's `inter_token_latency`), `slo_itl_ms`, else `slo_<tag>`; a goodput whose
  limits the file does not name stays `raw.goodput` only (a note says so).

The tool's own keys: per tag, metric `raw.<tag>` = its `avg`, and for time/throughput tags also
`raw.<tag>.p50`, `.p90`, `.p99`, `.max`; the full statistics of every tag stay in `raw["stats"]`
and the non-metric fields (`input_config`, `run_info`, `error_summary`, …) in `raw`.

Labels (from `input_config`, whichever layout the version used): `concurrency`, `request_rate`,
`model`, `num_prompts` (requests of the profiling phase), `input_len`/`output_len` (synthetic ISL/OSL
means), `dataset`, `endpoint`, `tool_version`.

CSV (`profile_export_aiperf.csv`): a `Metric,avg,min,max,…` table of per-request metrics named
"Header (unit)" and a `Metric,Value` table of single values; the same canonical mapping by header
name; raw metrics `raw.<slug of header>` (+ `.p50`, `.p90`, `.p99`, `.max`). The CSV carries no
configuration, so no labels (give them with `--label`), and so its goodput, without the limits it
was measured against, stays `raw.goodput` (`raw.good_request_count`, `raw.goodrequestfraction`).
"""

from __future__ import annotations

import ast
import cmath
import re
from typing import Any

from optlog.core import metrics as M
from optlog.core.labels import setting_name
from optlog.runs.parsers._common import (Doc, ParsedResult, PastDouble, arr, clean, csv_rows, fail, finite, load_json,
                                         metric_key, obj, set_label)
from optlog.runs.parsers.keymap import apply_key_map

STATS = {"avg": "mean", "p50": "median", "p90": "p90", "p95": "p95", "p99": "p99"}
RAW_STATS = ("p50", "p90", "p99", "max")
_TIME = {"ms": 1.0, "msec": 1.0, "s": 1000.0, "sec": 1000.0, "seconds": 1000.0, "us": 1e-3, "usec": 1e-3,
         "ns": 1e-6, "nsec": 1e-6}
NON_METRIC = {"schema_version", "aiperf_version", "benchmark_id", "input_config", "run_info", "was_cancelled",
              "is_complete", "error_summary", "start_time", "end_time", "telemetry_data", "telemetry_stats",
              "sessions", "status", "records"}


def _to_ms(v: Any, unit: str | None) -> float | None:
    f = finite(v)
    if f is None:
        return None
    return f * _TIME.get((unit or "ms").lower(), 1.0)


# genai-perf's `input_config`, in either layout: its config file sections (`perf_analyzer`,
# `model_names`) or its command line's arguments (`service_kind`, `synthetic_input_tokens_mean`, …)
GENAI_PERF_KEYS = ("perf_analyzer", "model_names", "service_kind", "synthetic_input_tokens_mean", "subcommand",
                   "formatted_model_name", "output_tokens_mean_deterministic")


def is_genai_perf(d: dict[str, Any]) -> bool:
    ic = d.get("input_config")
    return "aiperf_version" not in d and isinstance(ic, dict) and any(k in ic for k in GENAI_PERF_KEYS)


def csv_tool(path: str, data: bytes) -> str:
    """Which tool wrote a `Metric,…` CSV: genai-perf prints its throughputs `(per sec)` (AIPerf
    `(requests/sec)`) and names the file profile_export_genai_perf.csv; AIPerf otherwise."""
    if "genai_perf" in path.rsplit("/", 1)[-1].lower() or b"\nRequest Throughput (per sec)," in data:
        return "genai-perf"
    return "aiperf"


def _detect_tool(d: dict[str, Any], asked: str) -> str:
    """The tool that wrote the file: AIPerf says so (`aiperf_version`); genai-perf's `input_config`
    says so; otherwise the format asked for."""
    if "aiperf_version" in d:
        return "aiperf"
    return "genai-perf" if is_genai_perf(d) else asked


def parse(doc: Doc, tool: str = "aiperf") -> list[ParsedResult]:
    if is_aggregate_csv(doc.data):
        return parse_aggregate_csv(doc)
    if _is_csv(doc):
        return [parse_csv(doc, csv_tool(doc.path, doc.data) if tool in ("aiperf", "genai-perf") else tool)]
    d = load_json(doc, tool)
    if is_aggregate(d):
        return parse_aggregate(doc, d)
    if not isinstance(d, dict):
        raise fail(tool, doc.path, "expected a JSON object with one key per metric (profile_export_*.json)")
    if isinstance(d.get("records"), dict) and "request_throughput" not in d:
        d = {**{k: v for k, v in d.items() if k != "records"}, **_legacy_records(d["records"])}
    stats = {k: v for k, v in d.items() if isinstance(v, dict) and ("avg" in v or "unit" in v) and k not in NON_METRIC}
    if not any(k in stats for k in ("request_throughput", "output_token_throughput", "request_count")):
        raise fail(tool, doc.path, "no request_throughput, output_token_throughput or request_count metric "
                   "(is this a profile_export_aiperf.json / profile_export_genai_perf.json?)", field_="request_throughput")
    real_tool = _detect_tool(d, tool) if tool in ("aiperf", "genai-perf") else tool
    metrics = _canonical(stats, d.get("error_summary"))
    for tag, s in stats.items():
        base = "raw." + metric_key(tag)
        f = finite(s.get("avg"))
        if f is not None:
            metrics[base] = f
        unit = str(s.get("unit") or "")
        if unit in _TIME or "/sec" in unit or unit == "tokens":
            for st in RAW_STATS:
                g = finite(s.get(st))
                if g is not None:
                    metrics[f"{base}.{st}"] = g
    rest = {k: v for k, v in d.items() if k not in stats}
    rest["stats"] = stats
    labels = _labels(d)
    labels["tool"] = real_tool
    set_label(labels, "tool_version", d.get("aiperf_version"))
    notes = _goodput(stats, obj(d, "input_config"), metrics, labels)
    apply_key_map(doc, real_tool, d, metrics, labels)
    return [ParsedResult(labels=labels, metrics=metrics, raw=clean(rest), tool=real_tool, source=doc.path,
                         file=doc.path, index=0, notes=notes)]


# a metric tag as optlog names it (`_canonical`): the name a limit on it gets (`slo_ttft_ms`)
_TAG_NAME = {"time_to_first_token": "ttft", "request_latency": "e2e_latency", "inter_token_latency": "tpot",
             "inter_chunk_latency": "itl"}


def _limits(ic: dict[str, Any]) -> dict[str, Any] | None:
    """The `--goodput` limits a run was held to, tag → value in the tag's display unit: AIPerf 0.13's
    `input_config.slos` (seen in its real files), genai-perf's `goodput` (command-line layout) or
    `input.goodput` (config layout); None when the file names none."""
    for v in (ic.get("slos"), ic.get("goodput"), _get(ic, "input", "goodput")):
        if isinstance(v, dict) and v:
            return v
    return None


def _goodput(stats: dict[str, dict[str, Any]], ic: dict[str, Any], metrics: dict[str, float],
             labels: dict[str, Any]) -> list[str]:
    """Goodput (requests/s that met every limit), the good requests' count and fraction, and each
    limit as a label `slo_<name>` (`slo_ttft_ms`: time limits in ms, by optlog's names of the tags;
    another tag by its own name): a goodput means nothing apart from its limits, and runs held to
    other limits must never pool. A file with a goodput but no limits keeps it as `raw.goodput`
    only, and says so."""
    tag = next((t for t in ("goodput", "request_goodput") if finite((stats.get(t) or {}).get("avg")) is not None), None)
    if tag is None:
        return []
    limits = _limits(ic)
    if limits is None:
        return [f"{tag} kept as raw.{tag} only: the file does not say the limits it was measured against"]
    for name, v in limits.items():
        # the tag's unit as the file gives it; a latency tag's display unit is ms; else none is assumed
        unit = str((stats.get(name) or {}).get("unit") or ("ms" if name in _TAG_NAME else ""))
        short = _TAG_NAME.get(name, metric_key(str(name)))
        if unit.lower() in _TIME:
            set_label(labels, f"slo_{short}_ms", _to_ms(v, unit))
        else:
            set_label(labels, f"slo_{short}", finite(v))
    metrics["goodput"] = float(stats[tag]["avg"])
    for dst, src in (("good_requests", "good_request_count"), ("good_request_frac", "good_request_fraction")):
        v = finite((stats.get(src) or {}).get("avg"))
        if v is not None:
            metrics[dst] = v
    return []


def _legacy_records(records: dict[str, Any]) -> dict[str, Any]:
    """Pre-release AIPerf: {"records": {"ttft": {"tag", "unit", "avg", …}}}."""
    alias = {"ttft": "time_to_first_token", "ttst": "time_to_second_token", "itl": "inter_token_latency"}
    return {alias.get(k, k): v for k, v in records.items() if isinstance(v, dict)}


def _canonical(stats: dict[str, dict[str, Any]], error_summary: Any) -> dict[str, float]:
    m: dict[str, float] = {}

    def avg(tag: str) -> float | None:
        s = stats.get(tag)
        return finite(s.get("avg")) if s else None

    for dst, tag in M.peer_names("aiperf"):
        if tag == "benchmark_duration":
            continue  # in seconds or ms by its unit: below
        v = avg(tag)
        if v is not None:
            m[dst] = v
    dur = stats.get("benchmark_duration")
    if dur:
        d = _to_ms(dur.get("avg"), dur.get("unit") or "sec")
        if d is not None:
            m["duration_s"] = d / 1000.0
    if "failed" not in m and isinstance(error_summary, list):
        m["failed"] = float(sum(finite(e.get("count")) or 0 for e in error_summary if isinstance(e, dict)))
    dur_s = m.get("duration_s")
    isl, osl = avg("total_isl"), avg("total_osl")
    if dur_s:
        if "input_throughput" not in m and isl is not None:
            m["input_throughput"] = isl / dur_s
        if "total_token_throughput" not in m and isl is not None and osl is not None:
            m["total_token_throughput"] = (isl + osl) / dur_s
    itl_src = "inter_chunk_latency" if "inter_chunk_latency" in stats else "inter_token_latency"
    for name, tag in (("ttft", "time_to_first_token"), ("e2e_latency", "request_latency"),
                      ("tpot", "inter_token_latency"), ("itl", itl_src)):
        s = stats.get(tag)
        if not s:
            continue
        for st, canon in STATS.items():
            v = _to_ms(s.get(st), s.get("unit"))
            if v is not None:
                m[f"{canon}_{name}_ms"] = v
    ec = avg("effective_concurrency")
    if ec is not None:
        m["mean_inflight"] = ec
    elif "mean_e2e_latency_ms" in m and "request_throughput" in m:
        m["mean_inflight"] = m["mean_e2e_latency_ms"] / 1000.0 * m["request_throughput"]  # Little's law
    return m


def _first(*vals: Any) -> Any:
    for v in vals:
        if v is not None and v != "" and v != []:
            return v
    return None


def _get(d: Any, *path: Any) -> Any:
    for p in path:
        if isinstance(d, dict):
            d = d.get(p)
        elif isinstance(d, list) and isinstance(p, int) and -len(d) <= p < len(d):
            d = d[p]
        else:
            return None
    return d


def _labels(d: dict[str, Any]) -> dict[str, Any]:
    ic = obj(d, "input_config")
    labels: dict[str, Any] = {}
    phases = arr(ic, "phases")
    prof = next((p for p in phases if isinstance(p, dict) and (p.get("name") == "profiling" or p.get("kind") == "profiling")),
                phases[-1] if phases and isinstance(phases[-1], dict) else {})
    stim = _get(ic, "perf_analyzer", "stimulus") or {}
    set_label(labels, "concurrency", _first(prof.get("concurrency"), _get(ic, "loadgen", "concurrency"),
                                            _get(ic, "runtime", "concurrency"), stim.get("concurrency") if isinstance(stim, dict) else None))
    set_label(labels, "request_rate", _first(prof.get("request_rate"), prof.get("rate"), _get(ic, "loadgen", "request_rate"),
                                             stim.get("request_rate") if isinstance(stim, dict) else None))
    set_label(labels, "num_prompts", _first(prof.get("requests"), _get(ic, "loadgen", "request_count")))
    set_label(labels, "model", _first(_get(ic, "models", "items", 0, "name"), _get(ic, "endpoint", "model_names", 0),
                                      _get(ic, "model_names", 0)))
    ds = _get(ic, "datasets", 0)
    if isinstance(ds, dict):
        set_label(labels, "input_len", _get(ds, "prompts", "isl", "mean"))
        set_label(labels, "output_len", _get(ds, "prompts", "osl", "mean"))
        set_label(labels, "dataset", _dataset_name(ds))
    elif not _config_layout(ic) and any(k in ic for k in GENAI_PERF_KEYS[2:]):  # genai-perf's command-line layout
        model = ic.get("model") or ic.get("formatted_model_name")
        set_label(labels, "model", model[0] if isinstance(model, list) and model else model)
        set_label(labels, "concurrency", ic.get("concurrency"))
        set_label(labels, "request_rate", ic.get("request_rate"))
        set_label(labels, "num_prompts", _first(ic.get("request_count"), ic.get("num_prompts")))
        set_label(labels, "input_len", ic.get("synthetic_input_tokens_mean"))
        osl = finite(ic.get("output_tokens_mean"))
        if osl is not None and osl > 0:  # -1: not set
            set_label(labels, "output_len", osl)
        set_label(labels, "dataset", _first(ic.get("input_dataset"), ic.get("input_file"),
                                            str(ic.get("prompt_source") or "").lower() or None))
        set_label(labels, "endpoint", ic.get("endpoint_type"))
        if ic.get("service_kind") == "triton":  # the Triton model's backend; a default for other services
            set_label(labels, "backend", ic.get("backend"))
    else:  # sections: AIPerf's pre-1.0 `input`, genai-perf's config file (`perf_analyzer`, `input`, …)
        set_label(labels, "input_len", _first(_get(ic, "input", "prompt", "input_tokens", "mean"),
                                              _get(ic, "input", "synthetic_tokens", "mean")))
        set_label(labels, "output_len", _first(_get(ic, "input", "prompt", "output_tokens", "mean"),
                                               _get(ic, "input", "output_tokens", "mean")))
        source = _get(ic, "input", "prompt_source")
        set_label(labels, "dataset", _first(_get(ic, "input", "public_dataset"), _get(ic, "input", "custom_dataset_type"),
                                            _get(ic, "input", "file") or None, source.lower() if isinstance(source, str) else None))
        if _get(ic, "endpoint", "service_kind") == "triton":  # as in the command-line layout
            set_label(labels, "backend", _get(ic, "endpoint", "backend"))
        meas = _get(ic, "perf_analyzer", "measurement")
        if isinstance(meas, dict) and meas.get("mode") == "request_count":
            set_label(labels, "num_prompts", meas.get("num"))
    set_label(labels, "endpoint", _first(_get(ic, "endpoint", "type")))
    return labels


def _config_layout(ic: dict[str, Any]) -> bool:
    """genai-perf's config-file layout (0.0.16 writes it for command-line runs too; 0.0.12 wrote the
    arguments): its settings in sections (`perf_analyzer`, `endpoint`, `input`); it shares
    `subcommand` with the command-line layout."""
    return any(isinstance(ic.get(k), dict) for k in ("perf_analyzer", "endpoint", "input"))


def _dataset_name(ds: dict[str, Any]) -> Any:
    """A dataset's name, not its kind: AIPerf names its only dataset "main" and says what it is in
    other keys. AIPerf 0.10 writes `{"name": "main", "type": "public", "dataset": "sharegpt", …}` for
    `--public-dataset sharegpt` (seen in a real 0.10.0 file: tests/fixtures/real/aiperf/, from
    anud18/qwen36-vllm-aiperf-benchmark), so `dataset` is read; a file dataset's `path`/`file` is
    not seen in a real file yet and is read only when present; else the kind (`synthetic`)."""
    name = ds.get("name")
    if isinstance(name, str) and name not in ("", "main"):
        return name
    for k in ("dataset", "path", "file"):
        v = ds.get(k)
        if isinstance(v, str) and v:
            return v
    return ds.get("type")


# ------------------------------------------------------------------------- sweep / confidence aggregates

_AGG_KEY = re.compile(r"^(?P<tag>.+)_(?P<stat>avg|p50|p90|p95|p99)$")


def _aggregate_info(d: Any) -> dict[str, Any] | None:
    """Where an aggregate keeps its `aggregation_type` and run counts: at the top in a sweep
    aggregate, under `metadata` in a confidence aggregate (AIPerf 0.13's real files, beside
    `schema_version`, `aiperf_version` and `metrics`); None for any other document."""
    if not isinstance(d, dict):
        return None
    if "aggregation_type" in d and isinstance(d.get("per_combination_metrics"), list):
        return d
    meta = d.get("metadata")
    top = d if "aggregation_type" in d else meta if isinstance(meta, dict) and "aggregation_type" in meta else None
    return top if top is not None and isinstance(d.get("metrics"), dict) else None


def is_aggregate(d: Any) -> bool:
    """AIPerf's `profile_export_aiperf_sweep.json` / `profile_export_aiperf_aggregate.json`."""
    return _aggregate_info(d) is not None


def _parameter_labels(params: dict[str, Any], labels: dict[str, Any]) -> None:
    """A swept parameter as a label: AIPerf names it by its config path in a confidence aggregate
    (`phases.profiling.concurrency`) and by its last part in a sweep aggregate (`concurrency`), and
    names its own folders by that last part: so does optlog. A scenario's nested override is not a
    value and stays in raw."""
    for k, v in params.items():
        name = setting_name(str(k).rsplit(".", 1)[-1])
        if name and not isinstance(v, (dict, list)):
            set_label(labels, name, v)


def parse_aggregate(doc: Doc, d: dict[str, Any]) -> list[ParsedResult]:
    """One run per parameter combination of a sweep aggregate (or one for a confidence aggregate):
    each figure is the mean over the trials (`{tag}_{stat}.mean`, in its `unit`); its spread over
    the trials is kept as `raw.<key>.std`, `.ci_low`, `.ci_high`; labels: the combination's
    parameters, `trials` (successful runs per combination), `aggregation`, and where the file
    says them `model` and `tool_version`."""
    info = _aggregate_info(d) or d
    meta = obj(d, "metadata")
    sweep = isinstance(d.get("per_combination_metrics"), list)
    combos: list[Any] = d["per_combination_metrics"] if sweep else \
        [{"parameters": d.get("parameters") or meta.get("variation_values") or {}, "metrics": d.get("metrics")}]
    # successful runs per combination: over the combinations the sweep ran (its metadata says how
    # many), not only those the file still lists
    n_comb = max(1, int(finite(meta.get("num_combinations")) or len(combos)))
    out: list[ParsedResult] = []
    for i, c in enumerate(combos):
        if not isinstance(c, dict) or not isinstance(c.get("metrics"), dict):
            raise fail("aiperf", doc.path, f"combination {i + 1}: no metrics object", field_="per_combination_metrics")
        stats: dict[str, dict[str, Any]] = {}
        metrics: dict[str, float] = {}
        for key, v in c["metrics"].items():
            if not isinstance(v, dict):
                continue
            m = _AGG_KEY.match(key)
            mean = finite(v.get("mean"))
            if mean is None:
                continue
            metrics["raw." + metric_key(key)] = mean
            for extra in ("std", "ci_low", "ci_high"):
                g = finite(v.get(extra))
                if g is not None:
                    metrics[f"raw.{metric_key(key)}.{extra}"] = g
            if m:
                stats.setdefault(m.group("tag"), {"unit": v.get("unit")})[m.group("stat")] = mean
            elif "avg" in v:
                # AIPerf 0.11: the metric by its tag (`time_to_first_token`), its statistics inside:
                # `mean` (over the trials) of the run's avg, and the percentiles as the file gives them
                stats[key] = {"unit": v.get("unit"), "avg": mean, **{st: v[st] for st in STATS if st != "avg" and st in v}}
        metrics.update(_canonical(stats, None))
        labels: dict[str, Any] = {}
        params: dict[str, Any] = c["parameters"] if isinstance(c.get("parameters"), dict) else {}
        _parameter_labels(params, labels)
        ok = finite(info.get("num_successful_runs"))
        if ok is not None:
            set_label(labels, "trials", ok / n_comb if sweep else ok)
        set_label(labels, "aggregation", info.get("aggregation_type"))
        set_label(labels, "model", meta.get("model"))
        set_label(labels, "tool_version", d.get("aiperf_version"))
        labels["tool"] = "aiperf"
        apply_key_map(doc, "aiperf", c, metrics, labels)
        out.append(ParsedResult(labels=labels, metrics=metrics, raw=clean({"parameters": params,
                                "metadata": d.get("metadata")}), tool="aiperf",
                                source=f"{doc.path}#combination {i + 1}" if sweep else doc.path, file=doc.path, index=i))
    return out


def is_aggregate_csv(data: bytes) -> bool:
    """The CSV beside an aggregate's JSON: `metric,mean,std,…,unit` rows (a confidence aggregate), or
    one row per combination with `{tag}_{stat}_mean` columns and a Metadata section (a sweep)."""
    head = data[:4096].lstrip()
    return head.startswith(b"metric,mean,std,") or (
        b"_avg_mean," in head.split(b"\n", 1)[0] and b"\nAggregation Type," in data)


_AGG_STATS = ("mean", "std", "min", "max", "cv")


def parse_aggregate_csv(doc: Doc) -> list[ParsedResult]:
    """AIPerf's `profile_export_aiperf_aggregate.csv` / `profile_export_aiperf_sweep.csv`: the JSON
    aggregate's figures printed to 2 places, then sections (a sweep's Best Configurations and Pareto
    Optimal Points), the metadata last. Read into the JSON's shape and read as it is; each result carries its decimal
    places, so the CSV beside its JSON is one measurement with it."""
    tables: list[list[list[str]]] = [[]]
    for r in csv_rows(doc, "aiperf"):
        if r:
            tables[-1].append(r)
        elif tables[-1]:
            tables.append([])
    first = tables[0]
    # the metadata: the last section's `field,value` rows (titled `Metadata` in a sweep's CSV)
    meta = {r[0]: r[1] for r in tables[-1] if len(r) == 2 and r != ["Field", "Value"]} if len(tables) > 1 else {}
    places: list[int] = []

    def mean(cell: str) -> float | None:
        v = finite(cell.strip())
        if v is not None:
            places.append(len(cell.strip().partition(".")[2]))
        return v

    if len(first) < 2:
        raise fail("aiperf", doc.path, "no metric rows in the aggregate CSV", line=1)
    head = [h.strip() for h in first[0]]
    if head[0] == "metric":
        unit = head.index("unit") if "unit" in head else None
        metrics = {r[0]: {**{h: finite(r[i]) for i, h in enumerate(head) if 0 < i < len(r) and h in _AGG_STATS[1:]},
                          "mean": mean(r[head.index("mean")]), "unit": r[unit] if unit is not None and unit < len(r) else None}
                   for r in first[1:] if len(r) == len(head)}
        d: dict[str, Any] = {"metadata": {"aggregation_type": meta.get("Aggregation Type") or "confidence",
                                          "num_successful_runs": finite(meta.get("Successful Runs")),
                                          "variation_values": _literal(meta.get("Variation Values"), "Variation Values"),
                                          "model": meta.get("Model")}, "metrics": metrics}
    else:
        stat_cols = {i: h.rsplit("_", 1) for i, h in enumerate(head) if h.rsplit("_", 1)[-1] in _AGG_STATS and "_" in h}
        combos = []
        for r in first[1:]:
            m: dict[str, dict[str, Any]] = {}
            for i, (key, st) in stat_cols.items():
                if i < len(r):
                    m.setdefault(key, {})[st] = mean(r[i]) if st == "mean" else finite(r[i])
            combos.append({"parameters": {h: r[i] for i, h in enumerate(head) if i not in stat_cols and i < len(r)},
                           "metrics": m})
        d = {"aggregation_type": meta.get("Aggregation Type") or "sweep", "per_combination_metrics": combos,
             "num_successful_runs": finite(meta.get("Number of Successful Runs")), "metadata": meta}
    out = parse_aggregate(doc, d)
    for res in out:
        res.decimals = max(places, default=None)
        res.raw["format"] = "csv"
    return out


def _literal(text: str | None, field_: str) -> Any:
    """A Python literal AIPerf printed in a CSV cell (`{'phases.profiling.concurrency': 1}`), under
    the number rule every reader keeps: a numeral in it past the largest double (`1e999`, read as
    inf) is refused naming `field_` (PastDouble), not taken for a value; the names inf and nan are
    no literal (nothing is read)."""
    if not text:
        return None
    try:
        tree = ast.parse(text.strip(), mode="eval")
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, (float, complex)) \
                    and not cmath.isfinite(node.value):
                raise PastDouble(ast.get_source_segment(text.strip(), node) or str(node.value), field_=field_)
        return ast.literal_eval(tree)
    except PastDouble:
        raise
    except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
        return None


# ----------------------------------------------------------------------------------------- CSV

_HEADER = re.compile(r"^(?P<name>.*?)(?: \((?P<unit>[^()]*)\))?$")
_CSV_CANON = {
    "time to first token": "ttft", "request latency": "e2e_latency", "inter token latency": "tpot",
    "inter chunk latency": "itl",
}


def _is_csv(doc: Doc) -> bool:
    head = doc.data[:200].lstrip()
    return head.startswith(b"Metric,") or doc.path.lower().endswith(".csv")


def _slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")


def parse_csv(doc: Doc, tool: str = "aiperf") -> ParsedResult:
    rows = csv_rows(doc, tool)
    tables: list[list[list[str]]] = []
    cur: list[list[str]] = []
    for r in rows:
        if not r or all(not c.strip() for c in r):
            if cur:
                tables.append(cur)
            cur = []
            continue
        cur.append(r)
    if cur:
        tables.append(cur)
    stat_rows: dict[str, dict[str, Any]] = {}
    singles: dict[str, float] = {}
    units: dict[str, str] = {}
    for t in tables:
        head = [c.strip() for c in t[0]]
        if not head or head[0] != "Metric":
            continue  # e.g. the GPU telemetry table
        if head[1:2] == ["Value"]:
            for r in t[1:]:
                m = _HEADER.match(r[0].strip())
                assert m
                v = finite(r[1]) if len(r) > 1 else None
                if v is not None:
                    singles[m.group("name").strip().lower()] = v
                    units[m.group("name").strip().lower()] = m.group("unit") or ""
        else:
            for r in t[1:]:
                m = _HEADER.match(r[0].strip())
                assert m
                name = m.group("name").strip().lower()
                stat_rows[name] = {"unit": m.group("unit") or "", **{h: r[i] for i, h in enumerate(head) if i and i < len(r)}}
    if not stat_rows and not singles:
        raise fail(tool, doc.path, "no `Metric,…` table (is this AIPerf's profile_export_aiperf.csv?)", line=1)
    if not any(k in singles for k in ("request throughput", "output token throughput", "request count")):
        raise fail(tool, doc.path, "no Request Throughput, Output Token Throughput or Request Count row",
                   field_="Request Throughput")
    metrics: dict[str, float] = {}
    # a single-figure metric's CSV row is its tag in words: `output token throughput`, `request count`
    for dst, tag in M.peer_names("aiperf"):
        if tag == "benchmark_duration":
            continue
        name = tag.replace("_", " ")
        if name in singles:
            metrics[dst] = singles[name]
    if "benchmark duration" in singles:
        metrics["duration_s"] = (_to_ms(singles["benchmark duration"], units.get("benchmark duration") or "sec") or 0) / 1000.0
    dur = metrics.get("duration_s")
    isl, osl = singles.get("total input sequence length"), singles.get("total output sequence length")
    if dur:
        if "input_throughput" not in metrics and isl is not None:
            metrics["input_throughput"] = isl / dur
        if "total_token_throughput" not in metrics and isl is not None and osl is not None:
            metrics["total_token_throughput"] = (isl + osl) / dur
    for name, short in _CSV_CANON.items():
        s = stat_rows.get(name)
        if not s:
            continue
        targets = [short] + (["itl"] if name == "inter token latency" and "inter chunk latency" not in stat_rows else [])
        for st, c in STATS.items():
            v = _to_ms(s.get(st), s.get("unit"))
            if v is not None:
                for tname in targets:
                    metrics[f"{c}_{tname}_ms"] = v
    if "effective concurrency" in stat_rows and finite(stat_rows["effective concurrency"].get("avg")) is not None:
        metrics["mean_inflight"] = finite(stat_rows["effective concurrency"]["avg"])  # type: ignore[assignment]
    elif "mean_e2e_latency_ms" in metrics and "request_throughput" in metrics:
        metrics["mean_inflight"] = metrics["mean_e2e_latency_ms"] / 1000.0 * metrics["request_throughput"]
    for name, s in stat_rows.items():
        base = "raw." + _slug(name)
        f = finite(s.get("avg"))
        if f is not None:
            metrics[base] = f
        for st in RAW_STATS:
            g = finite(s.get(st))
            if g is not None:
                metrics[f"{base}.{st}"] = g
    for name, v in singles.items():
        metrics["raw." + _slug(name)] = v
    labels: dict[str, Any] = {"tool": tool}
    apply_key_map(doc, tool, {**{_slug(k): v for k, v in singles.items()}, **{_slug(k): v for k, v in stat_rows.items()}},
                  metrics, labels)
    raw = {"format": "csv", "units": {**{_slug(k): s["unit"] for k, s in stat_rows.items()},
                                      **{_slug(k): u for k, u in units.items()}}}
    places = [len(c.strip().partition(".")[2]) for r in rows[1:] for c in r[1:] if finite(c.strip()) is not None]
    return ParsedResult(labels=labels, metrics=metrics, raw=raw, tool=tool, source=doc.path, file=doc.path, index=0,
                        decimals=max(places, default=None))


def parse_genai_perf(doc: Doc) -> list[ParsedResult]:
    return parse(doc, "genai-perf")
