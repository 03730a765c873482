#!/usr/bin/env python3
"""optlog bench vs a peer client (AIPerf) on the same local test server and load.

    python bench/loadgen_bench.py [--peer-venv DIR] [--repeats 3] [--json OUT]

The peer lives in its own venv so its dependencies never touch the project's:
    python3 -m venv .bench-venv && .bench-venv/bin/pip install aiperf      (git-ignored)
(`--setup` does exactly that). The peer needs a tokenizer: a small word-level one is built here with
the `tokenizers` library from the peer's venv (the test server's tokens are whole words), so
nothing is fetched from a hub. AIPerf is told to use the server's usage counts.

Scenarios (each repeated; medians reported):
  acc1    server TTFT 50 ms / ITL 10 ms / 16 tokens, concurrency 1: median TTFT and ITL error.
  acc64   same server, concurrency 64: TTFT distortion = client mean TTFT - the server's own mean
          TTFT (its /metrics histogram: request arrival to first token write), i.e. what the client
          adds; also vs the 50 ms schedule.
  rate64 / rate1024   1 ms tokens, 64-token outputs, TTFT 1 ms: sustained requests/s, errors.
  cut     the server cuts every stream after 1 of 64 tokens: how each client counts it.
  tokens  output tokens each client reports vs tokens the server sent (/metrics counter).
The machine is shared: the script prints the load average before and after.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SERVER = ROOT / "tests" / "testserver.py"
PY = sys.executable

TOKENIZER_SRC = r'''
import json, os, sys
from tokenizers import Tokenizer, models, pre_tokenizers, decoders
out = sys.argv[1]
words = ["[UNK]", "[PAD]"] + [f"tok{i}" for i in range(8192)] + sys.argv[2].split()
vocab = {}
for w in words:
    vocab.setdefault(w, len(vocab))
t = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
t.pre_tokenizer = pre_tokenizers.Whitespace()
t.decoder = decoders.WordPiece(prefix="##")
os.makedirs(out, exist_ok=True)
t.save(os.path.join(out, "tokenizer.json"))
json.dump({"tokenizer_class": "PreTrainedTokenizerFast", "unk_token": "[UNK]", "pad_token": "[PAD]",
           "model_max_length": 1000000}, open(os.path.join(out, "tokenizer_config.json"), "w"))
'''


class Server:
    def __init__(self, *args: str) -> None:
        self.p = subprocess.Popen([PY, str(SERVER), "--port", "0", *args], stdout=subprocess.PIPE, text=True,
                                  start_new_session=True)
        line = self.p.stdout.readline()  # type: ignore[union-attr]
        assert line.startswith("READY"), line
        self.url = line.split()[1]

    def metrics(self) -> dict[str, float]:
        out = {}
        with urllib.request.urlopen(self.url + "/metrics", timeout=10) as r:
            for ln in r.read().decode().splitlines():
                if ln and not ln.startswith("#") and "_bucket" not in ln:
                    k, v = ln.rsplit(" ", 1)
                    out[k.split("{")[0]] = float(v)
        return out

    def stop(self) -> None:
        self.p.terminate()
        try:
            self.p.wait(5)
        except subprocess.TimeoutExpired:
            self.p.kill()


def loadavg() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


# ------------------------------------------------------------------ clients


def run_optlog(url: str, c: int, n: int, out_len: int, in_len: int = 32, warmup: int = 0,
               extra: tuple[str, ...] = ()) -> dict:
    p = subprocess.run([PY, "-m", "optlog.loadgen", url, "--model", "m", "--concurrency", str(c), "--num-prompts",
                        str(n), "--output-len", str(out_len), "--input-len", str(in_len), "--warmup", str(warmup),
                        "--timeout", "60", *extra, "--json"], capture_output=True, text=True, timeout=600, cwd=ROOT)
    if p.returncode not in (0, 1):
        raise RuntimeError(f"optlog bench failed: {p.stderr[-2000:]}")
    run = json.loads(p.stdout)["runs"][0]
    m = run["metrics"]
    return {"ttft_mean": m["mean_ttft_ms"], "ttft_median": m["median_ttft_ms"], "itl_mean": m["mean_itl_ms"],
            "itl_median": m["median_itl_ms"], "rps": m["request_throughput"], "completed": m["completed"],
            "failed": m["failed"], "out_tokens": m["total_output_tokens"], "duration": m["duration"],
            "errors": run["errors"], "tpot_mean": m["mean_tpot_ms"], "out_tps": m["output_throughput"]}


def run_aiperf(venv: Path, tok: Path, url: str, c: int, n: int, out_len: int, in_len: int = 32,
               warmup: int = 0, extra: tuple[str, ...] = ()) -> dict:
    art = Path(tempfile.mkdtemp(prefix="aiperf-"))
    cmd = [str(venv / "bin" / "aiperf"), "profile", "--model", "m", "--url", url, "--endpoint-type", "completions",
           "--streaming", "--concurrency", str(c), "--request-count", str(n),
           "--prompt-input-tokens-mean", str(in_len), "--prompt-input-tokens-stddev", "0",
           "--prompt-output-tokens-mean", str(out_len), "--prompt-output-tokens-stddev", "0",
           "--tokenizer", str(tok), "--use-server-token-count", "--use-legacy-max-tokens",
           "--output-artifact-dir", str(art), "--no-server-metrics", "--no-gpu-telemetry", "--random-seed", "1",
           "--request-timeout-seconds", "60", *extra]
    if warmup:
        cmd += ["--warmup-request-count", str(warmup)]
    env = {k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")}
    env["HF_HUB_DISABLE_TELEMETRY"] = "1"
    # HF_HUB_OFFLINE / TRANSFORMERS_OFFLINE make AIPerf 0.13 look the local tokenizer folder up in
    # the hub cache and fail; a local folder needs no network, so they are left unset (AIPerf
    # treats an absolute path as local and never asks the hub).
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=900, env=env, cwd=art)
    f = art / "profile_export_aiperf.json"
    if not f.exists():
        import re

        m = re.search(r"Processed (\d+) valid requests and (\d+) errors", p.stdout + p.stderr)
        if m:  # AIPerf writes no export when every request failed
            shutil.rmtree(art, ignore_errors=True)
            return {"ttft_mean": None, "ttft_median": None, "itl_mean": None, "itl_median": None, "rps": 0.0,
                    "completed": int(m.group(1)), "failed": int(m.group(2)), "out_tokens": 0, "duration": None,
                    "errors": "no export: every request failed"}
        raise RuntimeError(f"aiperf failed ({p.returncode}): {p.stdout[-3000:]}")
    d = json.loads(f.read_text())
    shutil.rmtree(art, ignore_errors=True)

    def g(k: str, s: str = "avg") -> float | None:
        v = d.get(k)
        return v.get(s) if isinstance(v, dict) else None

    completed = g("request_count") or 0
    errors = g("error_request_count") or 0
    return {"ttft_mean": g("time_to_first_token"), "ttft_median": g("time_to_first_token", "p50"),
            "itl_mean": g("inter_token_latency"), "itl_median": g("inter_token_latency", "p50"),
            "rps": g("request_throughput"), "completed": completed, "failed": errors,
            "out_tokens": g("total_output_tokens") or g("total_osl"), "duration": g("benchmark_duration"),
            "osl_avg": g("output_sequence_length"), "errors": d.get("error_summary"),
            "tpot_mean": g("inter_token_latency"), "out_tps": g("output_token_throughput")}


# ------------------------------------------------------------------ scenarios


def med(xs: list[float | None]) -> float | None:
    v = [x for x in xs if x is not None]
    return statistics.median(v) if v else None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--peer-venv", default=None, help="venv holding aiperf (default .bench-venv, else /tmp/venv-aiperf)")
    ap.add_argument("--setup", action="store_true", help="create .bench-venv and pip install aiperf into it")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--only", default="", help="comma list of scenarios")
    ap.add_argument("--json", default=None, help="write all figures here")
    a = ap.parse_args()
    venv = Path(a.peer_venv) if a.peer_venv else (ROOT / ".bench-venv")
    if a.setup and not (venv / "bin" / "aiperf").exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(venv / "bin" / "pip"), "install", "-q", "aiperf"], check=True)
    if not (venv / "bin" / "aiperf").exists() and not a.peer_venv and Path("/tmp/venv-aiperf/bin/aiperf").exists():
        venv = Path("/tmp/venv-aiperf")
    have_peer = (venv / "bin" / "aiperf").exists()
    peer_version = None
    tok = Path(tempfile.mkdtemp(prefix="lg-tok-"))
    if have_peer:
        from optlog.loadgen.core import WORDS

        subprocess.run([str(venv / "bin" / "python"), "-c", TOKENIZER_SRC, str(tok), " ".join(WORDS)], check=True)
        peer_version = subprocess.run([str(venv / "bin" / "python"), "-c",
                                       "import importlib.metadata as m; print(m.version('aiperf'))"],
                                      capture_output=True, text=True).stdout.strip()
    else:
        print("no aiperf venv: peer columns are skipped (use --setup)", file=sys.stderr)
    only = set(filter(None, a.only.split(",")))
    R = a.repeats
    res: dict = {"peer": {"name": "aiperf", "version": peer_version}, "load_before": loadavg(), "repeats": R,
                 "scenarios": {}}
    print(f"load average before: {res['load_before']}  (2 cores; shared machine)", flush=True)
    clients = [("optlog", run_optlog)] + ([("aiperf", lambda *x, **k: run_aiperf(venv, tok, *x, **k))]
                                          if have_peer else [])

    def scenario(name: str, server_args: list[str], c: int, n: int, out_len: int, warmup: int = 0) -> None:
        if only and name not in only:
            return
        srv = Server(*server_args)
        try:
            out: dict = {}
            for cname, fn in clients:
                reps = []
                for _ in range(R):
                    before = srv.metrics()
                    r = fn(srv.url, c, n, out_len, warmup=warmup)
                    after = srv.metrics()
                    cnt = after["sglang:time_to_first_token_seconds_count"] - before["sglang:time_to_first_token_seconds_count"]
                    ssum = after["sglang:time_to_first_token_seconds_sum"] - before["sglang:time_to_first_token_seconds_sum"]
                    r["server_ttft_mean"] = ssum / cnt * 1000 if cnt else None
                    r["server_tokens"] = after["sglang:generation_tokens_total"] - before["sglang:generation_tokens_total"]
                    reps.append(r)
                    print(f"  {name:8} {cname:7} " + " ".join(
                        f"{k}={v:.2f}" if isinstance(v, float) else f"{k}={v}" for k, v in r.items() if k != "errors"),
                        flush=True)
                agg = {k: med([x.get(k) for x in reps]) for k in reps[0] if k != "errors"}
                agg["ttft_distortion"] = med([(x["ttft_mean"] - x["server_ttft_mean"])
                                              if x["ttft_mean"] is not None and x["server_ttft_mean"] else None
                                              for x in reps])
                agg["errors_last"] = reps[-1].get("errors")
                out[cname] = agg
            res["scenarios"][name] = out
        finally:
            srv.stop()

    sched = ["--ttft-ms", "50", "--itl-ms", "10", "--tokens", "16"]
    fast = ["--ttft-ms", "1", "--itl-ms", "1", "--tokens", "64"]
    scenario("acc1", sched, 1, 20, 16, warmup=2)
    scenario("acc64", sched, 64, 320, 16, warmup=64)
    scenario("rate64", fast, 64, 1000, 64, warmup=64)
    scenario("rate1024", fast, 1024, 2048, 64)
    scenario("cut", fast + ["--mode", "cut", "--cut-after", "1"], 8, 40, 64)
    res["load_after"] = loadavg()
    print(f"load average after: {res['load_after']}")
    print(json.dumps(res["scenarios"], indent=1, default=str))
    if a.json:
        Path(a.json).write_text(json.dumps(res, indent=1, default=str))
    shutil.rmtree(tok, ignore_errors=True)


if __name__ == "__main__":
    main()
