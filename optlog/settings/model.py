"""optlog's settings, declared once: every `OPTLOG_*` variable optlog reads, its type, its default
and what it does (pydantic-settings, `OPTLOG_` prefix; the anchors: guidellm's `settings.py`,
posting's `config.py`). A value that does not parse falls back to the default, as optlog always
did: a setting never turns a command into an error.

The test hooks (a fixed clock, a fake NVML) are apart in `TestHooks`: they exist for tests and
examples, never for real use.

Imported only by `optlog.settings.load` (pydantic-settings costs ~25-45 ms): see `optlog.settings`.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict


def _number(v: Any, least: float, default: float | None) -> float | None:
    try:
        n = float(v)
    except (TypeError, ValueError):
        return default
    return n if n >= least else default


class Settings(BaseSettings):
    """What the environment may say to optlog. Each field is read from `OPTLOG_<NAME>`."""

    model_config = SettingsConfigDict(env_prefix="OPTLOG_", extra="ignore", frozen=True)

    db_url: str | None = Field(default=None, description=(
        "The database every run and verdict is indexed in: any SQLAlchemy URL (`postgresql://...` to share "
        "one between machines). Unset: the workspace's own SQLite file."))
    actor: str | None = Field(default=None, description=(
        "Who acts, recorded on every write (`agent:claude`, `agent:opencode`). Unset: the login name."))
    read_cache: bool = Field(default=True, description=(
        "`0` turns the read cache off (every `--json` read takes the full path; `bench/startup_bench.py` "
        "measures both). Anything else: on."))
    first_read: bool = Field(default=True, description=(
        "`0`: the first read after a change takes the full path instead of plain SQL (`optlog.api.firstread`; "
        "the tests compare the two). Anything else: on."))
    debug: bool = Field(default=False, description="Set (non-empty): an internal error prints its traceback.")
    db_connect_timeout: int = Field(default=10, description=(
        "Seconds to wait for a PostgreSQL server's answer (1 or more; else 10)."))
    lock_timeout: float | None = Field(default=None, description=(
        "Seconds to wait for a lock another process holds (above 0); unset: each lock's own default."))
    mcp_wait_s: float = Field(default=30.0, description=(
        "Seconds an MCP tool call waits for the call in progress before it is answered `busy` (0 or more; "
        "else 30)."))
    bench_api_key: SecretStr | None = Field(default=None, description=(
        "The bearer token `bench` sends (else `OPENAI_API_KEY`). Never stored."))
    server_fresh: bool = Field(default=True, description=(
        "Set by a launch for each bench it runs: `1` for the first after the server (re)started, `0` after; "
        "`bench`'s default warm-up runs only when it is not `0`."))
    tune_worker: int = Field(default=0, description=(
        "Set by `tune --on` for the workers it starts: the worker's index (its ports and seeds)."))
    llama_server: str | None = Field(default=None, description=(
        "The llama.cpp `llama-server` binary `demo` starts. Unset: the one scripts/llama-server.sh built."))
    test_model: str | None = Field(default=None, description=(
        "The GGUF model file `demo` serves. Unset: the Gemma 3 270M that scripts/llama-server.sh fetched."))
    launch: str | None = Field(default=None, description="Set by a launch for every bench command it starts: the launch id.")
    run: str | None = Field(default=None, description="Set by a launch for every bench command: the run id of the point.")
    run_out: str | None = Field(default=None, description=(
        "Set by a launch for every bench command: the point's output folder (where results are looked for)."))
    launch_token: str | None = Field(default=None, description=(
        "Set by a launch for everything it starts: the launch's token (recovery finds leftovers by it)."))
    process_tag: str | None = Field(default=None, description=(
        "Set by a launch for each command it starts: `<token>:<n>` (stopping it ends its daemons too)."))

    @field_validator("read_cache", "first_read", "server_fresh", mode="before")
    @classmethod
    def _not_zero(cls, v: Any) -> bool:
        return str(v).strip() != "0"

    @field_validator("debug", mode="before")
    @classmethod
    def _set(cls, v: Any) -> bool:
        return bool(v) if isinstance(v, bool) else bool(str(v))

    @field_validator("db_connect_timeout", mode="before")
    @classmethod
    def _connect_timeout(cls, v: Any) -> int:
        return int(v) if str(v).strip().isdigit() and int(v) >= 1 else 10

    @field_validator("mcp_wait_s", mode="before")
    @classmethod
    def _mcp_wait(cls, v: Any) -> float:
        n = _number(v, 0.0, 30.0)
        return 30.0 if n is None or n == float("inf") else n

    @field_validator("lock_timeout", mode="before")
    @classmethod
    def _lock_timeout(cls, v: Any) -> float | None:
        n = _number(v, 0.0, None)
        return n if n else None

    @field_validator("tune_worker", mode="before")
    @classmethod
    def _worker(cls, v: Any) -> int:
        return int(v) if str(v).isdigit() else 0


class TestHooks(BaseSettings):
    """Settings for tests and examples only, each read from `OPTLOG_<NAME>`."""

    __test__ = False  # not a pytest test class
    model_config = SettingsConfigDict(env_prefix="OPTLOG_", extra="ignore", frozen=True)

    now: str | None = Field(default=None, description=(
        "A fixed clock (ISO-8601): every timestamp optlog writes is this time, and new ids derive from it, so "
        "a script that rebuilds a workspace writes the same bytes each time. Never in real use."))
    fake_nvml: str | None = Field(default=None, description=(
        "A JSON spec of GPUs for a fake NVML (optlog.telemetry.fake), sampled instead of the real one."))
