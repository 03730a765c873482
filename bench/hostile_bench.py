#!/usr/bin/env python3
"""Hostile-input benchmark (issue 13, item 3): time and peak memory of *refusing* each class of
hostile file or argument through the real CLI, against a trivial command measured in the same run.

Each class is set up in a fresh workspace (a real git repository), then the command that reads it
runs as its own process; its peak RSS comes from `wait4` (that process alone) and its wall time
from the clock. The baseline is `optlog hypothesis list --json` on the same clean workspace (the
same interpreter start-up, settings check and database open), alternating with the hostile runs
so load from elsewhere hits both alike; `optlog --version` is shown too. Figures are medians.
Target: each refusal exits 2 with an error document and costs at most 0.5 s (wall, or CPU where
the machine is loaded: wall time then measures the neighbours) and 100 MB beyond the baseline.

    python bench/hostile_bench.py [--repeats 5] [--only NAME] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LAUGHS = (ROOT / "tests" / "fixtures" / "hostile" / "laughs.yaml").read_text()
MAX_S, MAX_MB = 0.5, 100.0


def run(ws: Path, args: list[str], env: dict[str, str], stdin: str | None = None) -> tuple[int, float, float, str, str, float]:
    """(exit code, wall s, peak RSS MB, stdout, stderr, CPU s) of one optlog process."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, tempfile.TemporaryFile() as inp:
        if stdin is not None:
            inp.write(stdin.encode())
            inp.seek(0)
        t0 = time.perf_counter()
        p = subprocess.Popen([sys.executable, "-m", "optlog", *args], cwd=ws, env=env, stdin=inp, stdout=out,
                             stderr=err)
        _, status, ru = os.wait4(p.pid, 0)
        wall = time.perf_counter() - t0
        p.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return (p.returncode, wall, ru.ru_maxrss / 1024, out.read().decode(errors="replace"),
                err.read().decode(errors="replace"), ru.ru_utime + ru.ru_stime)


def new_ws(base: Path, name: str, env: dict[str, str]) -> Path:
    ws = base / name
    subprocess.run([sys.executable, "-m", "optlog", "init", str(ws)], env=env, check=True, capture_output=True)
    subprocess.run([sys.executable, "-m", "optlog", "hypothesis", "add", "H", "--id", "h"], cwd=ws, env=env,
                   check=True, capture_output=True)
    return ws


def _w(p: Path, text: str | bytes) -> None:
    p.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        p.write_bytes(text)
    else:
        p.write_text(text)


def _hyp(ws: Path, name: str, text: str | bytes) -> None:
    _w(ws / "hypotheses" / f"{name}.yaml", text)


def _laughs_spec(ws: Path) -> None:
    body = "".join("  " + ln + "\n" for ln in LAUGHS.splitlines()[2:])
    _w(ws / "runs" / "lol.yaml", "name: lol\nparams:\n" + body + "bench:\n  cmd: 'true'\n")


def _big_title(ws: Path) -> None:
    f = ws / "hypotheses" / "h.yaml"
    f.write_text(f.read_text().replace("title: H", "title: " + "x" * 2_000_000))


def _matrix(ws: Path) -> None:
    axes = "".join(f"  m{i}: [{', '.join(str(j) for j in range(12))}]\n" for i in range(6))
    _w(ws / "runs" / "big.yaml", "name: big\nmatrix:\n" + axes + "bench:\n  cmd: 'echo {{ m0 }}'\n")


def _cycle(ws: Path) -> None:
    _hyp(ws, "b", "id: b\ntitle: B\nparent: h\n")
    f = ws / "hypotheses" / "h.yaml"
    f.write_text(f.read_text() + "parent: b\n")


def _corrupt_db(ws: Path) -> None:
    db = ws / ".optlog" / "optlog.db"
    for p in db.parent.glob("optlog.db-*"):
        p.unlink()
    raw = bytearray(db.read_bytes())
    raw[100:] = b"\xa5" * (len(raw) - 100)
    db.write_bytes(bytes(raw))


def _foreign_db(ws: Path) -> None:
    db = ws / ".optlog" / "optlog.db"
    for p in [db, *db.parent.glob("optlog.db-*")]:
        p.unlink()
    c = sqlite3.connect(db)
    c.execute("CREATE TABLE photos (id INTEGER PRIMARY KEY)")
    c.commit()
    c.close()


# name: (setup, argv, stdin)
CASES: dict[str, tuple[Callable[[Path], None], list[str], str | None]] = {
    "billion laughs (hypothesis file, 362 B)": (lambda ws: _hyp(ws, "laughs", LAUGHS.replace("id: lol", "id: laughs")),
                                                ["hypothesis", "list"], None),
    "billion laughs (run spec params)": (_laughs_spec, ["run", "launch", "runs/lol.yaml"], None),
    "2 MB title (hand edit)": (_big_title, ["sync"], None),
    "5 MB file": (lambda ws: _hyp(ws, "big", "id: big\ntitle: b\ns: |\n" + ("  " + "y" * 1000 + "\n") * 5000),
                  ["sync"], None),
    "YAML nested 5,000 deep": (lambda ws: _hyp(ws, "deep", "id: deep\ntitle: d\nv: " + "[" * 5000 + "]" * 5000),
                               ["sync"], None),
    "JSON nested 100,000 deep (todowrite)": (lambda ws: None, ["todo", "write", "-"],
                                             '{"todos": ' + "[" * 100_000 + "]" * 100_000 + "}"),
    "2.99 M-point matrix": (_matrix, ["run", "launch", "runs/big.yaml"], None),
    "20,000-term expression": (lambda ws: None, ["prediction", "add", "h", "--expect", "a" + " + a" * 20_000 + " > b"],
                               None),
    "300-term expression (depth)": (lambda ws: None, ["prediction", "add", "h", "--expect", "a" + " + a" * 300 + " > b"],
                                    None),
    "duplicate YAML key": (lambda ws: _hyp(ws, "dup", "id: dup\ntitle: A\ntitle: B\n"), ["sync"], None),
    "parent cycle": (_cycle, ["sync"], None),
    "dangling rival": (lambda ws: _hyp(ws, "r", "id: r\ntitle: R\nrivals: [nobody]\n"), ["sync"], None),
    "invalid expect (hand edit)": (lambda ws: _hyp(ws, "e", "id: e\ntitle: E\npredictions:\n- {id: e.p1, expect: 'a >>> b'}\n"),
                                   ["sync"], None),
    "invalid UTF-8": (lambda ws: _hyp(ws, "u", b"id: u\ntitle: caf\xe9\n"), ["sync"], None),
    "0x1E/0x1F in --statement": (lambda ws: None, ["hypothesis", "add", "T", "--statement", "a\x1eb\x1fc"], None),
    "id ending in newline": (lambda ws: None, ["hypothesis", "add", "T", "--id", "x\n"], None),
    "--hypothesis ../optlog": (lambda ws: None, ["todo", "add", "t", "--hypothesis", "../optlog"], None),
    "int(1e400) in a template": (lambda ws: _w(ws / "runs" / "t.yaml", "name: t\nbench:\n  cmd: 'echo {{ int(1e400) }}'\n"),
                                 ["run", "launch", "runs/t.yaml"], None),
    "optlog.yaml port 99999": (lambda ws: _w(ws / "optlog.yaml", "name: t\nexecutors:\n  ssh:\n    b: {host: b, port: 99999}\n"),
                               ["status"], None),
    "optlog.yaml .inf interval": (lambda ws: _w(ws / "optlog.yaml", "name: t\ntelemetry:\n  interval_s: .inf\n"),
                                  ["status"], None),
    "corrupt SQLite pages": (_corrupt_db, ["status"], None),
    "foreign SQLite file": (_foreign_db, ["status"], None),
}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--only", help="run only the cases whose name contains this")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    base = Path(tempfile.mkdtemp(prefix="optlog-hostile-"))
    env.update(GIT_CONFIG_GLOBAL=str(base / "gitconfig"), OPTLOG_ACTOR="bench", PYTHONUNBUFFERED="1")
    (base / "gitconfig").write_text("[user]\n\tname = B\n\temail = b@example.com\n[init]\n\tdefaultBranch = main\n")
    rows = []
    try:
        clean = new_ws(base, "clean", env)
        ver = [run(clean, ["--version"], env) for _ in range(a.repeats)]
        for name, (setup, argv, stdin) in CASES.items():
            if a.only and a.only not in name:
                continue
            ws = new_ws(base, f"c{len(rows)}", env)
            setup(ws)
            base_s, base_mb, hs, hmb, codes, clean_refusal = [], [], [], [], set(), True
            base_cpu, hcpu = [], []
            for _ in range(a.repeats):
                _, t, mb, _, _, cpu = run(clean, ["hypothesis", "list", "--json"], env)
                base_s.append(t)
                base_mb.append(mb)
                base_cpu.append(cpu)
                code, t, mb, out, err, cpu = run(ws, [*argv, "--json"], env, stdin)
                hs.append(t)
                hmb.append(mb)
                hcpu.append(cpu)
                codes.add(code)
                try:
                    doc = json.loads(out)
                    ok = code == 2 and "error" in doc and doc["error"]["code"] != "internal_error"
                except ValueError:
                    ok = False
                clean_refusal &= ok and "Traceback" not in err
            extra_s = statistics.median(hs) - statistics.median(base_s)
            extra_mb = statistics.median(hmb) - statistics.median(base_mb)
            extra_cpu = statistics.median(hcpu) - statistics.median(base_cpu)
            rows.append({"case": name, "exit": sorted(codes), "refused_cleanly": clean_refusal,
                         "median_s": round(statistics.median(hs), 3), "baseline_s": round(statistics.median(base_s), 3),
                         "extra_s": round(extra_s, 3), "ratio_time": round(statistics.median(hs) / statistics.median(base_s), 2),
                         "peak_mb": round(statistics.median(hmb), 1), "baseline_mb": round(statistics.median(base_mb), 1),
                         "extra_mb": round(extra_mb, 1), "cpu_s": round(statistics.median(hcpu), 3),
                         "extra_cpu_s": round(extra_cpu, 3),
                         # on a loaded machine wall time measures the neighbours; CPU time the work
                         "within_target": clean_refusal and min(extra_s, extra_cpu) <= MAX_S and extra_mb <= MAX_MB,
                         "message": (json.loads(out).get("error", {}).get("message", "")[:90] if out.strip().startswith("{") else "")})
    finally:
        shutil.rmtree(base, ignore_errors=True)
    if a.json:
        print(json.dumps({"version_s": statistics.median(v[1] for v in ver), "cases": rows}, indent=2))
    else:
        print(f"optlog --version: {statistics.median(v[1] for v in ver):.3f} s, "
              f"{statistics.median(v[2] for v in ver):.1f} MB (medians of {a.repeats})")
        print("| input class | exit | refused cleanly | wall (s) | baseline (s) | extra wall (s) | ratio | CPU (s) | "
              "extra CPU (s) | peak MB | extra MB | target |")
        print("|---|---|---|---|---|---|---|---|---|---|---|---|")
        for r in rows:
            print(f"| {r['case']} | {','.join(map(str, r['exit']))} | {'yes' if r['refused_cleanly'] else 'NO'} | "
                  f"{r['median_s']} | {r['baseline_s']} | {r['extra_s']:+.3f} | {r['ratio_time']}× | {r['cpu_s']} | "
                  f"{r['extra_cpu_s']:+.3f} | {r['peak_mb']} | "
                  f"{r['extra_mb']:+.1f} | {'met' if r['within_target'] else 'MISSED'} |")
    return 0 if all(r["within_target"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
