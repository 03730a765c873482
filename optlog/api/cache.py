"""The read cache and the agents' todo inbox, as the faces take them: the CLI's front door
(`optlog.cli.fast`: standard library only, before click or SQLAlchemy) and the MCP face's stamp of
a hot read. Both modules live in the store (`optlog.store.readcache`, `optlog.store.todoinbox`);
importing them here costs nothing more (`optlog.api` imports nothing at package level)."""

from __future__ import annotations

from optlog.store import readcache, todoinbox

__all__ = ["READS", "readcache", "todoinbox"]

# the hot reads whose documents are cached: the CLI's `--json` (`optlog.cli.fast`) and the MCP tool
# of the same path
READS: frozenset[tuple[str, ...]] = frozenset({("status",), ("todo", "list"), ("hypothesis", "list"),
                                               ("run", "list")})
