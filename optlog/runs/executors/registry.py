"""The executor registry: every kind of executor optlog knows, by name, one registration line each.
The launcher, the spec's `executor:` validation, optlog.yaml's `executors:` sections, tune's `--on`,
recovery after a `kill -9`, the target lock and docs/executors.md all read it; a new executor is one
file in this package (an `ExecutorKind`, see `base`) plus one line below."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from optlog.errors import Failed
from optlog.runs.executors import local, slurm, ssh
from optlog.runs.executors.base import Executor, ExecutorKind

if TYPE_CHECKING:
    from optlog.needs import Launches

KINDS: dict[str, ExecutorKind] = {}


def register(kind: ExecutorKind) -> ExecutorKind:
    """Add (or replace) a kind; its name is its key in optlog.yaml `executors:` and `Executor.kind`."""
    KINDS[kind.name] = kind
    return kind


def unregister(name: str) -> None:
    KINDS.pop(name, None)


register(local.KIND)
register(ssh.KIND)
register(slurm.KIND)


def kinds() -> list[ExecutorKind]:
    return list(KINDS.values())


def config_sections() -> dict[str, Any]:
    """optlog.yaml `executors.<name>`'s type, per kind (what optlog.config.load_config validates)."""
    return {k.name: k.section for k in KINDS.values()}


def parse(value: Any) -> Any:
    """A spec's `executor:` value made canonical by the kind whose syntax it is (ValueError naming
    every kind's spelling when none)."""
    for k in KINDS.values():
        got = k.parse(value)
        if got is not None:
            return got
    raise ValueError("executor is " + ", ".join(k.spelling for k in KINDS.values()))


def kind_of(value: Any) -> ExecutorKind | None:
    """The kind that claims a parsed `executor:` value (None: none does)."""
    return next((k for k in KINDS.values() if k.claims(value)), None)


def make_executor(ctx: "Launches", executor: Any, **kw: Any) -> Executor:
    """The executor a spec's (parsed) `executor:` value names, made by its kind."""
    k = kind_of(executor)
    if k is None:
        raise Failed(f"unknown executor {executor!r}", field="executor", code="bad_executor")
    return k.make(ctx, executor, **kw)


def on_this_machine(executor: Any) -> bool:
    """Whether the processes of a spec's `executor:` value run on this machine (False for a value no
    kind claims, such as an old row's)."""
    k = kind_of(executor)
    return k is not None and k.on_this_machine


def lock_target(executor: Any) -> str | None:
    """The target lock's key of a launch on a spec's `executor:` value (None: no lock)."""
    k = kind_of(executor)
    return k.lock_target(executor) if k is not None else None


def parse_on(word: str) -> Any | None:
    """tune's `--on WORD` as a spec's `executor:` value (None: no kind names a worker target so)."""
    for k in KINDS.values():
        got = k.parse_on(word)
        if got is not None:
            return got
    return None


def on_spellings() -> str:
    """How `--on` names a worker's target, every kind that has one (for its message)."""
    return ", ".join(k.on_spelling for k in KINDS.values() if k.on_spelling)


def kill_record(ctx: "Launches", rec: Any) -> bool | None:
    """Recovery of a process record made on another host (by an executor whose kind `owns_record`
    its host): ended there. None when no kind owns it (the caller handles local ones)."""
    host = str(rec.host or "")
    for k in KINDS.values():
        if k.owns_record(host):
            return k.kill_record(ctx, rec)
    return None


def listing() -> str:
    """The registered kinds as a Markdown table (docs/executors.md is generated from it)."""
    rows = ["| kind | a spec's `executor:` | optlog.yaml | runs | telemetry | kill path | lock key |",
            "|---|---|---|---|---|---|---|"]
    for k in KINDS.values():
        runs = "this machine" if k.on_this_machine else "elsewhere"
        tel = "NVML, sampled in optlog" if k.telemetry == "nvml" else "a sampler command on the host (`stream`)"
        rows.append(f"| {k.name} | {k.spelling} | `executors.{k.name}` | {runs} | {tel} | {k.kill_path} | {k.lock_key} |")
    return "\n".join(rows) + "\n"
