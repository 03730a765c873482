"""Benchmark: what a safe commit costs, and reading the decision timeline.

1. Commit: optlog's safe commit (private index, git lock, CAS update-ref, real-index refresh) against
   the baseline `git add FILE && git commit -q` (porcelain, which would sweep in the user's staged
   files), one changed hypothesis file per commit.
2. Read: `optlog log` (one `git log` with git-parsed trailers) against GitPython walking the same
   commits (`Repo.iter_commits(grep=...)` + `Commit.trailers_dict`), the way one would do it with
   GitPython alone.

Run: .venv/bin/python bench/git_history_commit_and_log.py [N_COMMITS] [REPEATS]
Prints medians and ratios (markdown) for BENCHMARKS.md.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def sh(cwd: Path, *args: str) -> None:
    subprocess.run(args, cwd=cwd, check=True, capture_output=True)


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 120
    repeats = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    tmp = Path(tempfile.mkdtemp(prefix="optlog-bench-git-"))
    cfg = tmp / "gitconfig"
    cfg.write_text("[user]\n\tname = Bench\n\temail = bench@example.com\n[init]\n\tdefaultBranch = main\n")
    os.environ["GIT_CONFIG_GLOBAL"] = str(cfg)
    os.environ["OPTLOG_ACTOR"] = "bench"

    from optlog.gitlog import history
    from optlog.paths import Workspace
    from optlog.service import history as timeline
    from optlog.service.context import Ctx

    root = tmp / "ws"
    root.mkdir()
    sh(root, "git", "init", "-q")
    (root / "optlog.yaml").write_text("name: bench\n")
    (root / "hypotheses").mkdir()
    ctx = Ctx(Workspace(root))
    # user work in progress that must survive: a staged and an unstaged file
    (root / "X.txt").write_text("x")
    sh(root, "git", "add", "X.txt")

    safe_t: list[float] = []
    for i in range(n):
        f = root / "hypotheses" / f"h{i % 10}.yaml"
        f.write_text(f"id: h{i % 10}\ntitle: bench {i}\n")
        t = time.perf_counter()
        history.record(ctx, [f], f"optlog: h{i % 10} → testing", "bench",
                       {"Optlog-Event": "override", "Optlog-Hypothesis": f"h{i % 10}", "Optlog-Run": f"{i},{i + 1}"})
        safe_t.append(time.perf_counter() - t)

    base = tmp / "base"
    base.mkdir()
    sh(base, "git", "init", "-q")
    (base / "hypotheses").mkdir()
    plain_t: list[float] = []
    for i in range(n):
        f = base / "hypotheses" / f"h{i % 10}.yaml"
        f.write_text(f"id: h{i % 10}\ntitle: bench {i}\n")
        t = time.perf_counter()
        sh(base, "git", "add", str(f))
        sh(base, "git", "commit", "-q", "-m", f"h{i % 10}\n\nbench\n\nOptlog-Event: override")
        plain_t.append(time.perf_counter() - t)

    def read_optlog() -> int:
        return len(timeline.log(ctx)["events"])

    def read_gitpython() -> int:
        import git

        repo = git.Repo(root)
        out = []
        for c in repo.iter_commits("HEAD", grep="^Optlog-Event: ", extended_regexp=True):
            out.append((c.hexsha, c.summary, c.trailers_dict))
        return len(out)

    assert read_optlog() == read_gitpython() == n, (read_optlog(), read_gitpython())
    ro, rg = [], []
    for _ in range(repeats):
        t = time.perf_counter()
        read_optlog()
        ro.append(time.perf_counter() - t)
        t = time.perf_counter()
        read_gitpython()
        rg.append(time.perf_counter() - t)

    ms = lambda xs: statistics.median(xs) * 1000  # noqa: E731
    staged = subprocess.run(["git", "diff", "--cached", "--name-only"], cwd=root, capture_output=True, text=True).stdout.split()
    assert staged == ["X.txt"], staged
    print(f"commits: {n}, read repeats: {repeats}, git {subprocess.run(['git', '--version'], capture_output=True, text=True).stdout.split()[-1]}")
    print("| measure | optlog | baseline | ratio (optlog / baseline) |")
    print("|---|---|---|---|")
    print(f"| one commit, median ms (baseline: `git add` + `git commit`) | {ms(safe_t):.1f} | {ms(plain_t):.1f} "
          f"| {ms(safe_t) / ms(plain_t):.2f} |")
    print(f"| read {n}-event timeline, median ms (baseline: GitPython iter_commits + trailers_dict) "
          f"| {ms(ro):.1f} | {ms(rg):.1f} | {ms(ro) / ms(rg):.3f} |")
    import shutil

    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
