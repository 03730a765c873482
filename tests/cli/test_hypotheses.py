"""Hypotheses through the real CLI: add/list/show/set, the file as the truth, bad input."""

from __future__ import annotations

import sys

import yaml
from _foundation import bad, snapshot


def test_add_list_show_set_with_history(ws):
    c0 = ws.commits()
    h = ws.j("hypothesis", "add", "Cross-NUMA allreduce is the bottleneck", "--id", "comm-bound",
             "--statement", "allreduce latency dominates", "--rationale", "PCIe P2P across sockets is slow")
    assert h["id"] == "comm-bound" and h["status"] == "open" and h["parent"] is None
    assert h["statement"] == "allreduce latency dominates"
    assert ws.commits() == c0 + 1
    assert "Optlog-Hypothesis: comm-bound" in ws.git("log", "-1", "--format=%B")
    # default id from the title; a pivot (parent) and a rival
    k = ws.j("hyp", "add", "GEMM kernels are inefficient on SM120", "--parent", "comm-bound", "--rival", "comm-bound")
    assert k["id"] == "gemm-kernels-are-inefficient-on-sm120"
    assert k["parent"] == "comm-bound" and k["rivals"] == ["comm-bound"]
    parent = ws.j("hypothesis", "show", "comm-bound")
    assert parent["children"] == [k["id"]] and parent["rivals"] == [k["id"]]  # rivalry is symmetric
    for key in ("id", "title", "status", "parent", "children", "rivals", "predictions", "verdicts"):
        assert key in parent
    lst = ws.j("hypothesis", "list")["hypotheses"]
    assert [x["id"] for x in lst] == ["comm-bound", k["id"]]
    # a manual status change needs --why
    before = snapshot(ws)
    bad(ws, "hypothesis", "set", "comm-bound", "--status", "falsified", field="--why")
    bad(ws, "hypothesis", "set", "comm-bound", "--status", "falsified", "--why", "  ", field="--why")
    bad(ws, "hypothesis", "set", "comm-bound", "--status", "wrong", "--why", "x", field="--status")
    bad(ws, "hypothesis", "set", "nope", "--status", "falsified", "--why", "x", field="ID")  # its argument, as `verdict nope` says (was "hypothesis", no parameter of the command)
    assert snapshot(ws) == before
    s = ws.j("hypothesis", "set", "comm-bound", "--status", "falsified", "--why", "TP4+PP2 is 2x slower than TP8")
    assert s["status"] == "falsified"
    assert s["override"]["why"] == "TP4+PP2 is 2x slower than TP8" and s["override"]["by"] == "tester"
    assert s["verdicts"][-1]["status"] == "falsified" and s["verdicts"][-1]["kind"] == "manual"
    assert s["verdicts"][-1]["at"]
    s2 = ws.j("hypothesis", "set", "comm-bound", "--status", "superseded", "--why", "replaced by the kernel one")
    assert [h["to"] for h in s2["history"]] == ["falsified", "superseded"]
    assert [h["from"] for h in s2["history"]] == ["open", "falsified"]
    # kept in the file, and in git with trailers
    doc = yaml.safe_load((ws.root / "hypotheses" / "comm-bound.yaml").read_text())
    assert doc["status"] == "superseded" and len(doc["history"]) == 2 and doc["override"]["status"] == "superseded"
    log = ws.git("log", "--format=%B")
    assert "Optlog-Event: override" in log and "Optlog-Status: falsified" in log
    assert ws.commits() == c0 + 4
    assert [x["id"] for x in ws.j("hypothesis", "list", "--status", "superseded")["hypotheses"]] == ["comm-bound"]
    # human output
    out = ws.cli("hypothesis", "show", "comm-bound").out
    assert "superseded" in out and "children: " + k["id"] in out


def test_bad_hypothesis_input_writes_nothing(ws):
    ws.cli("hypothesis", "add", "A", "--id", "a")
    before = snapshot(ws)
    bad(ws, "hypothesis", "add", "B", "--parent", "missing", field="--parent")
    bad(ws, "hypothesis", "add", "B", "--rival", "missing", field="--rival")
    bad(ws, "hypothesis", "add", "B", "--id", "Bad Id!", field="--id")
    bad(ws, "hypothesis", "add", "B", "--id", "a", field="--id")
    bad(ws, "hypothesis", "add", "   ", field="TITLE")
    bad(ws, "hypothesis", "list", "--status", "maybe", field="--status")
    assert snapshot(ws) == before


def test_hand_edits_are_read_back_and_validated(ws):
    ws.cli("hypothesis", "add", "Pipeline bubbles", "--id", "bubbles")
    path = ws.root / "hypotheses" / "bubbles.yaml"
    c0 = ws.commits()
    # a valid hand edit is picked up, with a notice on stderr
    text = path.read_text().replace("title: Pipeline bubbles", "title: Pipeline bubbles dominate at low concurrency")
    path.write_text(text + "statement: edited by hand\n")
    r = ws.cli("hypothesis", "show", "bubbles", "--json")
    assert r.json["title"] == "Pipeline bubbles dominate at low concurrency"
    assert r.json["statement"] == "edited by hand"
    assert "picked up an edit" in r.err
    assert ws.j("hypothesis", "list")["hypotheses"][0]["title"].endswith("low concurrency")
    # an optlog write after a hand edit keeps the edit (it reads the file first)
    ws.cli("hypothesis", "set", "bubbles", "--status", "testing", "--why", "runs queued")
    doc = yaml.safe_load(path.read_text())
    assert doc["statement"] == "edited by hand" and doc["status"] == "testing"
    good = path.read_text()
    # malformed YAML: file and line, exit 2, for reading and writing commands alike
    lines = good.splitlines()
    lines.insert(2, "rivals: [unclosed")
    path.write_text("\n".join(lines) + "\n")
    for cmd in (("hypothesis", "list"), ("hypothesis", "show", "bubbles"), ("status",)):
        err = bad(ws, *cmd)
        assert err["file"] == "hypotheses/bubbles.yaml" and err["code"] == "malformed_yaml" and err["line"] >= 3, err
    err = bad(ws, "hypothesis", "set", "bubbles", "--status", "open", "--why", "x")
    assert err["file"] == "hypotheses/bubbles.yaml"
    # a wrong field: named, with its line
    lines = good.splitlines()
    i = next(n for n, ln in enumerate(lines) if ln.startswith("status:"))
    lines[i] = "status: probably"
    path.write_text("\n".join(lines) + "\n")
    err = bad(ws, "hypothesis", "list")
    assert err["field"] == "status" and err["line"] == i + 1 and err["file"] == "hypotheses/bubbles.yaml"
    # an unknown key (a typo)
    path.write_text(good + "rationle: typo\n")
    err = bad(ws, "hypothesis", "show", "bubbles")
    assert err["field"] == "rationle" and err["line"] == len(good.splitlines()) + 1
    # an id that does not match the file name
    path.write_text(good.replace("id: bubbles", "id: other"))
    err = bad(ws, "hypothesis", "list")
    assert err["field"] == "id"
    assert ws.commits() == c0 + 1  # only the `set` above
    path.write_text(good)
    assert ws.j("hypothesis", "show", "bubbles")["status"] == "testing"


def test_write_racing_a_hand_edit_is_a_conflict(ws, tmp_path):
    """The compare-and-swap in the store: a write naming a stale hash never overwrites."""
    import os
    import subprocess
    import sys

    ws.cli("hypothesis", "add", "Race", "--id", "race")
    path = ws.root / "hypotheses" / "race.yaml"
    code = f"""
import sys
from optlog.service.context import Ctx
from optlog.store import hypfiles
from optlog.errors import Conflict
ctx = Ctx.find({str(ws.root)!r})
ld = hypfiles.load(ctx.ws, 'race')
open({str(path)!r}, 'a').write('rationale: typed by a person meanwhile\\n')
doc = ld.doc.model_copy(deep=True); doc.title = 'optlog write'
try:
    hypfiles.save(ctx.ws, doc, ld.hash)
except Conflict as e:
    print('CONFLICT', e); sys.exit(0)
sys.exit(3)
"""
    p = subprocess.run([sys.executable, "-c", code], env=ws.env, capture_output=True, text=True, cwd=tmp_path)
    assert p.returncode == 0 and "CONFLICT" in p.stdout and "race.yaml" in p.stdout, p.stdout + p.stderr
    doc = yaml.safe_load(path.read_text())
    assert doc["title"] == "Race" and doc["rationale"] == "typed by a person meanwhile"
    assert os.path.exists(path)


WRITE_PROBE = """
import json, sys
from optlog.cli import entry
try:
    entry()
except SystemExit as e:
    code = e.code
sys.stdout.flush()
print(json.dumps([code, "sqlmodel" in sys.modules, "optlog.store.models" in sys.modules]), file=sys.stderr)
"""


def test_a_hypothesis_writes_answer_reads_its_notes_without_the_orm(ws):
    """`hypothesis add` / `hypothesis edit` answer with the hypothesis as `show` gives it, notes
    and all, read on Core: every step of such a write is, so the ORM (SQLModel and the row models,
    ~90 ms of each such write) is never imported. The notes read so are the ones `note add` wrote."""
    import json
    import subprocess

    def write(*args):
        p = subprocess.run([sys.executable, "-c", WRITE_PROBE, *args, "--json"], cwd=ws.root, env=ws.env,
                           capture_output=True, text=True, timeout=120)
        code, orm, models = json.loads(p.stderr.strip().splitlines()[-1])
        assert code in (0, None) and not orm and not models, (args, p.stderr)
        return json.loads(p.stdout)

    h = write("hypothesis", "add", "Decode is comm-bound", "--id", "comm")
    assert h["id"] == "comm" and h["notes"] == [] and h["runs"] == []
    ws.cli("note", "add", "NCCL all-reduce at 40 % of step time", "--hypothesis", "comm")
    ws.cli("note", "add", "elsewhere")
    h = write("hypothesis", "edit", "comm", "--statement", "Decode waits on all-reduce at TP8")
    assert [n["text"] for n in h["notes"]] == ["NCCL all-reduce at 40 % of step time"]
    assert h["notes"] == ws.j("hypothesis", "show", "comm")["notes"] == ws.j("note", "list", "--hypothesis", "comm")["notes"]
    assert [n["text"] for n in ws.j("note", "list")["notes"]] == ["NCCL all-reduce at 40 % of step time", "elsewhere"]
