"""A write that fails for want of disk space leaves nothing behind that looks written, or says
exactly what it left (issue 37 item 4). A real, small tmpfs holds the workspace (root only: the
test mounts it and unmounts it after)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests._tmpfs import tmpfs


@pytest.fixture
def small_disk(tmp_path: Path):
    with tmpfs(tmp_path / "full", "8m") as where:
        yield where


def _fill(disk: Path, leave_kib: int) -> Path:
    """A file that takes all the space but `leave_kib`."""
    st = os.statvfs(disk)
    filler = disk / "filler"
    with open(filler, "wb") as f:
        f.write(b"\0" * max(0, st.f_bavail * st.f_frsize - leave_kib * 1024))
    return filler


def test_hypothesis_add_on_a_nearly_full_disk_leaves_nothing_or_commits(small_disk, make_ws):
    w = make_ws("full/ws", init=False)  # the workspace and its git repository on the small disk
    w.cli("init", str(w.root), cwd=small_disk)
    w.cli("hyp", "add", "Warm", "--id", "warm")  # the database and git objects exist already
    outcomes = {}
    for kib in (8, 16, 32, 48):
        hid = f"full-{kib}"
        filler = _fill(small_disk, kib)
        try:
            r = w.cli("hyp", "add", "Nearly full", "--id", hid, "--json", check=False)
        finally:
            filler.unlink()
        assert "Traceback" not in r.err and "internal error" not in r.err, r.err
        listed = [h["id"] for h in w.j("hyp", "list")["hypotheses"]]
        status = w.git("status", "--porcelain")
        assert not list((w.root / ".optlog" / "pending").glob("*.json"))
        if r.code == 0:
            outcomes[kib] = "written"
            assert hid in listed and status == "" and hid in w.git("log", "-1", "--format=%s")
            continue
        outcomes[kib] = "refused"
        err = json.loads(r.out)["error"]
        assert r.code == 1 and err["code"] == "disk_full", r.out
        assert "no space left" in err["message"] and "nothing was" in err["message"]
        # nothing that looks written: no file, no index row, no commit, no uncommitted change
        assert not (w.root / "hypotheses" / f"{hid}.yaml").exists()
        assert hid not in listed and status == "", (listed, status)
    assert "refused" in outcomes.values(), outcomes  # the disk was really too full for some


def test_an_invalidation_whose_commit_fails_leaves_nothing_decided(ws):
    """The same class: `run invalidate` wrote its register and the run's evidence file, then the
    commit failed; the database's flag is rolled back with the files, so nothing looks decided."""
    ws.cli("hyp", "add", "H", "--id", "h")
    ws.cli("prediction", "add", "h", "--expect", "a > b", "--metric", "m", "--a", "c=a", "--b", "c=b")
    for i in range(3):
        ws.cli("run", "record", "--label", "c=a", "--metric", f"m=3{i}")
        ws.cli("run", "record", "--label", "c=b", "--metric", f"m=1{i}")
    ws.cli("verdict", "--all")
    before = ws.git("rev-parse", "HEAD")
    ws.git("config", "commit.gpgsign", "true")
    ws.git("config", "gpg.program", "false")  # signing fails: the commit fails after the files are written
    r = ws.cli("run", "invalidate", "1", "--why", "busy", "--json", check=1)
    assert r.json["error"]["code"] == "sign_failed"
    ws.git("config", "commit.gpgsign", "false")
    assert ws.git("rev-parse", "HEAD") == before and ws.git("status", "--porcelain") == ""
    assert not [x for x in ws.j("run", "list")["runs"] if x["invalidated"]]
