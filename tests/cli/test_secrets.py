"""Secrets never stored or printed (issue 13.6): planted secrets go through a real launch (foreground
and detached, a succeeding and a failing bench); the child receives every real value, and no copy of
any of them is in the database (every table), any file optlog wrote under the workspace, the git
history, or anything the CLI printed."""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

from _launch import PY, TESTS, spec

SECRETS = {"api_key": "sk-live-PLANTED1api", "hf_token": "hf_PLANTED2token", "url_pw": "PLANTED3urlpw",
           "bearer": "PLANTED4bearer", "openai": "PLANTED5openai"}


def _db_text(ws) -> str:
    url = ws.env.get("OPTLOG_DB_URL")
    if not url:
        import sqlite3

        con = sqlite3.connect(ws.root / ".optlog" / "optlog.db")
        try:
            return "\n".join(con.iterdump())
        finally:
            con.close()
    import psycopg

    out = []
    with psycopg.connect(url.replace("postgresql+psycopg://", "postgresql://")) as c:
        # every schema optlog may use: a workspace's own (optlog_<id>) and the default one
        tables = [(r[0], r[1]) for r in c.execute(
            "SELECT schemaname, tablename FROM pg_tables WHERE schemaname = 'public' OR schemaname LIKE 'optlog%'")]
        names = [t for _, t in tables]
        assert "run" in names and "launch" in names, tables
        for sch, t in tables:
            for row in c.execute(f'SELECT * FROM "{sch}"."{t}"'):
                out.append(repr(row))
    return "\n".join(out)


def _files_text(root: Path, skip: set[Path]) -> str:
    parts = []
    for p in root.rglob("*"):
        if p.is_file() and ".git" not in p.relative_to(root).parts and p not in skip:
            parts.append(f"== {p}\n" + p.read_bytes().decode("utf-8", "replace"))
    return "\n".join(parts)


def _leaks(text: str) -> list[str]:
    return [k for k, v in SECRETS.items() if v in text]


def test_planted_secrets_reach_the_child_and_nowhere_else(ws):
    s = SECRETS
    url = "http://bob:{{ url_pw }}@127.0.0.1:{{ port }}"
    header = "Authorization: Bearer {{ bearer }}"
    bench = {"cmd": [PY, str(TESTS / "_secret_bench.py"), "--out", "{{ out }}", "--api-key", "{{ api_key }}",
                     "--url", url, "-H", header, "--expect", "{{ expect }}", "{{ loud }}"],
             "env": {"HF_TOKEN": "{{ hf_token }}", "OPENAI_API_KEY": "{{ openai }}"}}
    srv = {"cmd": "{{ py }} {{ tests }}/testserver.py --port {{ port }} --ttft-ms 1 --itl-ms 1 --model {{ marker }}",
           "env": {"HF_TOKEN": "{{ hf_token }}"},
           "ready": {"url": "http://127.0.0.1:{{ port }}/health", "timeout_s": 15, "interval_s": 0.05}}
    rel = spec(ws, "sec", server=srv, bench=bench, matrix={"loud": ["--quiet", "--fail-loudly"]},
               labels={"model": "m"})
    port = __import__("yaml").safe_load((ws.root / rel).read_text())["params"]["port"]
    expect = hashlib.sha256("|".join([s["api_key"], f"http://bob:{s['url_pw']}@127.0.0.1:{port}",
                                      f"Authorization: Bearer {s['bearer']}", s["hf_token"], s["openai"]]).encode()).hexdigest()
    sets = [f"--set=api_key={s['api_key']}", f"--set=hf_token={s['hf_token']}", f"--set=url_pw={s['url_pw']}",
            f"--set=bearer={s['bearer']}", f"--set=openai={s['openai']}", f"--set=expect={expect}"]
    ws.cli("hypothesis", "add", "Secrets stay", "--id", "sec")
    outputs = []
    r = ws.cli("run", "launch", rel, *sets, "--hypothesis", "sec", "--json", check=1)
    outputs.append(r.out + r.err)
    runs = r.json["runs"]
    ok = next(x for x in runs if x["status"] == "succeeded")
    loud = next(x for x in runs if x["status"] == "failed")
    assert ok["metrics"].get("raw.received") == 1.0, runs  # the child got every real value
    assert "<redacted>" in loud["error"] and loud["exit_code"] == 3, loud
    # the same through the detached driver (the document reaches it on a pipe)
    d = ws.j("run", "launch", rel, *sets, "--detach")
    w = ws.cli("run", "wait", d["ref"], "--json", check=1)
    outputs.append(w.out + w.err)
    for cmd in (["run", "list"], ["run", "show", str(ok["id"])], ["run", "show", str(loud["id"])],
                ["run", "show", str(d["runs"][0])], ["run", "logs", f"L{r.json['launch']}"], ["run", "logs", d["ref"]],
                ["status"], ["log"]):
        for fmt in ((), ("--json",)):
            x = ws.cli(*cmd, *fmt, check=False)
            outputs.append(x.out + x.err)
    detached_ok = ws.j("run", "show", str(d["runs"][0]))
    assert detached_ok["metrics"]["raw.received"] == 1.0, detached_ok
    ws.cli("verdict", "--all", check=False)
    # what the failing bench itself printed is its own log; everything optlog wrote is checked
    skip = {ws.root / ".optlog" / "runs" / str(i) / "bench.stderr.log" for i in [x["id"] for x in runs] + d["runs"]}
    assert (ws.root / loud["artifacts_dir"] / "bench.stderr.log").read_text().count(s["api_key"]) == 1
    assert _leaks(_db_text(ws)) == []
    assert _leaks(_files_text(ws.root, skip)) == []
    assert _leaks(ws.git("log", "-p", "--all")) == []
    assert _leaks("\n".join(outputs)) == []
    db = _db_text(ws)  # the record still says what ran, with the values blanked
    assert "bob:<redacted>@127.0.0.1" in db and "Authorization: <redacted>" in db and "HF_TOKEN" in db, db[-3000:]


def test_redaction_rules_by_name_shape_and_value():
    from optlog.runs.redact import REDACTED, Redactor, redact, secret_name

    for k in ("api_key", "--api-key", "HF_TOKEN", "OPENAI_API_KEY", "apiKey", "ssl_keyfile_password", "oauth",
              "Authorization", "aws_secret_access_key", "credentials"):
        assert secret_name(k), k
    for k in ("max_tokens", "tokenizer", "author", "keyboard", "--max-tokens", "ssl_keyfile"):
        assert not secret_name(k), k
    # (a config key max_tokens is kept; an environment variable named *TOKEN* is not: issue 34)
    doc = {"env": {"HF_TOKEN": "hf_abcdef", "MAX_TOKENS": "128"}, "max_tokens": "128", "num_key_heads": 8, "key_map": {"a": "b"},
           "argv": ["srv", "--api-key", "sk-123456", "--token=tok-98765", "--port", "8000",
                    "https://bob:pw-55555@h/x", "https://ghp_tokentoken@github.com/x", "-H", "Authorization: Bearer abcdefgh"]}
    r = Redactor.of(doc)
    out = r.redact(doc)
    assert out["env"] == {"HF_TOKEN": REDACTED, "MAX_TOKENS": REDACTED} and out["num_key_heads"] == 8
    assert out["max_tokens"] == "128"
    assert out["key_map"] == {"a": "b"}
    assert out["argv"] == ["srv", "--api-key", REDACTED, f"--token={REDACTED}", "--port", "8000",
                           f"https://bob:{REDACTED}@h/x", f"https://{REDACTED}@github.com/x", "-H", f"Authorization: {REDACTED}"]
    # a value found by name is scrubbed from free text too (a stderr tail that echoes it)
    assert r.text("refused hf_abcdef and sk-123456") == f"refused {REDACTED} and {REDACTED}"
    assert redact("curl -H 'Authorization: Bearer xyz12345' --password hunter22 PASSWORD=abc max_tokens=5") == \
        f"curl -H 'Authorization: {REDACTED}' --password {REDACTED} PASSWORD={REDACTED} max_tokens=5"
    assert doc["argv"][2] == "sk-123456"  # a copy: the process still gets the real value


def test_a_slurm_job_script_holds_no_secret(tmp_path):
    """The batch script is a file under .optlog/: secrets reach the job through sbatch's environment."""
    import subprocess

    from optlog.runs.executors.slurm import batch_script

    hidden: dict[str, str] = {}
    argv = [PY, "-c", "import os, sys; print(sys.argv[1:], os.environ['HF_TOKEN'])", "--api-key", s1 := SECRETS["api_key"],
            f"http://bob:{SECRETS['url_pw']}@h:1", "--port", "8000"]
    text = batch_script(argv, {"HF_TOKEN": SECRETS["hf_token"], "NCCL_DEBUG": "INFO"}, None, tmp_path / "rc",
                        tmp_path / "info", hidden)
    assert _leaks(text) == [] and "export NCCL_DEBUG=INFO" in text
    assert set(hidden.values()) >= {s1, SECRETS["hf_token"]}
    (tmp_path / "job.sh").write_text(text)
    out = subprocess.run(["bash", str(tmp_path / "job.sh")], env={"PATH": "/usr/bin:/bin", **hidden},
                         capture_output=True, text=True).stdout
    assert s1 in out and SECRETS["hf_token"] in out and f"bob:{SECRETS['url_pw']}@" in out and "'8000'" in out
