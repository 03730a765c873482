"""Every launch, as it ran, committed to the workspace: an experiment can be rebuilt from git.

Run specs used to be read from wherever they were and never committed, so a clone could not say what
a launch ran. Each launch writes, before its first run, and commits (`Optlog-Event: launch`):

    launches/L<id>/spec.yaml     the spec file's text as it was read
    launches/L<id>/points.json   the launch: its name, spec file, the `--set` values as typed, the
                                 server URL, hypothesis, order (and seed), and every planned point
                                 (run id, labels, the values, config and rendered commands it names)

`optlog run launch --again L3` launches that record again (the same spec text, sets, server URL,
order seed and hypothesis), in this workspace or a fresh clone of it, where the database knows no
launch 3: the record is found by its folder. Launch ids come from the database, so a fresh clone's
first launch is L1 again; when `launches/L1` already holds another launch's record, the new one is
written to `launches/L1-<token>` (the database remembers which folder is its launch's).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from optlog import settings
from optlog.errors import BadInput, NotFound
from optlog.gitlog import history
from optlog.gitlog import trailers as TR
from optlog.needs import Commits, Reads
from optlog.paths import Workspace
from optlog.runs.record import env_references, unrender
from optlog.runs.spec import SetPairs, record_sets, set_texts
from optlog.store import launchrows
from optlog.yamlio import write_atomic
from optlog.core import jsondoc

DIR = "launches"


def choose_dir(ws: Workspace, lid: int, token: str) -> str:
    """The workspace-relative folder of launch `lid`'s record."""
    base = f"{DIR}/L{lid}"
    p = ws.root / base / "points.json"
    if p.is_file():
        try:
            if jsondoc.loads(p.read_text(encoding="utf-8")).get("token") != token:
                return f"{base}-{token[:8]}"
        except (OSError, ValueError):
            return f"{base}-{token[:8]}"
    return base


def write(ctx: Commits, rel_dir: str, *, lid: int, ls: Any, sets: SetPairs, server_url: str | None,
          hypothesis: str | None, docs: list[dict[str, Any]], token: str, order: dict[str, Any],
          again_of: str | None, redact: Any = None) -> None:
    """Write the record and commit it (nothing is committed outside a git repository). `redact`
    (runs.redact's Redactor.redact): secrets never reach git; a launch again from a record whose
    spec held a secret literally gets `<redacted>` there (secrets belong in the environment)."""

    refs = env_references(ls.data, settings.environ())
    red0 = redact or (lambda x: x)

    def red(x: Any) -> Any:  # secrets out, and this machine's environment values back to `{{ env.NAME }}`
        return unrender(red0(x), refs)

    d = ctx.ws.root / rel_dir
    d.mkdir(parents=True, exist_ok=True)
    write_atomic(d / "spec.yaml", red(ls.text))
    doc = {"launch": lid, "token": token, "name": ls.name, "spec_file": ls.file, "sets": set_texts(sets),
           "server_url": server_url, "hypothesis": hypothesis, "order": order, "again_of": again_of,
           "points": [{"run": x["run_id"], "labels": x["labels"], "repeat": x["repeat"], **x["record"]} for x in docs]}
    doc = {**red(doc), "token": token}
    write_atomic(d / "points.json", json.dumps(doc, indent=1, sort_keys=False, default=str) + "\n")
    history.record(ctx, [d], f"optlog: launch L{lid} ({ls.name}): {len(docs)} run{'s' if len(docs) != 1 else ''}",
                   f"spec {ls.file}" + (f", --set {' '.join(doc['sets'])}" if sets else "")  # redacted, like the files
                   + (f", again of {again_of}" if again_of else ""),
                   {TR.EVENT: "launch", TR.LAUNCH: f"L{lid}"})


def find(ctx: Reads, n: int) -> Path:
    """The record folder of launch `n`: the database's own, else `launches/L<n>`."""
    with ctx.db.read() as s:
        la = launchrows.launch(s, n)
    rel = (la.spec or {}).get("record") if la is not None else None
    d = ctx.ws.root / (rel or f"{DIR}/L{n}")
    if not (d / "points.json").is_file() or not (d / "spec.yaml").is_file():
        raise NotFound(f"no committed record of launch L{n} ({ctx.ws.rel(d)}/spec.yaml and points.json)",
                       field="again")
    return d


def again_args(ctx: Reads, n: int) -> dict[str, Any]:
    """The arguments that launch launch `n`'s record again: spec path, sets, server URL, hypothesis, name."""
    d = find(ctx, n)
    try:
        doc = jsondoc.loads((d / "points.json").read_text(encoding="utf-8"))
    except ValueError as e:
        raise BadInput(f"{ctx.ws.rel(d / 'points.json')}: not JSON ({e})", field="again") from None
    sets: list[tuple[str, Any]] = list(record_sets(doc.get("sets") or []))
    order = doc.get("order") or {}
    if order.get("seed") is not None and not any(k == "order_seed" for k, _ in sets):
        sets.append(("order_seed", order["seed"]))  # the same random order as the recorded launch
    return {"spec": str(d / "spec.yaml"), "sets": sets, "server_url": doc.get("server_url"),
            "hypothesis": doc.get("hypothesis"), "name": doc.get("name"), "again_of": f"L{doc.get('launch')}"}
