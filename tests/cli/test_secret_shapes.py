"""Issue 34.2: secrets by name AND by shape. One of each credential name (CRED, AUTH, PASS, TOKEN,
KEY, SECRET, PRIVATE) and each credential shape (OpenAI, Hugging Face, GitHub, AWS, Slack, JWT,
URL user-info, Bearer, Basic), and a name the spec declares (`secret:`), planted in a real launch:
none is in the database dump, any file optlog wrote, `git log -p --all`, or what the CLI printed."""

from __future__ import annotations

import yaml

from test_secrets import _db_text, _files_text

BY_NAME = {"MY_CREDS": "sk-SPEC-888", "X_AUTHZ": "plain-auth-1", "DB_PASSWD": "plain-pass-2",
           "MY_TOKENISH": "plain-tok-3", "SOME_KEYS": "plain-key-4", "APP_SECRETX": "plain-sec-5",
           "PRIVATE_BLOB": "plain-priv-6"}
BY_SHAPE = {"openai": "sk-proj-Abc123Def456", "hf": "hf_PlantedShape77", "gh": "ghp_0123456789abcdefABCDEF",
            "ghpat": "github_pat_11AAAAAAA0123456789", "aws": "AKIAIOSFODNN7EXAMPLE",
            "slack": "xoxb-1234-5678-PlantedSlack", "jwt": "eyJhbGciOiJIUzI1.eyJzdWIiOiIxMjM0.SflKxwRJSMeKKF2QT4f",
            "urlpw": "UrlPw-PLANT9", "bearer": "BearerPLANT10", "basic": "QmFzaWNQTEFOVDEx"}
DECLARED = "hunter2-declared"


def test_redaction_rules_by_name_shape_and_declared():
    from optlog.runs.redact import REDACTED, Redactor, redact, secret_env_name

    for n in BY_NAME:
        assert secret_env_name(n), n
    for v in BY_SHAPE.values():
        if v not in (BY_SHAPE["urlpw"], BY_SHAPE["bearer"], BY_SHAPE["basic"]):
            assert redact(f"saw {v} here") == f"saw {REDACTED} here", v
    assert redact("max_tokens=5 tokenizer=x author=y task-abcdefgh disk-12345678") == \
        "max_tokens=5 tokenizer=x author=y task-abcdefgh disk-12345678"
    doc = {"secret": ["db_pw"], "params": {"db_pw": DECLARED}, "bench": {"cmd": ["b", "--db-pw", DECLARED]}}
    r = Redactor.of(doc)
    assert DECLARED not in repr(r.redact(doc)) and r.text(f"echo {DECLARED}") == f"echo {REDACTED}"


def test_planted_credentials_reach_no_store(ws):
    s = BY_SHAPE
    args = [s["openai"], s["hf"], s["gh"], s["ghpat"], s["aws"], s["slack"], s["jwt"],
            f"https://bob:{s['urlpw']}@127.0.0.1:1/x", f"Authorization: Bearer {s['bearer']}",
            f"Authorization: Basic {s['basic']}", "--db-pw", "{{ db_pw }}"]
    spec = {"name": "shapes", "secret": ["db_pw"], "params": {"db_pw": DECLARED},
            "labels": {"note": s["hf"]},
            "bench": {"cmd": ["sh", "-c", 'echo "$MY_CREDS $@" >&2; exit 3', "sh", *args],
                      "env": {**BY_NAME, "INNOCENT": s["openai"]}}}
    (ws.root / "runs" / "shapes.yaml").write_text(yaml.safe_dump(spec))
    outs = []
    r = ws.cli("run", "launch", "runs/shapes.yaml", "--json", check=False)
    outs.append(r.out + r.err)
    rid = r.json["runs"][0]["id"]
    for cmd in (["run", "show", str(rid)], ["run", "list"], ["log"]):
        x = ws.cli(*cmd, check=False)
        outs.append(x.out + x.err)
    skip = {ws.root / ".optlog" / "runs" / str(rid) / "bench.stderr.log"}
    secrets = {**BY_NAME, **BY_SHAPE, "declared": DECLARED}

    def leaks(text: str) -> list[str]:
        return [k for k, v in secrets.items() if v in text]

    # (the user's own spec file holds them: it is theirs, not optlog's)
    skip.add(ws.root / "runs" / "shapes.yaml")
    assert leaks(_db_text(ws)) == []
    assert leaks(_files_text(ws.root, skip)) == []
    assert leaks(ws.git("log", "-p", "--all")) == []
    assert leaks("\n".join(outs)) == []
