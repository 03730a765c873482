"""What a launched run names: every value its commands were rendered with, and the commands.

A run launched with `--set itl_ms=10` and one with `--set itl_ms=5` ran different servers; if only
the matrix axes were labels, nothing would tell them apart and `compare` would pool them. So each
planned point carries:

- labels: the matrix and include values, the spec's labels, the repeat, and every value the
  commands use that varies between the points of the launch (an include key one entry lacks, whose
  other points take it from `params`);
- config: the values the server, bench and telemetry templates use that are not labels (constant
  over the launch: params, `--set`), and the templates themselves (`server.cmd`, `bench.env.X`, …,
  so an edited spec differs from its earlier launches), as canonical text;
- record: the values and the rendered server and bench commands, stored in the run's `raw`.

`core.comparable` then says which of these keys differ between runs.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from optlog.core import labels as L
from optlog.core import template as T
from optlog.runs.environment import is_secret_env, is_secret_key, redact_argv

REDACTED = "<redacted>"

RUN_SPECIFIC = frozenset({"out", "run_id", "launch_id", "server_url", "repeat", "tune_worker"})
"""Values that differ between every two runs by construction: never a difference in what was measured."""
COMMAND_FIELDS = ("cmd", "env", "cwd")
SECTIONS = ("server", "bench")


def used_names(data: dict[str, Any], sections: tuple[str, ...] = (*SECTIONS, "telemetry")) -> set[str]:
    """Placeholder names the given sections of a spec (its parsed YAML) use."""
    return T.names_used(data, sections)


def env_used(data: dict[str, Any]) -> set[str]:
    """The environment variables a spec reads (`{{ env.NAME }}`) anywhere."""
    out: set[str] = set()
    for s in T.strings_in(data):
        out |= T.env_names(s)
    return out


def env_references(data: dict[str, Any], environ: Mapping[str, str]) -> dict[str, str]:
    """Each value the spec's `{{ env.NAME }}` rendered to → that reference, for the record committed
    to git (service.launch_record): this machine's paths stay out of it; a launch again renders the
    reference where it runs. Values shorter than 4 characters are left (too likely to occur by chance)."""
    return {environ[n]: f"{{{{ env.{n} }}}}" for n in sorted(env_used(data))
            if n in environ and len(environ[n]) >= 4 and not is_secret_env(n)}


def unrender(x: Any, refs: dict[str, str]) -> Any:
    """`x` (JSON-like) with each rendered environment value put back as its reference."""
    if not refs:
        return x
    if isinstance(x, str):
        for v in sorted(refs, key=len, reverse=True):
            if v in x:
                x = x.replace(v, refs[v])
        return x
    if isinstance(x, dict):
        return {k: unrender(v, refs) for k, v in x.items()}
    if isinstance(x, list):
        return [unrender(v, refs) for v in x]
    return x


def label_names(data: dict[str, Any]) -> set[str]:
    """Names the spec's `labels:` templates use (a value shown through a label is named by it)."""
    return used_names(data, ("labels",))


def templates(data: dict[str, Any]) -> dict[str, str]:
    """The command templates as written (`server.cmd`, `server.env.NCCL_X`, `bench.cwd`, …)."""
    out: dict[str, str] = {}
    for sec in SECTIONS:
        part = data.get(sec)
        if not isinstance(part, dict):
            continue
        for f in COMMAND_FIELDS:
            v = part.get(f)
            if v is None:
                continue
            if f == "env" and isinstance(v, dict):
                for k, x in v.items():
                    out[f"{sec}.env.{k}"] = REDACTED if is_secret_env(k) else T.to_text(x)
            else:
                out[f"{sec}.{f}"] = v if isinstance(v, str) else json.dumps(v)
    return out


def annotate(data: dict[str, Any], points: list[Any]) -> None:
    """Give each planned point (runs.spec.Point) its varying values as labels and its config."""
    used = used_names(data) - RUN_SPECIFIC
    shown = label_names(data)
    for k in sorted(used):
        vals = {L.canonical(p.values.get(k)) for p in points}
        if len(vals) > 1:
            for p in points:
                if k not in p.labels and k in p.values:
                    p.labels[k] = p.values[k]
    tmpl = templates(data)
    for p in points:
        cfg = {k: REDACTED if is_secret_key(k) else L.canonical(T.to_text(p.values[k])) for k in sorted(used)
               if k in p.values and k not in p.labels and k not in shown}
        p.config = {**cfg, **tmpl}


def run_record(point: Any, rendered: dict[str, Any]) -> dict[str, Any]:
    """The part of a run's `raw` that says what it was rendered with."""
    def cmd(part: dict[str, Any] | None) -> dict[str, Any] | None:
        if not part:
            return None
        env = {k: (REDACTED if is_secret_env(k) else v) for k, v in (part.get("env") or {}).items()}
        return {"argv": redact_argv([str(a) for a in part.get("argv") or []]), "env": env, "cwd": part.get("cwd")}

    return {
        "values": {k: (REDACTED if is_secret_key(k) else v) for k, v in point.values.items() if k not in RUN_SPECIFIC},
        "config": dict(point.config),
        "order": dict(point.order),
        "commands": {"server": cmd(rendered.get("server")), "bench": cmd(rendered["bench"])},
    }
