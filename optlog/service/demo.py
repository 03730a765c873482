"""`optlog demo`: the whole loop, for real, on this machine, with nothing else installed.

The seed's experiment in miniature. Two "deployments" are served by optlog's own OpenAI-compatible
stand-in (`optlog.testing.fakeserver`): `tp8` emits a token every 4 ms, `tp4pp2` every 9 ms — the
stand-in for "each GPU now computes twice the GEMM". A run spec launches each server, sanity-checks
it, sweeps concurrency with optlog's own load generator, and parses the results; the
communication-bound hypothesis predicted TP4+PP2 to out-run TP8 and is falsified by the measured
numbers; the compute-bound pivot and its rival are both confirmed, and optlog says the experiment
cannot tell those two apart. Plans are ranked by the verdicts, rendered and committed with a report.

Every process, HTTP request, database row and git commit is real; only the server is simulated,
and every run carries the label `server=simulated` so nobody mistakes it for a GPU measurement.
"""

from __future__ import annotations

import socket
import sys
from pathlib import Path
from typing import Any, Callable

from optlog.errors import BadInput

SPEC = """\
# optlog demo: TP8 vs TP4+PP2, on a simulated OpenAI-compatible server (see `optlog demo --help`).
name: demo-tp-vs-pp
params: {{python: "{python}", port: {port}}}
matrix: {{concurrency: [4, 16, 64]}}
include:
  - {{config: tp8,    itl_ms: 4}}
  - {{config: tp4pp2, itl_ms: 9}}
repeats: 1
server:
  cmd: "{{{{ python }}}} -m optlog.testing.fakeserver --port {{{{ port }}}} --ttft-ms 20 --itl-ms {{{{ itl_ms }}}} --tokens 32"
  ready: {{url: "http://127.0.0.1:{{{{ port }}}}/health", timeout_s: 60}}
  check: {{prompts: ["The capital of France is"], expect_regex: "Paris"}}
bench:
  cmd: "{{{{ python }}}} -m optlog.loadgen http://127.0.0.1:{{{{ port }}}} --concurrency {{{{ concurrency }}}} --num-prompts {{{{ concurrency * 8 }}}} --output-len 32 --input-len 64 --output-file {{{{ out }}}}/result.jsonl"
  parser: optlog
telemetry: {{scrape: "http://127.0.0.1:{{{{ port }}}}/metrics"}}
labels: {{model: demo-model, server: simulated}}
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def run(path: str | Path, say: Callable[[str], None]) -> dict[str, Any]:
    """Build the demo workspace at `path` and run the loop; returns a summary document."""
    from optlog.service import evidence, hypotheses, launch, plans, predictions, report, verdicts
    from optlog.service.context import Ctx
    from optlog.service.workspace import init

    root = Path(path).resolve()
    if root.exists() and any(root.iterdir()):
        raise BadInput(f"{root} exists and is not empty; give a new folder", field="PATH")
    root.mkdir(parents=True, exist_ok=True)
    import subprocess

    # its own repository, even inside another one: the demo's commits must not land elsewhere
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    init(root)
    ctx = Ctx.find(root)
    ctx.on_notice = lambda t: say(f"  note: {t}")  # type: ignore[attr-defined]
    try:
        say(f"workspace: {root}")
        hypotheses.add(ctx, "Communication-bound: allreduce limits throughput", hid="comm-bound",
                       statement="Splitting TP8 into TP4+PP2 keeps allreduce local and so raises throughput.")
        predictions.add(ctx, "comm-bound", "a > b", metric="output_throughput", a=["config=tp4pp2"],
                        b=["config=tp8"], per="concurrency")
        say("hypothesis comm-bound, predicting tp4pp2 out-runs tp8 at every concurrency")
        spec = root / "runs" / "demo.yaml"
        spec.write_text(SPEC.format(python=sys.executable, port=_free_port()), encoding="utf-8")
        say("launching runs/demo.yaml: 2 configs x 3 concurrency levels (simulated server, real load generator)")
        res = launch.launch(ctx, str(spec), hypothesis="comm-bound",
                            on_event=lambda ev: say(f"  {ev['text']}") if ev.get("kind") == "log" else None)
        rows = evidence.list_runs(ctx, hypothesis="comm-bound")
        for r in rows:
            say(f"  run {r['id']}: {r['labels'].get('config')} c={r['labels'].get('concurrency')} "
                f"{r['status']} output_throughput={r['metrics'].get('output_throughput', float('nan')):.0f} tok/s")
        v1 = verdicts.evaluate(ctx, "comm-bound")
        say(f"verdict: comm-bound → {v1['results'][0]['status']}")
        hypotheses.add(ctx, "Compute-bound: per-GPU work doubled, so throughput halves", hid="compute-bound",
                       parent="comm-bound")
        predictions.add(ctx, "compute-bound", "a / b in [0.3, 0.6]", metric="output_throughput",
                        a=["config=tp4pp2"], b=["config=tp8"], per="concurrency")
        hypotheses.add(ctx, "Pipeline bubbles", hid="pipeline-bubbles", rivals=("compute-bound",))
        predictions.add(ctx, "pipeline-bubbles", "a / b in [0.25, 0.65]", metric="output_throughput",
                        a=["config=tp4pp2"], b=["config=tp8"], per="concurrency")
        v2 = verdicts.evaluate(ctx, all=True)
        for r in v2["results"]:
            say(f"verdict: {r['hypothesis']} → {r['status']}")
        plans.add(ctx, "Tune the FP4 GEMM tactics for SM120", gain="20-50%", effort="M", confidence="0.6",
                  needs=["compute-bound"])
        plans.add(ctx, "MSCCLPP allreduce", gain="5-15%", effort="M", confidence="0.6", needs=["comm-bound"])
        ranked = plans.list_(ctx)["plans"]
        for p in ranked:
            say(f"plan #{p.get('rank') or '-'} {p['title']} (score {p['score']:.2f}){': ' + p['reason'] if p.get('reason') else ''}")
        plans.render(ctx)
        rep = report.write(ctx)
        say(f"report: {rep.get('file')}")
        import shutil

        exe = "optlog" if shutil.which("optlog") else f"{sys.executable} -m optlog"
        say(f"open the dashboard: {exe} -C {root}    (the decision history: {exe} -C {root} log)")
        return {"workspace": str(root), "launch": res, "verdicts": v2, "plans": ranked, "report": rep.get("file")}
    finally:
        ctx.close()
