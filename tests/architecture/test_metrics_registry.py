"""Metrics and labels are known in one table (issue 46, item 4): optlog/core/metrics.py. Outside it,
no module spells a list of metrics or labels of its own (a tuple, list, set or dict of three or more
registered names or peer spellings: `CANONICAL`, `THROUGHPUT_METRICS`, `SHAPE_LABELS`,
`WORKLOAD_KEYS`, `SETTING_NAMES` were such lists), nor a table of unit suffixes or "higher is
better" words, nor tests a metric's name for a unit suffix (`name.endswith("_ms")`). Such code asks
the registry (`M.unit`, `M.better`, `M.time_scale`, `M.canonical()`, `M.role`, `M.labels_with`,
`M.HEADLINE_THROUGHPUT`, …), so a new metric or label is one row there (or one `register(...)` line,
tests/integration/test_metric_registered.py). Read from the source with `ast`; the names come from
the registry, so a new row is covered too. On 3fe9ef8 (before the registry) it finds 25 sites in 13
modules."""

from __future__ import annotations

import ast
from pathlib import Path

from optlog.core import metrics as M

ROOT = Path(__file__).resolve().parents[2]
REGISTRY = "optlog/core/metrics.py"
MIN_NAMES = 3  # a collection of this many registered names is a list of the registry's

# (file, the registered names in the literal): a collection of registered names that is not a list of
# the registry's vocabulary, with the reason
NOT_A_LIST: dict[tuple[str, frozenset[str]], str] = {
    ("optlog/render/report.py", frozenset({"workload", "config", "concurrency"})):
        "a table's header row (workload, config, concurrency, …)",
    ("optlog/render/report.py", frozenset({"model", "concurrency", "config"})):
        "the labels a diagnosis row is named by in the report (its presentation)",
    ("optlog/core/report.py", frozenset({"tp", "pp", "dp"})): "GPUs = tp × pp × dp (arithmetic on the sizes)",
    ("optlog/runs/environment.py", frozenset({"tp", "pp", "ep", "dp"})): "SGLang's server_info `tp_size` → `tp`",
    ("optlog/runs/parsers/sglang.py", frozenset({"tp", "pp", "ep", "dp"})): "SGLang's server_info `tp_size` → `tp`",
    ("optlog/runs/environment.py", frozenset({"sglang", "vllm", "flashinfer", "torch", "triton", "tensorrt_llm"})):
        "the Python packages whose versions a run records (package names, not labels)",
    ("optlog/runs/parsers/guidellm.py", frozenset({"request_throughput", "input_throughput", "output_throughput",
                                                   "total_token_throughput"})):
        "GuideLLM's CSV header pairs (group, statistic) → metric: its file format",
    ("optlog/runs/parsers/sglang.py", frozenset({"duration_s", "total_token_throughput", "mean_inflight", "concurrency"})):
        "SGLang's JSONL renames: its `concurrency` is a measured mean in flight, not the label",
    ("optlog/service/nextexp.py", frozenset({"output_throughput", "input_throughput", "duration_s", "mean_inflight",
                                             "completed"})):
        "the figures the roofline's work estimate reads (core.diagnosis.estimate_work)",
}
# whole files whose figures are a record or a format, one value per name: SGLang bench_serving's JSONL
# key order (service/bench.py), the load generator's own record (loadgen/core.py), the demo's made-up
# numbers (service/demo.py)
NOT_A_LIST_FILES = {"optlog/service/bench.py", "optlog/loadgen/core.py", "optlog/service/demo.py"}


def _names() -> set[str]:
    return set(M.METRICS) | set(M.LABELS)


def _strings(node: ast.AST, depth: int = 0) -> list[str]:
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        out = [e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
        if depth == 0:  # a table of pairs: (("_ms", "ms"), ("_s", "s"), …)
            out += [s for e in node.elts if isinstance(e, ast.Tuple) for s in _strings(e, 1)]
        return out
    if isinstance(node, ast.Dict):
        return [e.value for e in [*node.keys, *node.values]
                if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    return []


def _suffix_test(node: ast.AST, suffixes: set[str]) -> str | None:
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("endswith", "removesuffix") and node.args):
        arg = node.args[0]
        for s in ([arg.value] if isinstance(arg, ast.Constant) else _strings(arg)):
            if s in suffixes:
                return s
    return None


def violations(text: str, rel: str) -> list[str]:
    names = _names()
    suffixes = {s for s, _ in M.NAME_UNITS}
    words = set(M.HIGHER_WORDS)
    out = []
    for node in ast.walk(ast.parse(text)):
        strings = _strings(node)
        listed = sorted({s for s in strings if s in names})
        if len(listed) >= MIN_NAMES and rel not in NOT_A_LIST_FILES and (rel, frozenset(listed)) not in NOT_A_LIST:
            out.append(f"{rel} line {node.lineno}: a list of metrics/labels of its own ({', '.join(listed[:4])}, …): "
                       "ask optlog.core.metrics")
        if len({s for s in strings if s in suffixes} | {s for s in strings if s in words}) >= MIN_NAMES:
            out.append(f"{rel} line {node.lineno}: a table of unit suffixes or direction words: "
                       "optlog.core.metrics has it")
        if (suffix := _suffix_test(node, suffixes)) is not None:
            out.append(f"{rel} line {node.lineno}: reads a unit from a name's suffix {suffix!r}: ask "
                       "optlog.core.metrics (unit, time_scale, better)")
    return out


def test_metrics_and_labels_are_listed_only_in_the_registry() -> None:
    found = []
    for path in sorted((ROOT / "optlog").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel != REGISTRY:
            found += violations(path.read_text(), rel)
    assert not found, "\n".join(found)


def test_the_rule_can_fail() -> None:
    lists = violations('SHAPE = ("config", "concurrency", "tp")\n'
                       'M = {"output_throughput": 1, "request_throughput": 2, "mean_ttft_ms": 3}\n', "x.py")
    assert len(lists) == 2, lists
    assert violations('def f(n):\n    return n.endswith("_ms")\n', "x.py")
    assert violations('T = (("_ms", "ms"), ("_s", "s"), ("_w", "W"))\n', "x.py")
    assert violations('H = ("throughput", "tflops", "goodput")\n', "x.py")
    assert not violations('A = ("config", "output_throughput")\n', "x.py")  # two names: a pair, not a list
    # a name registered later is covered: the rule reads the registry
    M.register(M.Metric("zz_one_j", "J", "lower", "energy"))
    M.register(M.Metric("zz_two_j", "J", "lower", "energy"))
    try:
        assert violations('Z = ("zz_one_j", "zz_two_j", "config")\n', "x.py")
    finally:
        M.unregister("zz_one_j")
        M.unregister("zz_two_j")
    assert not violations('Z = ("zz_one_j", "zz_two_j", "config")\n', "x.py")


# The bare names: where one is a role (the report's load point) it is the registry's name for it
# (`M.LOAD_POINT`). Readers that set the label, a help text's example and a peer's record still spell
# them; the count may only go down (on 3fe9ef8: `concurrency` 56 in 23 modules, `output_throughput`
# 41 in 22).
BARE_CEILING = {"concurrency": 41, "output_throughput": 32}


def bare_names(text: str) -> dict[str, int]:
    counts = dict.fromkeys(BARE_CEILING, 0)
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Constant) and node.value in counts:
            counts[node.value] += 1
    return counts


def test_bare_metric_and_label_names_only_go_down() -> None:
    total = dict.fromkeys(BARE_CEILING, 0)
    for path in sorted((ROOT / "optlog").rglob("*.py")):
        if path.relative_to(ROOT).as_posix() != REGISTRY:
            for k, n in bare_names(path.read_text()).items():
                total[k] += n
    over = {k: n for k, n in total.items() if n > BARE_CEILING[k]}
    assert not over, f"bare names past their ceiling {BARE_CEILING}: {over} (ask optlog.core.metrics)"
    assert bare_names('x = "concurrency"\ny = ("concurrency", "output_throughput")\n') == {
        "concurrency": 2, "output_throughput": 1}
