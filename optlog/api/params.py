"""The parameters many verbs share, declared once: pages, field selection, detail.

Each keeps the CLI's document by default and gives an agent the small one by default
(`AgentDefault`): a script's `--json` contract stays, an agent's context is spared. A verb narrows
one by wrapping it again (`Annotated[Limit, AgentDefault(30)]`): the outer metadata wins.
"""

from __future__ import annotations

from typing import Annotated, Any

from optlog.api.verb import AgentDefault, Opt
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


def pairs(values: tuple[tuple[str, Any], ...]) -> dict[str, Any]:
    """Repeated K=V options (`Pairs`) as one mapping (a later key wins, as the command line reads)."""
    return dict(values)
