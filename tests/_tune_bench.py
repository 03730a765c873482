#!/usr/bin/env python3
"""A deterministic bench for optlog tune's tests: its metrics are a known function of the searched
parameters (so a brute-force grid knows the answer), written to OUT/result.json; `--sleep` makes a
trial take a while (for kill -9 mid-study)."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import urllib.request


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--x", type=float, required=True)
    ap.add_argument("--mode", default="a")
    ap.add_argument("--extra", type=float, default=0.0)
    ap.add_argument("--sleep", type=float, default=0.0)
    ap.add_argument("--url", default="")
    ap.add_argument("--lucky", default="", help="X,MODE,DIR: that configuration's first reading is +15 (then never)")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    if a.url:  # one completion against the server, so a server must be up
        req = urllib.request.Request(a.url.rstrip("/") + "/v1/completions",
                                     data=json.dumps({"prompt": "hi", "max_tokens": 2}).encode(),
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=10) as r:
            r.read()
    if a.sleep:
        time.sleep(a.sleep)
    b = a.mode == "b"
    luck = 0.0
    if a.lucky:
        x, mode, d = a.lucky.split(",", 2)
        mark = os.path.join(d, "lucky.done")
        if float(x) == a.x and mode == a.mode and not os.path.exists(mark):
            open(mark, "w").close()
            luck = 15.0
    res = {"output_throughput": a.x * 10 + (5 if b else 0) + a.extra + luck,
           "p99_ttft_ms": a.x * a.x * 10 + (100 if b else 0), "failed": 0}
    with open(os.path.join(a.out, "result.json"), "w") as f:
        json.dump(res, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
