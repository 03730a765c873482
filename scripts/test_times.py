"""Time per test folder from a pytest JUnit XML report (scripts/test.sh prints it after each pass).

    python scripts/test_times.py REPORT.xml [WALL_SECONDS]

Each test's time is its setup, call and teardown; with several workers the folders' sum is more
than the pass's wall time (given as WALL_SECONDS, it is printed beside them). Standard library only:
it runs before and after the venv exists.
"""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET
from collections import defaultdict


def folder(case: ET.Element) -> str:
    """`tests/cli` for classname `tests.cli.test_x` (or `tests.cli.test_x.TestClass`)."""
    parts = (case.get("classname") or "?").split(".")
    return "/".join(parts[:2]) if len(parts) > 2 else parts[0]


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    cases = list(ET.parse(argv[0]).getroot().iter("testcase"))
    times: dict[str, float] = defaultdict(float)
    counts: dict[str, int] = defaultdict(int)
    for c in cases:
        times[folder(c)] += float(c.get("time") or 0)
        counts[folder(c)] += 1
    total = sum(times.values())
    print(f"{'folder':<22} {'tests':>6} {'seconds':>9} {'share':>6}")
    for f in sorted(times, key=lambda k: -times[k]):
        print(f"{f:<22} {counts[f]:>6} {times[f]:>9.1f} {100 * times[f] / (total or 1):>5.0f}%")
    print(f"{'all (test time)':<22} {len(cases):>6} {total:>9.1f}")
    if len(argv) > 1:
        print(f"{'wall':<22} {'':>6} {float(argv[1]):>9.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
