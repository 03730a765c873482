#!/usr/bin/env python3
"""Per-command overhead of the SSH executor (popen + wait of `true`, multiplexed over one master
connection) against a plain `ssh HOST true` that opens a new connection each time, on the test sshd
(scripts/sshd-up.sh; source /tmp/optlog-sshd/env.sh first). Medians of N repeats, same run.

    . /tmp/optlog-sshd/env.sh && .venv/bin/python bench/remote_ssh_overhead.py [N]
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from optlog.runs.executors.ssh import SshExecutor, SshHost


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    e = os.environ
    cfg = SshHost(host=e["OPTLOG_TEST_SSH_HOST"], port=int(e["OPTLOG_TEST_SSH_PORT"]), user=e["OPTLOG_TEST_SSH_USER"],
                  identity_file=e["OPTLOG_TEST_SSH_KEY"], options=["StrictHostKeyChecking=no", "UserKnownHostsFile=/dev/null"])
    plain = ["ssh", "-o", "BatchMode=yes", "-o", "LogLevel=ERROR", "-o", "ControlPath=none", "-p", str(cfg.port),
             "-i", cfg.identity_file, "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null",
             f"{cfg.user}@{cfg.host}", "true"]
    ex = SshExecutor("bench", cfg, base_env={"OPTLOG_LAUNCH_TOKEN": "bench"})
    tmp = Path(tempfile.mkdtemp())
    ex.target.ensure_master()
    mux, new = [], []
    for _ in range(n):
        t = time.perf_counter()
        subprocess.run(plain, check=True, stdin=subprocess.DEVNULL)
        new.append(time.perf_counter() - t)
        t = time.perf_counter()
        h = ex.popen(["true"], env={}, stdout=tmp / "o", stderr=tmp / "e", role="server")
        assert h.wait(30) == 0
        mux.append(time.perf_counter() - t)
    m_new, m_mux = statistics.median(new), statistics.median(mux)
    print(f"ssh per command, median of {n}: new connection {m_new * 1000:.0f} ms, "
          f"SshExecutor (multiplexed, setsid wrapper) {m_mux * 1000:.0f} ms, ratio {m_mux / m_new:.2f}")


if __name__ == "__main__":
    main()
