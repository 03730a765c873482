"""Options many commands share: pages, field selection, detail. Declared once, so the CLI and the
MCP face (which derives its schemas from these) spell them the same everywhere; the verbs apply
them (`optlog.service.envelope`).

Each keeps today's CLI document by default and gives an agent the small one by default
(`agent(defaults=...)`): a script's `--json` contract stays, an agent's context is spared.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from optlog.cli.main import agent
from optlog.core import text as TX
from optlog.core.labels import check_key, parse_pair
from optlog.api.params import pairs  # noqa: F401  (the click-declared commands take it from here)
from optlog.errors import BadInput
from optlog.service.envelope import ORDERS


def paging(agent_limit: int = 20) -> Callable[[Any], Any]:
    """--limit, --offset, --order; the document gains `total`, `offset` and `next_offset`."""

    def deco(f: Any) -> Any:
        f = click.option("--order", type=click.Choice(ORDERS), default="oldest", show_default=True,
                         help="oldest first (the CLI's default) or newest first (an agent's).")(f)
        f = click.option("--offset", type=int, default=0,
                         help="Skip this many items: pass the previous page's next_offset.")(f)
        f = click.option("--limit", type=int, default=None, metavar="N", help="At most N items.")(f)
        return agent(defaults={"limit": agent_limit, "order": "newest"})(f)

    return deco


def fields_option(agent_fields: str | None = None) -> Callable[[Any], Any]:
    def deco(f: Any) -> Any:
        f = click.option("--fields", metavar="A,B", default=None,
                         help="Only these keys of each item (comma-separated; dotted names reach in: "
                              "metrics.output_throughput).")(f)
        return agent(defaults={"fields": agent_fields})(f) if agent_fields else f

    return deco


def detail_option(what: str) -> Callable[[Any], Any]:
    """--detail/--brief: the whole document (the CLI's default) or the acknowledgement an agent gets."""

    def deco(f: Any) -> Any:
        f = click.option("--detail/--brief", "detail", default=True, show_default=True,
                         help=f"The whole document, or only {what}.")(f)
        return agent(defaults={"detail": False})(f)

    return deco


class KeyValue(click.ParamType):
    """`K=V` on the command line → the pair (K, V), so a binding gets typed pairs and never parses
    text. A pair given as a value already (the MCP face passes an object's items) is only checked:
    its key by the label-name rule; its value stays as typed (a verb checks what it needs)."""

    name = "K=V"

    def __init__(self, field: str = "--label", *, lists: bool = False) -> None:
        self.field = field
        self.lists = lists  # a value may be a list of scalars (`--set`'s matrix axis: K=[a,b])

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> tuple[str, Any]:
        if isinstance(value, tuple) and len(value) == 2:
            return check_key(str(value[0]), self.field), value[1]
        return parse_pair(str(value), self.field)


class JsonValue(click.ParamType):
    """A JSON text on the command line → the value it holds, under the guards every file has (size,
    depth, the text rule); a value given already parsed (the MCP face) gets the same tree checks."""

    name = "JSON"

    def __init__(self, field: str) -> None:
        self.field = field

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        try:
            if isinstance(value, str):
                from optlog.yamlio import parse_json  # deferred: optlog.yamlio loads PyYAML

                return parse_json(value, self.field)
            TX.check_tree(value, self.field, None)
            return value
        except BadInput as e:  # the option is the place, not a file
            e.field, e.file = f"{self.field}.{e.field}" if e.field else self.field, None
            raise
