"""The parameters many verbs share, declared once: pages, field selection, detail.

Each keeps the CLI's document by default and gives an agent the small one by default
(`AgentDefault`): a script's `--json` contract stays, an agent's context is spared. A verb narrows
one by wrapping it again (`Annotated[Limit, AgentDefault(30)]`): the outer metadata wins.
"""

from __future__ import annotations

from typing import Annotated, Any

from optlog.api.verb import AgentDefault, Opt
from optlog.errors import BadInput, param
from optlog.service.envelope import ORDERS

Limit = Annotated[int | None, AgentDefault(20), Opt(metavar="N", help="At most N items.")]
Offset = Annotated[int, Opt(help="Skip this many items: pass the previous page's next_offset.")]
Order = Annotated[str, AgentDefault("newest"), Opt(choices=ORDERS, show_default=True,
                                                   help="oldest first (the CLI's default) or newest first (an agent's).")]
Fields = Annotated[str | None, Opt(metavar="A,B", help="Only these keys of each item (comma-separated; dotted names "
                                                       "reach in: metrics.output_throughput).")]
# --detail/--brief: the whole document (the CLI's default) or the acknowledgement an agent gets;
# a verb gives the help (`The whole document, or only …`)
Detail = Annotated[bool, AgentDefault(False), Opt("--detail/--brief", show_default=True)]


def pairs(values: tuple[tuple[str, Any], ...], field: str) -> dict[str, Any]:
    """Repeated K=V options (`Pairs`) as one mapping. A name given twice is refused (`--label a=1
    --label a=2` kept the last one silently: which did the user mean?), naming the parameter."""
    out: dict[str, Any] = {}
    for k, v in values:
        if k in out:
            raise BadInput(f"{param(field)} {k} is given twice ({out[k]!r} and {v!r}): give each name once",
                           field=field, code="duplicate")
        out[k] = v
    return out
