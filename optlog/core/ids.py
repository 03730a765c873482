"""New identities (a run's uid, a workspace's id): random 128 bits, as 32 hex digits; and the
references a user writes for runs and launches (`12`, `L3`).

Under a fixed clock (`OPTLOG_NOW`, tests and examples only; see core.timeutil) they are derived
from the clock and what they name instead, so a script that rebuilds a workspace writes the same
bytes on every run.
"""

from __future__ import annotations

import hashlib
import uuid

from optlog import settings
from optlog.core.limits import LIMITS
from optlog.errors import BadInput


def new_id(*names: object) -> str:
    fixed = settings.read("now")
    if not fixed:
        return uuid.uuid4().hex
    return hashlib.sha256(repr((fixed, *names)).encode()).hexdigest()[:32]


def parse_ref(ref: str, field: str = "ref") -> tuple[str, int]:
    """("run", 12) for `12`, ("launch", 3) for `L3` or `launch:3`. Here, not in service.launch:
    `run invalidate` and the verdicts read references without importing the launcher."""
    t = str(ref).strip()
    low = t.lower()
    try:
        if low.startswith("launch:"):
            return "launch", check_id(int(t[7:]), field, "launch")
        if low.startswith("l"):
            return "launch", check_id(int(t[1:]), field, "launch")
        return "run", check_id(int(t), field)
    except ValueError:
        raise BadInput(f"expected a run id (12) or a launch (L3), got {ref!r}", field=field) from None


def check_id(n: int, field: str = "ref", what: str = "run") -> int:
    """A run or launch id as the database can hold it: 0 to 2^63 − 1 (`run show 9223372036854775808`
    was an internal error in the database driver; issue 42). Refused with the field it came in."""
    if not 0 <= n <= LIMITS.int_max:
        raise BadInput(f"no {what} has id {n}: ids are whole numbers from 0 to {LIMITS.int_max}", field=field)
    return n
