"""llama.cpp's `llama-bench` (`-o json`, `-o jsonl`, its markdown table) and `llama-batched-bench`
(its markdown table, `--output-format jsonl`): one run per test row.

llama-bench: each row is one test (`pp512`: prompt processing of 512 tokens; `tg128`: generating
128; `pp512+tg128`; `… @ d4096` at a context depth), repeated `-r` times; `avg_ts` (t/s) is the
mean rate over the repetitions. Canonical metrics: `input_throughput` ← avg_ts of a pp test,
`output_throughput` ← of a tg test, `total_token_throughput` ← of a pp+tg test. Kept as raw:
`raw.avg_ts`, `raw.stddev_ts`, `raw.avg_ns`, `raw.stddev_ns` (per-repetition samples are left out).
Labels: `model` (model_type, or the table's model), `test` (without its depth: `tg128`, and an
older build's `pp 64` spelt `pp64`), `input_len` (n_prompt), `output_len` (n_gen), `depth` (n_depth;
0 too wherever the file names depths, so the baseline is a depth and one test compares across them), `backend`, `gpu`, `cpu`, and the settings the row was run with (in
JSON every other key: `n_gpu_layers`, `n_batch`, `n_threads`, `type_k`, `flash_attn`, `repack`, …;
in the table its columns, `ngl` → `n_gpu_layers`, …); `tool_version` ← build_number (`build:
8e672efe (3010)` in the table), `build` ← build_commit, neither for `build: unknown (0)` (a build
from a source without git).
The markdown table gives t/s as `avg ± std`: `raw.stddev_ts` from it. A text holding several
invocations (a script's log: one table and one `build:` line per device or setting) gives each row
the build line that closes its table and, as the rows of separate invocations may differ in what
the table does not show (the devices), the label `invocation` (1, 2, …) so they are never pooled.

llama-batched-bench: each row runs `B` sequences in parallel, each with PP prompt and TG generated
tokens. `input_throughput` ← S_PP t/s, `output_throughput` ← S_TG t/s, `total_token_throughput` ←
S t/s, `duration_s` ← T s; labels `input_len` (PP), `output_len` (TG), `concurrency` (B), `n_kv`,
and the run's settings from the `main: n_kv_max = …` line above the row (or the JSONL keys); a log of
several runs labels each row's `invocation` as llama-bench's does.
"""

from __future__ import annotations

import re
from typing import Any

from optlog.runs.parsers._common import (Doc, ParsedResult, check_numeral, clean, fail, finite, jsonl_objects, put,
                                         set_label)
from optlog.runs.parsers.keymap import apply_key_map

TOOL = "llama-bench"
BATCHED = "llama-batched-bench"
# the keys of a llama-bench JSON row that are not settings: what was measured, the build, the
# machine and the model (read under their own labels or kept as raw); every other key is a setting the
# row was run with and a label, so the settings each new llama.cpp build adds (no_op_offload, no_host,
# repack, load_mode, use_direct_io, …) keep runs apart without a change here
NOT_SETTINGS = frozenset({"build_commit", "build_number", "cpu_info", "gpu_info", "backends", "backend",
                          "model_filename", "model_type", "model_size", "model_n_params", "n_prompt", "n_gen",
                          "n_depth", "test_time", "avg_ns", "stddev_ns", "avg_ts", "stddev_ts", "samples_ns",
                          "samples_ts"})
COLUMNS = {"model": "model", "backend": "backend", "ngl": "n_gpu_layers", "threads": "n_threads",
           "n_batch": "n_batch", "n_ubatch": "n_ubatch", "fa": "flash_attn", "type_k": "type_k", "type_v": "type_v",
           "sm": "split_mode", "mmap": "use_mmap", "dev": "devices", "ts": "tensor_split", "mg": "main_gpu",
           "nkvo": "no_kv_offload", "embd": "embeddings", "n_cpu_moe": "n_cpu_moe", "ot": "tensor_buft_overrides"}
# `pp512`, `tg128`, `pp512+tg128`, `… @ d4096`; older builds wrote `pp 512` / `tg 128` (a space)
_TEST = re.compile(r"^(?:pp ?(?P<pp>\d+))?(?:\+)?(?:tg ?(?P<tg>\d+))?(?: @ d(?P<d>\d+))?$")


def is_markdown(text: str) -> str | None:
    """`llama-bench` or `llama-batched-bench` when the text holds that tool's markdown table."""
    for line in text.splitlines()[:400]:
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) > 3 and line.lstrip().startswith("|"):
            if "test" in cells and "t/s" in cells and "model" in cells:
                return TOOL
            if cells[:3] == ["PP", "TG", "B"] and "S_PP t/s" in cells:
                return BATCHED
    return None


def _row_metrics(test_pp: float, test_tg: float, ts: float | None, metrics: dict[str, float]) -> None:
    if ts is None:
        return
    if test_pp and test_tg:
        metrics["total_token_throughput"] = ts
    elif test_pp:
        metrics["input_throughput"] = ts
    elif test_tg:
        metrics["output_throughput"] = ts


def parse(doc: Doc) -> list[ParsedResult]:
    text = doc.text
    if is_markdown(text) == TOOL:
        return _parse_table(doc, text)
    out: list[ParsedResult] = []
    for i, (line, o) in enumerate(jsonl_objects(doc, TOOL)):
        if "avg_ts" not in o or not ("n_prompt" in o or "n_gen" in o):
            raise fail(TOOL, doc.path, "no avg_ts, n_prompt or n_gen key (is this llama-bench -o json / jsonl?)",
                       line=line, field_="avg_ts")
        pp, tg = finite(o.get("n_prompt")) or 0, finite(o.get("n_gen")) or 0
        metrics: dict[str, float] = {}
        _row_metrics(pp, tg, finite(o.get("avg_ts")), metrics)
        for k in ("avg_ts", "stddev_ts", "avg_ns", "stddev_ns"):
            put(metrics, f"raw.{k}", o.get(k))
        labels: dict[str, Any] = {}
        set_label(labels, "model", o.get("model_type"))
        fn = o.get("model_filename")
        set_label(labels, "model_file", fn.replace("\\", "/").rsplit("/", 1)[-1] if isinstance(fn, str) else None)
        depth = finite(o.get("n_depth"))
        set_label(labels, "test", _test_name(pp, tg))
        set_label(labels, "input_len", pp or None)
        set_label(labels, "output_len", tg or None)
        set_label(labels, "depth", None if depth is None else int(depth))  # 0 is a depth: the baseline
        set_label(labels, "backend", o.get("backends") or o.get("backend"))
        set_label(labels, "gpu", o.get("gpu_info"))
        set_label(labels, "cpu", o.get("cpu_info"))
        for k, v in o.items():
            if k not in NOT_SETTINGS and not isinstance(v, (dict, list)):
                set_label(labels, k, v)
        _build_labels(labels, o.get("build_commit"), o.get("build_number"))
        labels["tool"] = TOOL
        apply_key_map(doc, TOOL, o, metrics, labels, line)
        rest = {k: v for k, v in o.items() if k not in ("samples_ns", "samples_ts")}
        out.append(ParsedResult(labels=labels, metrics=metrics, raw=clean(rest), tool=TOOL,
                                source=f"{doc.path}:{line}", file=doc.path, index=i))
    return out


def _build_labels(labels: dict[str, Any], commit: Any, number: Any) -> None:
    """`build` ← the commit, `tool_version` ← the build number; llama.cpp built from a source without
    git (a tarball, an sdist) writes `build: unknown (0)`: a placeholder, so no label."""
    if finite(number):  # 0: unknown
        set_label(labels, "tool_version", number)
    if isinstance(commit, str) and commit and commit != "unknown":
        set_label(labels, "build", commit)


def _test_name(pp: float, tg: float) -> str:
    """The test without its depth (`tg128`, not `tg128 @ d512`): the depth is its own label, so one
    test compares across depths (`compare --by depth` with the test fixed)."""
    return "+".join(x for x in (f"pp{int(pp)}" if pp else "", f"tg{int(tg)}" if tg else "") if x)


def _table(text: str) -> list[tuple[int, list[str], dict[str, str]]]:
    """(line number, header, row) for every data row of every markdown table in the text."""
    rows: list[tuple[int, list[str], dict[str, str]]] = []
    head: list[str] | None = None
    for n, line in enumerate(text.splitlines(), 1):
        s = line.strip()
        if not s.startswith("|"):
            head = None
            continue
        cells = [c.strip() for c in s.strip("|").split("|")]
        if head is None:
            head = cells
        elif all(re.fullmatch(r":?-+:?", c) for c in cells if c):
            continue
        elif len(cells) == len(head):
            for h, c in zip(head, cells):  # `1e400 ± 0.72` read as inf was a figure dropped silently
                check_numeral(c, n, h, leading=True)
            rows.append((n, head, dict(zip(head, cells))))
    return rows


def _num_unit(v: str) -> float | None:
    m = re.match(r"^\s*([-+0-9.eE]+)", v or "")
    return finite(m.group(1)) if m else None


_BUILD = re.compile(r"^build: (\w+) \((\d+)\)", re.M)


def _invocations(text: str) -> list[tuple[int, re.Match[str] | None]]:
    """(last line, its `build:` line) of each llama-bench invocation in the text: llama-bench prints
    its table, then `build: <commit> (<number>)`, so a log of several invocations (one per device,
    build or setting, as scripts capture them) has one build line after each table."""
    ends: list[tuple[int, re.Match[str] | None]] = [(text.count("\n", 0, m.start()) + 1, m)
                                                     for m in _BUILD.finditer(text)]
    return ends or [(10**9, None)]


def _parse_table(doc: Doc, text: str) -> list[ParsedResult]:
    invocations = _invocations(text)
    out: list[ParsedResult] = []
    rows = [r for r in _table(text) if "test" in r[1] and "t/s" in r[1]]
    # a table that names a depth on some rows ran the others at depth 0: label it (the baseline)
    has_depth = any(" @ d" in r[2].get("test", "") for r in rows)
    for i, (line, head, row) in enumerate(rows):
        # the invocation a row belongs to: the first build line after it (the last one for rows after it)
        n = next((k for k, (end, _m) in enumerate(invocations) if line < end), len(invocations) - 1)
        build = invocations[n][1]
        m = _TEST.match(row.get("test", ""))
        if not m or not (m.group("pp") or m.group("tg")):
            raise fail(TOOL, doc.path, f"test {row.get('test')!r} is not ppN, tgN or ppN+tgN", line=line, field_="test")
        pp, tg, depth = (float(m.group(g) or 0) for g in ("pp", "tg", "d"))
        ts_text = row.get("t/s", "")
        avg, _sep, std = ts_text.partition("±")
        metrics: dict[str, float] = {}
        _row_metrics(pp, tg, finite(avg), metrics)
        put(metrics, "raw.avg_ts", avg)
        put(metrics, "raw.stddev_ts", std)
        if "t/s" in row and finite(avg) is None:
            raise fail(TOOL, doc.path, f"t/s {ts_text!r} is not a number", line=line, field_="t/s")
        labels: dict[str, Any] = {}
        for col, v in row.items():
            name = COLUMNS.get(col)
            if name and v:
                set_label(labels, name, v)
        set_label(labels, "test", _test_name(pp, tg))  # `pp 64` (older builds) is pp64; the depth apart
        set_label(labels, "input_len", pp or None)
        set_label(labels, "output_len", tg or None)
        set_label(labels, "depth", int(depth) if has_depth else None)
        size, params = _num_unit(row.get("size", "")), _num_unit(row.get("params", ""))
        if build:
            _build_labels(labels, build.group(1), int(build.group(2)))
        if len(invocations) > 1:  # separate runs of the tool: never pooled as repeats of one setting
            labels["invocation"] = n + 1
        labels["tool"] = TOOL
        raw = {"row": row, **({"size": row.get("size")} if size is not None else {}),
               **({"params": row.get("params")} if params is not None else {})}
        apply_key_map(doc, TOOL, row, metrics, labels, line)
        out.append(ParsedResult(labels=labels, metrics=metrics, raw=clean(raw), tool=TOOL,
                                source=f"{doc.path}:{line}", file=doc.path, index=i))
    if not out:
        raise fail(TOOL, doc.path, "no llama-bench table row (| model | … | test | t/s |)", field_="test")
    return out


# ------------------------------------------------------------------------------ llama-batched-bench

_BATCHED_MAIN = re.compile(r"(\w+) = (-?[\w.]+)")


def parse_batched(doc: Doc) -> list[ParsedResult]:
    text = doc.text
    if is_markdown(text) == BATCHED:
        # each run prints its `main: n_kv_max = …` settings line, then its table: a row has the
        # settings of the line above it, and a log of several runs tells them apart (`invocation`)
        mains = [(n, dict(_BATCHED_MAIN.findall(t))) for n, t in enumerate(text.splitlines(), 1)
                 if t.lstrip().startswith("main: n_kv_max")]
        objs: list[tuple[int, dict[str, Any]]] = []
        for n, h, r in _table(text):
            if h[:3] != ["PP", "TG", "B"]:
                continue
            ran = sum(1 for at, _s in mains if at < n)  # the runs begun above this row
            run = {"invocation": ran} if len(mains) > 1 and ran else {}
            objs.append((n, {"pp": r["PP"], "tg": r["TG"], "pl": r["B"], "n_kv": r["N_KV"], "t_pp": r["T_PP s"],
                             "speed_pp": r["S_PP t/s"], "t_tg": r["T_TG s"], "speed_tg": r["S_TG t/s"], "t": r["T s"],
                             "speed": r["S t/s"], **(mains[ran - 1][1] if ran else {}), **run}))
    else:
        objs = list(jsonl_objects(doc, BATCHED))
    out: list[ParsedResult] = []
    for i, (line, o) in enumerate(objs):
        if not any(k in o for k in ("speed", "speed_pp", "speed_tg")):
            raise fail(BATCHED, doc.path, "no speed, speed_pp or speed_tg key (is this llama-batched-bench "
                       "--output-format jsonl or its table?)", line=line, field_="speed")
        metrics: dict[str, float] = {}
        put(metrics, "input_throughput", o.get("speed_pp"))
        put(metrics, "output_throughput", o.get("speed_tg"))
        put(metrics, "total_token_throughput", o.get("speed"))
        put(metrics, "duration_s", o.get("t"))
        for k in ("t_pp", "t_tg", "n_kv"):
            put(metrics, f"raw.{k}", o.get(k))
        labels: dict[str, Any] = {}
        set_label(labels, "input_len", o.get("pp"))
        set_label(labels, "output_len", o.get("tg"))
        set_label(labels, "concurrency", o.get("pl"))
        for k in ("n_kv_max", "n_batch", "n_ubatch", "flash_attn", "is_pp_shared", "n_gpu_layers", "n_threads",
                  "n_threads_batch", "invocation"):
            set_label(labels, k, o.get(k))
        labels["tool"] = BATCHED
        apply_key_map(doc, BATCHED, o, metrics, labels, line)
        out.append(ParsedResult(labels=labels, metrics=metrics, raw=clean(o), tool=BATCHED,
                                source=f"{doc.path}:{line}", file=doc.path, index=i))
    return out
