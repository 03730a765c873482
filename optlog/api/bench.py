"""`optlog bench URL`: the built-in load generator (each concurrency level is one recorded run)."""

from __future__ import annotations

import sys
from typing import Annotated, Any

from optlog.api.params import pairs
from optlog.api.verb import AgentJson, Arg, Call, JsonText, Opt, Pairs, verb
from optlog.service import bench as svc


def _exit(d: dict[str, Any], _args: Any) -> int:
    """1 when a level failed (no successful request, or --max-failures stopped the sweep)."""
    return 1 if any(r["status"] == "failed" for r in d["runs"]) else 0


@verb("bench", exit=_exit)
def bench(call: Call, *,
          url: Annotated[str, Arg()],
          model: Annotated[str | None, Opt(metavar="M", help="Model name sent in requests (default: the server's "
                                                             "first /v1/models entry).")] = None,
          api: Annotated[str | None, Opt(choices=("completions", "chat"),
                                         help="/v1/completions (default) or /v1/chat/completions.")] = None,
          concurrency: Annotated[str | None, Opt(metavar="N[,N…]", help="Concurrency cap(s); a list is a sweep, "
                                                                        "one run per level.")] = None,
          request_rate: Annotated[str, Opt(show_default=True, metavar="R",
                                           help="Poisson arrivals per second (seeded); inf = all at once under "
                                                "the cap.")] = "inf",
          num_prompts: Annotated[int | None, Opt(metavar="N", help="Measured requests per level (default 200, or the "
                                                          "dataset size).")] = None,
          input_len: Annotated[int | None, Opt(metavar="N", help="Random prompts of about N tokens (default 128).")] = None,
          output_len: Annotated[int | None, Opt(metavar="N", help="max_tokens per request (default 128; a dataset's reply "
                                                         "length).")] = None,
          dataset: Annotated[str | None, Opt(metavar="FILE", help="ShareGPT-style JSON or JSONL prompts.")] = None,
          ignore_eos: Annotated[bool, Opt(help="Send ignore_eos: true (vLLM, SGLang) so outputs reach "
                                               "--output-len.")] = False,
          warmup: Annotated[int | None, Opt(metavar="N", help="N requests before each level, not counted (default: a few "
                                                     "at the first level only, after a server (re)start).")] = None,
          reuse_prompts: Annotated[bool, Opt(help="The same seeded prompts at every level and run (default: fresh "
                                                  "ones, so no level is served from the server's prompt "
                                                  "cache).")] = False,
          metrics_url: Annotated[str | None, Opt(metavar="URL", help="The server's Prometheus /metrics, scraped "
                                                 "around each level to check optlog's token counts against the "
                                                 "server's (default: URL's /metrics; 'none' to skip).")] = None,
          seed: Annotated[int, Opt(show_default=True, help="Seed for prompts and arrivals.")] = 0,
          timeout: Annotated[float, Opt(show_default=True, metavar="S", help="Per-request timeout in "
                                                                             "seconds.")] = 600.0,
          headers: Annotated[tuple[str, ...], Opt("--header", metavar="K:V",
                                                  help="Extra header (repeatable); ${VAR} is read from the "
                                                       "environment. Never stored.")] = (),
          extra_body: Annotated[Any, JsonText(), Opt(metavar="JSON", help="JSON object merged into every request "
                                                                          "body."),
                                AgentJson({"type": "object", "description": "Merged into every request body "
                                                                            "(e.g. {\"min_tokens\": 4})."})] = None,
          max_failures: Annotated[int | None, Opt(metavar="N", help="Abort (and skip the remaining levels) after more "
                                                           "than N failures.")] = None,
          output_file: Annotated[str | None, Opt(metavar="FILE", help="Append one SGLang-style JSONL line per "
                                                                      "level.")] = None,
          labels: Annotated[tuple[tuple[str, Any], ...], Pairs(), Opt(
              "--label", metavar="K=V", help="Extra label on the recorded runs (repeatable).")] = (),
          hypothesis: Annotated[str | None, Opt(metavar="ID", help="Attach the recorded runs to this "
                                                                   "hypothesis.")] = None,
          tag: Annotated[str | None, Opt(metavar="T", help="Written as `tag` in the JSONL lines.")] = None,
          no_record: Annotated[bool, Opt(help="Measure only; do not record runs even inside a workspace.")] = False,
          ) -> Any:
    """Load-test an OpenAI-compatible server (streaming) and record each concurrency level as a run.

    Metrics carry SGLang bench_serving's names (request_throughput, output_throughput,
    mean/median/p90/p95/p99 TTFT, TPOT, ITL, E2E, completed, failed…). API key from
    OPTLOG_BENCH_API_KEY or OPENAI_API_KEY. Outside a workspace it runs anyway and records nothing.
    Exit 1 when a level had no successful request or --max-failures stopped the sweep.
    """
    opts = svc.Options(url=url, model=model, api=api, concurrency=concurrency, request_rate=request_rate,
                       num_prompts=num_prompts, input_len=input_len, output_len=output_len, dataset=dataset,
                       ignore_eos=ignore_eos, warmup=warmup, reuse_prompts=reuse_prompts, metrics_url=metrics_url,
                       seed=seed, timeout=timeout, headers=list(headers), extra_body=extra_body,
                       max_failures=max_failures, output_file=output_file, labels=pairs(labels, "labels"),
                       hypothesis=hypothesis, tag=tag, progress=call.narrate and sys.stderr.isatty())
    return svc.bench(opts, None if no_record else (lambda: call.ctx), call.say)
