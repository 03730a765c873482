#!/usr/bin/env python3
"""A deterministic bench for optlog tune's tests: its metrics are a known function of the searched
parameters (so a brute-force grid knows the answer), written to OUT/result.json. For the tests
of concurrency and crashes, a bench waits for an event, never for a time: `--hold N,DIR` makes the
Nth bench of DIR (counted across processes) announce itself in DIR/held and then wait until it is
killed; `--barrier DIR` makes the first bench wait until a second one runs beside it (another
worker's: one worker runs one trial at a time). `--sleep` only makes a trial take a while."""

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
    ap.add_argument("--hold", default="", help="N,DIR: the Nth bench of DIR writes DIR/held and waits to be killed")
    ap.add_argument("--barrier", default="", help="DIR: the first bench waits until another one runs beside it")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    if a.hold:
        n, d = a.hold.split(",", 1)
        if _count(d) == int(n):
            open(os.path.join(d, "held"), "w").close()
            while True:  # until the test kills the whole tree
                time.sleep(1)
    if a.barrier:
        _barrier(a.barrier)
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


def _count(d: str) -> int:
    """This bench's number among the benches of folder `d` (1, 2, ...), across processes."""
    os.makedirs(d, exist_ok=True)
    n = 1
    while True:
        try:
            os.close(os.open(os.path.join(d, f"bench-{n}"), os.O_CREAT | os.O_EXCL | os.O_WRONLY))
            return n
        except FileExistsError:
            n += 1


def _barrier(d: str) -> None:
    """Wait until two benches of `d` have run at the same time (then no bench waits again)."""
    os.makedirs(d, exist_ok=True)
    mine = os.path.join(d, f"running-{os.getpid()}")
    open(mine, "w").close()
    met = os.path.join(d, "met")
    deadline = time.monotonic() + 600  # a safety net: the test then fails on its own assertion
    while not os.path.exists(met) and time.monotonic() < deadline:
        if len([f for f in os.listdir(d) if f.startswith("running-")]) >= 2:
            open(met, "w").close()
            break
        time.sleep(0.05)
    os.unlink(mine)


if __name__ == "__main__":
    sys.exit(main())
