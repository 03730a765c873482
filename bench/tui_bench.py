#!/usr/bin/env python3
"""The dashboard on a big workspace: 1,000 hypotheses, 10,000 runs, 1,000,000 telemetry samples.

    python bench/tui_bench.py [--ws /tmp/optlog-tui-bench] [--repeats 5]

Measures (medians of --repeats fresh processes, headless Textual at 120×40):
  * first paint: process start → the hypothesis tree on screen (and → everything loaded), against
    two baselines measured in the same run: `import textual` and an empty Textual app's first paint;
  * key press → repaint on the runs table (p50/p95 of 200 `down` presses, each followed by a refresh);
  * external change → visible: another process adds a hypothesis; seconds until the tree shows it.
The workspace is built once and reused (delete it to rebuild).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

N_HYP, N_RUNS, N_SAMPLES = 1_000, 10_000, 1_000_000


def build(root: Path) -> None:
    import numpy as np

    from optlog.core.hypothesis import HypothesisDoc, Prediction
    from optlog.service import hypotheses as H
    from optlog.service.context import Ctx
    from optlog.service.evidence import insert_run
    from optlog.store import hypfiles
    from optlog.telemetry.store import TIME_FIELD, write_columns

    root.mkdir(parents=True)
    subprocess.run([sys.executable, "-m", "optlog", "init", str(root)], check=True, capture_output=True)
    ctx = Ctx.find(root)
    for i in range(N_HYP):
        parent = f"h{(i - 1) // 3:04d}" if i else None  # a tree three wide
        doc = HypothesisDoc(id=f"h{i:04d}", title=f"Hypothesis {i}: allreduce or GEMM at batch {i % 64}",
                            statement="Decode throughput is bound by X.", rationale="Because Y.", parent=parent,
                            created=f"2026-02-17T{9 + i // 3600:02d}:{i // 60 % 60:02d}:{i % 60:02d}.000Z",
                            predictions=[Prediction(id=f"h{i:04d}.p1", expect="a > b", metric="total_token_throughput",
                                                    a={"config": "tp4pp2"}, b={"config": "tp8"}, per="concurrency")])
        hypfiles.save(ctx.ws, doc, None)
    H.sync(ctx)
    rng = np.random.default_rng(0)
    with ctx.db.write() as s:
        ids = []
        for i in range(N_RUNS):
            ids.append(insert_run(s, labels={"config": ("tp8", "tp4pp2")[i % 2], "concurrency": (64, 256, 512)[i % 3],
                                             "repeat": i // 6},
                                  metrics={"total_token_throughput": float(rng.normal(1000, 50)),
                                           "output_throughput": float(rng.normal(400, 20)), "ttft_ms_p50": 35.0},
                                  status="succeeded", source="recorded"))
        per_gpu = N_SAMPLES // (10 * 4)  # 10 runs × 4 GPUs
        for rid in ids[:10]:
            t = 1.7e9 + np.arange(per_gpu) * 0.1
            cols = {f"GPU-{g}": {TIME_FIELD: t, "gpu_power_w": rng.normal(330, 20, per_gpu),
                                 "tensor_active": rng.uniform(5, 15, per_gpu), "dram_bw_util": rng.uniform(30, 60, per_gpu)}
                    for g in range(4)}
            write_columns(s, cols, run_id=rid, launch_id=None)
    subprocess.run(["git", "add", "-A"], cwd=root, check=True)
    subprocess.run(["git", "commit", "-qm", "bench workspace"], cwd=root, check=True)
    ctx.db.dispose()


# ---------------------------------------------------------------- children (fresh processes)


async def _first_paint(root: str, t0: float) -> dict[str, float]:
    from optlog.service.context import Ctx
    from optlog.tui.app import OptlogApp

    app = OptlogApp(Ctx.find(root), poll_s=3600)
    out: dict[str, float] = {}
    display = app._display

    def timed_display(screen, renderable):  # type: ignore[no-untyped-def]
        display(screen, renderable)  # a frame written to the (headless) terminal
        try:
            has_tree = bool(app.query_one("#hyp-tree").root.children)
        except Exception:  # not mounted yet
            has_tree = False
        if "tree_s" not in out and has_tree:
            out["tree_s"] = time.time() - t0
        if "all_s" not in out and app.loads:
            out["all_s"] = time.time() - t0

    app._display = timed_display  # type: ignore[method-assign]
    async with app.run_test(size=(120, 40)):
        end = time.monotonic() + 60
        while "all_s" not in out and time.monotonic() < end:
            await asyncio.sleep(0.005)
    return out


async def _empty_paint(t0: float) -> dict[str, float]:
    from textual.app import App
    from textual.widgets import Static

    class Empty(App[None]):
        def compose(self):  # type: ignore[no-untyped-def]
            yield Static("hello")

    app = Empty()
    out: dict[str, float] = {}
    display = app._display

    def timed_display(screen, renderable):  # type: ignore[no-untyped-def]
        display(screen, renderable)
        out.setdefault("tree_s", time.time() - t0)

    app._display = timed_display  # type: ignore[method-assign]
    async with app.run_test(size=(120, 40)):
        while "tree_s" not in out:
            await asyncio.sleep(0.005)
    return out


async def _keys_and_live(root: str) -> dict[str, float]:
    from textual import events
    from textual.widgets import DataTable, Tree

    from optlog.service.context import Ctx
    from optlog.tui.app import OptlogApp

    app = OptlogApp(Ctx.find(root), poll_s=0.5)
    async with app.run_test(size=(120, 40)) as pilot:
        while app.loads == 0:
            await asyncio.sleep(0.01)
        await pilot.press("3")
        await app.workers.wait_for_complete()
        table = app.query_one("#runs-table", DataTable)
        # key press → the first screen update that shows the moved cursor (a refresh written by the
        # headless driver), not pilot.press() (which also waits for the process to go idle)
        shown: list[float] = []
        display = app._display

        def timed_display(screen, renderable):  # type: ignore[no-untyped-def]
            display(screen, renderable)
            shown.append(time.perf_counter())

        app._display = timed_display  # type: ignore[method-assign]
        lat = []
        for _ in range(200):
            before = table.cursor_row
            ev = events.Key("down", None)
            ev.set_sender(app)
            t = time.perf_counter()
            app._driver.send_message(ev)
            while table.cursor_row == before:
                await asyncio.sleep(0)
            n = len(shown)
            while len(shown) == n:
                await asyncio.sleep(0.001)
            lat.append(shown[n] - t)
            await asyncio.sleep(0.03)  # key repeat of about 30 per second
        app._display = display  # type: ignore[method-assign]
        row = table.cursor_row
        await pilot.press("1")
        # external change: another process adds a hypothesis
        hid = f"live-{os.getpid()}"
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, lambda: subprocess.run(
            [sys.executable, "-m", "optlog", "-C", root, "hypothesis", "add", "Live one", "--id", hid],
            check=True, capture_output=True))
        t = time.perf_counter()
        tree = app.query_one("#hyp-tree", Tree)

        def seen() -> bool:
            stack = list(tree.root.children)
            while stack:
                n = stack.pop()
                if n.data == hid:
                    return True
                stack.extend(n.children)
            return False

        while not seen() and time.perf_counter() - t < 10:
            await asyncio.sleep(0.01)
        visible = time.perf_counter() - t
        await pilot.pause()
        lat.sort()
        return {"key_p50_ms": 1000 * lat[len(lat) // 2], "key_p95_ms": 1000 * lat[int(len(lat) * 0.95)],
                "rows_loaded": table.row_count, "cursor": row, "external_s": visible}


def child(argv: list[str]) -> None:
    kind, t0 = argv[0], float(argv[1])
    if kind == "import":
        import textual  # noqa: F401

        res = {"tree_s": time.time() - t0}
    elif kind == "empty":
        res = asyncio.run(_empty_paint(t0))
    elif kind == "optlog":
        res = asyncio.run(_first_paint(argv[2], t0))
    else:
        res = asyncio.run(_keys_and_live(argv[2]))
    print(json.dumps(res))


def spawn(*args: str) -> dict[str, float]:
    p = subprocess.run([sys.executable, __file__, "--child", *args[:1], repr(time.time()), *args[1:]],
                       capture_output=True, text=True, check=True)
    return json.loads(p.stdout.strip().splitlines()[-1])


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(sys.argv[2:])
        return
    ap = argparse.ArgumentParser()
    ap.add_argument("--ws", default="/tmp/optlog-tui-bench")
    ap.add_argument("--repeats", type=int, default=5)
    a = ap.parse_args()
    root = Path(a.ws)
    if not (root / ".optlog").exists():
        t = time.perf_counter()
        build(root)
        print(f"built {root} in {time.perf_counter() - t:.1f}s", file=sys.stderr)
    med = lambda xs: statistics.median(xs)  # noqa: E731
    rows: dict[str, list[float]] = {"import textual": [], "empty Textual app, first paint": [],
                                    "optlog: hypothesis tree painted": [], "optlog: every tab loaded": []}
    for _ in range(a.repeats):
        rows["import textual"].append(spawn("import")["tree_s"])
        rows["empty Textual app, first paint"].append(spawn("empty")["tree_s"])
        r = spawn("optlog", str(root))
        rows["optlog: hypothesis tree painted"].append(r["tree_s"])
        rows["optlog: every tab loaded"].append(r["all_s"])
    base = med(rows["empty Textual app, first paint"])
    print(f"first paint ({N_HYP:,} hypotheses, {N_RUNS:,} runs, {N_SAMPLES:,} telemetry samples; median of {a.repeats})")
    print("| measure | median s | × empty app |")
    print("|---|---|---|")
    for k, v in rows.items():
        print(f"| {k} | {med(v):.3f} | {med(v) / base:.2f} |")
    k = [spawn("keys", str(root)) for _ in range(max(1, a.repeats // 2))]
    print(f"\nruns table key press → repaint: p50 {med([x['key_p50_ms'] for x in k]):.1f} ms, "
          f"p95 {med([x['key_p95_ms'] for x in k]):.1f} ms (200 presses; {k[0]['rows_loaded']} rows loaded of {N_RUNS:,})")
    print(f"external change (`optlog hypothesis add` in another process) → visible: "
          f"median {med([x['external_s'] for x in k]):.3f} s, max {max(x['external_s'] for x in k):.3f} s (poll 0.5 s)")


if __name__ == "__main__":
    main()
