"""The benchmarked server's own version, from the environment document of its run.

A hook: `register(probe)` adds a probe; each takes the environment document (runs.environment:
its `server` report, `commands`, `packages`) and returns {"version", "from", …} or None. The first
answer wins. Built in: the version the server reports (SGLang `/server_info`, vLLM `/version`), and
the package of a `python -m PACKAGE…` server command. A server with its own build record (llama.cpp's
`/props` build_info) registers a probe that reads it from the report.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Probe = Callable[[dict[str, Any]], "dict[str, Any] | None"]
PROBES: list[Probe] = []


def register(probe: Probe) -> Probe:
    PROBES.append(probe)
    return probe


def identify(doc: dict[str, Any]) -> dict[str, Any] | None:
    for probe in PROBES:
        try:
            got = probe(doc)
        except Exception:
            continue
        if got:
            return got
    return None


@register
def _binary(doc: dict[str, Any]) -> dict[str, Any] | None:
    """A native server's `--version` (llama.cpp prints `version: N (sha)` and its compiler)."""
    text = (doc.get("server") or {}).get("binary_version")
    if not text:
        return None
    first = str(text).strip().splitlines()[0]
    return {"version": first.removeprefix("version:").strip(), "from": "--version"}


@register
def _reported(doc: dict[str, Any]) -> dict[str, Any] | None:
    srv = doc.get("server") or {}
    v = (srv.get("effective") or {}).get("version") or (srv.get("report") or {}).get("version")
    return {"version": str(v), "from": srv.get("endpoint")} if v else None


@register
def _python_module(doc: dict[str, Any]) -> dict[str, Any] | None:
    argv = (doc.get("commands") or {}).get("server") or []
    if "-m" not in argv or argv.index("-m") + 1 >= len(argv):
        return None
    pkg = str(argv[argv.index("-m") + 1]).split(".")[0]
    packages = doc.get("packages") or {}
    for name in (pkg, pkg.replace("_", "-")):
        if name in packages:
            return {"version": packages[name], "from": f"package {name}"}
    return None
