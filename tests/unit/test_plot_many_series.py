"""A plot of thousands of configs (issue 34 item 4: `report` at 2,000 hypotheses × 100,000 runs
ran for 8 minutes and took 9.5 GB): pygal's legend rows left the plot no height, and its title
splitting then loops for ever, growing a list. A plot draws at most MAX_SERIES series, the
highest ones, and its title says so. Run in a child process with a time and memory limit, so a
regression fails instead of taking the machine."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

CODE = """
import resource, sys
resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
from optlog.render import plots
series = {f"h{i}-a": [(c, 100.0 + i + c) for c in (1, 8, 64, 256, 512)] for i in range(400)}
plots.throughput_vs_concurrency(sys.argv[1], "tput vs concurrency", "total_token_throughput", series)
pts = {f"h{i}-a": [(10.0 + i, 50.0 + i, 8)] for i in range(400)}
plots.per_user_vs_per_gpu(sys.argv[2], "per user vs per GPU", pts)
"""


def test_a_plot_of_400_configs_draws_the_highest_and_says_so(tmp_path: Path):
    from optlog.render.plots import MAX_SERIES

    a, b = tmp_path / "a.svg", tmp_path / "b.svg"
    p = subprocess.run([sys.executable, "-c", CODE, str(a), str(b)], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr[-2000:]
    for f in (a, b):
        svg = f.read_text()
        assert f"the {MAX_SERIES} highest of 400" in svg
        assert "h399-a" in svg and "h0-a" not in svg  # the highest kept, the lowest left out
