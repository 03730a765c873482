#!/usr/bin/env python3
"""The agent's face, measured: a whole MCP session's result bytes against the same session on an
older commit, and the latency of MCP tool calls on a big workspace.

    python bench/agent_bench.py session [--base 6190f40]   # bytes of every result, this tree vs BASE
    python bench/agent_bench.py calls [--repeats 30]       # median ms per tool call, 1,000 hyps / 10,000 runs
    python bench/agent_bench.py cost [--repeats 5]         # a session's fixed costs, as ratios (issue 31)

`cost` measures, in one run: the bytes of `tools/list` (against the 48,150 B of issue 31), the
largest result of the scripted session, the TodoWrite hook's time against `python -c "import
sqlmodel"`, and `initialize`'s time against `python -c "import mcp"` (best of N each).

`session` drives the same scripted session (init, status, a hypothesis and a prediction, todos, a
launched sweep waited for, logs, verdict, a pivot, a plan, render, report, log) through the MCP
SDK's stdio client against `optlog mcp` of this tree and of BASE (checked out with `git worktree`
into a temporary folder and run with this venv). BASE has no `run_wait`: its agent polls `status`
until no run is live (the issue's 165-call session did exactly that); the figure is also given with
a single poll, the most favourable count for BASE.
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
from pathlib import Path
from typing import Any

import anyio

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))


def _size(doc: Any) -> int:
    return len(json.dumps(doc, ensure_ascii=False, separators=(",", ":")).encode())


def _result_bytes(res: Any) -> int:
    """What reaches the agent: the text content plus the structured content."""
    n = sum(len(c.text.encode()) for c in res.content if getattr(c, "text", None) is not None)
    if res.structured_content is not None:
        n += _size(res.structured_content)
    return n


async def _drive(pythonpath: str, ws: Path, env: dict[str, str], new: bool, spec: str) -> dict[str, Any]:
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    e = {**env, "PYTHONPATH": pythonpath}
    params = StdioServerParameters(command=sys.executable, args=["-m", "optlog", "mcp", "-C", str(ws)], env=e, cwd=str(ws))
    log: list[tuple[str, int]] = []
    first: dict[str, bool] = {}
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as s:
            await s.initialize()

            async def call(name: str, args: dict[str, Any]) -> Any:
                r = await s.call_tool(name, args)
                log.append((name, _result_bytes(r)))
                if name not in first:
                    first[name] = not r.is_error  # the agent's first call of each tool must succeed
                return r

            def data(r: Any) -> Any:
                if r.structured_content is not None:
                    return r.structured_content
                return json.loads(r.content[0].text)

            await call("status", {})
            await call("hypothesis_add", {"title": "Decode is latency-bound", "id": "latency-bound"})
            await call("prediction_add", {"hypothesis": "latency-bound", "expect": "a > b", "metric": "output_throughput",
                                          "a": ["concurrency=2"], "b": ["concurrency=1"]})
            await call("todo_write", {"todos": [
                {"content": "Launch the sweep", "status": "in_progress", "priority": "high", "activeForm": "Launching"},
                {"content": "Judge it", "status": "pending", "priority": "medium"}]})
            la = data(await call("run_launch", {"spec": spec, "hypothesis": "latency-bound"}))
            polls = 0
            if new:
                await call("run_wait", {"ref": la["ref"], "timeout_s": 120})
                await call("run_logs", {"ref": la["ref"]})
            else:
                while True:
                    polls += 1
                    st = data(await call("status", {}))
                    if not st["live_runs"] or polls > 240:
                        break
                    await anyio.sleep(1.0)
            await call("status", {})
            await call("verdict", {"id": "latency-bound"})
            await call("hypothesis_show", {"id": "latency-bound"})
            await call("hypothesis_add", {"title": "Decode is bandwidth-bound", "id": "bw-bound", "parent": "latency-bound"})
            await call("hypothesis_set", {"id": "latency-bound", "status": "superseded", "why": "pivoted to bw-bound"})
            await call("plan_add", {"title": "Raise concurrency", "gain": "10-30%", "effort": "S", "confidence": 0.5,
                                    "needs": ["bw-bound"]})
            await call("plan_list", {})
            if new:
                await call("plan_render", {})
            await call("run_list", {"limit": 10})
            await call("report", {})
            await call("log", {})
    return {"calls": log, "polls": polls, "first_ok": first}


def _env(tmp: Path) -> dict[str, str]:
    """A clean environment with its own git identity (as the other benchmarks use)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env["GIT_CONFIG_GLOBAL"] = str(tmp / "gitconfig")
    (tmp / "gitconfig").write_text("[user]\n\tname = bench\n\temail = bench@example.com\n[init]\n\tdefaultBranch = main\n")
    env["OPTLOG_ACTOR"] = "bench"
    return env


def _workspace(tmp: Path, name: str, pythonpath: str) -> tuple[Path, dict[str, str], str]:
    from _launch import spec

    env = _env(tmp)
    root = tmp / name
    subprocess.run([sys.executable, "-m", "optlog", "init", str(root)], env={**env, "PYTHONPATH": pythonpath},
                   check=True, capture_output=True)

    class W:
        pass

    w = W()
    w.root = root  # type: ignore[attr-defined]
    rel = spec(w, "sweep", matrix={"concurrency": [1, 2]})
    return root, env, rel


def session(a: argparse.Namespace) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="optlog-agent-bench-"))
    base_tree = tmp / "base"
    subprocess.run(["git", "worktree", "add", "--detach", str(base_tree), a.base], cwd=ROOT, check=True, capture_output=True)
    try:
        out = {}
        for label, tree, new in (("this tree", ROOT, True), (a.base, base_tree, False)):
            ws, env, rel = _workspace(tmp, f"ws-{'new' if new else 'old'}", str(tree))
            out[label] = anyio.run(_drive, str(tree), ws, env, new, rel)
    finally:
        subprocess.run(["git", "worktree", "remove", "--force", str(base_tree)], cwd=ROOT, capture_output=True)
        shutil.rmtree(tmp, ignore_errors=True)
    new, old = out["this tree"], out[a.base]
    tot_new = sum(b for _, b in new["calls"])
    tot_old = sum(b for _, b in old["calls"])
    polls = [b for n, b in old["calls"] if n == "status"]
    # the most favourable count for BASE: its polls after the first one not counted
    tot_old_1 = tot_old - sum(polls[2:-1]) if len(polls) > 3 else tot_old
    biggest_new = max(b for _, b in new["calls"])
    rows = "\n".join(f"| {n} | {b} |" for n, b in new["calls"])
    text = (f"Session over MCP stdio ({len(new['calls'])} calls here; {len(old['calls'])} on {a.base}, "
            f"{old['polls']} of them status polls while the sweep ran): **{tot_new:,} B** of results here vs "
            f"**{tot_old:,} B** on {a.base} = **{tot_new / tot_old:.1%}** (target <= 25 %); counting one poll "
            f"for {a.base}: {tot_old_1:,} B, ratio {tot_new / tot_old_1:.1%}. Largest result here: {biggest_new} B; "
            f"on {a.base}: {max(b for _, b in old['calls'])} B.\n\n"
            f"| call (this tree) | bytes |\n|---|---|\n{rows}\n")
    print(text)
    if a.append:
        with open(a.append, "a", encoding="utf-8") as f:
            f.write(f"\nCommand: `python bench/agent_bench.py session --base {a.base}` "
                    f"({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, load {os.getloadavg()[0]:.1f})\n\n{text}")


async def _calls(ws: Path, env: dict[str, str], repeats: int) -> dict[str, list[float]]:
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(command=sys.executable, args=["-m", "optlog", "mcp", "-C", str(ws)], env=env)
    cases = {"status": {}, "todo_list": {}, "hypothesis_list": {}, "run_list": {"limit": 20}}
    out: dict[str, list[float]] = {k: [] for k in cases}
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as s:
            await s.initialize()
            await s.list_tools()
            for name, args in cases.items():  # warm: the first call opens the database
                await s.call_tool(name, args)
            for _ in range(repeats):
                for name, args in cases.items():
                    t = time.perf_counter()
                    r = await s.call_tool(name, args)
                    out[name].append(time.perf_counter() - t)
                    assert not r.is_error, r.content[0].text
    return out


def calls(a: argparse.Namespace) -> None:
    from startup_bench import N_HYP, N_RUNS, populate

    tmp = Path(tempfile.mkdtemp(prefix="optlog-agent-calls-"))
    env = _env(tmp)
    root = tmp / "ws"
    try:
        populate(root, env)
        times = anyio.run(_calls, root, env, a.repeats)
        # the same calls with the read cache off: what a call costs when the workspace changed
        full = anyio.run(_calls, root, {**env, "OPTLOG_READ_CACHE": "0"}, a.repeats)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    rows = "\n".join(f"| {k} | {statistics.median(v) * 1000:.1f} | {min(v) * 1000:.1f} | "
                     f"{statistics.median(full[k]) * 1000:.1f} |" for k, v in times.items())
    text = (f"MCP tool calls on {N_HYP} hypotheses / {N_RUNS} runs, one warm server, median of {a.repeats} "
            f"(target <= 20 ms), load average {os.getloadavg()[0]:.1f}:\n\n"
            f"| tool | median ms | min ms | median ms, cache off |\n|---|---|---|---|\n{rows}\n")
    print(text)
    if a.append:
        with open(a.append, "a", encoding="utf-8") as f:
            f.write(f"\nCommand: `python bench/agent_bench.py calls --repeats {a.repeats}` "
                    f"({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, load {os.getloadavg()[0]:.1f})\n\n{text}")


def _best(argv: list[str], env: dict[str, str], repeats: int, stdin: str = "", cwd: Path | None = None) -> float:
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        p = subprocess.run(argv, input=stdin, env=env, cwd=cwd, capture_output=True, text=True)
        times.append(time.perf_counter() - t)
        assert p.returncode == 0, p.stderr
    return min(times)


def _initialize_s(ws: Path, env: dict[str, str], repeats: int) -> tuple[float, int]:
    """Best time from start to the `initialize` answer, and the bytes of the `tools/list` answer."""
    msg = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}}
    best, listed = float("inf"), 0
    for _ in range(repeats):
        t = time.perf_counter()
        p = subprocess.Popen([sys.executable, "-m", "optlog", "mcp", "-C", str(ws)], env=env, stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        assert p.stdin is not None and p.stdout is not None
        p.stdin.write((json.dumps(msg) + "\n").encode())
        p.stdin.flush()
        p.stdout.readline()
        best = min(best, time.perf_counter() - t)
        p.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n'
                      b'{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}\n')
        p.stdin.flush()
        listed = len(p.stdout.readline())
        p.kill()
        p.wait()
    return best, listed


def cost(a: argparse.Namespace) -> None:
    from optlog.service.agentsetup import hook_command

    tmp = Path(tempfile.mkdtemp(prefix="optlog-agent-cost-"))
    try:
        ws, env, rel = _workspace(tmp, "ws", str(ROOT))
        env = {**env, "PYTHONPATH": str(ROOT)}
        init_s, listed = _initialize_s(ws, env, a.repeats)
        mcp_s = _best([sys.executable, "-c", "import mcp"], env, a.repeats)
        todos = [{"content": f"step {i}", "status": "pending", "activeForm": f"Doing {i}"} for i in range(20)]
        payload = json.dumps({"tool_name": "TodoWrite", "tool_input": {"todos": todos}})
        hook_s = _best(["sh", "-c", hook_command([sys.executable, "-m", "optlog"])], env, a.repeats, payload, ws)
        sqlmodel_s = _best([sys.executable, "-c", "import sqlmodel"], env, a.repeats)
        sess = anyio.run(_drive, str(ROOT), ws, env, True, rel)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    biggest = max(sess["calls"], key=lambda x: x[1])
    failed = sorted(n for n, good in sess["first_ok"].items() if not good)
    text = (f"A session's fixed costs (best of {a.repeats}, load average {os.getloadavg()[0]:.1f}):\n\n"
            "| what | here | against | ratio | target |\n|---|---|---|---|---|\n"
            f"| tools/list | {listed:,} B | 48,150 B (issue 31) | {listed / 48150:.2f} | <= 16,384 B |\n"
            f"| largest result of the scripted session ({biggest[0]}) | {biggest[1]:,} B | 16,384 B | "
            f"{biggest[1] / 16384:.2f} | <= 1 |\n"
            f"| TodoWrite hook | {hook_s * 1000:.0f} ms | import sqlmodel {sqlmodel_s * 1000:.0f} ms | "
            f"{hook_s / sqlmodel_s:.2f} | <= 0.35 |\n"
            f"| initialize (start to answer) | {init_s * 1000:.0f} ms | import mcp {mcp_s * 1000:.0f} ms | {init_s / mcp_s:.2f} | <= 1.5 |\n\n"
            f"First call of each tool in the scripted session: {len(sess['first_ok']) - len(failed)} of "
            f"{len(sess['first_ok'])} succeeded" + (f" (failed: {', '.join(failed)})" if failed else "") + ".\n")
    print(text)
    if a.append:
        with open(a.append, "a", encoding="utf-8") as f:
            f.write(f"\nCommand: `python bench/agent_bench.py cost --repeats {a.repeats}` "
                    f"({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())})\n\n{text}")


def main() -> None:
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="what", required=True)
    s = sub.add_parser("session")
    s.add_argument("--base", default="6190f40")
    s.add_argument("--append", metavar="FILE")
    c = sub.add_parser("calls")
    c.add_argument("--repeats", type=int, default=30)
    c.add_argument("--append", metavar="FILE")
    k = sub.add_parser("cost")
    k.add_argument("--repeats", type=int, default=5)
    k.add_argument("--append", metavar="FILE")
    a = ap.parse_args()
    {"session": session, "calls": calls, "cost": cost}[a.what](a)


if __name__ == "__main__":
    main()
