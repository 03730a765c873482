#!/usr/bin/env python3
"""The test server lives in the package (`optlog.testing.fakeserver`) so `optlog demo` can use it
too; this path stays for the tests and specs that start it as a script."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from optlog.testing.fakeserver import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
