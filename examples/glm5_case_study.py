#!/usr/bin/env python3
"""The GLM-5 NVFP4 case study, rebuilt from recorded data in a fresh optlog workspace.

    python examples/glm5_case_study.py PATH            # build the workspace at PATH (new or empty)
    python examples/glm5_case_study.py PATH --update-repo
                                                        # ... and copy its hypotheses/, glb5improvement/,
                                                        # reports/ and optlog.yaml into this repository

The story is the one the seed documents tell (8× RTX PRO 6000 Blackwell, SGLang, Proxmox VM): a
communication-bound hypothesis, pre-registered predictions, TP8 vs TP4+PP2 benchmarks that falsify
it, the pivot to a compute-bound child hypothesis (FP4 GEMM efficiency on SM120) and its rival
(pipeline bubbles), GEMM micro-benchmarks and power readings, notes with links, the agent's todo
list, ranked improvement plans, verdicts, the rendered plans and a session report.

Measured numbers are the seed's. What the seed does not give is marked as reconstructed: the
clock (a fixed `OPTLOG_NOW` per step, so every run of this script writes the same bytes) and the
plans' predicted gain ranges, efforts and confidences (estimates made for this example).

Most steps call optlog's service layer in-process (fast); predictions and verdicts go through the
CLI (`optlog prediction add`, `optlog verdict --all`). Where this optlog has no such command yet,
predictions are written into the hypothesis files through the same service call the command uses,
and the seed's own judgement (msg 858-860) is recorded as a manual status with its reason.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

ACTOR = "glm5-case-study"
START = datetime(2026, 2, 17, 9, 0, tzinfo=timezone.utc)
COPIED = ("hypotheses", "glb5improvement", "reports", "runs/evidence")

CONFIG = """\
# optlog workspace settings. Unknown keys are errors.
id: 7b1a9ceeb161bc5fe3a07a409314ee53  # this workspace's identity (keeps it apart on a shared database)
name: glm5-nvfp4-blackwell
plans:
  prefix: glb5improvement   # plans render to glb5improvement/glb5improvement-NN.md
hardware:
  default: rtx-pro-6000
  gpus:
    rtx-pro-6000:
      count: 8
      peak_tflops: {fp4: 2000}   # dense FP4, as the session quotes it (~2,000 TOPS)
      mem_bw_gbps: 1600          # 1.6 TB/s, as the session quotes it
      interconnect_gbps: 54      # PCIe P2P within a NUMA socket (NODE); ~40 GB/s across (SYS)
      power_limit_w: 600
      source: seed documents (GLM-5-NVFP4 on 8x RTX PRO 6000 Blackwell)
executors:
  ssh: {}
  slurm: {}
telemetry:
  interval_s: 0.5
  warmup_s: 0
"""

SEED_TODOS = {"todos": [
    {"id": "1", "content": "Check if server is running on LXC container (flashinfer_trtllm test)", "priority": "high",
     "status": "completed"},
    {"id": "2", "content": "Start server with TP4+PP2 and benchmark", "priority": "high", "status": "completed"},
    {"id": "3", "content": "TP4+PP2 result: ~2x SLOWER than TP8 — confirms compute-bound, not comm-bound",
     "priority": "high", "status": "completed"},
    {"id": "4", "content": "Investigate FP4 GEMM kernel efficiency on SM120", "status": "pending"},
]}

SERVING = [  # (concurrency, TP8 total, TP4+PP2 total, TP8 output, TP4+PP2 output) tok/s
    (64, 700, 213, 200, 104),
    (256, 1867, 727, 622, 370),
    (512, 2800, 1318, None, 661),
]


class Clock:
    """The reconstructed session clock: each step moves it on and sets OPTLOG_NOW."""

    def __init__(self) -> None:
        self.t = START

    def at(self, day: int, hh: int, mm: int) -> None:
        self.t = START.replace(day=START.day + day, hour=hh, minute=mm)
        self._set()

    def tick(self, minutes: int = 1) -> None:
        self.t += timedelta(minutes=minutes)
        self._set()

    def _set(self) -> None:
        os.environ["OPTLOG_NOW"] = self.t.strftime("%Y-%m-%dT%H:%M:%S.000Z")


def cli(ws: Path, *args: str, input: str | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
    p = subprocess.run([sys.executable, "-m", "optlog", "-C", str(ws), *args], input=input, capture_output=True,
                       text=True, env=dict(os.environ, PYTHONPATH=str(REPO)))
    if check and p.returncode != 0:
        raise SystemExit(f"optlog {' '.join(args)} failed ({p.returncode}):\n{p.stdout}\n{p.stderr}")
    return p


def has_command(ws: Path, *cmd: str) -> bool:
    return cli(ws, *cmd, "--help", check=False).returncode == 0


def build(ws: Path) -> None:
    os.environ["OPTLOG_ACTOR"] = ACTOR
    clock = Clock()
    clock.at(0, 8, 0)
    if ws.exists() and any(ws.iterdir()):
        raise SystemExit(f"{ws} is not empty: give a new or empty folder")
    ws.mkdir(parents=True, exist_ok=True)
    (ws / "optlog.yaml").write_text(CONFIG, encoding="utf-8")

    from optlog.paths import Workspace
    from optlog.service import evidence, hypotheses, plans, report, todos
    from optlog.service.context import Ctx
    from optlog.service.workspace import init

    init(ws, "glb5improvement", ACTOR)  # adopts the optlog.yaml above and commits it
    ctx = Ctx(Workspace(ws.resolve()), ACTOR)

    def predict(hid: str, expect: str, metric: str, a: dict[str, str], b: dict[str, str] | None = None,
                per: str | None = None, where: str | None = None) -> None:
        clock.tick()
        if has_prediction_cmd:
            args = ["prediction", "add", hid, "--expect", expect, "--metric", metric]
            args += [x for k, v in a.items() for x in ("--a", f"{k}={v}")]
            args += [x for k, v in (b or {}).items() for x in ("--b", f"{k}={v}")]
            args += (["--per", per] if per else []) + (["--where", where] if where else [])
            cli(ws, *args)
            return
        from optlog.core.hypothesis import Prediction
        from optlog.core.timeutil import now_iso

        def change(doc):  # type: ignore[no-untyped-def]
            pid = f"{hid}-p{len(doc.predictions) + 1}"
            doc.predictions.append(Prediction(id=pid, expect=expect, metric=metric, a=a, b=b or {}, per=per,
                                              where=where, created=now_iso()))
            return {"Optlog-Prediction": pid}

        hypotheses.mutate(ctx, hid, change, event="prediction-add", subject=f"optlog: prediction for {hid}",
                          body=expect)

    def run(labels: dict[str, object], metrics: dict[str, float], hyp: str | None = None, note: str | None = None) -> None:
        clock.tick()
        evidence.record(ctx, labels, metrics, hyp, note)

    def note(text: str, hyp: str | None = None, link: str | None = None) -> None:
        clock.tick()
        evidence.add_note(ctx, text, hyp, link)

    has_prediction_cmd = has_command(ws, "prediction", "add")
    has_verdict_cmd = has_command(ws, "verdict")

    # ---- day 1, morning: the communication-bound hypothesis and its pre-registered prediction
    clock.at(0, 9, 0)
    note("Case study rebuilt from the seed documents by examples/glm5_case_study.py: measurements as the session "
         "reported them; times reconstructed; plan gain ranges, efforts and confidences are estimates for this example.")
    clock.tick()
    hypotheses.add(
        ctx, "Communication-bound: cross-NUMA allreduce limits TP8 throughput", hid="comm-bound",
        statement="With TP8 every layer's allreduce crosses the NUMA boundary of the Proxmox VM, where PCIe P2P "
                  "is slow; allreduce latency, not GEMM work, bounds decode throughput.",
        rationale="PCIe P2P between the two sockets runs at ~40 GB/s (SYS) against ~54 GB/s within a socket "
                  "(NODE), and the VM adds P2P latency. TP4+PP2 keeps every allreduce on 4 NUMA-local GPUs and "
                  "sends only small activations across.",
    )
    note("PCIe P2P bandwidth: ~40 GB/s across NUMA sockets (SYS) vs ~54 GB/s within a socket (NODE), Proxmox VM",
         "comm-bound")
    note("Best TP8 result so far in the session: ~3,740 total tok/s", "comm-bound")
    predict("comm-bound", "a > b", "total_token_throughput", {"bench": "serving", "config": "tp4pp2"},
            {"bench": "serving", "config": "tp8"}, per="concurrency")

    # ---- the TP8 vs TP4+PP2 benchmarks (both on 8 GPUs; the config label names tp/pp, so the two
    # groups differ only in what the prediction compares and stay comparable for the verdict engine)
    clock.at(0, 10, 30)
    for c, tp8, pp2, out8, out_pp in SERVING:
        m8 = {"total_token_throughput": tp8, **({"output_throughput": out8} if out8 is not None else {})}
        run({"bench": "serving", "config": "tp8", "gpus": 8, "concurrency": c, "model": "glm-5-nvfp4"}, m8,
            "comm-bound")
    clock.at(0, 13, 0)
    for c, tp8, pp2, out8, out_pp in SERVING:
        run({"bench": "serving", "config": "tp4pp2", "gpus": 8, "concurrency": c, "model": "glm-5-nvfp4"},
            {"total_token_throughput": pp2, "output_throughput": out_pp}, "comm-bound",
            note="PP0 on GPUs 0-3, PP1 on GPUs 4-7, TP4 within each socket")
    clock.at(0, 13, 30)
    todos.write(ctx, SEED_TODOS, "msg 860 todowrite")

    # ---- the pivot: compute-bound (child) and its rival, pipeline bubbles
    clock.at(0, 13, 40)
    note("User (msg 858): \"Doesn't the halving of perf sort of imply we're compute bound -> kernels not tuned "
         "to the GPU?\"", "comm-bound")
    clock.tick()
    hypotheses.add(
        ctx, "Compute-bound: FP4 GEMM kernels are inefficient on SM120", hid="compute-bound", parent="comm-bound",
        statement="Decode is bound by the FP4 GEMM kernels themselves: on SM120 they reach a small fraction of "
                  "the FP4 peak at the per-expert batch sizes decode produces.",
        rationale="TP4+PP2 doubles every per-GPU GEMM and runs at about half the throughput of TP8: the slowdown "
                  "tracks the compute per GPU, not the allreduce. No pre-tuned CUTLASS tactics for SM120, ~99 KB "
                  "of shared memory per SM (small tiles), and 55% power at 98% SM occupancy all point at kernels "
                  "stalling rather than doing FP4 math.",
    )
    clock.tick()
    hypotheses.add(
        ctx, "Pipeline bubbles: PP stages idle while waiting on each other", hid="pipeline-bubbles",
        rivals=["compute-bound"],
        statement="TP4+PP2 is slow because pipeline stages wait on each other (bubbles), not because of GEMM "
                  "efficiency; with enough requests in flight the bubbles fill and the gap to TP8 closes.",
        rationale="The rival explanation of the same TP8 vs TP4+PP2 result: PP adds idle time per step that only "
                  "high concurrency hides.",
    )
    predict("compute-bound", "a / b in [0.3, 0.6]", "total_token_throughput", {"bench": "serving", "config": "tp4pp2"},
            {"bench": "serving", "config": "tp8"}, per="concurrency")
    predict("pipeline-bubbles", "a >= b * 0.9", "total_token_throughput", {"bench": "serving", "config": "tp4pp2"},
            {"bench": "serving", "config": "tp8"}, per="concurrency", where="concurrency >= 512")
    predict("compute-bound", "a < 0.05 * peak_tflops", "tflops", {"bench": "fp4-gemm", "shape": "per-expert-decode"},
            per="m")
    predict("compute-bound", "a < 0.6 * power_limit_w", "gpu_power_w_mean", {"bench": "power-probe", "config": "tp8"},
            per="phase")

    # ---- the kernel investigation
    clock.at(0, 15, 0)
    run({"bench": "power-probe", "config": "tp8", "phase": "benchmark"},
        {"gpu_power_w_mean": 330, "sm_occupancy_mean": 98}, "compute-bound",
        note="~330 W of 600 W at 98% SM occupancy while benchmarking TP8")
    clock.at(0, 16, 0)
    run({"bench": "fp4-gemm", "kernel": "cutlass", "shape": "very-large"}, {"tflops": 1300}, "compute-bound",
        note="CUTLASS FP4 GEMM plateaus at ~1,300 TFLOPS (~70% of dense peak) only for very large matrices")
    for m, tf in ((16, 0.8), (64, 55)):
        run({"bench": "fp4-gemm", "kernel": "cutlass", "shape": "per-expert-decode", "m": m}, {"tflops": tf},
            "compute-bound", note="per-expert decode batch; the session reports 0.8-55 TFLOPS for 16-64 tokens")
    note("TMA warp-specialised grouped GEMM tactics with M128/M256 tiles crash during autotune on SM120 "
         "(shared memory overflow at ~99 KB per SM)", "compute-bound")
    note("cuBLASLt FP4 is no faster than CUTLASS on SM120", "compute-bound")
    clock.at(1, 10, 0)
    note("FlashInfer mm_fp4 with the CUTLASS backend returns all zeros on SM120", "compute-bound",
         "https://github.com/flashinfer-ai/flashinfer/issues/2577")
    clock.tick(30)
    run({"bench": "power-probe", "config": "tp8", "phase": "decode"}, {"gpu_power_w_mean": 235}, "compute-bound",
        note="~235 W during inference")

    # ---- verdicts
    clock.at(1, 12, 0)
    if has_verdict_cmd:
        cli(ws, "verdict", "--all", check=False)  # exit 1 would only mean "something is falsified"
    else:
        hypotheses.set_status(
            ctx, "comm-bound", "falsified",
            "TP4+PP2 0.30–0.47× TP8 (total tok/s 213/700, 727/1867, 1318/2800 at c=64/256/512): "
            "NUMA-local allreduce made it slower, the opposite of the prediction")
        clock.tick()
        hypotheses.set_status(
            ctx, "compute-bound", "confirmed",
            "TP4+PP2 0.30–0.47× TP8 tracks the doubled per-GPU GEMM work; FP4 GEMMs reach 0.8-55 TFLOPS at "
            "per-expert batches of 16-64 tokens (<3% of ~2,000 peak); 330 W then ~235 W of 600 W")

    # ---- plans (gain ranges, efforts and confidences: estimates for this example)
    clock.at(2, 9, 0)
    tuning = plans.add(
        ctx, "Server-parameter tuning (scheduler, chunked prefill, CUDA-graph batch sizes)", gain="10-30%",
        effort="S", confidence=0.7,
        rationale="Cheap to try on the TP8 baseline whatever the bottleneck is.",
        steps=["Sweep the scheduler and batching parameters of the SGLang server one at a time",
               "Keep each change that raises total token throughput at c=256 and c=512"],
        risks=["Gains at one concurrency may cost latency at another"],
        validation="TP8 before and after at concurrency 64/256/512, same workload",
    )
    clock.tick()
    pp = plans.add(
        ctx, "TP4+PP2: keep every allreduce NUMA-local", gain="10-40%", effort="M", confidence=0.6,
        needs=["comm-bound"],
        rationale="If cross-NUMA allreduce bounds TP8, four NUMA-local GPUs per stage remove it; only small "
                  "activations cross the sockets.",
        steps=["Launch SGLang with --tp-size 4 --pp-size 2 (PP0 on GPUs 0-3, PP1 on GPUs 4-7)",
               "Benchmark against TP8 at concurrency 64/256/512"],
        risks=["Pipeline bubbles at low concurrency", "PP1 also holds lm_head (~4 GB more per GPU)"],
        validation="bench=serving, config=tp4pp2 vs config=tp8, total_token_throughput per concurrency",
    )
    clock.tick()
    plans.add(
        ctx, "Expert parallelism (EP8) for the MoE layers", gain="20-60%", effort="M", confidence=0.5,
        needs=["compute-bound"],
        rationale="Per-expert batches of 16-64 tokens reach only 0.8-55 TFLOPS. With expert parallelism each "
                  "GPU runs whole experts on all the tokens routed to them: fewer, larger GEMMs (larger M) that "
                  "sit further up the FP4 efficiency curve.",
        steps=["Launch with expert parallelism 8 (attention TP8, MoE EP8)",
               "Check outputs are sane, then benchmark at concurrency 64/256/512",
               "Profile per-expert GEMM sizes and all-to-all time"],
        risks=["All-to-all dispatch crosses the slow NUMA link", "Expert load imbalance"],
        validation="config=ep8 vs config=tp8 at concurrency 64/256/512; expect total_token_throughput >= 1.2x",
    )
    clock.tick()
    plans.add(
        ctx, "Piecewise CUDA graphs for decode", gain="5-15%", effort="S", confidence=0.6,
        rationale="Decode launches many small kernels; piecewise CUDA graphs cut launch overhead between them "
                  "without capturing the whole model.",
        steps=["Enable piecewise CUDA graphs in the server", "Benchmark decode-heavy load against TP8"],
        risks=["Capture fails for some batch sizes", "More GPU memory for graphs"],
        validation="TP8 with and without piecewise CUDA graphs at concurrency 64/256/512",
    )
    clock.tick()
    plans.add(
        ctx, "FP4 GEMM tactic tuning for SM120 (small-M tiles within 99 KB shared memory)", gain="15-40%",
        effort="L", confidence=0.4, needs=["compute-bound"],
        rationale="The autotuner picks among tactics that were not tuned for SM120, and the M128/M256 tiles crash "
                  "(shared memory overflow). Tactics for small M that fit ~99 KB could lift the 0.8-55 TFLOPS "
                  "seen at decode batch sizes.",
        steps=["Log the CUTLASS tactics chosen per GEMM shape", "Add small-M tile configurations that fit 99 KB",
               "Fix or skip the crashing M128/M256 tactics in autotune", "Re-run the GEMM sweep, then serving"],
        risks=["Deep kernel work with uncertain payoff", "FlashInfer mm_fp4 zeros bug (issue 2577) on SM120"],
        validation="bench=fp4-gemm per m (16..8192): tflops before and after; then serving at c=256",
    )
    clock.tick()
    plans.add(
        ctx, "MSCCLPP allreduce across the NUMA boundary", gain="10-30%", effort="M", confidence=0.5,
        needs=["comm-bound"],
        rationale="A faster allreduce implementation would help if allreduce bounded decode.",
        steps=["Build SGLang with MSCCLPP allreduce", "Benchmark TP8 with and without it"],
        risks=["Little to gain if decode is compute-bound"],
        validation="TP8 with MSCCLPP vs NCCL allreduce at concurrency 64/256/512",
    )
    clock.tick()
    plans.add(
        ctx, "Micro-batch interleaving to fill pipeline bubbles", gain="20-50%", effort="M", confidence=0.3,
        needs=["pipeline-bubbles"],
        rationale="If TP4+PP2 loses to bubbles, interleaving micro-batches across the two stages would recover it.",
        steps=["Enable micro-batch interleaving for PP2", "Benchmark TP4+PP2 against TP8"],
        risks=["Memory for more in-flight micro-batches"],
        validation="config=tp4pp2-interleaved vs config=tp8 at concurrency 64/256/512",
    )
    clock.at(2, 9, 30)
    plans.set_(ctx, pp["id"], "dropped", "-53",
               "Measured: TP4+PP2 0.47x TP8 at c=512 (1,318 vs 2,800 total tok/s), 0.30x at c=64; comm-bound falsified")
    clock.at(3, 18, 0)
    plans.set_(ctx, tuning["id"], "done", "28", "+28% throughput from systematic server-parameter tuning on TP8")

    # ---- render the plans, write the report
    clock.at(3, 18, 30)
    plans.render(ctx)
    clock.tick()
    report.write(ctx, "reports/glm5-session.md")
    ctx.close()


def update_repo(ws: Path) -> None:
    for d in COPIED:
        dst = REPO / d
        if dst.exists():
            for f in dst.iterdir():
                if f.name != ".gitkeep":
                    shutil.rmtree(f) if f.is_dir() else f.unlink()
        dst.mkdir(parents=True, exist_ok=True)
        for f in sorted((ws / d).iterdir()):
            if f.name != ".gitkeep" and f.is_file():
                shutil.copy2(f, dst / f.name)
    shutil.copy2(ws / "optlog.yaml", REPO / "optlog.yaml")
    print(json.dumps({"updated": [*COPIED, "optlog.yaml"], "from": str(ws)}))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("path", type=Path, help="a new or empty folder for the workspace")
    ap.add_argument("--update-repo", action="store_true", help="copy the results into this repository")
    a = ap.parse_args()
    build(a.path)
    if a.update_repo:
        update_repo(a.path)


if __name__ == "__main__":
    main()
