"""`optlog run launch SPEC --dry-run` (issue 45): the commands each run would run and the run count,
planned exactly as a launch plans them (`--set` applied, templates rendered, launch order), with
nothing launched and nothing written (no run, no launch record, no commit); bad input is exit 2."""

from __future__ import annotations

from _launch import spec


def _state(ws):
    """The workspace's commits, git status and files (the database's own state folder aside)."""
    return ws.git("log", "--oneline"), ws.git("status", "--porcelain"), sorted(
        str(p.relative_to(ws.root)) for p in ws.root.rglob("*") if not {".git", ".optlog"} & set(p.parts))


def test_a_dry_run_shows_every_runs_commands_and_launches_nothing(ws):
    rel = spec(ws, "dry", bench={"cmd": "{{ py }} -c pass --concurrency {{ concurrency }} --num-prompts "
                                        "{{ concurrency * 2 }} --secret-token hunter2hunter2"},
               matrix={"concurrency": [1, 4], "parallel": [2]}, repeats=2,
               server={"cmd": "{{ py }} -m http.server {{ port }} --parallel {{ parallel }}"})
    before = _state(ws)
    d = ws.j("run", "launch", rel, "--dry-run", "--set", "parallel=[2,8]")
    assert d["dry_run"] is True and d["spec"] == rel and d["runs"] == 8 == len(d["points"])
    assert d["servers"] == 2  # one server command per parallel level
    by = {(p["labels"]["concurrency"], p["labels"]["parallel"], p["repeat"]): p for p in d["points"]}
    assert set(by) == {(c, par, r) for c in (1, 4) for par in (2, 8) for r in (0, 1)}
    p = by[(4, 8, 1)]
    assert p["bench"][-6:] == ["--concurrency", "4", "--num-prompts", "8", "--secret-token", "<redacted>"]
    assert p["server"][-2:] == ["--parallel", "8"]
    text = ws.cli("run", "launch", rel, "--dry-run").out
    assert text.startswith(f"dry run of {rel}: 4 runs, 1 server command; nothing launched, nothing written")
    assert "hunter2" not in text and "--num-prompts 2" in text
    assert _state(ws) == before
    assert ws.j("run", "list")["runs"] == [] and not (ws.root / "launches").exists()
    assert not (ws.root / ".optlog" / "launches").exists() or not any((ws.root / ".optlog" / "launches").iterdir())


def test_a_dry_run_of_a_bad_spec_is_exit_2(ws):
    rel = spec(ws, "bad", bench={"cmd": "{{ py }} -c pass --n {{ nope }}"})
    r = ws.cli("run", "launch", rel, "--dry-run", check=False)
    assert r.code == 2 and "nope" in r.err and "Traceback" not in r.err
    r = ws.cli("run", "launch", "runs/missing.yaml", "--dry-run", check=False)
    assert r.code == 2 and "no such run spec" in r.err
