"""A writer process for the concurrency test: many optlog commands through the real CLI entry point
(`optlog.cli.main.main`, argument parsing and all) in one process, so the test measures the
database's behaviour under contention rather than interpreter start-up.

usage: python _foundation_loop.py todo|run WORKSPACE N TAG OUTDIR
Prints one JSON line: {"n", "failures": [[i, code]], "last": <last document written>}.
"""

from __future__ import annotations

import io
import json
import sys
from contextlib import redirect_stdout
from pathlib import Path

from optlog.cli.main import main


def call(args: list[str]) -> int:
    buf = io.StringIO()
    try:
        with redirect_stdout(buf):
            main(args)
    except SystemExit as e:
        return int(e.code or 0)
    return 0


def run() -> None:
    kind, root, n, tag, outdir = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], Path(sys.argv[5])
    failures: list[list[int]] = []
    last = None
    for i in range(n):
        if kind == "todo":
            doc = {"todos": [
                {"id": f"{tag}-{i}-{j}", "content": f"{tag} write {i} item {j}", "status": "pending", "priority": "high"}
                for j in range(3)
            ] + [{"content": "shared item", "status": "in_progress", "activeForm": f"{tag} {i}"}]}
            f = outdir / f"{tag}.json"
            f.write_text(json.dumps(doc))
            code = call(["-C", root, "todo", "write", str(f), "--json"])
            last = doc
        else:
            code = call(["-C", root, "run", "record", "--label", f"writer={tag}", "--label", f"i={i}",
                         "--metric", f"total_token_throughput={1000 + i}", "--json"])
        if code != 0:
            failures.append([i, code])
    print(json.dumps({"n": n, "failures": failures, "last": last}), flush=True)


if __name__ == "__main__":
    run()
