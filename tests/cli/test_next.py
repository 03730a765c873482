"""`optlog next` (issue 36): the experiment that would tell rival hypotheses apart, on three cases —
the GLM-5 case study committed in this repository (it must propose the tensor-parallel split), a
memory-bound vs compute-bound slot sweep launched for real (a spec derived from its launch, runnable,
with each rival's prediction per level), and rivals no label at hand can tell apart (it says what is
missing). In-process, one workspace each: no `optlog` subprocess, one small launch."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def fresh(tmp_path, db_env, monkeypatch):
    """A new workspace folder (a git repository) and the environment optlog reads in-process."""
    for k, v in db_env.items():
        monkeypatch.setenv(k, v)
    if "OPTLOG_DB_URL" not in db_env:
        monkeypatch.delenv("OPTLOG_DB_URL", raising=False)
    monkeypatch.setenv("OPTLOG_ACTOR", "tester")
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    cfg = tmp_path / "gitconfig"
    cfg.write_text("[user]\n\tname = T\n\temail = t@example.com\n[init]\n\tdefaultBranch = main\n")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(cfg))
    root = tmp_path / "ws"
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    return root


def _ctx(root):
    from optlog.service.context import Ctx

    return Ctx.find(root)


def _pair(doc, other):
    return next(e for e in doc["pairs"] if e["other"] == other)


def test_the_case_study_proposes_the_tensor_parallel_split(fresh):
    """The repository's case study as a clone reads it (hypotheses and committed evidence): comm-bound
    is falsified, its child compute-bound still inconclusive; `next` shows the outcomes side by side
    and proposes varying the TP split, where a compute bound and a communication bound part ways."""
    for part in ("optlog.yaml", "hypotheses", "runs/evidence"):
        src, dst = REPO / part, fresh / part
        shutil.copytree(src, dst) if src.is_dir() else shutil.copy(src, dst)
    subprocess.run(["git", "-C", str(fresh), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(fresh), "commit", "-qm", "case study"], check=True)
    from optlog.service import nextexp

    ctx = _ctx(fresh)
    try:
        doc = nextexp.analyse(ctx, "compute-bound")
    finally:
        ctx.close()
    parent = _pair(doc, "comm-bound")
    assert parent["relation"] == "parent" and parent["state"] == "partly", parent["why"]
    assert parent["bounds"] == {"compute-bound": "compute", "comm-bound": "communication"}
    row = next(r for r in parent["side_by_side"] if "comm-bound" in r)
    assert {"level": "concurrency=512", "compute-bound": "holds", "comm-bound": "fails"} in row["levels"]
    best = parent["candidates"][0]
    assert best["axis"] == "config" and best["levels"][0] == "tp2pp4" and best["reference"] == ["tp8"], best
    assert "0.25x" in best["predicted"]["compute-bound"][0]["outcome"]
    assert "> 1x" in best["predicted"]["comm-bound"][0]["outcome"]
    # its rival too: the split (compute follows it, a fixed per-step cost does not) beats a batch far past 512
    assert _pair(doc, "pipeline-bubbles")["candidates"][0]["axis"] == "config"
    # recorded evidence: no launch to derive a spec from, and it says so; nothing written
    assert parent["spec"] is None and "recorded, not launched" in parent["spec_note"]
    assert not list((fresh / "runs").glob("next-*.yaml"))


SLOTS = """\
name: slots
params: {{py: "{py}"}}
matrix: {{parallel: [1, 4], concurrency: [4]}}
repeats: 3
bench:
  cmd: "{{{{ py }}}} -c \\"import json; v = {{1: [10.0, 11.0, 9.0], 4: [14.0, 24.0, 17.0]}}[{{{{ parallel }}}}][{{{{ repeat }}}}]; open('{{{{ out }}}}/result.json', 'w').write(json.dumps({{'output_throughput': v}}))\\" --concurrency {{{{ concurrency }}}}"
  parser: json
labels: {{server: simulated}}
"""


def test_the_slot_sweep_gets_a_runnable_spec_from_its_launch(fresh):
    """Memory-bound (4 slots >= 2x of 1) vs compute-bound (< 1.5x), as the demo registers them, on a
    real launch whose ratio (~1.7x, noisy) decides neither: `next` proposes more slots (and raises the
    concurrency that would cap them), writes runs/next-<hyp>.yaml from launch L1 with the repeats the
    noise needs and order: cycles, states each rival's prediction per level, and launches nothing."""
    from optlog.runs.spec import load_spec, plan
    from optlog.service import hypotheses, launch, nextexp, predictions
    from optlog.service.workspace import init

    init(fresh)
    ctx = _ctx(fresh)
    try:
        hypotheses.add(ctx, "Memory-bound decode: batching slots multiplies throughput", hid="memory-bound")
        predictions.add(ctx, "memory-bound", "a / b >= 2", metric="output_throughput", a={"parallel": "4"},
                        b={"parallel": "1"}, per="concurrency")
        hypotheses.add(ctx, "Compute-bound decode: the cores are already busy", hid="compute-bound",
                       rivals=("memory-bound",))
        predictions.add(ctx, "compute-bound", "a / b < 1.5", metric="output_throughput", a={"parallel": "4"},
                        b={"parallel": "1"}, per="concurrency")
        (fresh / "runs" / "slots.yaml").write_text(SLOTS.format(py=sys.executable))
        launch.launch(ctx, "runs/slots.yaml")
        doc = nextexp.analyse(ctx)
    finally:
        ctx.close()
    (e,) = doc["pairs"]
    assert e["state"] == "not yet" and {e["hypothesis"], e["other"]} == {"memory-bound", "compute-bound"}, e
    assert e["noise"] and e["noise"] > 0.05
    best = e["candidates"][0]
    assert best["source"] == "roofline" and best["axis"] == "parallel" and best["levels"] == [8, 16], best
    assert best["also"] == {"concurrency": [16]}
    assert best["predicted"]["memory-bound"][0]["outcome"] == "output_throughput ≈ 8.00x of parallel=1"
    assert best["predicted"]["compute-bound"][0]["outcome"] == "output_throughput ≈ 1.00x of parallel=1"
    # the claims' own repeats candidate: apart by log(2/1.5), unclear for the noise measured
    assert any(c["source"] == "repeats" and c["repeats"] > 3 for c in e["candidates"])
    rel = e["spec"]
    assert rel == f"runs/next-{e['hypothesis']}.yaml", e["spec_note"]
    assert "launch L1" in e["spec_note"]
    spec = yaml.safe_load((fresh / rel).read_text())
    assert spec["matrix"] == {"parallel": [1, 8, 16], "concurrency": [16]}
    assert spec["order"] == "cycles" and spec["repeats"] == best["repeats"]
    assert spec["bench"] == yaml.safe_load(SLOTS.format(py=sys.executable))["bench"]  # same bench
    head = (fresh / rel).read_text()
    assert "# memory-bound predicts: parallel=8: output_throughput ≈ 8.00x" in head
    points = plan(load_spec(fresh / rel, rel), {})
    assert len(points) == 3 * best["repeats"]  # runnable: it plans
    assert [p.labels["parallel"] for p in points[:3]] == [1, 8, 16]  # cycles: each cycle visits every point
    from optlog.service.context import Ctx

    c2 = Ctx.find(fresh)
    try:
        from optlog.service import evidence

        assert len(evidence.list_runs(c2)) == 6  # nothing launched
    finally:
        c2.close()


# the issue's spec (issue 45): the bench's client concurrency follows {{ parallel }}, a fixed
# num_prompts of 4, and a concurrency label no command reads
ISSUE = """\
name: slots
params: {{py: "{py}", num_prompts: 4}}
matrix: {{parallel: [1, 2]}}
repeats: 3
bench:
  cmd: "{{{{ py }}}} -c \\"import json; v = {{1: [10.0, 11.0, 9.0], 2: [14.0, 24.0, 17.0]}}[{{{{ parallel }}}}][{{{{ repeat }}}}]; open('{{{{ out }}}}/result.json', 'w').write(json.dumps({{'output_throughput': v}}))\\" --concurrency {{{{ parallel }}}} --num-prompts {{{{ num_prompts }}}}"
  parser: json
labels: {{server: simulated, concurrency: 2}}
"""


def _rivals(ctx):
    from optlog.service import hypotheses, predictions

    hypotheses.add(ctx, "Memory-bound decode: batching slots multiplies throughput", hid="memory-bound")
    predictions.add(ctx, "memory-bound", "a / b >= 2", metric="output_throughput", a={"parallel": "2"},
                    b={"parallel": "1"})
    hypotheses.add(ctx, "Compute-bound decode: the cores are already busy", hid="compute-bound",
                   rivals=("memory-bound",))
    predictions.add(ctx, "compute-bound", "a / b < 1.5", metric="output_throughput", a={"parallel": "2"},
                    b={"parallel": "1"})


def test_the_written_spec_does_what_its_notes_say(fresh):
    """Issue 45: `next` raised a `concurrency` axis that no command reads (the bench's --concurrency
    follows {{ parallel }}) and kept 4 prompts for 8 slots. The proposal is checked against the spec it
    edits: the label-only axis is not raised (and it says so), the bench's request count follows the
    batch (and it says so), every planned point fills its batch, and the cost (runs, time from the
    runs measured) is stated before anything is launched."""
    from optlog.core import proposal as P
    from optlog.runs.spec import load_spec, plan
    from optlog.service import launch, nextexp
    from optlog.service.workspace import init

    init(fresh)
    ctx = _ctx(fresh)
    try:
        _rivals(ctx)
        (fresh / "runs" / "slots.yaml").write_text(ISSUE.format(py=sys.executable))
        launch.launch(ctx, "runs/slots.yaml")
        doc = nextexp.analyse(ctx)
    finally:
        ctx.close()
    (e,) = doc["pairs"]
    best = e["candidates"][0]
    assert best["axis"] == "parallel" and best["levels"] == [4, 8], best
    rel = e["spec"]
    assert rel, e["spec_note"]
    spec = yaml.safe_load((fresh / rel).read_text())
    assert spec["matrix"] == {"parallel": [1, 4, 8]}, spec  # no label-only concurrency axis
    assert "concurrency not raised: no server or bench placeholder reads it" in e["spec_note"]
    # and nothing says it was: not the candidate, not the spec's header (the issue's false note)
    assert "concurrency" not in e["candidates"][0].get("also", {})
    assert "raised to" not in e["candidates"][0]["why"] and "raised to" not in (fresh / rel).read_text()
    assert spec["bench"]["cmd"].endswith("--num-prompts 16")  # the same workload at every level: comparable runs
    assert "the bench command changed: its --num-prompts was {{ num_prompts }}, now 16 at every point" in e["spec_note"]
    points = plan(load_spec(fresh / rel, rel), {})
    views = [P.PointView(p.labels, [], p.rendered["bench"]["argv"]) for p in points]
    assert P.workload_problems(views, "parallel") == []
    assert {p.labels["parallel"]: P.flag_value(v.bench, P.PROMPT_FLAGS) for p, v in zip(points, views)} == \
        {1: 16, 4: 16, 8: 16}
    assert "check it before launching" not in e["spec_note"]
    cost = e["cost"]
    assert cost["runs"] == len(points) == 3 * best["repeats"]
    assert cost["axis"] == "parallel" and [b["level"] for b in cost["by_level"]] == [1, 2]
    assert 0 < cost["low_s"] <= cost["estimate_s"] <= cost["high_s"]
    head = (fresh / rel).read_text()
    assert f"# cost: {len(points)} runs, about " in head and "# note: the bench command changed" in head
    # the design, said with its cost: one workload at every level (comparable runs), against one that
    # followed parallel (2, 8, 16 requests for parallel 1, 4, 8: fewer requests at the small levels)
    import re

    m = re.search(r"one workload at every level, by design: runs that differ only in parallel compare as they are "
                  r"\(a request count that followed parallel would differ between the levels, and the verdict would "
                  r"set their runs apart as not comparable\); it costs about (\S+) against (\S+) for a request count "
                  r"that followed parallel \(([\d.]+)x\)", e["spec_note"])
    assert m and float(m.group(3)) > 1, e["spec_note"]
    assert "# note: one workload at every level, by design" in head
    # the simulated bench reads no model: the memory check says it was not made, and why
    assert any(n.startswith("memory not checked for parallel 4, 8: no weight_bytes or kv_bytes_per_token model fact")
               for n in e["notes"]), e["notes"]
    assert "# note: memory not checked for parallel 4, 8: no weight_bytes" in head


# the issue's spec on a model of 8 GiB of weights and 128 KiB of KV cache per token (model facts given
# as labels of their own names, which win over those optlog reads), each request 16,000 + 384 tokens long
BIG = ISSUE.replace("labels: {{server: simulated, concurrency: 2}}",
                    "labels: {{server: simulated, concurrency: 2, weight_bytes: 8589934592, kv_bytes_per_token: 131072}}") \
    .replace("--num-prompts {{{{ num_prompts }}}}", "--num-prompts {{{{ num_prompts }}}} --input-len 16000 --output-len 384")


def _set_environment(ctx, **parts):
    """What the recorded runs' environment says about the machine (a small GPU, a small host)."""
    from sqlmodel import select

    from optlog.store.models import Run

    with ctx.db.write() as s:
        for r in s.exec(select(Run)).all():
            env = dict(r.environment or {})
            env.update(parts)
            r.environment = env
            s.add(r)


def test_a_batch_level_past_the_gpu_memory_is_capped_and_said(fresh):
    """Issue 45: a batch level is checked against the memory the target has (its environment: one
    24 GiB GPU): parallel 8 needs (8 GiB of weights + 8 × 16,384 tokens × 128 KiB of KV) × 1.2 ≈ 28.8 GiB,
    more than the GPU holds, so the proposal keeps parallel 4 (≈ 19.2 GiB), caps the next level at the most
    slots that fit (6: ≈ 24 GiB) and says so with the figures;
    on a CPU host of 12 GiB not even 4 slots fit (and 2 are measured): the candidate goes, said."""
    from optlog.service import launch, nextexp
    from optlog.service.workspace import init

    init(fresh)
    ctx = _ctx(fresh)
    try:
        _rivals(ctx)
        (fresh / "runs" / "slots.yaml").write_text(BIG.format(py=sys.executable))
        launch.launch(ctx, "runs/slots.yaml")
        _set_environment(ctx, gpus=[{"index": 0, "name": "small", "memory_mib": 24576}])
        doc = nextexp.analyse(ctx)
        _set_environment(ctx, gpus=[], host={"cpus": 64, "memory_mib": 12288})
        cpu = nextexp.analyse(ctx, write=False)
    finally:
        ctx.close()
    (e,) = doc["pairs"]
    assert e["resources"]["gpu_memory_mib"] == 24576
    best = e["candidates"][0]
    assert best["axis"] == "parallel" and best["levels"] == [4, 6], (best, e["notes"])
    assert yaml.safe_load((fresh / e["spec"]).read_text())["matrix"]["parallel"] == [1, 4, 6]
    (note,) = [n for n in e["notes"] if n.startswith("parallel 8 needs")]
    assert note.startswith("parallel 8 needs ~28.8 GiB of KV + weights (16 GiB of KV cache for 8 slots × 16,384 "
                           "tokens"), note
    assert note.endswith("; the GPU has 24 GiB: capped at 6"), note
    # the written spec says it too: a reader of the file sees why its levels stop at 6
    assert f"# note: {note}" in (fresh / e["spec"]).read_text()
    (c,) = cpu["pairs"]
    assert c["resources"]["host_memory_mib"] == 12288 and c["resources"]["gpus"] == 0
    assert not any(x["axis"] == "parallel" and x["source"] == "roofline" for x in c["candidates"]), c["candidates"]
    assert any(n.startswith("parallel 4 needs ~") and "the host has 12 GiB (no GPU): left out" in n
               for n in c["notes"]), c["notes"]


def test_an_axis_the_verdict_did_not_use_is_kept_at_the_level_it_used(fresh):
    """The issue's spec kept `threads: [1, 2]` beside the proposed axis, doubling the runs, though the
    predictions (parallel 2 vs 1) name no threads: the verdict judged the threads=1 runs and set the
    others apart. The proposal keeps threads at 1 and says why."""
    from optlog.service import launch, nextexp
    from optlog.service.workspace import init

    init(fresh)
    two = ISSUE.replace("matrix: {{parallel: [1, 2]}}", "matrix: {{parallel: [1, 2], threads: [1, 2]}}") \
        .replace("--concurrency {{{{ parallel }}}}", "--concurrency {{{{ parallel }}}} --threads {{{{ threads }}}}")
    ctx = _ctx(fresh)
    try:
        _rivals(ctx)
        (fresh / "runs" / "slots.yaml").write_text(two.format(py=sys.executable))
        launch.launch(ctx, "runs/slots.yaml")
        doc = nextexp.analyse(ctx)
    finally:
        ctx.close()
    (e,) = doc["pairs"]
    spec = yaml.safe_load((fresh / e["spec"]).read_text())
    (kept,) = spec["matrix"]["threads"]
    assert kept in (1, 2) and spec["matrix"]["parallel"] == [1, 4, 8], spec
    assert f"threads kept at {kept}: the runs the verdict used had only threads={kept}" in e["spec_note"]
    assert e["cost"]["runs"] == 3 * e["candidates"][0]["repeats"]


def test_an_axis_no_command_reads_is_refused(fresh):
    """A proposed axis that only labels the runs (the bench never reads {{ parallel }}) is not written:
    varying it would change nothing that runs; the note says what to change."""
    from optlog.service import launch, nextexp
    from optlog.service.workspace import init

    init(fresh)
    # the same values, read by run id in cycles (1, 2, 1, 2, …): the bench never reads parallel
    label_only = ISSUE.replace("v = {{1: [10.0, 11.0, 9.0], 2: [14.0, 24.0, 17.0]}}[{{{{ parallel }}}}][{{{{ repeat }}}}]",
                               "v = [10.0, 14.0, 11.0, 24.0, 9.0, 17.0][{{{{ run_id }}}} - 1]") \
        .replace("--concurrency {{{{ parallel }}}} ", "").replace("repeats: 3", "repeats: 3\norder: cycles")
    assert "parallel }}" not in label_only
    ctx = _ctx(fresh)
    try:
        _rivals(ctx)
        (fresh / "runs" / "slots.yaml").write_text(label_only.format(py=sys.executable))
        launch.launch(ctx, "runs/slots.yaml")
        doc = nextexp.analyse(ctx)
    finally:
        ctx.close()
    (e,) = doc["pairs"]
    assert e["candidates"][0]["axis"] == "parallel"
    assert e["spec"] is None and e["spec_note"].startswith("not written: the commands of launch L1 do not read "
                                                           "parallel"), e["spec_note"]
    assert not list((fresh / "runs").glob("next-*.yaml"))


def test_rivals_no_label_at_hand_can_tell_apart_say_what_is_missing(fresh):
    """Two rivals that name no bound, claim overlapping regions, on a label never varied: nothing
    discriminates them, and `next` says why (the overlap, the label never varied, no bound named)."""
    from optlog.service import evidence, hypotheses, nextexp, predictions
    from optlog.service.workspace import init

    init(fresh)
    ctx = _ctx(fresh)
    try:
        hypotheses.add(ctx, "The new allocator helps", hid="allocator")
        hypotheses.add(ctx, "The new kernel helps", hid="kernel", rivals=("allocator",))
        for hid, region in (("allocator", "[1.05, 1.5]"), ("kernel", "[1.1, 2]")):
            predictions.add(ctx, hid, f"a / b in {region}", metric="tflops", a={"build": "new"},
                            b={"build": "old"}, per="shape")
        for build, v in (("old", 100.0), ("new", 125.0)):
            evidence.record(ctx, {"build": build, "shape": "square"}, {"tflops": v}, None, None)
        doc = nextexp.analyse(ctx, "kernel")
    finally:
        ctx.close()
    (e,) = doc["pairs"]
    assert e["state"] == "not yet" and e["candidates"] == [] and e.get("spec") is None
    assert "nothing optlog knows can discriminate them" in e["why"]
    missing = " | ".join(e["missing"])
    assert "label shape never varied" in missing, missing
    assert "overlapping outcomes" in missing and "name no bound" in missing, missing
    assert not (fresh / "runs" / "next-kernel.yaml").exists()
