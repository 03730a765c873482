#!/usr/bin/env python3
"""What a user sees, dumped to one folder so two trees can be diffed (issue 46: a refactoring step
changes none of it): the `--help` of every command (`help.txt`), the MCP `tools/list` table
(`tools.json`), and the JSON documents of a fixed scripted session under a fixed clock
(`docs.jsonl`: each command and its `--json` document, exit code included).

    python scripts/surface_dump.py OUT_DIR        # then: diff -r BEFORE AFTER
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

NOW = "2026-12-01T09:00:00Z"
SESSION = [
    ["status"],
    ["hypothesis", "add", "TP8 beats TP4PP2", "--statement", "tp8 is faster", "--id", "tp8"],
    ["prediction", "add", "tp8", "--expect", "a > b", "--metric", "output_throughput",
     "--a", "config=tp8", "--b", "config=tp4pp2", "--per", "concurrency"],
    ["run", "record", "--label", "config=tp8", "--label", "concurrency=8", "--metric", "output_throughput=100"],
    ["run", "record", "--label", "config=tp8", "--label", "concurrency=8", "--metric", "output_throughput=104"],
    ["run", "record", "--label", "config=tp4pp2", "--label", "concurrency=8", "--metric", "output_throughput=80"],
    ["run", "record", "--label", "config=tp4pp2", "--label", "concurrency=8", "--metric", "output_throughput=82"],
    ["run", "list"], ["run", "show", "1"], ["run", "diff", "1", "3"],
    ["hypothesis", "list"], ["hypothesis", "show", "tp8"],
    ["verdict", "tp8"], ["compare", "--metric", "output_throughput", "--by", "config", "--per", "concurrency"],
    ["plan", "add", "Try TP2", "--gain", "10-30%", "--effort", "S", "--confidence", "0.5"], ["plan", "list"],
    ["todo", "add", "look at NCCL"], ["todo", "list"], ["note", "add", "a note"],
    ["log"], ["next"], ["status"], ["report", "--out", "report.md"], ["agent", "tools"],
]


def commands(group, path=()):
    import click
    ctx = click.Context(group, info_name="optlog")
    for name in sorted(group.list_commands(ctx)):
        cmd = group.get_command(ctx, name)
        if cmd is None or getattr(cmd, "hidden", False):
            continue
        yield (*path, name)
        if isinstance(cmd, click.Group):
            yield from commands(cmd, (*path, name))


def run(args, env, cwd):
    p = subprocess.run([sys.executable, "-m", "optlog", *args], env=env, cwd=cwd, capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def main() -> None:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPTLOG_")}
    env.update(OPTLOG_NOW=NOW, OPTLOG_ACTOR="dump", COLUMNS="100", GIT_AUTHOR_NAME="d", GIT_AUTHOR_EMAIL="d@x",
               GIT_COMMITTER_NAME="d", GIT_COMMITTER_EMAIL="d@x")
    from optlog.cli.main import cli
    with tempfile.TemporaryDirectory() as tmp:
        helps = []
        for path in [(), *commands(cli)]:
            rc, so, se = run([*path, "--help"], env, tmp)
            helps.append(f"=== optlog {' '.join(path)} (rc {rc})\n{so}{se}")
        (out / "help.txt").write_text("\n".join(helps))
        ws = Path(tmp) / "ws"
        rc, so, se = run(["init", str(ws)], env, tmp)
        assert rc == 0, se
        p = subprocess.Popen([sys.executable, "-m", "optlog", "mcp", "-C", str(ws)], env=env, stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        def rpc(i, method, params=None):
            p.stdin.write(json.dumps({"jsonrpc": "2.0", "id": i, "method": method, "params": params or {}}) + "\n")
            p.stdin.flush()
            return json.loads(p.stdout.readline())
        rpc(1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "d", "version": "1"}})
        p.stdin.write('{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        listed = rpc(2, "tools/list")
        p.kill()
        p.wait()
        (out / "tools.json").write_text(json.dumps(listed, indent=1, sort_keys=True))
        lines = []
        for args in SESSION:
            rc, so, se = run(["--json", *args], env, ws)
            so = re.sub(re.escape(str(ws)), "<WS>", so)
            so = re.sub(r"\b[0-9a-f]{40}\b", "<SHA>", so)
            so = re.sub(r'"at": "[0-9T:+-]+"', '"at": "<T>"', so)
            so = re.sub(r'"t[0-9a-f]{6}"', '"<TODO-ID>"', so)  # a todo's id is random even under OPTLOG_NOW
            so = re.sub(r'"(elapsed_ms|took_ms|duration_ms)": [0-9.]+', r'"\1": 0', so)
            lines.append(json.dumps({"args": args, "rc": rc, "out": so}))
        (out / "docs.jsonl").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
