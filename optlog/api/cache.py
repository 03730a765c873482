"""The read cache and the agents' todo inbox, as the faces take them: the CLI's front door
(`optlog.cli.fast`: standard library only, before click or SQLAlchemy) and the MCP face's stamp of
a hot read. Both modules live in the store (`optlog.store.readcache`, `optlog.store.todoinbox`);
importing them here costs nothing more (`optlog.api` imports nothing at package level)."""

from __future__ import annotations

from optlog.store import readcache, todoinbox

__all__ = ["readcache", "todoinbox"]
