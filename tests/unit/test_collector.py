"""The full CLI collects less often (`optlog.cli._collect_less`: the modules it imported frozen out
of the collector's passes, the youngest generation collected every 50,000 allocations) but still
collects cycles: a long launch, the MCP face and the TUI run under it."""

from __future__ import annotations

import subprocess
import sys

CODE = """
import gc, weakref
import optlog.cli as c
c._collect_less()
class N: pass
gone = []
for i in range(200_000):  # (four times the youngest generation's threshold)
    a = N(); a.me = a
    if i == 0:
        weakref.finalize(a, gone.append, 1)
    del a
print(len(gone), gc.isenabled(), gc.get_freeze_count() > 0, gc.get_threshold()[0])
"""


def test_the_full_cli_freezes_what_it_imported_and_still_collects_cycles() -> None:
    p = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert p.stdout.split() == ["1", "True", "True", "50000"]
