"""Files optlog writes keep the user's umask; `commit.gpgsign` is honoured (or optlog says why it
cannot sign); `report --out` stays inside the workspace and out of `.git` (issue 13 item 10).

Real CLI, real git, and a real (fake) gpg program on PATH: a script that signs or fails.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys

import pytest


def _mode(p):
    return stat.S_IMODE(os.stat(p).st_mode)


@pytest.mark.parametrize("umask", [0o022, 0o027])
def test_files_optlog_writes_keep_the_umask(ws, umask):
    def pre():
        os.umask(umask)

    def cli(*args):
        p = subprocess.run([sys.executable, "-m", "optlog", *args], cwd=ws.root, env=ws.env, capture_output=True,
                           text=True, preexec_fn=pre)
        assert p.returncode == 0, p.stderr

    cli("hyp", "add", "Communication-bound", "--id", "comm-bound")
    cli("hyp", "edit", "comm-bound", "--statement", "allreduce dominates")
    cli("run", "record", "--label", "config=tp8", "--metric", "ttt=1")
    cli("run", "invalidate", "1", "--why", "throttled")
    cli("plan", "add", "Try EP", "--gain", "1-2%", "--effort", "S", "--confidence", "0.5")
    cli("plan", "render")
    cli("report", "--out", "reports/r.md")
    want = 0o666 & ~umask
    written = [ws.root / "hypotheses" / "comm-bound.yaml", ws.root / "runs" / "invalidated.yaml",
               ws.root / "reports" / "r.md", *sorted((ws.root / "runs" / "evidence").glob("*.yaml"))]
    written += [p for p in (ws.root / "glb5improvement").glob("*.md")]
    assert len(written) >= 5
    assert {str(p.relative_to(ws.root)): oct(_mode(p)) for p in written} == \
           {str(p.relative_to(ws.root)): oct(want) for p in written}


def test_an_existing_file_keeps_its_mode(ws):
    ws.cli("hyp", "add", "One", "--id", "one")
    f = ws.root / "hypotheses" / "one.yaml"
    os.chmod(f, 0o664)
    ws.cli("hyp", "edit", "one", "--statement", "s")
    assert _mode(f) == 0o664


def _fake_gpg(tmp_path, ok: bool):
    """A gpg program git calls to sign: prints a fake signature (ok) or fails like a locked key."""
    bindir = tmp_path / "fakegpg"
    bindir.mkdir(exist_ok=True)
    prog = bindir / "gpg"
    body = ("#!/bin/sh\ncat >/dev/null\necho '[GNUPG:] SIG_CREATED ' >&2\n"
            "printf -- '-----BEGIN PGP SIGNATURE-----\\n\\nZmFrZQ==\\n-----END PGP SIGNATURE-----\\n'\n"
            if ok else "#!/bin/sh\ncat >/dev/null\necho 'gpg: signing failed: No secret key' >&2\nexit 2\n")
    prog.write_text(body)
    prog.chmod(0o755)
    return prog


@pytest.mark.parametrize("ok", [True, False])
def test_commit_gpgsign_is_honoured(ws, tmp_path, ok):
    prog = _fake_gpg(tmp_path, ok)
    ws.git("config", "commit.gpgsign", "true")
    ws.git("config", "gpg.program", str(prog))
    ws.git("config", "user.signingkey", "TESTKEY")
    before = ws.commits()
    r = ws.cli("hyp", "add", "Signed", "--id", "signed", "--json", check=0 if ok else 1)
    if ok:
        assert ws.commits() == before + 1
        raw = ws.git("cat-file", "commit", "HEAD")
        assert "gpgsig -----BEGIN PGP SIGNATURE-----" in raw
    else:
        err = r.json["error"]
        assert err["code"] == "sign_failed" and "commit.gpgsign" in err["message"]
        assert "gpg failed to sign" in err["message"] and "Traceback" not in r.err
        assert ws.commits() == before
        # nothing left behind for a later `sync` to commit as a hand edit
        assert not (ws.root / "hypotheses" / "signed.yaml").exists()
        assert ws.git("status", "--porcelain") == ""
        ws.git("config", "commit.gpgsign", "false")
        assert ws.j("sync")["committed"] == []


@pytest.mark.parametrize("out", ["../outside.md", "ABSOLUTE", ".git/x.md", ".git/hooks/pre-commit.md",
                                 ".optlog/x.md", "link/escape.md"])
def test_report_out_outside_the_workspace_or_into_git_is_refused(ws, tmp_path, out):
    (ws.root / "link").symlink_to(tmp_path)  # a folder inside that leads outside
    absolute = tmp_path / "outside-absolute.md"
    out = str(absolute) if out == "ABSOLUTE" else out
    before, files = ws.commits(), set(tmp_path.rglob("*.md"))
    r = ws.cli("report", "--out", out, "--json", check=2)
    assert r.json["error"]["field"] == "--out" and "Traceback" not in r.err
    assert ws.commits() == before and set(tmp_path.rglob("*.md")) == files
    assert not (ws.root / out).exists() and not os.path.exists("ABSOLUTE")
