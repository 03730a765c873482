"""The bounds on everything optlog reads, in one place.

Files reach teammates through `git pull`, and an agent's arguments are not checked by a person: a
small hostile input must be refused in well under a second (exit 2, naming file, line and field)
instead of exhausting memory, disk or the stack. Every reader takes its bound from here, so a
limit is changed once and the tests, the bench and the docs (docs/limits.md) quote one number.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Limits:
    file_bytes: int = 4 * 1024 * 1024
    """Any YAML or JSON document optlog reads (hypothesis, run spec, optlog.yaml, todowrite, a plan)."""
    depth: int = 64
    """Nesting of mappings and lists in one document."""
    nodes: int = 200_000
    """Values in one document after YAML aliases are expanded (a "billion laughs" stops here)."""
    line_chars: int = 1_000
    """One-line text: a title, a label value, a name."""
    text_chars: int = 65_536
    """Multi-line text: a statement, a rationale, a reason, a note, a todo, any string in a file."""
    arg_chars: int = 65_536
    """One command-line argument."""
    matrix_points: int = 10_000
    """Points one launch plans (matrix × include × repeats)."""
    expr_chars: int = 2_000
    """A prediction expression, a `--where` condition, a `{{ }}` placeholder."""
    expr_depth: int = 50
    """Nesting of one expression (operators and parentheses)."""
    int_max: int = 2**63 - 1
    """Any whole number optlog takes (a run or launch id, a limit, an offset, a count): the largest
    integer SQLite and PostgreSQL store; past it a lookup was an internal error (issue 42)."""
    row_id_max: int = 2**31 - 1
    """The largest id a run or launch row can have: the id columns are INTEGER, 32 bits on
    PostgreSQL. A lookup past it finds nothing (never asks the database, whose driver would fail)."""
    result_bytes: int = 256 * 1024 * 1024
    """A benchmark result file `run import` or a launch reads (a GuideLLM benchmarks.json with every
    request, an AIPerf export): read whole and parsed in memory, so bounded; only a regular file."""
    dataset_bytes: int = 1024 * 1024 * 1024
    """A prompt dataset `bench --dataset` reads (ShareGPT's full JSON is ~670 MB)."""
    bench_prompts: int = 100_000
    """Measured requests of one `bench` level (and its warm-up): every prompt is made before the
    first request is sent, so 10**20 would never answer."""
    bench_tokens: int = 1_048_576
    """`bench` input_len and output_len: tokens of one request (2**20, beyond any served context)."""
    bench_prompt_tokens: int = 50_000_000
    """num_prompts × input_len of one `bench` level: the random prompt text made in memory (~200 MB)."""
    bench_concurrency: int = 100_000
    """One `bench` concurrency level (in-flight requests)."""
    bench_timeout_s: float = 86_400.0
    """`bench` per-request timeout: a day."""
    list_page: int = 1_000
    """Items `run list` gives without --limit: the first page, with `total` and `next_offset`
    (100,000 runs printed 6 MB in 25 s); --limit and --offset give more."""


LIMITS = Limits()
