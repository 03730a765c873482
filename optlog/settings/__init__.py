"""The one place optlog reads its process environment (issue 46).

Every `OPTLOG_*` variable optlog reads is a field of `optlog.settings.model.Settings` (pydantic-
settings, `OPTLOG_` prefix, each field documented; the test hooks apart in `TestHooks`). Two ways
to them, one import cost each:

- `load()` gives the validated, typed `Settings` (it imports pydantic-settings, ~25-45 ms on top of
  pydantic, so a session makes it only when something asks: `Session.settings`);
- `read(name)` gives one declared setting's raw text with the standard library only, for the reads
  that run before anything heavy is imported or on every call (the read cache's front door, the
  clock, the database URL). `tests/architecture/test_settings.py` checks that every name passed to
  it is a declared field, and that nothing outside this package touches `os.environ` or `getenv`.

`environ()` is the process environment itself, for what is not optlog's setting but the user's: the
environment handed on to the commands optlog starts, a spec's `{{ env.NAME }}`, a header's
`$NAME`, git's identity variables.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, MutableMapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from optlog.settings.model import Settings, TestHooks

PREFIX = "OPTLOG_"


def var(name: str) -> str:
    """The environment variable of the setting `name` (`db_url` -> `OPTLOG_DB_URL`)."""
    return PREFIX + name.upper()


def read(name: str, default: str | None = None) -> str | None:
    """The raw text of the declared setting `name` (None or `default` when unset or empty)."""
    return os.environ.get(var(name)) or default


def environ() -> MutableMapping[str, str]:
    """This process's environment (not a copy): what is handed on to the commands optlog starts."""
    return os.environ


def optlog_items(*leave_out: str) -> list[tuple[str, str]]:
    """Every `OPTLOG_*` variable set, sorted (what a cached read's answer may depend on)."""
    skip = {var(n) for n in leave_out}
    return sorted((k, v) for k, v in os.environ.items() if k.startswith(PREFIX) and k not in skip)


def load(env: Mapping[str, str] | None = None) -> "Settings":
    """The validated settings, read now from the environment (or from `env`)."""
    from optlog.settings.model import Settings  # deferred: pydantic-settings, only where a typed setting is used

    if env is None:
        return Settings()
    return Settings.model_validate({k[len(PREFIX):].lower(): v for k, v in env.items() if k.startswith(PREFIX)})


def hooks() -> "TestHooks":
    """The test hooks, read now (see `TestHooks`)."""
    from optlog.settings.model import TestHooks  # deferred: pydantic-settings, tests only

    return TestHooks()
