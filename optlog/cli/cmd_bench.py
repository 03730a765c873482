"""`optlog bench URL`: the built-in load generator (each concurrency level is one recorded run)."""

from __future__ import annotations

import sys
from typing import Any

import click

from optlog.cli.binding import Call, verb
from optlog.cli.main import agent
from optlog.cli.options import JsonValue, KeyValue, pairs
from optlog.api.text import fmt_num, table
from optlog.service import bench


def _table(d: dict[str, Any]) -> str:
    rows = []
    for r in d["runs"]:
        m = r["metrics"]
        rows.append([r["id"] if r["id"] is not None else "-", r["labels"].get("concurrency", "∞"),
                     m["completed"], m["failed"] if not m.get("short") else f"{m['failed']} ({m['short']} short)", fmt_num(m["request_throughput"]), fmt_num(m["output_throughput"]),
                     fmt_num(m["mean_ttft_ms"]), fmt_num(m["p99_ttft_ms"]), fmt_num(m["mean_tpot_ms"]),
                     fmt_num(m["mean_itl_ms"]), fmt_num(m["p99_itl_ms"]), fmt_num(m["mean_e2e_latency_ms"]),
                     fmt_num(m["mean_inflight"]), fmt_num(m["duration"])])
    out = table(rows, ["run", "conc", "ok", "failed", "req/s", "out tok/s", "ttft ms", "p99 ttft", "tpot ms",
                       "itl ms", "p99 itl", "e2e ms", "inflight", "dur s"])
    for r in d["runs"]:
        if r["errors"]:
            c = r["labels"].get("concurrency", "∞")
            out += f"\nc={c} errors: " + ", ".join(f"{k} {n}" for k, n in r["errors"].items())
            if r.get("example_error"):
                out += f" (e.g. {r['example_error']})"
    if d.get("output_file"):
        out += f"\nwrote {d['output_file']}"
    return out


@click.command("bench")
@click.argument("url")
@click.option("--model", metavar="M", help="Model name sent in requests (default: the server's first /v1/models entry).")
@click.option("--api", type=click.Choice(["completions", "chat"]), default=None,
              help="/v1/completions (default) or /v1/chat/completions.")
@click.option("--concurrency", metavar="N[,N…]", help="Concurrency cap(s); a list is a sweep, one run per level.")
@click.option("--request-rate", default="inf", show_default=True, metavar="R",
              help="Poisson arrivals per second (seeded); inf = all at once under the cap.")
@click.option("--num-prompts", type=int, metavar="N", help="Measured requests per level (default 200, or the dataset size).")
@click.option("--input-len", type=int, metavar="N", help="Random prompts of about N tokens (default 128).")
@click.option("--output-len", type=int, metavar="N", help="max_tokens per request (default 128; a dataset's reply length).")
@click.option("--dataset", metavar="FILE", help="ShareGPT-style JSON or JSONL prompts.")
@click.option("--ignore-eos", is_flag=True, help="Send ignore_eos: true (vLLM, SGLang) so outputs reach --output-len.")
@click.option("--warmup", type=int, default=None, metavar="N",
              help="N requests before each level, not counted (default: a few at the first level only, "
                   "after a server (re)start).")
@click.option("--reuse-prompts", is_flag=True,
              help="The same seeded prompts at every level and run (default: fresh ones, so no level is "
                   "served from the server's prompt cache).")
@click.option("--metrics-url", metavar="URL",
              help="The server's Prometheus /metrics, scraped around each level to check optlog's token "
                   "counts against the server's (default: URL's /metrics; 'none' to skip).")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed for prompts and arrivals.")
@click.option("--timeout", type=float, default=600.0, show_default=True, metavar="S", help="Per-request timeout in seconds.")
@click.option("--header", "headers", multiple=True, metavar="K:V",
              help="Extra header (repeatable); ${VAR} is read from the environment. Never stored.")
@click.option("--extra-body", type=JsonValue("--extra-body"), metavar="JSON",
              help="JSON object merged into every request body.")
@click.option("--max-failures", type=int, metavar="N", help="Abort (and skip the remaining levels) after more than N failures.")
@click.option("--output-file", metavar="FILE", help="Append one SGLang-style JSONL line per level.")
@click.option("--label", "labels", type=KeyValue("--label"), multiple=True, metavar="K=V", help="Extra label on the recorded runs (repeatable).")
@click.option("--hypothesis", metavar="ID", help="Attach the recorded runs to this hypothesis.")
@click.option("--tag", metavar="T", help="Written as `tag` in the JSONL lines.")
@click.option("--no-record", is_flag=True, help="Measure only; do not record runs even inside a workspace.")
@agent(json={"extra_body": {"type": "object", "description": "Merged into every request body "
                                                             "(e.g. {\"min_tokens\": 4})."}})
@verb(_table, exit=lambda d, _a: 1 if any(r["status"] == "failed" for r in d["runs"]) else 0)
def bench_cmd(call: Call, url: str, no_record: bool, headers: tuple[str, ...],
              labels: tuple[tuple[str, Any], ...], **kw: Any) -> Any:
    """Load-test an OpenAI-compatible server (streaming) and record each concurrency level as a run.

    Metrics carry SGLang bench_serving's names (request_throughput, output_throughput,
    mean/median/p90/p95/p99 TTFT, TPOT, ITL, E2E, completed, failed…). API key from
    OPTLOG_BENCH_API_KEY or OPENAI_API_KEY. Outside a workspace it runs anyway and records nothing.
    Exit 1 when a level had no successful request or --max-failures stopped the sweep.
    """
    opts = bench.Options(url=url, headers=list(headers), labels=pairs(labels),
                         progress=call.narrate and sys.stderr.isatty(), **kw)
    return bench.bench(opts, None if no_record else (lambda: call.ctx), call.say)
