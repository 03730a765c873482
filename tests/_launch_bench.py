#!/usr/bin/env python3
"""A tiny bench step for the launcher's tests: a few completions against the test server, then a
JSON object of numbers in OUT/result.json. Knobs simulate failures (exit code with a stderr text,
a hang, a child process that would outlive it); `--until FILE` holds the bench until the test
creates FILE (an event, where `--sleep` would be a time a busy machine can overrun)."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import urllib.request


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", default="")
    ap.add_argument("--out", required=True)
    ap.add_argument("--requests", type=int, default=1)
    ap.add_argument("--concurrency", default="1")
    ap.add_argument("--exit", type=int, default=0)
    ap.add_argument("--stderr", default="")
    ap.add_argument("--sleep", type=float, default=0.0)
    ap.add_argument("--child", action="store_true", help="leave a sleeping child process behind")
    ap.add_argument("--no-result", action="store_true")
    ap.add_argument("--until", default="", help="after starting, wait until this file exists")
    ap.add_argument("--jsonl", action="store_true",
                    help="write result.jsonl, one SGLang-style line per comma-separated --concurrency value")
    ap.add_argument("--bare", action="store_true", help="with --jsonl: no max_concurrency in the lines")
    ap.add_argument("--echo", nargs="*", default=[], help="arguments to record verbatim in argv.json")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    if a.child:  # its command line carries OUT, so the tests' /proc check sees it
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)", a.out])
    t0 = time.perf_counter()
    toks = 0
    for _ in range(a.requests if a.url else 0):
        req = urllib.request.Request(a.url.rstrip("/") + "/v1/completions",
                                     data=json.dumps({"prompt": "hello", "max_tokens": 4}).encode(),
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=10) as r:
            body = json.loads(r.read())
            toks += body.get("usage", {}).get("completion_tokens", 0)
    with open(os.path.join(a.out, "argv.json"), "w") as f:  # written once started: tests wait for it
        json.dump(sys.argv[1:], f)
    if a.sleep:
        time.sleep(a.sleep)
    while a.until and not os.path.exists(a.until):
        time.sleep(0.05)
    dur = max(time.perf_counter() - t0, 1e-6)
    print(f"bench: {a.requests} requests, {toks} tokens in {dur:.3f}s")
    if a.stderr:
        print(a.stderr, file=sys.stderr)
    if a.exit:
        return a.exit
    if a.jsonl:
        with open(os.path.join(a.out, "result.jsonl"), "w") as f:
            for i, c in enumerate(a.concurrency.split(",")):
                line = {"completed": a.requests, "duration": dur, "output_throughput": toks / dur + i}
                if not a.bare:
                    line["max_concurrency"] = int(c)
                f.write(json.dumps(line) + "\n")
    elif not a.no_result:
        with open(os.path.join(a.out, "result.json"), "w") as f:
            json.dump({"completed": a.requests, "duration_s": dur, "output_throughput": toks / dur,
                       "max_concurrency": float(a.concurrency)}, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
