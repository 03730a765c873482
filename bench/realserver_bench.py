#!/usr/bin/env python3
"""optlog bench vs AIPerf vs the server's own account, on one real llama-server and one workload.

    python bench/realserver_bench.py [--repeats 3] [--aiperf PATH] [--json OUT]

llama.cpp's `llama-server` (scripts/llama-server.sh) serves Gemma 3 270M with --parallel 2; each client
sends the same workload (concurrency 2, 8 requests, ~32-token random prompts, 32 output tokens with
ignore_eos). Around every client run, the server's /metrics is scraped: its own counters say how many
tokens it generated (`llamacpp:tokens_predicted_total`) and how long its slots spent decoding and
prefilling (`tokens_predicted_seconds_total`, `prompt_seconds_total`). Compared, per client (medians
over the repeats): output tokens / the server's delta; mean TPOT / the server's decode ms per token;
median TTFT - the server's prefill ms per request (what queueing and the client add); output tokens/s.
optlog also reads llama.cpp's per-response `timings` (`server_mean_tpot_ms`): a second server figure.

AIPerf comes from .venv-peers (scripts/test.sh), $OPTLOG_TEST_AIPERF or --aiperf; it gets a word-level
tokenizer built here (nothing from a hub) and is told to use the server's usage counts. Both clients
run with no warm-up inside the measured window; one throwaway optlog run warms the server first.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

from loadgen_bench import TOKENIZER_SRC, loadavg, run_aiperf, run_optlog  # noqa: E402

from optlog.runs import llamacpp  # noqa: E402
from optlog.telemetry import prometheus  # noqa: E402
from tests._realserver import LlamaServer  # noqa: E402


def server_delta(a: dict, b: dict) -> dict:
    ca, cb = a["counters"], b["counters"]

    def d(name: str) -> float:
        return cb.get(name, 0.0) - ca.get(name, 0.0)

    toks = d("tokens_predicted")
    return {"tokens": toks, "decode_ms_per_token": d("tokens_predicted_seconds") * 1000 / toks if toks else None,
            "prompt_s": d("prompt_seconds"), "prompt_tokens": d("prompt_tokens")}


def med(xs: list) -> float | None:
    v = [x for x in xs if x is not None]
    return statistics.median(v) if v else None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--parallel", type=int, default=2)
    ap.add_argument("--concurrency", type=int, default=2)
    ap.add_argument("--requests", type=int, default=8)
    ap.add_argument("--input-len", type=int, default=32)
    ap.add_argument("--output-len", type=int, default=32)
    ap.add_argument("--aiperf", default=os.environ.get("OPTLOG_TEST_AIPERF") or str(ROOT / ".venv-peers/bin/aiperf"))
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    binary, model = llamacpp.ensure(lambda t: print(t, file=sys.stderr))
    aiperf = Path(a.aiperf)
    venv = aiperf.parent.parent
    have_peer = aiperf.exists()
    tok = Path(tempfile.mkdtemp(prefix="rs-tok-"))
    if have_peer:
        from optlog.loadgen.core import WORDS

        subprocess.run([str(venv / "bin" / "python"), "-c", TOKENIZER_SRC, str(tok), " ".join(WORDS)], check=True)
    else:
        print(f"no AIPerf at {aiperf}: the peer column is skipped", file=sys.stderr)
    c, n, il, ol = a.concurrency, a.requests, a.input_len, a.output_len
    srv = LlamaServer(binary, model, parallel=a.parallel, ctx=1024 * a.parallel)
    res: dict = {"load_before": loadavg(), "server": {"binary": str(binary), "model": str(model), "parallel": a.parallel},
                 "workload": {"concurrency": c, "requests": n, "input_len": il, "output_len": ol}, "clients": {}}
    print(f"load average before: {res['load_before']}", flush=True)
    try:
        run_optlog(srv.url, c, n, 8, il, 0, ("--ignore-eos",))  # warm the server
        clients = [("optlog", lambda: run_optlog(srv.url, c, n, ol, il, 0, ("--ignore-eos",)))]
        if have_peer:
            clients.append(("aiperf", lambda: run_aiperf(venv, tok, srv.url, c, n, ol, il, 0,
                                                         ("--extra-inputs", "ignore_eos:true"))))
        for name, fn in clients:
            reps = []
            for _ in range(a.repeats):
                before = prometheus.scrape(srv.url + "/metrics")
                r = fn()
                after = prometheus.scrape(srv.url + "/metrics")
                s = server_delta(before, after)
                reps.append({
                    "out_tokens": r["out_tokens"], "server_tokens": s["tokens"],
                    "tokens_ratio": (r["out_tokens"] or 0) / s["tokens"] if s["tokens"] else None,
                    "tpot_ms": r["tpot_mean"], "server_decode_ms": s["decode_ms_per_token"],
                    "tpot_ratio": (r["tpot_mean"] / s["decode_ms_per_token"]
                                   if r["tpot_mean"] and s["decode_ms_per_token"] else None),
                    "itl_median_ms": r["itl_median"], "ttft_median_ms": r["ttft_median"],
                    "server_prefill_ms_per_request": s["prompt_s"] * 1000 / n,
                    "out_tps": r["out_tps"], "completed": r["completed"], "failed": r["failed"]})
            res["clients"][name] = {"repeats": reps, **{k: med([x[k] for x in reps]) for k in reps[0]}}
            m = res["clients"][name]
            print(f"{name:7s} tokens/server {m['tokens_ratio']:.4f}  tpot {m['tpot_ms']:.1f} ms / server decode "
                  f"{m['server_decode_ms']:.1f} ms = {m['tpot_ratio']:.3f}  ttft median {m['ttft_median_ms']:.1f} ms "
                  f"(server prefill {m['server_prefill_ms_per_request']:.1f} ms/req)  {m['out_tps']:.1f} tok/s  "
                  f"completed {m['completed']:.0f} failed {m['failed']:.0f}", flush=True)
    finally:
        srv.stop()
    res["load_after"] = loadavg()
    print(f"load average after: {res['load_after']}")
    if a.json:
        Path(a.json).write_text(json.dumps(res, indent=2))


if __name__ == "__main__":
    main()
