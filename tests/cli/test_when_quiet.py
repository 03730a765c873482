"""Issue 45 (2): `optlog run launch SPEC --when-quiet SECONDS` waits, at most SECONDS, for the machine
to be quiet by the rule that flags runs `loaded` (runs.quiet), then launches; still busy at the limit:
exit 75 (`not_quiet`), a clear message, nothing launched. With a real CPU hog this test starts and
ends itself (by pid). No timing is asserted: the limits are bounds, the outcomes are checked."""

from __future__ import annotations

import subprocess
import sys
from contextlib import contextmanager

import yaml

from optlog.runs import quiet
from tests._face import face

GEMM = (f"{sys.executable} -m optlog.probes.gemm --m 8 --k 32 --n 32 --dtype fp32 --device cpu "
        "--repeats 1 --output {{ out }}/result.json")


def _spec(ws) -> str:
    (ws.root / "runs" / "tiny.yaml").write_text(yaml.safe_dump({"name": "tiny", "bench": {"cmd": GEMM, "parser": "probe"}}))
    return "runs/tiny.yaml"


def _host_load(ws, **kw) -> None:
    cfg = ws.root / "optlog.yaml"
    d = yaml.safe_load(cfg.read_text()) or {}
    d["host_load"] = {"gpu_processes": False, **kw}
    cfg.write_text(yaml.safe_dump(d, sort_keys=False))


@contextmanager
def _hog():
    """A process that keeps one CPU busy, ended by its pid."""
    p = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        yield p
    finally:
        p.kill()
        p.wait(timeout=60)


def test_a_busy_machine_past_the_limit_launches_nothing_and_exits_75(ws):
    _host_load(ws, min_cpu_share=0.99)  # quiet: at most 1 % of the CPUs busy; the hog alone takes far more
    spec = _spec(ws)
    head = ws.git("rev-parse", "HEAD").strip()
    with _hog():
        r = ws.cli("run", "launch", spec, "--when-quiet", "1", "--json", check=75)
    err = r.json["error"]
    assert err["code"] == "not_quiet" and err["field"] == "--when-quiet", err
    assert "did not become quiet within 1 s" in err["message"] and "nothing was launched" in err["message"], err
    assert "CPUs busy" in err["message"] and "--when-quiet" in err["message"], err
    assert "waiting for a quiet machine" in r.err, r.err  # progress on stderr
    assert ws.j("run", "list")["runs"] == [] and not (ws.root / "launches").exists()
    assert ws.git("rev-parse", "HEAD").strip() == head


def test_a_quiet_machine_launches_and_says_so(ws):
    _host_load(ws, min_cpu_share=None, busy_cpus_fraction=None)  # no CPU rule: quiet whatever else runs
    spec = _spec(ws)
    with _hog():
        r = ws.cli("run", "launch", spec, "--when-quiet", "60", "--json")
    assert r.json["status"] == "succeeded" and r.json["when_quiet"]["checks"] == 1, r.json
    assert "the machine is quiet: launching" in r.err, r.err


def test_the_tool_takes_it_and_answers_in_its_own_spelling(ws, monkeypatch):
    _host_load(ws, min_cpu_share=0.99)
    spec = _spec(ws)
    with _hog(), face(ws, monkeypatch) as call:
        doc, is_error, code = call("run_launch", {"spec": spec, "when_quiet": 1})
    assert is_error and code == 75 and doc["error"]["code"] == "not_quiet", doc
    assert doc["error"]["field"] == "when_quiet" and "--when-quiet" not in doc["error"]["message"], doc


def test_the_wait_checks_until_quiet_and_narrates():
    """The loop itself, on a clock of its own: busy twice, then quiet."""
    said: list[str] = []
    answers = [["2 of 2 CPUs busy"], ["2 of 2 CPUs busy"], []]
    now = [0.0]
    got = quiet.wait(lambda: answers.pop(0), 30, said.append, poll_s=2, say_every_s=10,
                     clock=lambda: now[0], sleep=lambda s: now.__setitem__(0, now[0] + s))
    assert got == {"waited_s": 4.0, "checks": 3}
    assert said[0].startswith("waiting for a quiet machine (0 of 30 s): 2 of 2 CPUs busy") and len(said) == 2
    assert said[-1] == "the machine is quiet after 4 s: launching"


def test_a_negative_limit_is_bad_input(ws):
    r = ws.cli("run", "launch", _spec(ws), "--when-quiet", "-1", "--json", check=2)
    assert r.json["error"]["field"] == "--when-quiet", r.json
