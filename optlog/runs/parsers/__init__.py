"""Result parsers: peer benchmark tools' result files → canonical metrics and labels (DESIGN.md §4).

    from optlog.runs.parsers import parse_result, detect_format, FORMATS
    results = parse_result([Path("result.jsonl")])            # format detected from the content
    results = parse_result([p], parser="vllm")                 # or named
    results = parse_result([p], parser="json", key_map={"output_throughput": "res.tps"})

Each `ParsedResult` has `labels` (from the file: concurrency = the configured cap, request_rate,
input_len, output_len, model, dataset, num_prompts, tool, tool_version …), `metrics` (canonical
names, plus the tool's own numeric keys as `raw.<key>`: see each module's docstring), `raw` (the
non-numeric fields, JSON-safe), `tool`, and `source` (file plus line or benchmark number).
One result per JSONL line, per GuideLLM benchmark, per AIPerf file.

Pure functions of the file bytes: no database, no writes. A file that does not match its parser
raises `BadInput` naming the parser, the file, the line and what was missing; `parse_result` checks
every file before returning anything, so callers can keep all-or-nothing semantics.

Formats (`FORMATS`, with `ALIASES`): the one registry; the CLI and run specs take their names from it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable

from optlog.core.labels import check_key
from optlog.core.limits import LIMITS
from optlog.errors import BadInput, param
from optlog.paths import read_regular
from optlog.runs.parsers import (aiperf, generic, guidellm, llama_bench, llmperf, optlog_fmt, probe, sglang, sglang_one_batch,
                                 vllm, vllm_offline)
from optlog.runs.parsers._common import Doc, ParsedResult, PastDouble, refuse, settle
from optlog.core import jsondoc

__all__ = ["FORMATS", "ParsedResult", "detect_format", "parse_bytes", "parse_result", "select_result_files",
           "unique"]


def _sglang(doc: Doc) -> list[ParsedResult]:
    return sglang.parse(doc)


def _one_batch(doc: Doc) -> list[ParsedResult]:
    return sglang_one_batch.parse(doc)


def _vllm(doc: Doc) -> list[ParsedResult]:
    return vllm.parse(doc)


def _aiperf(doc: Doc) -> list[ParsedResult]:
    return aiperf.parse(doc, "aiperf")


def _genai_perf(doc: Doc) -> list[ParsedResult]:
    return aiperf.parse(doc, "genai-perf")


def _guidellm(doc: Doc) -> list[ParsedResult]:
    return guidellm.parse(doc)


def _llama_bench(doc: Doc) -> list[ParsedResult]:
    return llama_bench.parse(doc)


def _batched(doc: Doc) -> list[ParsedResult]:
    return llama_bench.parse_batched(doc)


def _llmperf(doc: Doc) -> list[ParsedResult]:
    return llmperf.parse(doc)


def _vllm_throughput(doc: Doc) -> list[ParsedResult]:
    return vllm_offline.parse(doc, vllm_offline.THROUGHPUT)


def _vllm_latency(doc: Doc) -> list[ParsedResult]:
    return vllm_offline.parse(doc, vllm_offline.LATENCY)


def _json(doc: Doc) -> list[ParsedResult]:
    return generic.parse(doc)


def _optlog(doc: Doc) -> list[ParsedResult]:
    return optlog_fmt.parse(doc)


def _probe(doc: Doc) -> list[ParsedResult]:
    return probe.parse(doc)


# name -> (parse function, one-line description)
FORMATS: dict[str, tuple[Callable[[Doc], list[ParsedResult]], str]] = {
    "sglang": (_sglang, "SGLang bench_serving --output-file JSONL (one run per line)"),
    "sglang-one-batch": (_one_batch, "SGLang bench_one_batch_server --result-filename JSONL"),
    "vllm": (_vllm, "vLLM bench serve --save-result JSON (or --append-result JSONL, a bench sweep's run/summary)"),
    "vllm-throughput": (_vllm_throughput, "vLLM bench throughput --output-json (one run per file)"),
    "vllm-latency": (_vllm_latency, "vLLM bench latency --output-json (one run per file)"),
    "aiperf": (_aiperf, "AIPerf profile_export_aiperf.json or .csv, or a sweep/confidence aggregate"),
    "genai-perf": (_genai_perf, "genai-perf profile_export_genai_perf.json (one run per file)"),
    "guidellm": (_guidellm, "GuideLLM benchmarks.json/.yaml/.csv, legacy or current schema (one run per benchmark)"),
    "llama-bench": (_llama_bench, "llama.cpp llama-bench -o json / jsonl, or its markdown table (one run per test)"),
    "llama-batched-bench": (_batched, "llama.cpp llama-batched-bench table or jsonl (one run per row)"),
    "llmperf": (_llmperf, "Ray llmperf *_summary.json or *_individual_responses.json (one run per file)"),
    "json": (_json, "any JSON/JSONL, canonical keys or --key-map NAME=PATH"),
    "optlog": (_optlog, "optlog bench --output-file JSONL (SGLang's keys)"),
    "probe": (_probe, "python -m optlog.probes.gemm JSON (GEMM / copy work counts and rates)"),
}
ALIASES = {"sglang-bench-serving": "sglang", "bench_serving": "sglang", "bench_one_batch_server": "sglang-one-batch",
           "one-batch": "sglang-one-batch", "genai_perf": "genai-perf", "generic": "json", "gemm": "probe",
           "llama_bench": "llama-bench", "batched-bench": "llama-batched-bench",
           "llama_batched_bench": "llama-batched-bench", "vllm-bench-throughput": "vllm-throughput",
           "vllm-bench-latency": "vllm-latency"}


def canonical_format(name: str) -> str:
    n = ALIASES.get(name.strip().lower(), name.strip().lower())
    if n not in FORMATS:
        raise BadInput(f"unknown result format {name!r}; one of {', '.join(FORMATS)}", field="fmt")
    return n


def _first_object(data: bytes) -> dict | list | None:
    text = data.decode("utf-8-sig", errors="replace").strip()
    if not text:
        return None
    try:
        return jsondoc.loads(text)
    except (json.JSONDecodeError, RecursionError):
        pass
    for line in text.splitlines():
        if line.strip():
            try:
                return jsondoc.loads(line)
            except (json.JSONDecodeError, RecursionError):
                return None
    return None


def sniff(path: str, data: bytes) -> str | None:
    """The format name for this content, or None when it is not recognisable."""
    head = data[:4096].lstrip()
    if head.startswith(b"Metric,"):
        return aiperf.csv_tool(path, data)
    if aiperf.is_aggregate_csv(data):
        return "aiperf"
    if head.startswith(b"Run Info,"):
        return "guidellm"  # its CSV
    if b"|" in data[:65536]:
        md = llama_bench.is_markdown(data[:65536].decode("utf-8", errors="replace"))
        if md:
            return md
    o = _first_object(data)
    if llmperf.is_individual(o):
        return "llmperf"
    if isinstance(o, list) and o and isinstance(o[0], dict):
        o = o[0]
    if o is None and path.lower().endswith((".yaml", ".yml")) and b"benchmarks:" in data:
        return "guidellm"  # its YAML
    if not isinstance(o, dict):
        return None
    if isinstance(o.get("benchmarks"), list):
        return "guidellm"
    if "avg_ts" in o and ("n_prompt" in o or "n_gen" in o):
        return "llama-bench"
    if "speed_pp" in o or ("speed" in o and "n_kv" in o):
        return "llama-batched-bench"
    if llmperf.is_summary(o):
        return "llmperf"
    if vllm_offline.kind(o):
        return vllm_offline.kind(o)
    if aiperf.is_aggregate(o):
        return "aiperf"
    if "aiperf_version" in o or isinstance(o.get("records"), dict) and "ttft" in o["records"]:
        return "aiperf"
    if any(isinstance(v, dict) and "unit" in v and "avg" in v for v in o.values()):
        return "genai-perf" if aiperf.is_genai_perf(o) else "aiperf"
    if "op" in o and "intensity" in o and ("tflops" in o or "gbps" in o):
        return "probe"
    if o.get("tool") == "optlog" or "optlog_version" in o:
        return "optlog"
    if "batch_size" in o and ("overall_throughput" in o or "latency" in o):
        return "sglang-one-batch"
    if "tokenizer_id" in o or "endpoint_type" in o or ("model_id" in o and "date" in o):
        return "vllm"  # vLLM writes these itself; a sweep record's `random_input_len` is a parameter
    if "dataset_name" in o or "total_throughput" in o or "random_input_len" in o or "total_input" in o:
        return "sglang"
    if any(k in o for k in ("model_id", "endpoint_type", "burstiness", "request_goodput:", "tokenizer_id")) or \
            ("total_token_throughput" in o and "duration" in o):
        return "vllm"
    if "output_throughput" in o and "duration" in o:
        return "sglang"
    return None


def detect_format(path: Path | str, data: bytes | None = None) -> str:
    """The format of a result file, from its content; BadInput when it cannot be told."""
    p = Path(path)
    if data is None:
        data = read_file(p)
    fmt = sniff(str(p), data)
    if fmt is None:
        raise BadInput(f"cannot tell which tool wrote this file; pass {param('fmt')} ({', '.join(FORMATS)})",
                       file=str(p), field="fmt")
    return fmt


def read_file(p: Path) -> bytes:
    """A result file's bytes: a regular file of at most LIMITS.result_bytes (`run import`, through
    every face, and a launch's result files); anything else is bad input naming it, refused before a
    byte is read (/dev/zero, a FIFO, a socket, a folder: optlog.paths.read_regular)."""
    return read_regular(p, LIMITS.result_bytes, field="files", what="result file")


def parse_bytes(path: str, data: bytes, parser: str | None = None, key_map: dict[str, str] | None = None) -> list[ParsedResult]:
    try:
        fmt = canonical_format(parser) if parser else detect_format(path, data)
        doc = Doc(path=path, data=data, key_map=dict(key_map or {}))
        try:
            out = FORMATS[fmt][0](doc)
        except PastDouble as e:  # a numeral past the largest double, wherever a reader met it (issue 42)
            raise refuse(e, fmt, path, doc.text) from None
    except jsondoc.DuplicateKey as e:  # a JSON key said twice, wherever a reader met it (issue 42)
        raise e if e.file else e.in_file(path) from None
    if not out:
        raise BadInput(f"{fmt}: no result in the file", file=path)
    return [settle(r) for r in out]


def unique(results: list[ParsedResult]) -> tuple[list[ParsedResult], list[str]]:
    """Each measurement once: of results with the same content (`ParsedResult.measurement`: a
    `vllm bench sweep` folder's `run=N.json` repeated in its `summary.json`, an appended file read
    twice), the one with the most labels is kept (the first of equals), a rounded export of a result
    read at full precision (`ParsedResult.rounds`: AIPerf's CSV beside its JSON) is left out, and a
    sentence says which were left out and why."""
    best: dict[str, ParsedResult] = {}
    for r in results:
        m = r.measurement()
        if m is not None and (m not in best or len(r.labels) > len(best[m].labels)):
            best[m] = r
    kept: list[ParsedResult] = []
    said: list[str] = []
    for r in results:
        m = r.measurement()
        if m is None or best[m] is r:
            kept.append(r)
        else:
            said.append(f"{r.source}: the same measurement as {best[m].source} (same figures); imported once")
    # a rounded export (AIPerf's or genai-perf's CSV) of a run read here at full precision (its JSON)
    rounded = {id(r): o for r in kept if r.decimals is not None for o in kept if r.rounds(o)}
    for r in kept:
        if id(r) in rounded:
            said.append(f"{r.source}: the same measurement as {rounded[id(r)].source} (the same figures, rounded to "
                        f"{r.decimals} places); imported once")
    return [r for r in kept if id(r) not in rounded], said


def parse_result(paths: list[Path] | list[str], parser: str | None = None, key_map: dict[str, str] | None = None) -> list[ParsedResult]:
    """Parse every file (all are checked before anything is returned); one result per JSONL line,
    per GuideLLM benchmark, per AIPerf file."""
    if key_map:
        for k in key_map:
            check_key(k[len("label."):] if k.startswith("label.") else k, "key_map")
    out: list[ParsedResult] = []
    for p in paths:
        out.extend(parse_bytes(str(p), read_file(Path(p)), parser, key_map))
    return out


_PREFERRED = {
    "aiperf": ("profile_export_aiperf.json", "profile_export_aiperf.csv"),
    "genai-perf": ("profile_export_genai_perf.json", "profile_export_genai_perf.csv"),
    "guidellm": ("benchmarks.json",),
    "json": ("result.json",),
}


def select_result_files(paths: list[Path] | list[str], parser: str | None = None) -> list[Path]:
    """From everything a bench step left in its folder, the files `parser` should read: a tool's
    usual result file name when present (profile_export_aiperf.json, benchmarks.json, result.json),
    else the files whose content is that format (so AIPerf's inputs.json, vLLM's .pytorch.json, an
    argv.json or logs are left out). When nothing matches, all files are returned, so that the
    parser's error says what is wrong with them. For the launcher when a spec gives no `results`."""
    ps = [Path(p) for p in paths]
    fmt = canonical_format(parser) if parser else None
    if fmt in _PREFERRED:
        for name in _PREFERRED[fmt]:
            hit = [p for p in ps if p.name == name]
            if hit:
                return hit
    keep: list[Path] = []
    for p in ps:
        try:
            data = read_file(p)
        except BadInput:
            continue  # not a result (too large, not a regular file): the parser's error would say so
        found = sniff(str(p), data)
        if fmt is None:
            if found is not None:
                keep.append(p)
        elif fmt == "json":
            o = _first_object(data)
            if isinstance(o, dict) or (isinstance(o, list) and o and all(isinstance(x, dict) for x in o)):
                keep.append(p)
        elif found == fmt or (fmt in ("sglang", "optlog") and found in ("sglang", "optlog")):
            keep.append(p)
    return keep or ps
