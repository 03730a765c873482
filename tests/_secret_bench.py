"""A bench for the secrets test: checks that the real secret values reached it (argv, environment,
URL, header) by comparing their SHA-256 with `--expect`, and writes result.json with `received`
= 1.0 when all did. Optionally fails, printing its API key on stderr (a careless tool does)."""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--api-key", required=True)
    ap.add_argument("--url", required=True)
    ap.add_argument("-H", "--header", required=True)
    ap.add_argument("--expect", required=True, help="sha256 of api-key|url|header|$HF_TOKEN|$OPENAI_API_KEY")
    ap.add_argument("--fail-loudly", action="store_true")
    ap.add_argument("--quiet", action="store_true")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    got = "|".join([a.api_key, a.url, a.header, os.environ.get("HF_TOKEN", ""), os.environ.get("OPENAI_API_KEY", "")])
    ok = hashlib.sha256(got.encode()).hexdigest() == a.expect
    if a.fail_loudly:
        print(f"error: the server refused api key {a.api_key}", file=sys.stderr)
        return 3
    with open(os.path.join(a.out, "result.json"), "w") as f:
        json.dump({"received": 1.0 if ok else 0.0, "completed": 1}, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
