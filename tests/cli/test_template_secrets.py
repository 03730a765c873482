"""Issue 42.1: secrets that reach a launch through the environment (`{{ env.NAME }}`). `{{ env }}`
(the whole environment) is refused before running; a variable whose name or value shape is a
credential is `<redacted>` wherever its value appears: argv in the committed points.json, labels
(in the database, `hypotheses/*.yaml`, `runs/evidence/*.yaml`), the launch record, what optlog
prints, and a bench's error tail. Each credential kind is planted in each place of a real launch
against the test server; the database dump, every file of the workspace and `git log -p --all`
are grepped for the values."""

from __future__ import annotations

import yaml

from _launch import PY, TESTS, free_port
from test_secrets import _db_text, _files_text

# by name (no recognisable shape) and by shape (under any name)
PLANTED = {
    "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMIK7MDENGbPxRfiCYPLANTED01",
    "DB_PASSWORD": "hunter2-PLANTED02",
    "HF_TOKEN": "plainPLANTED03hf",
    "MY_API_KEY": "PLANTED04apikey",
    "OPENAI_APIKEY": "sk-PLANTED05openai",
    "GITHUB_TOKEN": "ghp_PLANTED06abcdefghijklmn",
    "SVC_AUTHZ": "Bearer PLANTED07bearer",
    "INNOCENT": "hf_PLANTED08innocent",
    "CALLBACK_URL": "https://u:PLANTED09urlpw@h.example/x",
    "JWT_LIKE": "eyJhbGciOiJIUzI1.eyJzdWIiOiIxMjM0.PLANTED10jwt",
}
# the value of the secret part (what must never appear)
VALUES = {k: v.split("Bearer ")[-1].split("u:")[-1].split("@")[0] for k, v in PLANTED.items()}
ORPHAN = {"ORPHAN_SECRET_KEY": "PLANTED11orphan-key"}  # not named by the spec; a bench prints it


def _leaks(text: str) -> list[str]:
    return [k for k, v in {**VALUES, **ORPHAN}.items() if v in text]


def _spec(ws, name: str, body: str) -> str:
    (ws.root / "runs" / f"{name}.yaml").write_text(body)
    return f"runs/{name}.yaml"


def test_the_whole_environment_is_refused_before_running(ws):
    before = ws.git("rev-parse", "HEAD")
    for where, text in (("bench.cmd", "bench:\n  cmd: echo {{ env }}\n"),
                        ("labels.e", "labels:\n  e: 'x{{ env }}'\nbench:\n  cmd: echo hi\n"),
                        ("bench.env.E", "bench:\n  cmd: echo hi\n  env:\n    E: '{{ env }}'\n")):
        rel = _spec(ws, "whole", "name: whole\n" + text)
        r = ws.cli("run", "launch", rel, "--json", check=False)
        assert r.code == 2, r.out + r.err
        e = r.json["error"]
        assert e["file"] == rel and e["field"] == where and e["line"], e
        assert "{{ env.NAME }}" in e["message"], e
    assert ws.git("rev-parse", "HEAD") == before and ws.cli("run", "list", "--json").json["runs"] == []


def test_credentials_from_the_environment_are_redacted_everywhere(ws):
    refs = [f"{{{{ env.{k} }}}}" for k in PLANTED]
    quoted = " ".join(f"'{r}'" for r in refs)
    port = free_port()
    d = {"name": "tsec", "params": {"py": PY, "tests": str(TESTS), "port": port}, "matrix": {"fail": [0, 1]},
         "labels": {**{f"lab{i}": r for i, r in enumerate(refs)}, "model_dir": "{{ env.MODEL_DIR }}"},
         "server": {"cmd": f"sh -c ': {quoted}; exec \"$@\"' sh {{{{ py }}}} {{{{ tests }}}}/testserver.py "
                           "--port {{ port }} --ttft-ms 1 --itl-ms 1",
                    "env": {f"SVAR{i}": r for i, r in enumerate(refs)},
                    "ready": {"url": "http://127.0.0.1:{{ port }}/health", "timeout_s": 15, "interval_s": 0.05}},
         "bench": {"cmd": "sh -c 'if [ {{ fail }} = 1 ]; then echo \"denied $ORPHAN_SECRET_KEY " + quoted.replace("'", "") +
                          "\" >&2; exit 3; fi; printf \"{\\\"completed\\\": 1}\" > {{ out }}/result.json' sh " + quoted +
                          " --db={{ env.DB_PASSWORD }}",
                   "results": ["result.json"], "env": {f"VAR{i}": r for i, r in enumerate(refs)}}}
    body = yaml.safe_dump(d, sort_keys=False, width=100000)
    rel = _spec(ws, "tsec", body)
    env = {**PLANTED, **ORPHAN, "MODEL_DIR": "/opt/models/private-path"}
    ws.cli("hypothesis", "add", "Secrets stay out", "--id", "sec")
    # a prediction over the runs: its verdict commits them as runs/evidence/*.yaml, labels included
    ws.cli("prediction", "add", "sec", "--expect", "a.completed >= 1", "--a", "fail=0")
    outs = []
    r = ws.cli("run", "launch", rel, "--hypothesis", "sec", "--json", check=False, env=env)
    outs.append(r.out + r.err)
    assert r.code == 1, r.out + r.err  # the failing point fails, the other succeeds
    runs = r.json["runs"]
    ok = next(x for x in runs if x["status"] == "succeeded")
    bad = next(x for x in runs if x["status"] == "failed")
    assert "<redacted>" in bad["error"] and "denied" in bad["error"], bad["error"]
    assert ok["labels"]["lab1"] == "<redacted>"  # (innocent names: the values are known by their variables)
    for cmd in (["run", "list"], ["run", "show", str(ok["id"])], ["run", "show", str(bad["id"])],
                ["run", "logs", f"L{r.json['launch']}"], ["status"], ["log"], ["hypothesis", "show", "sec"]):
        for fmt in ((), ("--json",)):
            x = ws.cli(*cmd, *fmt, check=False, env=env)
            outs.append(x.out + x.err)
    ws.cli("verdict", "--all", check=False, env=env)
    # what the failing bench printed is its own log (docs/launch-safety.md); all else optlog wrote
    skip = {ws.root / bad["artifacts_dir"] / "bench.stderr.log"}
    assert _leaks(_db_text(ws)) == []
    assert _leaks(_files_text(ws.root, skip)) == []
    assert _leaks(ws.git("log", "-p", "--all")) == []
    assert _leaks("\n".join(outs)) == []
    # each place was exercised: the committed points and evidence hold the redacted values
    committed = [p for p in ws.root.rglob("*") if ".git" not in p.parts and p.is_file()
                 and (p.name == "points.json" or "evidence" in p.parts or "hypotheses" in p.parts)]
    # (points.json keeps the references a launch again renders where it runs, not the values)
    assert any(p.name == "points.json" and "{{ env.DB_PASSWORD }}" in p.read_text() for p in committed), committed
    assert any("evidence" in p.parts and "<redacted>" in p.read_text() for p in committed), committed
