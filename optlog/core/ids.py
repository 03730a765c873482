"""New identities (a run's uid, a workspace's id): random 128 bits, as 32 hex digits.

Under a fixed clock (`OPTLOG_NOW`, tests and examples only; see core.timeutil) they are derived
from the clock and what they name instead, so a script that rebuilds a workspace writes the same
bytes on every run.
"""

from __future__ import annotations

import hashlib
import os
import uuid


def new_id(*names: object) -> str:
    fixed = os.environ.get("OPTLOG_NOW")
    if not fixed:
        return uuid.uuid4().hex
    return hashlib.sha256(repr((fixed, *names)).encode()).hexdigest()[:32]
